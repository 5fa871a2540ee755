// The transfer family's broadcast (one read of a GPU's memory written to several destinations by
// one SM kernel, TransferBench's multi-destination transfer): both forms of its destination list
// and their canonical text's round trip, the characters its result key holds, wildcards in the
// list, the paths it declares and their share of each counted byte, every refusal with its one
// line, the source read rate the annotation adds, and the command line (the dry run, a run that
// skips without a GPU). With a GPU, one broadcast of each kind of destination is measured and its
// data checked; without one that case skips itself.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "families/builtin.hpp"
#include "families/transfer/spec.hpp"
#include "families/transfer/transfer.hpp"
#include "gpu/cuda_util.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/runner.hpp"
#include "../../test_support.hpp"
#include "transfer_test_support.hpp"

using namespace interopbench;
using namespace interopbench::transfer;
using namespace interopbench::transfer::testing_support;

namespace {

/// "gpu_memory:0x0.5": a path's id and, when not 1, the bytes that cross it per byte counted.
std::vector<std::string> ids(const std::vector<PathUse>& paths) {
    std::vector<std::string> out;
    for (const PathUse& p : paths) out.push_back(p.id() + (p.traffic != 1 ? fmt::format("x{:g}", p.traffic) : ""));
    return out;
}

} // namespace

TEST_SUITE("transfer") {

TEST_CASE("transfer broadcast: both forms of a destination list parse to one transfer and read back the same") {
    const Scope four = scope_of(gpu_machine(4));
    const std::vector<std::pair<std::string, std::string>> examples = {
        {"gpu0 -> {gpu0,host:pinned} via sm 64M", "gpu0->gpu0&host:pinned_sm_64MiB"},
        {"gpu0 -> {gpu1, host:pinned} via sm:32 1G", "gpu0->gpu1&host:pinned_sm:32_1GiB"}, // blanks after commas
        {"gpu0 -> { gpu1 , gpu2 } 1G via sm", "gpu0->gpu1&gpu2_sm_1GiB"},
        {"gpu2 -> {host:registered@numa0,host:pinned,gpu2,gpu3}", "gpu2->host:registered@numa0&host:pinned&gpu2&gpu3_sm_256MiB"},
        {"gpu0 -> {gpu1,host} 4096", "gpu0->gpu1&host:pinned_sm_4KiB"}, // sm is the default, host is pinned
        // The canonical form, as a result key holds it, and the list joined by '&' when written.
        {"gpu0->gpu0&host:pinned_sm_64MiB", "gpu0->gpu0&host:pinned_sm_64MiB"},
        {"gpu0 -> gpu1&host:pinned via sm 1G", "gpu0->gpu1&host:pinned_sm_1GiB"},
        {"gpu0 -> {gpu1&gpu2}", "gpu0->gpu1&gpu2_sm_256MiB"},
        // A list of one destination is an ordinary transfer by the SM kernel.
        {"gpu0 -> {gpu1}", "gpu0->gpu1_sm_256MiB"},
    };
    for (const auto& [spec, want] : examples) {
        CAPTURE(spec);
        const TransferSet set = parse_set(spec, four);
        REQUIRE(set.transfers.size() == 1);
        CHECK(set.text() == want);
        CHECK(parse_set(set.text(), four).text() == set.text());  // canonical -> parse -> canonical
        CHECK(parse_set(set.words(), four).text() == set.text()); // the words for people too
        CHECK(parse_set(set.text(), four).transfers == set.transfers);
        // A result key: letters, digits and : @ = . - > _ &, nothing a key, --only or a shell pattern splits on.
        CHECK(set.text().find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:@=.->_&") ==
              std::string::npos);
    }
    const Transfer t = parse_set("gpu0 -> {gpu0,host:pinned,gpu1} via sm 64M", four).transfers[0];
    CHECK(t.broadcast());
    CHECK(t.words() == "gpu0 -> {gpu0,host:pinned,gpu1} via sm 64MiB");
    CHECK(t.destinations_text() == "gpu0&host:pinned&gpu1");
    CHECK(t.destinations().size() == 3);
    CHECK(t.counted_bytes() == 3 * (64ull << 20)); // bytes written, once per destination
    CHECK(t.driver() == 0);
    CHECK(t.gpus() == std::vector<int>{0, 1});
    CHECK(t.exec.engine == Engine::sm);
    // In a set with other transfers, joined by '+' as always.
    CHECK(parse_set("gpu0 -> {gpu1,host:pinned} via sm 1G; host -> gpu0 1G", four).text() ==
          "gpu0->gpu1&host:pinned_sm_1GiB+host:pinned->gpu0_ce_1GiB");
    CHECK(expand("gpu0 -> {gpu1,host:pinned} via sm 1G; host -> gpu0 1G", four, true) ==
          std::vector<std::string>{"gpu0->gpu1&host:pinned_sm_1GiB+host:pinned->gpu0_ce_1GiB", "gpu0->gpu1&host:pinned_sm_1GiB",
                                   "host:pinned->gpu0_ce_1GiB"});
    // The forms there were before keep their meaning: one transfer per GPU, each reading again.
    CHECK(texts(parse_set("gpu0 -> gpu[1,2] via ce 1G", four)) == std::vector<std::string>{"gpu0->gpu1_ce_1GiB", "gpu0->gpu2_ce_1GiB"});
    CHECK_FALSE(parse_set("gpu0 -> gpu1 via sm", four).transfers[0].broadcast());
}

TEST_CASE("transfer broadcast: a selector in the list names every GPU it holds but the source") {
    const Scope four = scope_of(gpu_machine(4));
    CHECK(texts(parse_set("gpu0 -> {gpu*} via sm 1G", four)) == std::vector<std::string>{"gpu0->gpu1&gpu2&gpu3_sm_1GiB"});
    CHECK(texts(parse_set("gpu2 -> {gpu*,host:pinned} 1G", four)) ==
          std::vector<std::string>{"gpu2->gpu0&gpu1&gpu3&host:pinned_sm_1GiB"});
    CHECK(texts(parse_set("gpu1 -> {gpu[0..2]} 1G", four)) == std::vector<std::string>{"gpu1->gpu0&gpu2_sm_1GiB"});
    CHECK(texts(parse_set("gpu0 -> {gpu0,gpu*} 1G", four)) == std::vector<std::string>{"gpu0->gpu0&gpu1&gpu2&gpu3_sm_1GiB"});
    // A selector as the source: one broadcast per source GPU, none written to itself.
    CHECK(texts(parse_set("gpu[0,1] -> {gpu*,host} 1G", four)) ==
          std::vector<std::string>{"gpu0->gpu1&gpu2&gpu3&host:pinned_sm_1GiB", "gpu1->gpu0&gpu2&gpu3&host:pinned_sm_1GiB"});
    // The run's selection is what a wildcard means.
    Machine picked = gpu_machine(4);
    picked.selected = {0, 3};
    CHECK(texts(parse_set("gpu0 -> {gpu*,host} 1G", scope_of(picked))) == std::vector<std::string>{"gpu0->gpu3&host:pinned_sm_1GiB"});
    // Nine GPUs: eight destinations, the most one kernel writes; ten are refused.
    CHECK(parse_set("gpu0 -> {gpu*}", scope_of(gpu_machine(9))).transfers[0].destinations().size() == 8);
    expect_refused("gpu0 -> {gpu*}", scope_of(gpu_machine(10)), "names 9 destinations; one broadcast writes at most 8", "split the list");
    // Without a GPU (the configuration is skipped anyway) gpu* stands for gpu0 and gpu1.
    const Scope none = scope_of(no_gpu());
    CHECK(texts(parse_set("gpu0 -> {gpu*,host:pinned} 1G", none)) == std::vector<std::string>{"gpu0->gpu1&host:pinned_sm_1GiB"});
}

TEST_CASE("transfer broadcast: the paths it declares, each byte counted once per destination") {
    const Scope four = scope_of(gpu_machine(4));
    const auto one = [&](const std::string& spec) { return ids(parse_set(spec, four).transfers.at(0).paths()); };
    using V = std::vector<std::string>;
    // Two destinations: each counted byte is half a byte of each one's path. The source GPU's
    // memory is read once (0.5) and written for its own destination (0.5).
    CHECK(one("gpu0 -> {gpu0,host:pinned} via sm") == V{"gpu_memory:0", "host_link:0:d2hx0.5"});
    CHECK(one("gpu1 -> {gpu2,host:registered}") == V{"gpu_memory:1x0.5", "peer_link:1>2x0.5", "host_link:1:d2hx0.5"});
    // Two host buffers cross one link: one path, both shares.
    CHECK(one("gpu0 -> {gpu1,gpu2,host:pinned,host:registered}") ==
          V{"gpu_memory:0x0.25", "peer_link:0>1x0.25", "peer_link:0>2x0.25", "host_link:0:d2hx0.5"});
    CHECK(one("gpu3 -> {host:pinned@numa0,host:pinned@numa1}") == V{"gpu_memory:3x0.5", "host_link:3:d2h"});
    // A set of one broadcast declares its paths; beside a copy into the GPU, its host link both ways.
    const auto set = [&](const std::string& spec) { return ids(set_paths(parse_set(spec, four))); };
    CHECK(set("gpu0 -> {gpu0,host:pinned}") == V{"gpu_memory:0", "host_link:0:d2hx0.5"});
    CHECK(set("gpu0 -> {gpu1,host:pinned}; host -> gpu0") == V{"host_link:0:both"});
    // Through the scenario, as declare_paths and the dry run ask.
    const Registry r = transfer_registry();
    const Scenario* sc = r.find("transfer");
    REQUIRE(sc != nullptr);
    const Params p(std::vector<std::pair<std::string, std::string>>{{"set", "gpu0->gpu0&host:pinned_sm_64MiB"}});
    CHECK(ids(sc->paths(p)) == V{"gpu_memory:0", "host_link:0:d2hx0.5"});
    CHECK(sc->info().counting.find("a broadcast's once per destination") != std::string::npos);
}

TEST_CASE("transfer broadcast: each refusal is one line naming the token and the fix") {
    const Scope four = scope_of(gpu_machine(4));
    expect_refused("gpu0 -> {gpu1,host:pinned} via ce", four, "'ce' cannot broadcast in transfer", "via sm[:BLOCKS]");
    expect_refused("gpu0 -> {gpu1,host:pinned} via cpu:4", four, "'cpu' cannot broadcast", "via sm");
    expect_refused("gpu0 -> {gpu1,gpu2} via sm:8:pull", four, "'pull' in transfer 'gpu0 -> {gpu1,gpu2} via sm:8:pull'", "leave 'pull' out");
    expect_refused("gpu0 -> {gpu1,file} via sm", four, "'file' in destination list '{gpu1,file}'", "a transfer of its own");
    expect_refused("gpu0 -> {gpu1,null}", four, "'null' in destination list '{gpu1,null}'", "gpu0 -> null via sm");
    expect_refused("gpu0 -> {gpu1,host:pageable}", four, "'host:pageable' in destination list", "host:pinned or host:registered");
    expect_refused("host:pinned -> {gpu0,gpu1} via sm", four, "'host:pinned' cannot be the source of destination list '{gpu0,gpu1}'",
                   "broadcast from a GPU");
    expect_refused("null -> {gpu0,gpu1}", four, "'null' cannot be the source");
    expect_refused("gpu0 -> {gpu1,gpu1}", four, "destination 'gpu1' is named twice", "name each destination once");
    expect_refused("gpu0 -> {host,host:pinned}", four, "destination 'host:pinned' is named twice");
    expect_refused("gpu0 -> {gpu1,gpu*}", four, "destination 'gpu1' is named twice", "wildcard");
    expect_refused("gpu0 -> {gpu[0..3],gpu[0..3],gpu[0..3]}", four, "named twice");
    expect_refused("gpu0 -> {gpu*}", scope_of(gpu_machine(1)), "expands to no destination", "--devices");
    expect_refused("gpu0 -> gpu1,host:pinned via sm", four, "destination 'gpu1,host:pinned' in transfer", "{gpu1,host:pinned} via sm");
    expect_refused("gpu0 -> {gpu1,host:pinned via sm", four, "has no closing '}'", "in braces");
    expect_refused("gpu0 -> {gpu1,,gpu2}", four, "destination list '{gpu1,,gpu2}'", "between every two commas");
    expect_refused("gpu0 -> {}", four, "destination list '{}'");
    expect_refused("{gpu0,gpu1} -> host", four, "'{gpu0,gpu1}' before '->'", "after '->'");
    expect_refused("gpu0 -> {gpu1,gpux}", four, "unknown endpoint 'gpux'");
    expect_refused("gpu0 -> {gpu1,gpu7}", four, "GPU 7 in 'gpu7'");
    expect_refused("gpu0 -> {gpu1,host} 4", four, "below 8 bytes");
    // Sixteen broadcasts are a set's most transfers, as for any transfer.
    expect_refused("gpu* -> {host:pinned,host:registered}", scope_of(gpu_machine(17)), "expands to 17 transfers; a set runs at most 16");
}

TEST_CASE("transfer broadcast: the annotation gives the rate the source was read at") {
    const std::string b = "gpu0->gpu0&host:pinned_sm_64MiB", h2d = "host:pinned->gpu0_ce_64MiB";
    const nlohmann::json one = {{"transfers", nlohmann::json::array({nlohmann::json::object()})}};
    const nlohmann::json two = {{"transfers", nlohmann::json::array({nlohmann::json::object(), nlohmann::json::object()})}};
    std::vector<Result> results{fake_result(b, {{"bandwidth", 100e9}, {"bandwidth_1", 100e9}}, one),
                                fake_result(b + "+" + h2d, {{"bandwidth", 120e9}, {"bandwidth_1", 80e9}, {"bandwidth_2", 40e9}}, two),
                                fake_result(h2d, {{"bandwidth", 50e9}}, one)};
    annotate_transfer_results(results);
    CHECK(results[0].details["transfers"][0]["source_read_bandwidth"].get<double>() == doctest::Approx(50e9));
    CHECK(results[1].details["transfers"][0]["source_read_bandwidth"].get<double>() == doctest::Approx(40e9));
    CHECK_FALSE(results[1].details["transfers"][1].contains("source_read_bandwidth")); // not a broadcast
    CHECK_FALSE(results[2].details["transfers"][0].contains("source_read_bandwidth"));
    // The sentence names a broadcast by every destination.
    const std::string text = results[1].details["diagnosis"].get<std::string>();
    CAPTURE(text);
    CHECK(text.find("#1 gpu0->gpu0&host:pinned") != std::string::npos);
    // Again: the same figures, nothing added twice.
    annotate_transfer_results(results);
    CHECK(results[0].details["transfers"][0]["source_read_bandwidth"].get<double>() == doctest::Approx(50e9));
}

TEST_CASE("transfer broadcast: without a GPU the configuration is skipped with the reason") {
    const Machine m = no_gpu();
    const Registry r = transfer_registry();
    const auto configs = expand_sets(r, {"gpu0 -> {gpu0,host:pinned} via sm 64M"}, m);
    REQUIRE(configs.size() == 1);
    CHECK(configs[0].key() == "transfer/set=gpu0->gpu0&host:pinned_sm_64MiB");
    CHECK(configs[0].scenario->unsupported(m, configs[0].params) == m.cuda_note);
    // A run reads the key's text back as it is (a round process, a report).
    const Params typed = typed_params(configs[0].scenario->info(), configs[0].params.items(), Machine{});
    CHECK(typed.get("set") == configs[0].params.get("set"));
}

TEST_CASE("transfer broadcast command line: the dry run prints the key and paths and bad lists exit 2") {
    testing::CliRun dry = testing::run_cli("run -t 'gpu0 -> {gpu0,host:pinned} via sm 64M' --dry-run");
    CHECK(dry.code == 0);
    CAPTURE(dry.out);
    CHECK(dry.out.find("transfer/set=gpu0->gpu0&host:pinned_sm_64MiB") != std::string::npos);
    CHECK(dry.out.find("memory of GPU 0, host link of GPU 0 (d2h) (x0.5)") != std::string::npos);
    // Both forms name one configuration, with its declared paths.
    dry = testing::run_cli("run -f json --dry-run -t 'gpu0 -> {gpu0, host:pinned} via sm 64M' -t 'gpu0->gpu0&host:pinned_sm_64MiB'");
    REQUIRE(dry.code == 0);
    const auto doc = nlohmann::json::parse(dry.out);
    REQUIRE(doc.size() == 1);
    CHECK(doc[0]["key"] == "transfer/set=gpu0->gpu0&host:pinned_sm_64MiB");
    CHECK(doc[0]["paths"] == nlohmann::json::array({{{"kind", "gpu_memory"}, {"gpu", 0}},
                                                    {{"kind", "host_link"}, {"gpu", 0}, {"direction", "d2h"}, {"traffic", 0.5}}}));
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"run -t 'gpu0 -> {gpu0,host:pinned} via ce 64M'", "'ce' cannot broadcast"},
        {"run -t 'gpu0 -> {gpu0,host:pageable} via sm'", "'host:pageable' in destination list"},
        {"run -t 'gpu0 -> {gpu0,gpu0}' --dry-run", "destination 'gpu0' is named twice"},
        {"run -t 'gpu0 -> {gpu0,file} via sm' --dry-run", "'file' in destination list"},
    };
    for (const auto& [args, words] : bad) {
        CAPTURE(args);
        const testing::CliRun run = testing::run_cli(args);
        CHECK(run.code == 2);
        CAPTURE(run.err);
        CHECK(run.err.rfind("error: ", 0) == 0);
        CHECK(run.err.find(words) != std::string::npos);
        CHECK(run.err.find("\nhint: ") != std::string::npos);
        CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 2);
        CHECK(run.out.empty());
    }
    // A real run: without a GPU the broadcast is in the report as skipped, with the reason.
    Machine here;
    gpu::probe_cuda(here);
    if (here.cuda_available) return; // measured by the GPU case below
    const std::string report = (testing::scratch("broadcast-cli") / "r.json").string();
    const testing::CliRun run = testing::run_cli("run -q --rounds 1 -t 'gpu0 -> {gpu0,host:pinned} via sm 64M' --out " + report);
    CHECK(run.code == 0);
    const auto r = nlohmann::json::parse(testing::slurp(report));
    REQUIRE(r["results"].size() == 1);
    CHECK(r["results"][0]["key"] == "transfer/set=gpu0->gpu0&host:pinned_sm_64MiB");
    CHECK(r["results"][0]["status"] == "skipped");
    CHECK_FALSE(r["results"][0]["reason"].get<std::string>().empty());
}

TEST_CASE("transfer broadcast on a GPU: one read written to every destination and checked") {
    Machine m;
    gpu::probe_cuda(m);
    if (!m.cuda_available) {
        testing::skip("needs a GPU: " + m.cuda_note);
        return;
    }
    m.host_cores = std::max(1u, std::thread::hardware_concurrency());
    for (const DeviceInfo& d : m.devices) m.selected.push_back(d.ordinal);
    // The source GPU's own memory and both host memory kinds; a size with a 7-byte tail; a peer
    // GPU where there is one.
    std::vector<std::string> sets = {"gpu0 -> {gpu0,host:pinned} via sm 16M",
                                      "gpu0 -> {host:registered,gpu0,host:pinned} via sm:8 1048583"};
    if (m.devices.size() >= 2) sets.push_back("gpu0 -> {gpu1,gpu0,host:pinned} via sm 16M");
    const Registry r = transfer_registry();
    RunSettings settings = testing::sampling(1, 3, 5, 2, 0.005);
    settings.rounds = 1;
    Runner runner(m, settings);
    std::vector<Result> results;
    for (const Config& c : expand_sets(r, sets, m)) {
        results.push_back(runner.run_one(c));
        const Result& res = results.back();
        CAPTURE(res.key);
        CAPTURE(res.reason);
        REQUIRE(runner.fatal().empty());
        if (res.status == Status::skipped && res.reason.find("no peer access") != std::string::npos) continue;
        REQUIRE(res.status == Status::ok); // the data checked: every destination holds the source's bytes
        const auto& t = res.details["transfers"][0];
        const TransferSet set = parse_set(res.params.get("set"));
        const std::size_t n = set.transfers[0].destinations().size();
        CHECK(t["destinations"].size() == n);
        CHECK(t["bytes_per_op"].get<std::uint64_t>() == set.transfers[0].size * n);
        CHECK(t["source_bytes_per_op"].get<std::uint64_t>() == set.transfers[0].size);
        CHECK(res.metrics[0].stats.median > 0);
        CHECK(res.metrics[0].stats.median == doctest::Approx(res.metrics[1].stats.median));
    }
    annotate_transfer_results(results);
    for (const Result& res : results)
        if (res.status == Status::ok)
            CHECK(res.details["transfers"][0]["source_read_bandwidth"].get<double>() > 0);
}

} // TEST_SUITE
