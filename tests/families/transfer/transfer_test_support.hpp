#pragma once
// What the transfer family's test files share: made-up machines, parsing checks, the family's
// registry and expansion, made-up results.
#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "families/builtin.hpp"
#include "families/transfer/spec.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/runner.hpp"
#include "../../test_support.hpp"

namespace interopbench::transfer::testing_support {

/// A machine with `gpus` GPUs of 80 GiB, all selected, and 8 host cores.
inline Machine gpu_machine(std::size_t gpus) {
    Machine m = testing::fake_machine(static_cast<int>(gpus), 80ull << 30);
    m.host_cores = 8;
    return m;
}

/// A machine where CUDA sees no GPU (no driver).
inline Machine no_gpu() {
    Machine m;
    m.cuda_available = false;
    m.cuda_note = "no CUDA driver: this machine has no GPU";
    m.host_cores = std::max(1u, std::thread::hardware_concurrency());
    return m;
}

/// Each transfer's canonical text.
inline std::vector<std::string> texts(const TransferSet& s) {
    std::vector<std::string> out;
    for (const Transfer& t : s.transfers) out.push_back(t.text());
    return out;
}

/// The UsageError `spec` raises in `scope`: its one line must hold `words`, and a hint.
inline void expect_refused(const std::string& spec, const Scope& scope, const std::string& words, const std::string& hint_words = {}) {
    CAPTURE(spec);
    try {
        parse_set(spec, scope);
        FAIL("accepted: " << spec);
    } catch (const UsageError& e) {
        const std::string what = e.what();
        CAPTURE(what);
        CHECK(what.find(words) != std::string::npos);
        CHECK(what.find('\n') == std::string::npos);
        CHECK_FALSE(e.hint().empty());
        if (!hint_words.empty()) CHECK(e.hint().find(hint_words) != std::string::npos);
    }
}

/// The transfer family alone; `dir` its storage directory, `alone` whether a set stands for its
/// transfers alone too.
inline Registry transfer_registry(const std::string& dir = {}, bool alone = true) {
    FamilyOptions options;
    if (!dir.empty()) options.set_texts("storage-dir", {dir});
    if (!alone) options.set_flag("no-alone", true);
    return builtin_registry({"transfer"}, options);
}

/// The configurations the sets expand to on `m`.
inline std::vector<Config> expand_sets(const Registry& r, const std::vector<std::string>& sets, const Machine& m) {
    return testing::expand(r, "transfer", {{"set", sets}}, m);
}

/// The configurations' result keys.
inline std::vector<std::string> keys(const std::vector<Config>& configs) {
    std::vector<std::string> out;
    for (const Config& c : configs) out.push_back(c.key());
    return out;
}

/// A made-up transfer result: a metric per entry of `medians` (bandwidth first), five samples
/// at that median each, and `details`.
inline Result fake_result(const std::string& set, std::map<std::string, double> medians,
                          nlohmann::json details = nlohmann::json::object()) {
    Result r;
    r.scenario = "transfer";
    r.family = "transfer";
    r.params = Params(std::vector<std::pair<std::string, std::string>>{{"set", set}});
    r.key = "transfer/set=" + set;
    for (const auto& [name, v] : medians) {
        MetricResult m;
        m.info.name = name;
        m.info.unit = "B/s";
        m.stats.n = 5;
        m.stats.median = v;
        m.samples = {v, v, v, v, v};
        r.metrics.push_back(m);
    }
    // The primary metric first, as the scenario declares it.
    std::stable_sort(r.metrics.begin(), r.metrics.end(),
                     [](const MetricResult& a, const MetricResult& b) { return a.info.name == "bandwidth" && b.info.name != "bandwidth"; });
    r.details = std::move(details);
    return r;
}

} // namespace interopbench::transfer::testing_support
