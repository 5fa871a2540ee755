#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>

#include <sys/wait.h>

#include "fake_scenario.hpp"
#include "families/builtin.hpp"
#include "interopbench/errors.hpp"
#include "presentation/output.hpp"
#include "interopbench/report.hpp"
#include "schema_check.hpp"
#include "test_support.hpp"

using namespace interopbench;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
    fs::path d = fs::temp_directory_path() / ("interopbench_test_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
}

RunRecord sample_run() {
    Registry r;
    r.add(std::make_unique<testing::FakeScenario>("fake_ok", testing::FakeBehaviour{}));
    Machine m;
    RunRecord rec;
    rec.argv = {"interopbench", "run"};
    rec.plan.entries = {{"fake_ok", {{"size", {"1K"}}}}};
    SessionOptions options;
    options.handle_signals = false;
    const auto configs = expand_plan(r, rec.plan, m);
    return run_session(configs, rec, m, options).record;
}

void write(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

/// Every absolute path in the strings (keys too) of a document, as "where: text". A path
/// starts at the text's start or after a character that neither belongs to a path nor closes
/// an expression ("2(n-1)/n", "GB/s" and "<path>/x" hold none) and has a character other than
/// '/' after its slashes (a lone "/" is none).
std::vector<std::string> absolute_paths(const nlohmann::json& v, const std::string& where = "") {
    static const std::regex path(R"((^|[^A-Za-z0-9._+@~/\-)\]}>])/+[A-Za-z0-9._+@~\-])");
    std::vector<std::string> found;
    auto add = [&](const std::vector<std::string>& more) { found.insert(found.end(), more.begin(), more.end()); };
    if (v.is_string()) {
        if (std::regex_search(v.get_ref<const std::string&>(), path)) found.push_back(where + ": " + v.get<std::string>());
    } else if (v.is_array()) {
        for (std::size_t i = 0; i < v.size(); ++i) add(absolute_paths(v[i], where + "[" + std::to_string(i) + "]"));
    } else if (v.is_object()) {
        for (const auto& [key, x] : v.items()) {
            if (std::regex_search(key, path)) found.push_back(where + " key: " + key);
            add(absolute_paths(x, where + "." + key));
        }
    }
    return found;
}

/// A report with absolute paths wherever runs put them: argv (the program, --out=, after
/// --storage-dir, a profile file), details of storage and plugin results, reasons, warnings,
/// the profile's sources, the environment; and texts with '/' that are no paths.
nlohmann::json report_with_paths() {
    return {
        {"schema", {{"name", "interopbench.report"}, {"version", "1.1"}}},
        {"invocation",
         {{"argv", {"/opt/tools/bin/interopbench", "run", "--out=/data/runs/r.json", "--storage-dir",
                    "/mnt/nvme0/scratch/", "--profile", "/etc/interopbench/p.json", "-a", "dir=/srv/x,/srv/y"}},
          {"profile_resolved", {{"sources", {"profile file '/etc/interopbench/p.json'"}}}}}},
        {"host", {{"hostname", "gpu-node-17"}, {"cpu", "Intel Xeon"}}},
        {"environment", {{"CUDA_HOME", "/usr/local/cuda"}}},
        {"results",
         {{{"key", "storage_read/a"},
           {"details",
            {{"storage_dir", "/tmp/interopbench-storage"},
             {"file", "/tmp/interopbench-storage/ib-storage-v1-67108864.dat"},
             {"files", {"/tmp/ib-store.8xb9Us/a.npy", "/tmp/ib-store.8xb9Us/b.npy"}},
             {"busbw_formula", "2(n-1)/n"},
             {"unit", "GB/s"},
             {"mount", "/"},
             {"plugin", {{"manifest", "/usr/share/interopbench/plugins/frameworks.json"}}}}},
           {"reason", "cuFile does not take /tmp/ib-store.8xb9Us/x.dat on this machine: (see /var/log/a.log)"}}}},
        {"warnings", {"plugin folder ignored: '/opt/p' may be written by any user", "file:///srv/share/x.json"}},
    };
}

/// The tool's exit code for `args`.
int run_tool(const std::string& args) { return interopbench::testing::run_cli(args).code; }

} // namespace

TEST_CASE("a real report validates against the schema and round-trips") {
    ::setenv("NCCL_DEBUG", "WARN", 1);
    ::setenv("INTEROPBENCH_TEST_SECRET", "hunter2", 1);
    const RunRecord rec = sample_run();
    Machine m;
    const auto doc = build_report(rec, m);
    const auto schema = testing::SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    const auto errs = schema.errors(doc);
    for (const auto& e : errs) MESSAGE(e);
    CHECK(errs.empty());
    CHECK(doc["environment"]["NCCL_DEBUG"] == "WARN");
    CHECK_FALSE(doc.dump().find("hunter2") != std::string::npos); // never outside the allow-list

    const auto dir = temp_dir();
    const auto path = (dir / "r.json").string();
    write_file_atomic(path, doc.dump(1));
    const auto results = read_report(path).results;
    REQUIRE(results.size() == 1);
    CHECK(results[0].key == rec.results[0].key);
    CHECK(results[0].params.canonical() == rec.results[0].params.canonical());
    CHECK(results[0].metrics[0].stats.median == rec.results[0].metrics[0].stats.median);
    CHECK(results[0].metrics[0].samples == rec.results[0].metrics[0].samples);
    fs::remove_all(dir);
}

TEST_CASE("schema checker rejects a broken report") {
    const auto schema = testing::SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    Machine m;
    auto doc = build_report(sample_run(), m);
    doc["results"][0]["status"] = "great";
    doc["environment"]["HOME"] = "/root";
    doc.erase("host");
    CHECK(schema.errors(doc).size() >= 3);
}

TEST_CASE("atomic write replaces whole files and leaves no temporaries") {
    const auto dir = temp_dir();
    const auto path = (dir / "out.json").string();
    write_file_atomic(path, "first");
    write_file_atomic(path, "second");
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    CHECK(text == "second");
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
    CHECK(files == 1);
    CHECK_THROWS_AS(write_file_atomic((dir / "missing" / "x.json").string(), "x"), UsageError);
    CHECK_THROWS_AS(check_output_path(dir.string()), UsageError); // a directory, not a file
    fs::remove_all(dir);
}

TEST_CASE("read_report names each problem") {
    const auto dir = temp_dir();
    auto expect = [&](const std::string& text, const std::string& words) {
        const auto p = (dir / "bad.json").string();
        write(p, text);
        for (const bool document : {false, true}) { // load_report checks as read_report does
            try {
                if (document) (void)load_report(p);
                else (void)read_report(p);
                FAIL("accepted: " << text);
            } catch (const UsageError& e) {
                CAPTURE(e.what());
                CHECK(std::string(e.what()).find(words) != std::string::npos);
            }
        }
    };
    Machine m;
    const std::string good = build_report(sample_run(), m).dump();
    expect("", "is empty");
    expect(good.substr(0, good.size() / 2), "not valid JSON");
    expect("[1,2]", "not an interopbench report");
    expect(R"({"schema":{"name":"other","version":"1.0"},"results":[]})", "not an interopbench report");
    expect(R"({"schema":{"name":"interopbench.report","version":"2.0"},"results":[]})", "newer than this interopbench");
    expect(R"({"schema":{"name":"interopbench.report","version":"1.0"}})", "no results array");
    expect(R"({"schema":{"name":"interopbench.report","version":"1.0"},"results":[{"key":1}]})", "lacks key");
    CHECK_THROWS_AS(read_report((dir / "nope.json").string()), UsageError);
    // A newer minor version with unknown fields is read.
    auto newer = nlohmann::json::parse(good);
    newer["schema"]["version"] = "1.7";
    newer["future_field"] = {1, 2};
    write(dir / "newer.json", newer.dump());
    CHECK(read_report((dir / "newer.json").string()).results.size() == 1);
    // A document in memory: the same checks, naming where it came from.
    try {
        (void)read_report_json(nlohmann::json::parse(R"({"schema":{"name":"interopbench.report","version":"1.1"},"results":[{"key":1}]})"),
                               "this run's report");
        FAIL("accepted a result without a key");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) == "report 'this run's report': results[0] lacks key, scenario or status");
    }
    fs::remove_all(dir);
}

TEST_CASE("read_report: a committed report reads once into the results and header of its document") {
    // What every consumer reads (read_report) is what the document holds: the same results in
    // order and the same header; report_document gives the document back.
    for (const char* name : {"h200x2-default-job.json", "h200x2-ci-1.json", "h200x2-nccl-all-reduce-mpi.json",
                             "gate-pairs/h200x1-ci/run-0.json"}) {
        CAPTURE(name);
        const std::string path = std::string(INTEROPBENCH_SOURCE_DIR "/reports/") + name;
        const nlohmann::json doc = load_report(path);
        const Report report = read_report(path);
        REQUIRE(report.results.size() == doc["results"].size());
        REQUIRE(!report.results.empty());
        for (std::size_t i = 0; i < report.results.size(); ++i) {
            CHECK(report.results[i].key == doc["results"][i]["key"]);
            CHECK(report.results[i].metrics.size() == doc["results"][i]["metrics"].size());
        }
        const ReportHeader expected = read_header(doc);
        CHECK(report.header.schema_version == expected.schema_version);
        CHECK(report.header.tool.git_sha == expected.tool.git_sha);
        CHECK(report.header.invocation.argv == expected.invocation.argv);
        CHECK(report.header.invocation.started == expected.invocation.started);
        CHECK(report.header.host.hostname == expected.host.hostname);
        CHECK(report.header.devices.size() == expected.devices.size());
        CHECK(report.header.hosts.size() == expected.hosts.size());
        CHECK(report.header.topology.document == expected.topology.document);
        CHECK_FALSE(report.document.contains("results")); // the results are read once, typed
        CHECK(report_document(report)["results"].size() == doc["results"].size());
        CHECK(read_report_json(report_document(report), name).results.size() == report.results.size());
    }
    // The topology the page and compare read, typed: indices, host paths, CPUs, pairs.
    const Report job = read_report(INTEROPBENCH_SOURCE_DIR "/reports/h200x2-default-job.json");
    REQUIRE(job.header.topology.gpus.size() == 2);
    const auto& gpu1 = job.header.topology.gpus[1];
    CHECK(gpu1.label == "GPU1");
    CHECK(gpu1.index == 1);
    CHECK(gpu1.cpus == "0-31");
    CHECK(gpu1.host_path_class == "PCIe");
    REQUIRE(gpu1.host_path_bandwidth);
    CHECK(*gpu1.host_path_bandwidth == doctest::Approx(63.015e9).epsilon(1e-4));
    REQUIRE(job.header.topology.pairs.size() == 2);
    CHECK(job.header.topology.pairs[1].from == 1);
    CHECK(job.header.topology.pairs[1].to == 0);
    CHECK(job.header.topology.pairs[1].path_class == "NV18");
}

TEST_CASE("committed reference reports from real machines load and match the schema") {
    // Every report under reports/, in its folders too (smoke runs, before/after pairs); the
    // other JSON there is fio's own output, the gate-pairs summaries and profiles runs used. Anonymized, each
    // still matches the schema, keeps its results and holds no absolute path.
    const auto schema = testing::SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    const fs::path root = INTEROPBENCH_SOURCE_DIR "/reports";
    int seen = 0, in_folders = 0;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
        const auto name = fs::relative(e.path(), root).string();
        if (e.path().extension() != ".json" || name == "report.schema.json") continue;
        CAPTURE(name);
        std::ifstream in(e.path());
        const auto raw = nlohmann::json::parse(in, nullptr, false);
        REQUIRE_FALSE(raw.is_discarded());
        if (!raw.contains("schema")) {
            const bool fio = raw.contains("fio version"), gate_pairs = raw.contains("pairs") && raw.contains("verdicts");
            const bool profile = raw.contains("scenarios") && raw.contains("name"); // the profile a report was run with
            CHECK_MESSAGE((fio || gate_pairs || profile), "neither a report, fio's output, a gate-pairs summary nor a profile");
            continue;
        }
        auto doc = load_report(e.path().string());
        const auto errs = schema.errors(doc);
        for (const auto& err : errs) MESSAGE(err);
        CHECK(errs.empty());
        const auto results = read_report_json(doc, name).results.size();
        CHECK(results > 0);
        anonymize_report(doc);
        for (const auto& p : absolute_paths(doc)) FAIL_CHECK(p);
        CHECK(schema.errors(doc).empty());
        CHECK(read_report_json(doc, name).results.size() == results);
        ++seen;
        in_folders += name.find('/') != std::string::npos;
    }
    CHECK(seen > 0);
    CHECK(in_folders > 0);
}

TEST_CASE("committed reports against today's declared limits: no figure above its limit, every GPU path declared") {
    // Every committed report as show, compare and fleet read it (limit_report): no efficiency
    // above 1.05 (a figure above its limit names the limit as wrong instead), and every result of
    // a built-in scenario that needs a GPU carries the paths it crossed. Plugins' results keep
    // what their plugin declared (none yet), so they are left out.
    const Registry registry = builtin_registry();
    const fs::path root = INTEROPBENCH_SOURCE_DIR "/reports";
    int results = 0, with_efficiency = 0, limit_wrong = 0;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
        const auto name = fs::relative(e.path(), root).string();
        if (e.path().extension() != ".json" || name == "report.schema.json") continue;
        std::ifstream in(e.path());
        if (!nlohmann::json::parse(in, nullptr, false).contains("schema")) continue; // fio's output, gate pairs
        Report report = read_report(e.path().string());
        limit_report(report);
        for (const Result& r : report.results) {
            CAPTURE(name);
            CAPTURE(r.key);
            ++results;
            if (const auto eff = r.details.find("efficiency"); eff != r.details.end()) {
                ++with_efficiency;
                CHECK(eff->get<double>() <= 1.05);
                CHECK(eff->get<double>() > 0);
            }
            limit_wrong += r.details.contains("limit_wrong");
            const Scenario* s = registry.find(r.scenario);
            if (s && s->info().needs_gpu && r.status == Status::ok) CHECK(r.details.contains("paths"));
        }
    }
    MESSAGE(results, " results, ", with_efficiency, " with an efficiency, ", limit_wrong, " naming a wrong limit");
    CHECK(with_efficiency > 0);
}

TEST_CASE("a report records argv[0] by its base name, the arguments as typed") {
    RunRecord rec = sample_run();
    rec.argv = {"/opt/tools/bin/interopbench", "run", "--out", "/data/runs/r.json", "--storage-dir=/mnt/nvme0"};
    Machine m;
    const auto argv = build_report(rec, m)["invocation"]["argv"];
    CHECK(argv == nlohmann::json{"interopbench", "run", "--out", "/data/runs/r.json", "--storage-dir=/mnt/nvme0"});
    rec.argv = {"./build/interopbench", "run"};
    CHECK(build_report(rec, m)["invocation"]["argv"][0] == "interopbench");
    rec.argv = {"interopbench"};
    CHECK(build_report(rec, m)["invocation"]["argv"][0] == "interopbench");
}

TEST_CASE("anonymize_report leaves no absolute path: each becomes <path>/ and its last component") {
    auto doc = report_with_paths();
    REQUIRE(absolute_paths(doc).size() > 10); // the checker sees them before
    anonymize_report(doc);
    for (const auto& p : absolute_paths(doc)) FAIL_CHECK(p);
    const auto& argv = doc["invocation"]["argv"];
    CHECK(argv == nlohmann::json{"interopbench", "run", "--out=<path>/r.json", "--storage-dir", "<path>/scratch",
                                 "--profile", "<path>/p.json", "-a", "dir=<path>/x,<path>/y"});
    CHECK(doc["invocation"]["profile_resolved"]["sources"][0] == "profile file '<path>/p.json'");
    CHECK(doc["environment"]["CUDA_HOME"] == "<path>/cuda");
    const auto& d = doc["results"][0]["details"];
    CHECK(d["storage_dir"] == "<path>/interopbench-storage");
    CHECK(d["file"] == "<path>/ib-storage-v1-67108864.dat");
    CHECK(d["files"] == nlohmann::json{"<path>/a.npy", "<path>/b.npy"});
    CHECK(d["plugin"]["manifest"] == "<path>/frameworks.json");
    CHECK(doc["results"][0]["reason"] == "cuFile does not take <path>/x.dat on this machine: (see <path>/a.log)");
    CHECK(doc["warnings"][0] == "plugin folder ignored: '<path>/p' may be written by any user");
    CHECK(doc["warnings"][1] == "file:<path>/x.json");
    // Texts with '/' that are no paths are kept.
    CHECK(d["busbw_formula"] == "2(n-1)/n");
    CHECK(d["unit"] == "GB/s");
    CHECK(d["mount"] == "/");
    CHECK_FALSE(doc["host"].contains("hostname"));
    CHECK(doc["invocation"]["anonymized"] == true);
    const nlohmann::json once = doc;
    anonymize_report(doc);
    CHECK(doc == once);
}

TEST_CASE("anonymize_report scrubs the path of a short option glued to its value") {
    auto doc = report_with_paths();
    doc["invocation"]["argv"] = {"interopbench", "run", "-o/srv/secret/r.json", "-p/home/alice/p.json", "-a", "x=1", "-q"};
    anonymize_report(doc);
    CHECK(doc["invocation"]["argv"] ==
          nlohmann::json{"interopbench", "run", "-o<path>/r.json", "-p~/p.json", "-a", "x=1", "-q"}); // a home folder becomes ~
}

TEST_CASE("run records argv[0] as the program's name, and with --anonymize no absolute path") {
    const auto dir = fs::absolute(temp_dir() / "argv");
    fs::create_directories(dir);
    const std::string out = (dir / "r.json").string(), run = "run -s host_memcpy --size 4K -a threads=single --max-time 0.05 "
                                                             "--rounds 1 -q --no-topology --storage-dir " + dir.string();
    REQUIRE(run_tool(run + " --out " + out) == 0);
    auto doc = load_report(out);
    const auto& argv = doc["invocation"]["argv"];
    CHECK(argv[0] == "interopbench"); // started by its absolute path
    CHECK(std::find(argv.begin(), argv.end(), out) != argv.end()); // asked for: kept as typed
    CHECK(std::find(argv.begin(), argv.end(), dir.string()) != argv.end());

    REQUIRE(run_tool(run + " --anonymize --out " + out) == 0);
    doc = load_report(out);
    for (const auto& p : absolute_paths(doc)) FAIL_CHECK(p);
    CHECK(doc["invocation"]["argv"][0] == "interopbench");
    CHECK(std::find(doc["invocation"]["argv"].begin(), doc["invocation"]["argv"].end(), "<path>/r.json") !=
          doc["invocation"]["argv"].end());
    fs::remove_all(temp_dir());
}

TEST_CASE("byte figures print exactly when whole units, else in the largest unit") {
    CHECK(format_value(64.0 * 1024 * 1024, "B") == "64MiB");
    CHECK(format_value(4096, "B") == "4KiB");
    CHECK(format_value(1536, "B") == "1.50KiB");
    CHECK(format_value(4194306.0 * 1024, "B") == "4.00GiB");
    CHECK(format_value(22801156.0 * 1024, "B") == "21.7GiB");
    CHECK(format_value(0, "B") == "0B");
}

TEST_CASE("read_header reads a committed report of each schema version") {
    const ReportHeader h = read_report(INTEROPBENCH_SOURCE_DIR "/reports/h200x2-default-job.json").header;
    CHECK(h.schema_version == "1.0");
    CHECK(h.tool.name == "interopbench");
    CHECK(h.tool.git_sha == "f44b08f8dd52");
    CHECK(h.invocation.argv.size() == 4);
    CHECK(h.invocation.profile == "quick");
    CHECK(h.invocation.profile_hash == "009c34ae3bfc6d33");
    CHECK(h.invocation.status == "complete");
    CHECK(h.invocation.started == "2026-11-30T00:51:33Z");
    CHECK(h.invocation.settings["max_samples"] == 30);
    CHECK_FALSE(h.invocation.anonymized);
    CHECK(h.host.hostname == "vm");
    CHECK(h.host.os == "Ubuntu 24.04.3 LTS");
    CHECK(h.host.logical_cpus == 32);
    CHECK(h.host.memory_bytes == 270334464000ULL);
    CHECK(h.software.cuda_driver == "13.0");
    CHECK(h.software.cuda_runtime == "13.0");
    CHECK(h.software.cuda_available);
    CHECK(h.software.version_of("nccl") == "2.28.3"); // schema 1.0: software.nccl
    REQUIRE(h.devices.size() == 2);
    CHECK(h.devices[0].pci_bus_id == "0000:00:06.0");
    CHECK(h.devices[1].pci_bus_id == "0000:00:07.0");
    CHECK(h.devices[1].ordinal == 1);
    CHECK(h.devices[0].name == "NVIDIA H200");
    CHECK(h.devices[0].sm_count == 132);
    CHECK(h.devices[0].memory_bytes == 150109880320ULL);
    CHECK(h.devices[0].compute_capability == "9.0");
    REQUIRE(h.topology.gpus.size() == 2);
    CHECK(h.topology.document.is_object());
    CHECK(h.topology.gpus[0].label == "GPU0");
    CHECK(h.topology.gpus[0].nvlink_known);
    CHECK(h.topology.gpus[0].nvlinks == 18);
    CHECK(h.topology.gpus[0].nvlinks_active == 18);
    CHECK(h.environment.at("NCCL_VERSION") == "2.28.3-1");
    CHECK(h.warnings.empty());

    const ReportHeader ci = read_report(INTEROPBENCH_SOURCE_DIR "/reports/gate-pairs/h200x1-ci/run-0.json").header;
    CHECK(ci.schema_version == "1.1");
    CHECK(ci.invocation.anonymized);
    CHECK(ci.host.hostname.empty()); // anonymized
    CHECK(ci.software.driver_release == "580.159.04");
    CHECK(ci.software.libraries.size() == 3);
    CHECK(ci.software.version_of("nccl") == "2.28.3");
    CHECK(ci.software.version_of("cufile") == "1.15.0");
    CHECK(ci.software.version_of("none").empty());
    REQUIRE(ci.devices.size() == 1);
    CHECK(ci.devices[0].pci_bus_id == "0000:00:06.0");
    CHECK(ci.devices[0].uuid.empty()); // anonymized
}

TEST_CASE("read_header: missing and mistyped fields are empty, never an exception") {
    for (const auto& doc : {nlohmann::json(), nlohmann::json::array({1, 2}), nlohmann::json("text"), nlohmann::json::object()}) {
        ReportHeader h;
        CHECK_NOTHROW(h = read_header(doc));
        CHECK(h.schema_version.empty());
        CHECK(h.devices.empty());
        CHECK(h.invocation.settings.is_null());
        CHECK(h.topology.document.is_null());
    }
    const auto garbled = nlohmann::json::parse(R"({
        "schema": {"version": 1.1}, "tool": "interopbench",
        "invocation": {"argv": ["interopbench", 3], "profile": 7, "status": null, "anonymized": "yes"},
        "host": {"hostname": ["a"], "logical_cpus": -4, "memory_bytes": "lots"},
        "software": {"libraries": [{"name": 5, "version": "1.0"}, "nccl"], "nccl": false, "driver_release": {}},
        "devices": [{"ordinal": "0", "name": 3, "pcie": "Gen5", "sm_count": 1e300, "memory_bytes": -1}, 7],
        "topology": {"gpus": {"label": "GPU0"}, "pairs": [{"label": 1, "class": "NV18"}]},
        "environment": ["CUDA_HOME"], "warnings": [1, "w", null]})");
    ReportHeader h;
    CHECK_NOTHROW(h = read_header(garbled));
    CHECK(h.schema_version.empty());
    CHECK(h.tool.name.empty());
    CHECK(h.invocation.argv == std::vector<std::string>{"interopbench"});
    CHECK(h.invocation.profile.empty());
    CHECK(h.invocation.status.empty());
    CHECK_FALSE(h.invocation.anonymized);
    CHECK(h.host.hostname.empty());
    CHECK(h.host.logical_cpus == 0);
    CHECK(h.host.memory_bytes == 0);
    CHECK(h.software.driver_release.empty());
    CHECK(h.software.libraries.size() == 2); // one entry per element, empty where mistyped
    CHECK(h.software.version_of("nccl").empty());
    REQUIRE(h.devices.size() == 2); // the GPU count is the array's size
    CHECK(h.devices[0].ordinal == 0);
    CHECK(h.devices[0].name.empty());
    CHECK(h.devices[0].sm_count == 0);
    CHECK(h.devices[0].memory_bytes == 0);
    CHECK(h.devices[0].pcie_gen_max == 0);
    CHECK(h.topology.gpus.empty());
    REQUIRE(h.topology.pairs.size() == 1);
    CHECK(h.topology.pairs[0].label.empty());
    CHECK(h.topology.pairs[0].path_class == "NV18");
    CHECK(h.environment.empty());
    CHECK(h.warnings == std::vector<std::string>{"w"});
}

TEST_CASE("a multi-process report's hosts: written, read typed, anonymized, validated") {
    RunRecord rec = sample_run();
    Machine m;
    auto rank_host = [](int rank, const std::string& name, const std::string& bus) {
        return nlohmann::json{{"rank", rank},
                              {"local_rank", 0},
                              {"device", bus},
                              {"host", {{"hostname", name}, {"cpu", "Intel Xeon"}, {"logical_cpus", 16}, {"memory_bytes", 1024}}},
                              {"software", {{"driver_release", "580.1"}, {"cuda_driver", "13.0"}, {"cuda_runtime", "13.0"},
                                            {"cuda_available", true},
                                            {"libraries", {{{"name", "nccl"}, {"version", "2.28.3"}, {"note", "/opt/nccl/lib"}}}}}},
                              {"devices", {{{"ordinal", 0}, {"name", "NVIDIA H200"}, {"uuid", "GPU-" + name}, {"pci_bus_id", bus},
                                            {"sm_count", 132}, {"memory_bytes", 1024},
                                            {"pcie", {{"gen_current", 4}, {"width_current", 16}, {"gen_max", 5}, {"width_max", 16}}}}}},
                              {"topology_hash", "00112233aabbccdd"},
                              {"conditions", nullptr}};
    };
    rec.hosts = {rank_host(0, "node-a", "0000:1b:00.0"), rank_host(1, "node-b", "0000:2c:00.0")};
    nlohmann::json doc = build_report(rec, m);
    REQUIRE(doc["hosts"].size() == 2);
    const auto schema = testing::SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    CHECK(schema.errors(doc).empty());

    const ReportHeader h = read_header(doc);
    REQUIRE(h.hosts.size() == 2);
    CHECK(h.hosts[1].rank == 1);
    CHECK(h.hosts[1].device == "0000:2c:00.0");
    CHECK(h.hosts[1].host.hostname == "node-b");
    CHECK(h.hosts[1].host.logical_cpus == 16);
    CHECK(h.hosts[1].software.driver_release == "580.1");
    CHECK(h.hosts[1].software.version_of("nccl") == "2.28.3");
    REQUIRE(h.hosts[1].devices.size() == 1);
    CHECK(h.hosts[1].devices[0].uuid == "GPU-node-b");
    CHECK(h.hosts[1].devices[0].pcie_gen_current == 4);
    CHECK(h.hosts[1].devices[0].pcie_gen_max == 5);
    CHECK(h.hosts[1].topology_hash == "00112233aabbccdd");
    CHECK_FALSE(h.hosts[1].conditions.has_value());
    // One process: no hosts array, the top-level host is the one host.
    CHECK_FALSE(build_report(sample_run(), m).contains("hosts"));
    CHECK(read_header(build_report(sample_run(), m)).hosts.empty());

    anonymize_report(doc);
    const ReportHeader a = read_header(doc);
    REQUIRE(a.hosts.size() == 2);
    CHECK(a.hosts[0].host.hostname.empty());
    CHECK_FALSE(doc["hosts"][0]["host"].contains("hostname"));
    CHECK(a.hosts[0].devices[0].uuid.empty());
    CHECK(a.hosts[0].devices[0].pci_bus_id == "0000:1b:00.0");
    CHECK(a.hosts[0].software.libraries[0].note == "<path>/lib");
    CHECK(absolute_paths(doc).empty());

    const auto dir = temp_dir();
    const auto path = (dir / "hosts.json").string();
    write(path, doc.dump());
    CHECK(load_report(path)["hosts"].size() == 2);
    auto rejected = [&](const std::function<void(nlohmann::json&)>& spoil, const std::string& words) {
        nlohmann::json bad = doc;
        spoil(bad);
        write(path, bad.dump());
        try {
            load_report(path);
            FAIL("accepted: " << bad["hosts"].dump());
        } catch (const UsageError& e) {
            const std::string what = e.what();
            CAPTURE(what);
            CHECK(what.find(words) != std::string::npos);
        }
    };
    rejected([](auto& d) { d["hosts"] = nlohmann::json::array({7}); }, "'hosts[0]' must be an object (it is number)");
    rejected([](auto& d) { d["hosts"] = {{"rank", 0}}; }, "'hosts' must be an array (it is object)");
    rejected([](auto& d) { d["hosts"] = "node-a"; }, "'hosts' must be an array (it is string)");
    rejected([](auto& d) { d["hosts"][1]["rank"] = "1"; }, "'hosts[1].rank' must be an integer of 0 or more (it is string)");
    rejected([](auto& d) { d["hosts"][1].erase("rank"); }, "'hosts[1].rank' is missing");
    rejected([](auto& d) { d["hosts"][0]["devices"] = {"GPU0"}; }, "'hosts[0].devices' must be an array of objects");
    rejected([](auto& d) { d["hosts"][0]["host"] = "node-a"; }, "'hosts[0].host' must be an object (it is string)");
    rejected([](auto& d) { d["hosts"][0]["topology_hash"] = 7; }, "'hosts[0].topology_hash' must be a string or null");
    fs::remove_all(dir);

    // Mistyped fields read as empty, never an exception.
    const auto garbled = nlohmann::json::parse(R"({"hosts": [7, {"rank": "x", "host": [], "devices": {"a": 1}}]})");
    ReportHeader g;
    CHECK_NOTHROW(g = read_header(garbled));
    REQUIRE(g.hosts.size() == 2);
    CHECK(g.hosts[1].rank == 0);
    CHECK(g.hosts[1].devices.empty());
}

TEST_CASE("topology_hash: hosts wired alike share it, whatever their names and state") {
    const auto topology = [](const std::string& pair_class, int active, const std::string& uuid) {
        return nlohmann::json{
            {"source", "this machine"},
            {"host", {{"packages", 2}, {"cores", 64}, {"pus", 128}, {"nvidia_pci_gpus", 2}}},
            {"numa_nodes", {{{"os_index", 0}, {"cpus", "0-63"}, {"memory", 1000 + active}}}},
            {"gpus", {{{"name", "NVIDIA H200"}, {"pci_bus_id", "0000:1b:00.0"}, {"uuid", uuid},
                       {"pcie", {{"gen_current", active}, {"gen_max", 5}, {"width_max", 16}}},
                       {"nvlink", {{"active", active}, {"links", {{{"link", 0}, {"active", active > 0}, {"peer", "gpu"}}}}}}}}},
            {"pairs", {{{"from", 0}, {"to", 1}, {"class", pair_class}, {"bandwidth", 1e11 + active}}}},
            {"nics", nlohmann::json::array()}};
    };
    const std::string a = topology_hash(topology("NV18", 1, "GPU-a"));
    CHECK(a.size() == 16);
    CHECK(topology_hash(topology("NV18", 0, "GPU-b")) == a); // link state, memory, names: not wiring
    CHECK(topology_hash(topology("SYS", 1, "GPU-a")) != a);
    CHECK(topology_hash(nullptr).empty());
}

TEST_CASE("the tool's own environment settings stay out of the report's environment") {
    ::unsetenv("INTEROPBENCH_OWN_ENV");
    ::setenv("NCCL_TEST_USER_SETTING", "1", 1);
    set_own_environment("NCCL_TEST_OWN_SETTING", "/tmp/x");
    set_own_environment("NCCL_TEST_OWN_SETTING", "/tmp/y"); // listed once
    CHECK(std::string(std::getenv("NCCL_TEST_OWN_SETTING")) == "/tmp/y");
    CHECK(std::string(std::getenv("INTEROPBENCH_OWN_ENV")) == "NCCL_TEST_OWN_SETTING");
    CHECK(own_environment("NCCL_TEST_OWN_SETTING"));
    CHECK_FALSE(own_environment("NCCL_TEST_OWN"));
    const nlohmann::json env = environment_json();
    CHECK(env.contains("NCCL_TEST_USER_SETTING"));
    CHECK_FALSE(env.contains("NCCL_TEST_OWN_SETTING"));
    CHECK_FALSE(env.contains("INTEROPBENCH_OWN_ENV"));
    for (const char* name : {"NCCL_TEST_USER_SETTING", "NCCL_TEST_OWN_SETTING", "INTEROPBENCH_OWN_ENV"}) ::unsetenv(name);
}

// ---- what the tool writes, it reads back -------------------------------------------------------

namespace {

/// A result of `scenario` with size=`size`, `samples` samples of two metrics.
Result result_with_samples(const std::string& size, std::size_t samples) {
    Result r;
    r.scenario = "fake_ok";
    r.family = "fake";
    r.params = Params({{"size", size}, {"mode", "a"}});
    r.key = r.scenario + "/" + r.params.canonical();
    r.stop_reason = "max_samples";
    for (const char* name : {"bandwidth", "time"}) {
        MetricResult m;
        m.info = {name, "B/s", Better::higher, ""};
        for (std::size_t i = 0; i < samples; ++i) m.samples.push_back(1e9 + static_cast<double>(i % 1000));
        m.stats = compute_stats(m.samples);
        r.metrics.push_back(std::move(m));
    }
    return r;
}

nlohmann::json nested(int levels) {
    nlohmann::json v = "bottom";
    for (int i = 0; i < levels; ++i) v = nlohmann::json{{"in", std::move(v)}};
    return v;
}

nlohmann::json report_with(const std::vector<Result>& results) {
    RunRecord rec;
    rec.argv = {"interopbench", "run"};
    rec.results = results;
    Machine m;
    return valid_utf8(build_report(rec, m));
}

} // namespace

TEST_CASE("bounds when writing: samples thinned, details and reasons cut, each cut said, the report read back") {
    const auto dir = testing::scratch("report_bounds");
    // Samples: of 250,000, every 3rd is kept; the statistics stay those of all.
    Result big = result_with_samples("1024", 250000);
    // Details nested 254 levels deep (a plugin may answer that much): the report would nest
    // past what the reader reads; and a reason longer than a result may hold.
    big.details = nlohmann::json{{"deep", nested(254)}, {"kept", 1}};
    big.reason = std::string(100000, 'r');
    Result wide = result_with_samples("2048", 10);
    wide.details = {{"blob", std::string(3u << 20, 'x')}};
    nlohmann::json doc = report_with({big, wide});
    const nlohmann::json& jb = doc["results"][0];
    REQUIRE(jb["metrics"][0]["samples"].size() == 83334);
    CHECK(jb["metrics"][0]["samples_taken"] == 250000);
    CHECK(jb["metrics"][0]["stats"]["n"] == 250000);
    CHECK(jb["details"]["kept"] == 1);
    CHECK(jb["reason"].get<std::string>().size() == 16384);
    CHECK(cut_text("abcdef", 6) == "abcdef");
    CHECK(cut_text(std::string(20, 'a'), 10) == "aaaa [cut]");
    CHECK(cut_text("aaaa\u00e9\u00e9\u00e9\u00e9", 11) == "aaaa [cut]"); // never inside a character
    CHECK(cut_text("aaaa\u00e9\u00e9\u00e9\u00e9\u00e9", 12) == "aaaa\u00e9 [cut]");
    const auto cut = jb["cut"].get<std::vector<std::string>>();
    REQUIRE(cut.size() == 4);
    CHECK(cut[0] == "samples of 'bandwidth': every 3rd of 250000 kept (83334); the statistics are of all 250000");
    CHECK(cut[2] == "reason: cut to 16384 of its 100000 bytes");
    CHECK(cut[3] == "details: values nested deeper than 64 levels replaced by a note");
    CHECK(doc["results"][1]["details"] == nlohmann::json{{"cut", fmt::format("{} bytes of details left out", (3u << 20) + 11)}});
    CHECK(doc["results"][1]["cut"][0].get<std::string>().find("details: 3145739 bytes left out") == 0);
    // Written and read back, the schema kept.
    const std::string path = (dir / "r.json").string();
    write_file_atomic(path, report_text(doc));
    const Report back = read_report(path);
    REQUIRE(back.results.size() == 2);
    CHECK(back.results[0].metrics[0].samples.size() == 83334);
    CHECK(back.results[0].metrics[0].samples_taken == 250000);
    CHECK(back.results[0].metrics[0].stats.n == 250000);
    CHECK(back.results[0].cut == cut);
    const auto schema = testing::SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    CHECK(schema.errors(load_report(path)).empty());
    // Written again (show, a round's report pooled), nothing more is cut.
    nlohmann::json again = report_document(back);
    CHECK(again["results"][0]["cut"].size() == 4);
    // Pooled with a round of every sample kept, the pool says how many were taken.
    MetricResult pooled = back.results[0].metrics[0];
    const MetricResult other = result_with_samples("1024", 100).metrics[0];
    pool_metric(pooled, {&back.results[0].metrics[0], &other});
    CHECK(pooled.samples_taken == 250100);
    CHECK(pooled.samples.size() == 83434);
}

TEST_CASE("bounds when writing: a report that would be larger than the reader reads loses samples, then details, and says so") {
    const auto dir = testing::scratch("report_whole_bound");
    std::vector<Result> results;
    for (int i = 0; i < 4; ++i) results.push_back(result_with_samples(std::to_string(1024 << i), 20000 * (i + 1)));
    results[3].details = {{"blob", std::string(200000, 'd')}};
    nlohmann::json doc = report_with(results);
    const std::size_t whole = doc.dump(1).size();
    // A limit that fits once the two largest results' samples are gone.
    const std::uint64_t limit = whole / 2;
    const std::string text = report_text(doc, limit);
    CHECK(text.size() <= limit);
    CHECK(doc["results"][3]["metrics"][0]["samples"].empty());
    CHECK(doc["results"][3]["metrics"][0]["samples_taken"] == 80000);
    CHECK(doc["results"][0]["metrics"][0]["samples"].size() == 20000); // the smallest kept
    CHECK(doc["results"][3]["cut"][0].get<std::string>().find("samples of 'bandwidth': all 80000 left out to keep the report within") == 0);
    const std::string warning = doc["warnings"].back().get<std::string>();
    CHECK(warning.find("the samples of ") != std::string::npos);
    const std::string path = (dir / "r.json").string();
    write_file_atomic(path, text);
    const Report back = read_report(path);
    CHECK(back.results[3].metrics[0].samples_taken == 80000);
    CHECK(back.results[3].metrics[0].stats.n == 80000);
    // Smaller still: the details go too; smaller than what is left: refused, never written.
    nlohmann::json doc2 = report_with(results);
    const std::string small = report_text(doc2, 60000);
    CHECK(small.size() <= 60000);
    CHECK(doc2["results"][3]["details"].contains("cut"));
    nlohmann::json doc3 = report_with(results);
    CHECK_THROWS_AS(report_text(doc3, 2000), WriteError);
}

TEST_CASE("read_report refuses a result whose key is not its scenario and parameters, naming the key") {
    const auto dir = testing::scratch("report_keys");
    nlohmann::json doc = report_with({result_with_samples("1024", 3)});
    const std::string path = (dir / "r.json").string();
    write_file_atomic(path, doc.dump());
    CHECK_NOTHROW(read_report(path));
    // A key naming another size than the result's params: compare would match wrong figures.
    doc["results"][0]["key"] = "fake_ok/size=2048,mode=a";
    write_file_atomic(path, doc.dump());
    try {
        (void)read_report(path);
        FAIL("accepted a key that is not its scenario and parameters");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) == fmt::format("report '{}': results[0]: its key 'fake_ok/size=2048,mode=a' is not its "
                                                   "scenario and parameters ('fake_ok/size=1024,mode=a')",
                                                   path));
        CHECK(std::string(e.hint()).find("edited or damaged") != std::string::npos);
    }
    CHECK_THROWS_AS(load_report(path), UsageError);
    // Another scenario's name.
    doc["results"][0]["key"] = "other/size=1024,mode=a";
    write_file_atomic(path, doc.dump());
    CHECK_THROWS_AS(read_report(path), UsageError);
    // A report without param_order (written before it was recorded) names its parameters in
    // axis order, which the params object no longer keeps: any order of the same pairs reads.
    doc["results"][0]["key"] = "fake_ok/size=1024,mode=a";
    doc["results"][0].erase("param_order");
    write_file_atomic(path, doc.dump());
    CHECK(read_report(path).results[0].key == "fake_ok/size=1024,mode=a");
    doc["results"][0]["key"] = "fake_ok/size=1024,mode=b";
    write_file_atomic(path, doc.dump());
    CHECK_THROWS_AS(read_report(path), UsageError);
    doc["results"][0]["key"] = "fake_ok/size=1024";
    write_file_atomic(path, doc.dump());
    CHECK_THROWS_AS(read_report(path), UsageError);
}

TEST_CASE("every committed report reads: under reports/ (measured) and tests/data (made for the tests)") {
    // The reader refuses a result whose key is not its scenario and parameters: every report
    // committed reads all the same (the measured ones are never edited), except the fixtures
    // made to be refused (tests/data/reports/bad).
    int seen = 0;
    for (const char* root : {"/reports", "/tests/data"})
        for (const auto& e : fs::recursive_directory_iterator(std::string(INTEROPBENCH_SOURCE_DIR) + root)) {
            if (!e.is_regular_file() || e.path().extension() != ".json") continue;
            const std::string path = e.path().string();
            if (path.find("/tests/data/reports/bad/") != std::string::npos) continue;
            const auto raw = nlohmann::json::parse(testing::slurp(e.path()), nullptr, false);
            if (raw.is_discarded() || !raw.is_object() || !raw.contains("schema") || !raw["schema"].is_object() ||
                raw["schema"].value("name", "") != "interopbench.report")
                continue;
            CAPTURE(path);
            CHECK_NOTHROW(read_report(path));
            ++seen;
        }
    CHECK(seen > 40);
}
