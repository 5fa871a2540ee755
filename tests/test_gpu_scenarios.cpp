// The `gpu` label (ctest -L gpu): one small configuration of every scenario that needs a GPU,
// one case per family ("gpu scenario: copy"), so that a failure names its family. The cases
// and the scenarios come from the registry (plugins excluded): a new GPU scenario, or a new
// family, is covered without a change here. A configuration needs a GPU when its scenario says
// so (needs_gpu) or when a machine without one refuses it for that reason (the GPU variant of
// a layout conversion, say). Each is measured in this process through the runner (warm-up 1,
// 3 to 5 samples, one round) and must end ok, with every primary sample finite, positive and
// physically possible, or skipped for a reason that belongs to the machine (a second GPU,
// NCCL, cuFile, what the scratch directory's file system cannot do). Without a usable GPU
// every case skips itself: the process exits 77 and CTest reports it skipped, never passed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <exception>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "families/builtin.hpp"
#include "gpu/cuda_util.hpp"
#include "gpu/cufile_loader.hpp"
#include "gpu/nccl_loader.hpp"
#include "hostio/storage_io.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/runner.hpp"
#include "test_support.hpp"

using namespace interopbench;

namespace {

constexpr const char* k_prefix = "gpu scenario: ";
/// The largest value a size axis gets: each size axis takes its smallest default, at most this.
constexpr std::uint64_t k_small_size = 16ull << 20;
/// No path moves 20 TB/s (an H200's own memory reads about 4.8): above it a byte count or a
/// timer is wrong.
constexpr double k_bandwidth_ceiling = 20000e9;
/// A small configuration's time per operation is far below this: above it a timer is wrong.
constexpr double k_time_ceiling_s = 60;

unsigned host_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

/// This machine as the command line sees it (cli/probe_machine): CUDA, NCCL and cuFile
/// probed, every GPU selected.
const Machine& this_machine() {
    static const Machine machine = [] {
        Machine m;
        gpu::probe_cuda(m);
        m.host_cores = host_threads();
        if (!m.cuda_available) return m;
        gpu::probe_nccl(m);
        gpu::probe_cufile(m);
        for (const DeviceInfo& d : m.devices) m.selected.push_back(d.ordinal);
        return m;
    }();
    return machine;
}

/// A machine without a GPU: a configuration it refuses with exactly this reason needs one.
Machine without_gpu() {
    Machine m;
    m.cuda_available = false;
    m.cuda_note = "classification: this machine has no GPU";
    m.host_cores = host_threads();
    return m;
}

/// One plan entry for `info`: every size axis at its smallest default (at most k_small_size),
/// every choice axis at its defaults and then its other choices (a GPU variant that is not a
/// default is still found), other axes at their defaults.
PlanEntry small_entry(const ScenarioInfo& info) {
    PlanEntry e{info.id, {}};
    for (const Axis& a : info.axes) {
        if (a.kind == AxisKind::size) {
            std::uint64_t least = k_small_size;
            for (const std::string& d : a.defaults)
                for (const std::uint64_t v : parse_size_list(d)) least = std::min(least, v);
            e.axes[a.name] = {std::to_string(least)};
        } else if (a.kind == AxisKind::choice) {
            std::vector<std::string> values = a.defaults;
            for (const std::string& c : a.choices)
                if (std::find(values.begin(), values.end(), c) == values.end()) values.push_back(c);
            e.axes[a.name] = values;
        }
    }
    return e;
}

/// The first configuration of `configs` (one scenario's, in expansion order) that needs a GPU.
std::optional<Config> first_gpu_configuration(const Scenario& s, const std::vector<Config>& configs) {
    const Machine none = without_gpu();
    for (const Config& c : configs) {
        if (s.info().needs_gpu) return c;
        const auto why = s.unsupported(none, c.params);
        if (why && *why == none.cuda_note) return c;
    }
    return std::nullopt;
}

/// Why a configuration may be skipped on a GPU machine: the machine lacks what it needs (a
/// second GPU, peer access, NCCL, cuFile), or the scratch directory's file system cannot give
/// what it asks (cold pages, O_DIRECT, io_uring). Any other skip is a failure.
bool skip_belongs_to_the_machine(const std::string& reason, const Machine& m) {
    auto has = [&](const char* text) { return reason.find(text) != std::string::npos; };
    if (m.selected.size() < 2) {
        static const std::regex missing_gpu("GPU [0-9]+ does not exist");
        if (has("needs at least 2 GPUs") || has("needs at least two selected GPUs") || has("needs a peer GPU") ||
            std::regex_search(reason, missing_gpu))
            return true;
    }
    return has("no peer access") || has("NCCL is not available") || has("cuFile") || has("cold cannot") ||
           has("O_DIRECT") || has("io_uring");
}

std::string describe(const Result& r) {
    std::string what = fmt::format("{}: {}", r.key, to_string(r.status));
    if (!r.reason.empty()) what += ": " + r.reason;
    if (r.status == Status::ok && !r.metrics.empty()) {
        const MetricResult& p = r.metrics.front();
        what += fmt::format(", {} samples of {}, median {:.4g} {}", p.samples.size(), p.info.name, p.stats.median,
                            p.info.unit);
    }
    return what;
}

/// Every primary sample of an ok result is finite, positive and below the physical ceiling
/// of its unit.
void check_primary_samples(const Result& r) {
    REQUIRE_FALSE(r.metrics.empty());
    const MetricResult& p = r.metrics.front();
    CHECK_MESSAGE(!p.samples.empty(), r.key, ": no sample of ", p.info.name);
    for (const double v : p.samples) {
        CHECK_MESSAGE((std::isfinite(v) && v > 0), r.key, ": ", p.info.name, " sample ", v, " is not finite and positive");
        if (p.info.unit == "B/s")
            CHECK_MESSAGE(v < k_bandwidth_ceiling, r.key, ": ", v / 1e9, " GB/s is above ", k_bandwidth_ceiling / 1e9,
                          " GB/s");
        if (p.info.unit == "s") CHECK_MESSAGE(v < k_time_ceiling_s, r.key, ": ", v, " s per operation");
    }
}

RunSettings small_settings(const std::string& storage_dir) {
    RunSettings s = testing::sampling(1, 3, 5, 2, 0.005);
    s.rounds = 1;
    s.options.set_text("storage-dir", storage_dir);
    return s;
}

/// The case of one family: its name follows k_prefix.
void gpu_family_case() {
    const std::string family = testing::current_test_case().substr(std::strlen(k_prefix));
    const Machine& m = this_machine();
    if (!m.cuda_available) {
        testing::skip("needs a GPU: " + m.cuda_note);
        return;
    }
    const RunSettings settings = small_settings(testing::scratch("gpu-scenario-" + family).string());
    const Registry reg = builtin_registry({family}, settings.options);

    // Every scenario's small configurations, the family's pre-flight over them (the storage
    // site in the scratch directory), then the first that needs a GPU of each.
    std::vector<std::pair<const Scenario*, std::vector<Config>>> expanded;
    std::vector<Config> all;
    for (const auto& s : reg.all()) {
        if (s->info().family != family || !s->origin().empty()) continue;
        RunPlan plan;
        plan.entries = {small_entry(s->info())};
        std::vector<Config> configs;
        REQUIRE_NOTHROW(configs = expand_plan(reg, plan, m));
        all.insert(all.end(), configs.begin(), configs.end());
        expanded.emplace_back(s.get(), std::move(configs));
    }
    REQUIRE_NOTHROW(builtin_families().preflight(settings, all));

    Runner runner(m, settings);
    std::size_t covered = 0;
    std::vector<std::string> skipped;
    for (const auto& [scenario, configs] : expanded) {
        const std::optional<Config> config = first_gpu_configuration(*scenario, configs);
        if (!config) continue; // a host scenario: not this label's business
        ++covered;
        const Result r = runner.run_one(*config);
        MESSAGE(describe(r));
        REQUIRE_MESSAGE(runner.fatal().empty(), r.key, ": fatal device error: ", runner.fatal());
        if (r.status == Status::skipped) {
            CHECK_MESSAGE(skip_belongs_to_the_machine(r.reason, m), r.key, " skipped on a GPU machine: ", r.reason);
            skipped.push_back(scenario->info().id + " (" + r.reason + ")");
            continue;
        }
        CHECK_MESSAGE(r.status == Status::ok, r.key, " ended ", to_string(r.status), ": ", r.reason);
        if (r.status == Status::ok) check_primary_samples(r);
    }
    // Nothing measured because nothing needs a GPU, or every scenario was skipped for what this
    // machine lacks (NCCL on one GPU): a skip, not a pass.
    if (covered == 0) testing::skip("no scenario of family " + family + " needs a GPU");
    else if (skipped.size() == covered)
        testing::skip(fmt::format("nothing of family {} runs on this machine: {}", family, fmt::join(skipped, "; ")));
}

} // namespace

void interopbench::testing::register_gpu_scenario_cases() {
    // doctest keeps the name's pointer: the names live as long as the process.
    static std::deque<std::string> names;
    std::vector<std::string> families;
    try {
        const Registry reg = builtin_registry();
        for (const auto& s : reg.all())
            if (s->origin().empty() && std::find(families.begin(), families.end(), s->info().family) == families.end())
                families.push_back(s->info().family);
    } catch (const std::exception& e) {
        // The cases cannot be named: one case says why.
        static std::string why;
        why = e.what();
        names.push_back(std::string(k_prefix) + "the registry");
        doctest::detail::regTest(doctest::detail::TestCase([] { FAIL("the registry could not be built: ", why); },
                                                           __FILE__, __LINE__,
                                                           doctest_detail_test_suite_ns::getCurrentTestSuite()) *
                                 names.back().c_str());
        return;
    }
    for (const std::string& f : families) {
        names.push_back(k_prefix + f);
        doctest::detail::regTest(doctest::detail::TestCase(gpu_family_case, __FILE__, __LINE__,
                                                           doctest_detail_test_suite_ns::getCurrentTestSuite()) *
                                 names.back().c_str());
    }
}
