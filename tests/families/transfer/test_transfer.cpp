// Transfer family without a GPU: the language (every example of docs/TRANSFERS.md, the canonical
// text's round trip, every kind of bad input with its one line), the wildcards expanded against
// recorded machines (../shared/fixtures/topology/ and tests/data/topology/), the set and its parts
// alone, the declared paths, the annotation of what sharing cost on made-up results and on real
// ones, the pre-flight's claim, host-only sets measured through the runner (the concurrent
// machinery itself: threads started together, each kept busy until every timed part is over, data
// checked), GPU sets skipped with the reason, and the command line (-t, --dry-run, exit 2).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "families/builtin.hpp"
#include "families/transfer/spec.hpp"
#include "families/transfer/transfer.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/runner.hpp"
#include "topology/topology.hpp"
#include "../../test_support.hpp"
#include "transfer_test_support.hpp"

using namespace interopbench;
using namespace interopbench::transfer;
using namespace interopbench::transfer::testing_support;
namespace fs = std::filesystem;

namespace {

const std::string k_shared = INTEROPBENCH_SOURCE_DIR "/../shared/fixtures/topology/";
const std::string k_data = INTEROPBENCH_SOURCE_DIR "/tests/data/topology/";

/// The machine a recorded topology describes: its GPUs in order as CUDA ordinals.
Machine machine_of(const Topology& t) {
    Machine m = gpu_machine(t.gpus.size());
    for (std::size_t i = 0; i < t.gpus.size(); ++i) m.devices[i].pci_bus_id = t.gpus[i].pci_bus_id;
    return m;
}

/// A topology document where GPU 0's host link is PCIe Gen5 x16 (63.015 GB/s per direction).
nlohmann::json gen5_topology() {
    return {{"gpus", nlohmann::json::array({{{"cuda_ordinal", 0},
                                              {"index", 0},
                                              {"host_path", {{"bandwidth", 63.015e9}, {"class", "PHB"}}},
                                              {"pcie", {{"label", "Gen5 x16"}}}}})}};
}
nlohmann::json one_device() { return nlohmann::json::array({{{"ordinal", 0}, {"selected", true}}}); }

/// The binary's exit code, its output in `out` and `err` (testing::run_cli), with no GPU
/// visible: the expansions and skips it checks are those of a machine without one, here and on
/// a GPU machine alike.
int run_cli(const std::string& args, std::string* out, std::string* err) {
    auto r = testing::run_cli(args, "CUDA_VISIBLE_DEVICES=");
    *out = std::move(r.out);
    *err = std::move(r.err);
    return r.code;
}

} // namespace

TEST_SUITE("transfer") {

TEST_CASE("transfer language: every example parses to its canonical text, and the text reads back the same") {
    testing::ScratchDir dir("transfer");
    const std::string d = dir.dir.string();
    Scope four = scope_of(gpu_machine(4), {d});
    const std::vector<std::pair<std::string, std::vector<std::string>>> examples = {
        {"host:pinned -> gpu0 via ce 1G", {"host:pinned->gpu0_ce_1GiB"}},
        {"host:pinned@numa0 -> gpu0 via ce 1G", {"host:pinned@numa0->gpu0_ce_1GiB"}},
        {"gpu0 -> gpu1 via sm:16 256M", {"gpu0->gpu1_sm:16_256MiB"}},
        {"file:" + d + "(warm) -> gpu0 via pipelined:threads=8 4G", {"file:warm->gpu0_pipelined:threads=8_4GiB"}},
        {"file:" + d + " (cold) -> gpu0 via pipelined 4G", {"file:cold->gpu0_pipelined_4GiB"}},
        {"gpu0 -> file:" + d + " via pinned 1G", {"gpu0->file_pinned_1GiB"}},
        {"gpu[0..3] -> host:pageable via ce 512M",
         {"gpu0->host:pageable_ce_512MiB", "gpu1->host:pageable_ce_512MiB", "gpu2->host:pageable_ce_512MiB",
          "gpu3->host:pageable_ce_512MiB"}},
        {"gpu0 -> gpu* via ce 1G", {"gpu0->gpu1_ce_1GiB", "gpu0->gpu2_ce_1GiB", "gpu0->gpu3_ce_1GiB"}},
        {"gpu* -> null via sm", {"gpu0->null_sm_256MiB", "gpu1->null_sm_256MiB", "gpu2->null_sm_256MiB", "gpu3->null_sm_256MiB"}},
        {"null -> gpu2 via ce 64M", {"null->gpu2_ce_64MiB"}},
        {"host:pageable -> host:registered via cpu:8 1G", {"host:pageable->host:registered_cpu:8_1GiB"}},
        {"host:wc -> gpu0 via sm 64M", {"host:wc->gpu0_sm_64MiB"}},
        {"gpu0 -> host:wc@numa0 via ce 64M", {"gpu0->host:wc@numa0_ce_64MiB"}},
        {"file(warm) -> host:pinned via read:threads=2:chunk=4M 256M", {"file:warm->host:pinned_read:threads=2:chunk=4MiB_256MiB"}},
        {"gpu0 -> gpu1 via ce:pull 1G", {"gpu0->gpu1_ce:pull_1GiB"}},
        {"gpu[0,2] -> gpu3 via sm:8:pull", {"gpu0->gpu3_sm:8:pull_256MiB", "gpu2->gpu3_sm:8:pull_256MiB"}},
        // Defaults: pinned host memory, the copy engine, 256 MiB, a warm file read by the pipeline.
        {"host -> gpu1", {"host:pinned->gpu1_ce_256MiB"}},
        {"file -> gpu0", {"file:warm->gpu0_pipelined_256MiB"}},
        {"gpu0 -> file", {"gpu0->file_pipelined_256MiB"}},
        // A set: transfers joined by ';' run at once.
        {"host:pinned -> gpu0 via ce 1G; file(cold) -> gpu0 via pipelined 1G",
         {"host:pinned->gpu0_ce_1GiB", "file:cold->gpu0_pipelined_1GiB"}},
    };
    for (const auto& [spec, want] : examples) {
        CAPTURE(spec);
        const TransferSet set = parse_set(spec, four);
        CHECK(texts(set) == want);
        // The canonical text and the words for people read back to the same set.
        CHECK(parse_set(set.text()).text() == set.text());
        CHECK(parse_set(set.words(), four).text() == set.text());
        // Only safe characters in a result key: no blank, slash, comma, quote, bracket or ';'.
        CHECK(set.text().find_first_of(" /,;'\"()[]*") == std::string::npos);
    }
    // The canonical text of a set joins its transfers with '+'.
    CHECK(parse_set("host -> gpu0 1G; gpu0 -> host 1G", four).text() == "host:pinned->gpu0_ce_1GiB+gpu0->host:pinned_ce_1GiB");
    // A storage directory named by its place among several --storage-dir: fileN.
    testing::ScratchDir other("transfer");
    const Scope two_dirs = scope_of(gpu_machine(1), {d, other.dir.string()});
    CHECK(parse_set("file:" + other.dir.string() + "(cold) -> gpu0", two_dirs).text() == "file1:cold->gpu0_pipelined_256MiB");
    CHECK(parse_set("file1:cold->gpu0_pipelined_256MiB", two_dirs).transfers[0].src.dir == 1);
    CHECK(parse_set("file:warm -> gpu0", two_dirs).transfers[0].src.dir == -1); // every directory, striped
}

TEST_CASE("transfer language: each bad input is one line naming the token, with the fix") {
    testing::ScratchDir dir("transfer");
    const std::string d = dir.dir.string();
    const Scope one = scope_of(gpu_machine(1), {d});
    const Scope eight = scope_of(gpu_machine(8), {d});
    expect_refused("gpu7 -> host:pinned via ce 1G", one, "GPU 7 in 'gpu7' of transfer 'gpu7 -> host:pinned via ce 1G' does not exist: this machine has 1 GPU", "use gpu0");
    expect_refused("host -> gpu[0..9]", eight, "GPU 9 in 'gpu[0..9]'", "gpu0 to gpu7");
    expect_refused("host -> gpu0 via ce 0", one, "invalid size '0'");
    expect_refused("host -> gpu0 via ce -1G", one, "invalid size");
    expect_refused("gpuu0 -> host", one, "unknown endpoint 'gpuu0' in transfer 'gpuu0 -> host'; did you mean 'gpu0'?");
    expect_refused("hots:pinned -> gpu0", one, "did you mean 'host:pinned'?");
    expect_refused("disk -> gpu0", one, "unknown endpoint 'disk'", "host[:pageable");
    expect_refused("host:pined -> gpu0", one, "unknown host memory kind 'pined' in transfer 'host:pined -> gpu0'; did you mean 'pinned'?");
    // Write-combined memory is 'wc': '_' separates the words of a canonical transfer.
    expect_refused("host:write_combined -> gpu0", one, "unknown host memory kind 'write_combined'", "host:wc (cudaHostAlloc write-combined");
    expect_refused("host -> gpu0 via cee", one, "unknown executor 'cee' in transfer 'host -> gpu0 via cee'; did you mean 'ce'?");
    expect_refused("host -> gpu0 via sm:blcks=4", one, "unknown option 'blcks=4' of executor 'sm'", "sm takes: blocks, pull");
    expect_refused("host -> gpu0 via sm:0", one, "invalid blocks '0'");
    expect_refused("host -> gpu0 fast", one, "unknown word 'fast'");
    expect_refused("host -> gpu0 via", one, "'via' ends transfer");
    expect_refused("host gpu0", one, "has no '->'");
    expect_refused("gpu0->gpu0->gpu1", eight, "more than one '->'", "TransferBench");
    expect_refused("", one, "empty transfer set");
    expect_refused("host -> gpu0;; gpu0 -> host", one, "empty transfer");
    expect_refused("host -> gpu0 1G 2G", one, "two sizes");
    expect_refused("host -> gpu0 via ce via sm", one, "two executors");
    expect_refused("host -> gpu0 4B", one, "below 8 bytes");
    expect_refused("gpu0 -> null via sm 12", one, "not a multiple of 8 bytes");
    // Executors that cannot move between the two endpoints, with the ones that can.
    expect_refused("gpu* -> null via ce", eight, "'ce' cannot move GPU memory to null", "via sm");
    expect_refused("host -> gpu0 via cpu:4", one, "'cpu' cannot move host memory to GPU memory", "use via ce or via sm");
    expect_refused("host:pageable -> gpu0 via sm", one, "cannot address pageable host memory", "host:pinned");
    expect_refused("host -> file", one, "nothing moves host memory to a file", "file -> gpu0");
    expect_refused("null -> null", one, "nothing moves null to null");
    expect_refused("host -> gpu0 via ce:pull", one, "applies to GPU-to-GPU copies only");
    expect_refused("gpu0 -> gpu0 via sm:pull", one, "needs two GPUs");
    // File endpoints: a directory that is not one, or not the run's, and cache states where they mean nothing.
    const fs::path plain = dir.dir / "plain-file";
    std::ofstream(plain) << "x";
    expect_refused("file:" + plain.string() + "(warm) -> gpu0", one, "is not a directory");
    expect_refused("file:" + d + "/missing(warm) -> gpu0", one, "does not exist");
    testing::ScratchDir elsewhere("transfer");
    expect_refused("file:" + elsewhere.dir.string() + "(warm) -> gpu0", one, "is not a storage directory of this run",
                   "add --storage-dir " + elsewhere.dir.string());
    expect_refused("gpu0 -> file(cold)", one, "a file written has no cache state");
    expect_refused("file(lukewarm) -> gpu0", one, "unknown cache state 'lukewarm'");
    expect_refused("file3 -> gpu0", one, "names storage directory 3: the run has 1");
    // Selectors.
    expect_refused("host -> gpu[3..1]", eight, "runs backwards", "gpu[1..3]");
    expect_refused("host -> gpux", one, "unknown endpoint 'gpux'");
    expect_refused("host -> gpu1x", one, "invalid GPU 'gpu1x'");
    expect_refused("host:pinned@numa -> gpu0", one, "invalid NUMA node");
    expect_refused("gpu0 -> gpu*", one, "expands to no transfer");
    expect_refused("gpu* -> gpu*", eight, "expands to 56 transfers; a set runs at most 16", "--devices");
}

TEST_CASE("transfer wildcards expanded against recorded machines") {
    struct Fixture {
        std::string path;
        std::size_t gpus;
    };
    const std::vector<Fixture> machines = {{k_shared + "power8-4gpu-nvlink.xml", 4},
                                           {k_shared + "2socket-pci-wholeio.xml", 3},
                                           {k_data + "h200-2gpu-nvlink.xml", 2},
                                           {k_data + "switch-tree-6gpu.xml", 6}};
    std::size_t checked = 0;
    for (const auto& f : machines) {
        CAPTURE(f.path);
        if (!testing::have_fixture(f.path)) continue;
        const Topology t = load_topology_xml(f.path);
        REQUIRE(t.gpus.size() == f.gpus);
        const Machine m = machine_of(t);
        const Scope s = scope_of(m);
        const std::size_t n = f.gpus;
        CHECK(parse_set("host:pinned -> gpu* via ce 1G", s).transfers.size() == n);
        CHECK(parse_set("gpu0 -> gpu* via ce 1G", s).transfers.size() == n - 1); // one to all: never to itself
        CHECK(parse_set("gpu* -> gpu0", s).transfers.size() == n - 1);           // all to one
        if (n * (n - 1) <= k_max_transfers) CHECK(parse_set("gpu* -> gpu*", s).transfers.size() == n * (n - 1));
        else expect_refused("gpu* -> gpu*", s, "a set runs at most 16");
        CHECK(parse_set(fmt::format("gpu[0..{}] -> host:pageable via ce 512M", n - 1), s).transfers.size() == n);
        expect_refused(fmt::format("gpu{} -> host", n), s, fmt::format("this machine has {} GPUs", n));
        // Every transfer once, in order: the GPUs of the machine.
        const TransferSet all = parse_set("host -> gpu*", s);
        for (std::size_t i = 0; i < n; ++i) CHECK(all.transfers[i].dst.gpu == static_cast<int>(i));
        // The run's selection (--devices) is what a wildcard means.
        Machine picked = m;
        picked.selected = {static_cast<int>(n - 1), 0};
        CHECK(texts(parse_set("host -> gpu* 1G", scope_of(picked))) ==
              std::vector<std::string>{fmt::format("host:pinned->gpu{}_ce_1GiB", n - 1), "host:pinned->gpu0_ce_1GiB"});
        ++checked;
    }
    CHECK(checked >= 2); // the project's own fixtures at least
    // Without a GPU (the configuration is skipped with the reason) gpu* stands for gpu0, or for
    // gpu0 and gpu1 between GPUs, and ordinals are not checked.
    const Scope none = scope_of(no_gpu());
    CHECK(texts(parse_set("host -> gpu* 1G", none)) == std::vector<std::string>{"host:pinned->gpu0_ce_1GiB"});
    CHECK(texts(parse_set("gpu0 -> gpu* 1G", none)) == std::vector<std::string>{"gpu0->gpu1_ce_1GiB"});
    CHECK(texts(parse_set("gpu* -> gpu* 1G", none)) == std::vector<std::string>{"gpu0->gpu1_ce_1GiB", "gpu1->gpu0_ce_1GiB"});
    CHECK(parse_set("gpu7 -> host", none).transfers[0].src.gpu == 7);
}

TEST_CASE("transfer sets: a written set expands to the set and each transfer alone, its canonical text to itself") {
    const Scope s = scope_of(gpu_machine(2));
    const auto v = expand("host -> gpu0 1G; gpu0 -> host 1G; host -> gpu0 1G", s, true);
    CHECK(v == std::vector<std::string>{"host:pinned->gpu0_ce_1GiB+gpu0->host:pinned_ce_1GiB+host:pinned->gpu0_ce_1GiB",
                                        "host:pinned->gpu0_ce_1GiB", "gpu0->host:pinned_ce_1GiB"});
    CHECK(expand("host -> gpu0 1G; gpu0 -> host 1G", s, false).size() == 1);   // --no-alone
    CHECK(expand("host:pinned->gpu0_ce_1GiB+gpu0->host:pinned_ce_1GiB", s, true).size() == 1); // as --only gives it
    CHECK(expand("host -> gpu* 1G", s, true).size() == 3);

    // Through the plan: one -t is one value of the `set` axis; the expansion dedupes.
    const Registry r = transfer_registry();
    const auto configs = expand_sets(r, {"host -> gpu0 1G; gpu0 -> host 1G", "host:pinned -> gpu0 via ce 1G"}, gpu_machine(1));
    CHECK(keys(configs) == std::vector<std::string>{"transfer/set=host:pinned->gpu0_ce_1GiB+gpu0->host:pinned_ce_1GiB",
                                                    "transfer/set=host:pinned->gpu0_ce_1GiB",
                                                    "transfer/set=gpu0->host:pinned_ce_1GiB"});
    CHECK(keys(expand_sets(transfer_registry({}, false), {"host -> gpu0 1G; gpu0 -> host 1G"}, gpu_machine(1))).size() == 1);
    // A bad set in a plan is the usage error itself (exit 2 from the command line).
    CHECK_THROWS_AS(expand_sets(r, {"gpu3 -> host"}, gpu_machine(1)), UsageError);
    // A round process and a report read the key's text back as it is.
    const Config& c = configs.front();
    const Params typed = typed_params(c.scenario->info(), c.params.items(), Machine{});
    CHECK(typed.get("set") == c.params.get("set"));
}

TEST_CASE("transfer paths: declared paths of transfers and of sets") {
    const Scope s = scope_of(gpu_machine(4));
    const auto ids = [](const std::vector<PathUse>& paths) {
        std::vector<std::string> out;
        for (const PathUse& p : paths) out.push_back(p.id() + (p.traffic != 1 ? fmt::format("x{:g}", p.traffic) : ""));
        return out;
    };
    const auto one = [&](const std::string& spec) { return ids(parse_set(spec, s).transfers.at(0).paths()); };
    using V = std::vector<std::string>;
    CHECK(one("host -> gpu2") == V{"host_link:2:h2d"});
    CHECK(one("gpu1 -> host:pageable") == V{"host_link:1:d2h"});
    CHECK(one("gpu0 -> gpu3 via sm:16") == V{"peer_link:0>3"});
    CHECK(one("gpu1 -> gpu1") == V{"gpu_memory:1x2"});
    CHECK(one("host -> host:pageable via cpu") == V{"host_memoryx2"});
    CHECK(one("file(warm) -> gpu0") == V{"page_cache", "host_link:0:h2d"});
    CHECK(one("file(cold) -> gpu0") == V{"storage", "host_link:0:h2d"});
    CHECK(one("gpu3 -> file via pinned") == V{"host_link:3:d2h", "storage"});
    CHECK(one("file(cold) -> host via read") == V{"storage"});
    CHECK(one("gpu2 -> null via sm") == V{"gpu_memory:2"});
    CHECK(one("null -> gpu2") == V{"gpu_memory:2"});
    CHECK(one("null -> host:pageable via cpu") == V{"host_memory"});
    // A set's whole: the paths every transfer crosses; one GPU's link both ways; none when disjoint.
    const auto set = [&](const std::string& spec) { return ids(set_paths(parse_set(spec, s))); };
    CHECK(set("host -> gpu0 1G; file(warm) -> gpu0 1G") == V{"host_link:0:h2d"});
    CHECK(set("host -> gpu0 1G; file(cold) -> gpu0 1G; host -> gpu0 64M") == V{"host_link:0:h2d"});
    CHECK(set("host -> gpu0 1G; gpu0 -> host 1G") == V{"host_link:0:both"});
    CHECK(set("gpu0 -> gpu1; gpu2 -> gpu3").empty());
    CHECK(set("host -> gpu*") == V{"host_link:0:h2dx0.25", "host_link:1:h2dx0.25", "host_link:2:h2dx0.25", "host_link:3:h2dx0.25"});
    CHECK(set("gpu[0,1] -> host").size() == 2);
    CHECK(set("host -> gpu0; gpu1 -> host").empty()); // two ways on two links: no one figure
    CHECK(set("host -> gpu0; host -> gpu1; host -> gpu1").empty());
    CHECK(set("file(cold) -> gpu0; file(cold) -> gpu1") == V{"storage"});
    CHECK(set("gpu0 -> gpu0; gpu0 -> null via sm") == V{"gpu_memory:0"}); // the least traffic of the two
    // Through the scenario (what declare_paths and the dry run ask).
    const Registry r = transfer_registry();
    const Scenario* sc = r.find("transfer");
    REQUIRE(sc != nullptr);
    const Params both(std::vector<std::pair<std::string, std::string>>{{"set", "host:pinned->gpu0_ce_1GiB+gpu0->host:pinned_ce_1GiB"}});
    CHECK(ids(sc->paths(both)) == V{"host_link:0:both"});
    CHECK(share_key(parse_set("file(cold) -> gpu0", scope_of(gpu_machine(1), {"/a", "/b"})).transfers[0], PathUse{PathKind::storage}) ==
          "storage@dir-1");
}

TEST_CASE("transfer annotation: which shared path limited whom, and what sharing cost") {
    const std::string h2d = "host:pinned->gpu0_ce_1GiB", warm = "file:warm->gpu0_pipelined_1GiB";
    std::vector<Result> results{
        fake_result(h2d + "+" + warm, {{"bandwidth", 57.0e9}, {"bandwidth_1", 30.2e9}, {"bandwidth_2", 27.1e9}}),
        fake_result(h2d, {{"bandwidth", 55.2e9}}),
        fake_result(warm, {{"bandwidth", 30.1e9}}),
    };
    // As after a run: paths declared, the machine's limits, the annotation, the limits again.
    limit_results(results, gen5_topology(), one_device(), transfer_registry());
    const Result& set = results[0];
    REQUIRE(set.details.contains("diagnosis"));
    const std::string text = set.details["diagnosis"].get<std::string>();
    CAPTURE(text);
    CHECK(text.find("the host link of GPU 0 (h2d) limited #1 and #2: #1 host:pinned->gpu0 48% and #2 file:warm->gpu0 43% of its "
                    "63.0 GB/s (PHB Gen5 x16, from the topology)") != std::string::npos);
    CHECK(text.find("alone 55.2 and 30.1 GB/s, together 30.2 and 27.1 GB/s: sharing cost 28.0 GB/s") != std::string::npos);
    const auto& sharing = set.details["sharing"];
    CHECK(sharing["cost"].get<double>() == doctest::Approx(28.0e9));
    CHECK(sharing["transfers"][0]["alone_key"] == "transfer/set=" + h2d);
    CHECK(sharing["transfers"][0]["limited_by"] == "host_link:0:h2d");
    CHECK(sharing["transfers"][1]["slowed"] == true);
    CHECK(sharing["shared_paths"].size() == 1);
    CHECK(sharing["shared_paths"][0]["utilization"].get<double>() == doctest::Approx(57.3e9 / 63.015e9).epsilon(1e-3));
    // The set's whole is set against the link too: 57.0 of 63.0 GB/s.
    CHECK(set.details["efficiency"].get<double>() == doctest::Approx(57.0e9 / 63.015e9).epsilon(1e-3));
    // The alone results carry no sharing.
    CHECK_FALSE(results[1].details.contains("diagnosis"));

    // Two cold reads share the drive, which has no known limit: the most one moved alone stands in.
    const std::string c0 = "file:cold->gpu0_pipelined_1GiB", c1 = "file:cold->host:pinned_read_1GiB";
    std::vector<Result> cold{fake_result(c0 + "+" + c1, {{"bandwidth", 6e9}, {"bandwidth_1", 3.5e9}, {"bandwidth_2", 2.5e9}}),
                             fake_result(c0, {{"bandwidth", 6.5e9}}), fake_result(c1, {{"bandwidth", 6.2e9}})};
    // A ceiling measured for another result is that result's own, not the drive's limit.
    Result other = fake_result("x", {{"bandwidth", 1e9}});
    other.scenario = "another_scenario";
    other.details = {{"paths", nlohmann::json::array({{{"kind", "storage"}}})},
                     {"measured_limits", nlohmann::json::array({{{"path", "storage"}, {"bandwidth", 1e9}, {"source", "x"}}})}};
    cold.push_back(other);
    limit_results(cold, gen5_topology(), one_device(), transfer_registry());
    REQUIRE(cold.back().details["paths"][0].value("measured", false));
    const std::string cold_text = cold[0].details["diagnosis"].get<std::string>();
    CAPTURE(cold_text);
    CHECK(cold_text.find("the storage limited #1 and #2: #1 file:cold->gpu0 54% and #2 file:cold->host:pinned 38% of the most one of "
                         "them moved on it alone (6.5 GB/s; it has no known limit)") != std::string::npos);
    CHECK(cold_text.find("sharing cost 6.7 GB/s") != std::string::npos);

    // Nothing shared, nothing slowed; an alone figure missing is said.
    std::vector<Result> apart{fake_result("gpu0->host:pinned_ce_1GiB+host:pageable->host:pageable_cpu_1GiB",
                                          {{"bandwidth", 30e9}, {"bandwidth_1", 25e9}, {"bandwidth_2", 5e9}}),
                              fake_result("gpu0->host:pinned_ce_1GiB", {{"bandwidth", 25.2e9}})};
    limit_results(apart, gen5_topology(), one_device(), transfer_registry());
    const std::string apart_text = apart[0].details["diagnosis"].get<std::string>();
    CAPTURE(apart_text);
    CHECK(apart_text.find("no declared path is shared") == 0);
    CHECK(apart_text.find("no alone figure for #2 host:pageable->host:pageable") != std::string::npos);
    // A slowed transfer with no shared path is named as such.
    std::vector<Result> slowed{fake_result("gpu0->host:pinned_ce_1GiB+host:pageable->host:pageable_cpu_1GiB",
                                           {{"bandwidth", 30e9}, {"bandwidth_1", 20e9}, {"bandwidth_2", 5e9}}),
                               fake_result("gpu0->host:pinned_ce_1GiB", {{"bandwidth", 25e9}})};
    limit_results(slowed, gen5_topology(), one_device(), transfer_registry());
    CHECK(slowed[0].details["diagnosis"].get<std::string>().find("#1 gpu0->host:pinned slowed without a declared path shared") == 0);
}

TEST_CASE("transfer pre-flight: files read once per size, copy and directory, plus the most written at once") {
    const Registry r = transfer_registry();
    const Machine m = gpu_machine(2);
    CHECK_FALSE(site_claim(expand_sets(r, {"host -> gpu0 1G; gpu0 -> gpu1"}, m), 1));
    const auto claim = site_claim(expand_sets(r, {"file(warm) -> gpu0 1G; file(cold) -> gpu1 1G; gpu0 -> file 512M",
                                                  "file(cold) -> gpu0 64M"},
                                              m),
                                  1);
    REQUIRE(claim);
    CHECK(claim->read_sizes == std::set<std::uint64_t>{1ull << 30, 64ull << 20}); // copy 0 of each size
    CHECK(claim->bytes == (1ull << 30) + (512ull << 20));                         // copy 1 of 1G, and the write
}

TEST_CASE("transfer sets without a GPU: GPU sets skip with the reason, host-only sets are measured together and alone") {
    const Machine m = no_gpu();
    testing::ScratchDir dir("transfer");
    const Registry r = transfer_registry(dir.dir.string());
    for (const std::string spec : {"host:pinned -> gpu0 via ce 16M", "gpu0 -> gpu1 via sm 16M", "host:pinned -> host:pageable via cpu 16M"}) {
        CAPTURE(spec);
        const auto configs = expand_sets(r, {spec}, m);
        REQUIRE(configs.size() == 1);
        CHECK(configs[0].scenario->unsupported(m, configs[0].params) == m.cuda_note);
    }
    // Two CPU transfers at once and each alone, through the runner: threads started together,
    // each kept busy until the other's timed part is over, the data checked.
    const RunSettings settings = testing::sampling(1, 3, 3, 5, 0.005);
    const auto configs = expand_sets(r, {"host:pageable -> host:pageable via cpu:2 8M; host:pageable -> null via cpu 8M; "
                                         "null -> host:pageable via cpu:1 8M; file(warm) -> host:pageable via read:threads=2:chunk=1M 8M"},
                                     m);
    REQUIRE(configs.size() == 5);
    Runner runner(m, settings);
    std::vector<Result> results;
    for (const Config& c : configs) {
        results.push_back(runner.run_one(c));
        const Result& res = results.back();
        CAPTURE(res.key);
        CAPTURE(res.reason);
        REQUIRE(res.status == Status::ok);
        CHECK(res.metrics[0].stats.n == 3);
        CHECK(res.metrics[0].stats.median > 0);
        const std::size_t n = res.details["transfers"].size();
        for (std::size_t i = 1; i <= n; ++i) CHECK(res.metrics[i].stats.median > 0);
        // Each sample's bandwidth is the sum of its transfers' bandwidths.
        for (std::size_t k = 0; k < res.metrics[0].samples.size(); ++k) {
            double sum = 0;
            for (std::size_t i = 1; i <= n; ++i) sum += res.metrics[i].samples[k];
            CHECK(res.metrics[0].samples[k] == doctest::Approx(sum));
        }
        for (std::size_t i = n + 1; i < res.metrics.size(); ++i) CHECK(res.metrics[i].stats.n == 0); // not in this set
    }
    CHECK(results[0].details["concurrent"] == 4);
    CHECK(results[0].details["transfers"][3]["cache"] == "warm");
    limit_results(results, nlohmann::json::object(), nlohmann::json::array(), r);
    const std::string text = results[0].details["diagnosis"].get<std::string>();
    CAPTURE(text);
    CHECK(text.find("alone ") != std::string::npos);
    CHECK(text.find("sharing cost") != std::string::npos);
    CHECK(results[0].details["sharing"]["transfers"].size() == 4);
}

TEST_CASE("transfer command line: -t runs sets, --dry-run prints the expansion and paths, bad sets exit 2 with one line") {
    std::string out, err;
    CHECK(run_cli("run -t 'host:pinned -> gpu0 via ce 1G; gpu0 -> host:pinned via ce 1G' --dry-run", &out, &err) == 0);
    CAPTURE(out);
    CHECK(out.find("transfer/set=host:pinned->gpu0_ce_1GiB+gpu0->host:pinned_ce_1GiB") != std::string::npos);
    CHECK(out.find("host link of GPU 0 (both)") != std::string::npos);
    CHECK(out.find("transfer/set=gpu0->host:pinned_ce_1GiB") != std::string::npos);
    CHECK(out.find("host link of GPU 0 (d2h)") != std::string::npos);
    // The expansion of the examples, as JSON.
    CHECK(run_cli("run -f json --dry-run -t 'gpu[0..3] -> host:pageable via ce 512M' -t 'gpu* -> null via sm' "
                  "-t 'file(cold) -> gpu0 via pipelined:threads=8 4G; host:pinned@numa0 -> gpu0 1G'",
                  &out, &err) == 0);
    const auto doc = nlohmann::json::parse(out);
    std::vector<std::string> got;
    for (const auto& e : doc) got.push_back(e["key"].get<std::string>());
    CHECK(got == std::vector<std::string>{
                     "transfer/set=gpu0->host:pageable_ce_512MiB+gpu1->host:pageable_ce_512MiB+gpu2->host:pageable_ce_512MiB+"
                     "gpu3->host:pageable_ce_512MiB",
                     "transfer/set=gpu0->host:pageable_ce_512MiB", "transfer/set=gpu1->host:pageable_ce_512MiB",
                     "transfer/set=gpu2->host:pageable_ce_512MiB", "transfer/set=gpu3->host:pageable_ce_512MiB",
                     "transfer/set=gpu0->null_sm_256MiB", // no GPU here: gpu* stands for gpu0
                     "transfer/set=file:cold->gpu0_pipelined:threads=8_4GiB+host:pinned@numa0->gpu0_ce_1GiB",
                     "transfer/set=file:cold->gpu0_pipelined:threads=8_4GiB", "transfer/set=host:pinned@numa0->gpu0_ce_1GiB"});
    CHECK(doc[7]["paths"] == nlohmann::json::array({{{"kind", "storage"}}, {{"kind", "host_link"}, {"gpu", 0}, {"direction", "h2d"}}}));
    // Every example of docs/TRANSFERS.md through the dry run, a file endpoint naming the run's
    // storage directory (no GPU here: ordinals unchecked, gpu* is gpu0, or gpu0 and gpu1 between GPUs).
    testing::ScratchDir sd("transfer");
    const std::string d = sd.dir.string();
    std::string dry = "run -f json --dry-run --no-alone --storage-dir '" + d + "'";
    for (const std::string& t : std::vector<std::string>{"host:pinned -> gpu0 via ce 1G", "host:pinned@numa0 -> gpu0 via ce 1G", "gpu0 -> gpu1 via sm:16 256M",
                                 "file:" + d + "(warm) -> gpu0 via pipelined:threads=8 4G", "gpu0 -> file:" + d + " via pinned 1G",
                                 "gpu[0..3] -> host:pageable via ce 512M", "gpu0 -> gpu* via ce 1G", "gpu* -> null via sm",
                                 "null -> gpu0 via ce", "host:pageable -> host:pageable via cpu:8 1G"})
        dry += " -t '" + t + "'";
    CHECK(run_cli(dry, &out, &err) == 0);
    CAPTURE(err);
    std::vector<std::string> examples;
    for (const auto& e : nlohmann::json::parse(out)) examples.push_back(e["key"].get<std::string>().substr(13));
    CHECK(examples == std::vector<std::string>{
                          "host:pinned->gpu0_ce_1GiB", "host:pinned@numa0->gpu0_ce_1GiB", "gpu0->gpu1_sm:16_256MiB",
                          "file:warm->gpu0_pipelined:threads=8_4GiB", "gpu0->file_pinned_1GiB",
                          "gpu0->host:pageable_ce_512MiB+gpu1->host:pageable_ce_512MiB+gpu2->host:pageable_ce_512MiB+"
                          "gpu3->host:pageable_ce_512MiB",
                          "gpu0->gpu1_ce_1GiB", "gpu0->null_sm_256MiB", "null->gpu0_ce_256MiB",
                          "host:pageable->host:pageable_cpu:8_1GiB"});
    // A result key re-measures exactly its set: --only takes the canonical text, colons and all.
    CHECK(run_cli("run --dry-run -f json --only 'transfer/set=host:pinned->gpu0_ce_1GiB+file:warm->gpu0_pipelined_1GiB'", &out,
                  &err) == 0);
    CAPTURE(err);
    const auto only = nlohmann::json::parse(out);
    REQUIRE(only.size() == 1);
    CHECK(only[0]["key"] == "transfer/set=host:pinned->gpu0_ce_1GiB+file:warm->gpu0_pipelined_1GiB");
    // Bad sets: exit 2, an error line naming the token and a hint.
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"run -t 'gpuu0 -> host'", "did you mean 'gpu0'?"},
        {"run -t 'host -> gpu0 via ce 0'", "invalid size '0'"},
        {"run -t 'host -> gpu0 via warp'", "unknown executor 'warp'"},
        {"run -t 'file:/etc/passwd(warm) -> gpu0'", "not a directory"},
        {"run -t 'gpu* -> null via ce' --dry-run", "'ce' cannot move GPU memory to null"},
        {"run --only transfer/set=x -t 'host -> gpu0'", "--only and --transfer"},
    };
    for (const auto& [args, words] : bad) {
        CAPTURE(args);
        CHECK(run_cli(args, &out, &err) == 2);
        CAPTURE(err);
        CHECK(err.rfind("error: ", 0) == 0);
        CHECK(err.find(words) != std::string::npos);
        CHECK(err.find("\nhint: ") != std::string::npos);
        CHECK(std::count(err.begin(), err.end(), '\n') == 2);
        CHECK(out.empty());
    }
    // Without a GPU a GPU set is measured as skipped, with the reason, in the report.
    testing::ScratchDir dir("transfer");
    const std::string report = (dir.dir / "r.json").string();
    CHECK(run_cli("run -q --rounds 1 -t 'host:pinned -> gpu0 via ce 16M' --out " + report, &out, &err) == 0);
    const auto r = nlohmann::json::parse(testing::slurp(report));
    REQUIRE(r["results"].size() == 1);
    CHECK(r["results"][0]["status"] == "skipped");
    CHECK_FALSE(r["results"][0]["reason"].get<std::string>().empty());
}

} // TEST_SUITE
