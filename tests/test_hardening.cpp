// Hardening: fuzz corpora replayed, injected CUDA and NCCL faults, interruption by signals
// and by kill -9, and what reports may reveal (environment allow-list, --anonymize).
// Everything that needs a GPU reports itself skipped where there is none.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "test_support.hpp"
#include "fuzz/harness.hpp"
#include "gpu/cuda_util.hpp"
#include "gpu/fault.hpp"
#include "interopbench/report.hpp"
#include "topology/topology.hpp"
#include "schema_check.hpp"

using namespace interopbench;
namespace fs = std::filesystem;

extern char** environ;

namespace {

using testing::scratch;
using testing::slurp;

/// The real binary, started with `args` and extra environment variables; stdout and
/// stderr go to files in `dir`.
struct Child {
    pid_t pid = -1;
    fs::path dir;

    Child(const std::vector<std::string>& args, const fs::path& out_dir,
          const std::vector<std::string>& extra_env = {}) : dir(out_dir) {
        std::vector<std::string> argv_s{INTEROPBENCH_BINARY};
        argv_s.insert(argv_s.end(), args.begin(), args.end());
        std::vector<std::string> env_s;
        // Variables in extra_env replace inherited ones of the same name.
        auto overridden = [&](const std::string& kv) {
            const auto name = kv.substr(0, kv.find('=') + 1);
            for (const auto& x : extra_env)
                if (x.rfind(name, 0) == 0) return true;
            return false;
        };
        for (char** e = environ; *e; ++e)
            if (!overridden(*e)) env_s.emplace_back(*e);
        env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
        auto ptrs = [](std::vector<std::string>& v) {
            std::vector<char*> p;
            for (auto& s : v) p.push_back(s.data());
            p.push_back(nullptr);
            return p;
        };
        auto argv = ptrs(argv_s), envp = ptrs(env_s);
        const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
        pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            const int in = ::open("/dev/null", O_RDONLY);
            const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            ::dup2(in, 0);
            ::dup2(o, 1);
            ::dup2(e, 2);
            ::execve(argv[0], argv.data(), envp.data());
            ::_exit(127);
        }
    }

    /// Exit code, or -SIGNAL when killed (past `limit_s`, a guard against a hang, it is killed
    /// and the test fails, saying so).
    int wait(double limit_s = 120) {
        const int status = testing::wait_child(pid, limit_s, "interopbench " + dir.string());
        return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    }

    std::string out() const { return slurp(dir / "stdout"); }
    std::string err() const { return slurp(dir / "stderr"); }
};

int run_binary(const std::vector<std::string>& args, const fs::path& dir, const std::vector<std::string>& env = {}) {
    return Child(args, dir, env).wait();
}

void check_schema(const nlohmann::json& doc) {
    static const auto schema = testing::SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    const auto errors = schema.errors(doc);
    CAPTURE(doc.dump(1).substr(0, 2000));
    for (const auto& e : errors) FAIL_CHECK(e);
}

/// A host-only run long enough to interrupt: every configuration samples until its time
/// budget (the noise target is out of reach).
std::vector<std::string> long_host_run(const fs::path& out) {
    return {"run",       "-s",           "host_memcpy", "-a",    "threads=single", "--size", "4K:64M:x2",
            "--max-time", "0.4",         "--noise",     "1e-9",  "--min-samples",  "1",      "--max-samples",
            "1000000",   "--warmup",     "0",           "--no-topology", "-q",     "--progress",
            "--out",     out.string()};
}

/// Waits until the child's stderr holds `text` (a sign of progress), or `limit_s` passes.
bool wait_for_stderr(const Child& child, const std::string& text, double limit_s = 60) {
    limit_s = testing::deadline_s(limit_s);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    while (std::chrono::steady_clock::now() < until) {
        if (child.err().find(text) != std::string::npos) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

bool gpu_present() {
    Machine m;
    gpu::probe_cuda(m);
    return m.cuda_available;
}

} // namespace

TEST_CASE("fault specs parse, bad ones are usage errors, CUDA calls are classified") {
    using gpu::FaultKind;
    CHECK(gpu::parse_fault_spec("").kind == FaultKind::none);
    const auto a = gpu::parse_fault_spec("alloc:3");
    CHECK(a.kind == FaultKind::alloc);
    CHECK(a.nth == 3);
    CHECK(gpu::parse_fault_spec("sticky:1").kind == FaultKind::sticky);
    CHECK(gpu::parse_fault_spec("nccl:12").nth == 12);
    for (const char* bad : {"alloc", "alloc:0", "alloc:x", "oom:1", ":1", "copy:-1", "launch:1:2"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(gpu::parse_fault_spec(bad), UsageError);
    }
    CHECK(gpu::classify_cuda_call("cudaMalloc(&m_ptr, bytes)") == FaultKind::alloc);
    CHECK(gpu::classify_cuda_call("cudaMallocAsync(&p, n, s)") == FaultKind::alloc);
    CHECK(gpu::classify_cuda_call("cudaHostAlloc(&p, n, f)") == FaultKind::alloc);
    CHECK(gpu::classify_cuda_call("cudaHostRegister(p, n, f)") == FaultKind::alloc);
    CHECK(gpu::classify_cuda_call("cudaMemPoolCreate(&pool, &props)") == FaultKind::alloc);
    CHECK(gpu::classify_cuda_call("cudaMemcpyAsync(d, s, n, k, st)") == FaultKind::copy);
    CHECK(gpu::classify_cuda_call("cudaMemsetAsync(d, 0, n, st)") == FaultKind::copy);
    CHECK(gpu::classify_cuda_call("kernels::launch_fill_pattern(d, n, seed, s)") == FaultKind::launch);
    CHECK(gpu::classify_cuda_call("cudaStreamSynchronize(s)") == FaultKind::none);
    CHECK(gpu::classify_cuda_call("cudaHostUnregister(p)") == FaultKind::none);
    CHECK(gpu::classify_cuda_call("cudaFree(p)") == FaultKind::none);
}

TEST_CASE("the fuzz corpora, crash inputs included, replay cleanly") {
    const fs::path root = INTEROPBENCH_SOURCE_DIR "/tests/fuzz/corpus";
    const std::vector<std::pair<std::string, void (*)(const std::uint8_t*, std::size_t)>> targets{
        {"report", fuzz::report},   {"profile", fuzz::profile},           {"sizes", fuzz::sizes},
        {"devices", fuzz::devices}, {"topology_xml", fuzz::topology_xml}, {"plugin_reply", fuzz::plugin_reply},
        {"baseline", fuzz::baseline}, {"fleet", fuzz::fleet}};
    for (const auto& [name, run] : targets) {
        std::size_t n = 0;
        for (const auto& entry : fs::directory_iterator(root / name)) {
            const std::string bytes = slurp(entry.path());
            CAPTURE(entry.path().string());
            CHECK_NOTHROW(run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
            ++n;
        }
        CAPTURE(name);
        CHECK(n > 0);
    }
}

TEST_CASE("recorded topologies: the seeds load, damaged XML is a usage error before hwloc reads it") {
    const fs::path corpus = INTEROPBENCH_SOURCE_DIR "/tests/fuzz/corpus/topology_xml";
    const fs::path dir = scratch("xml");
    const std::string good = slurp(corpus / "seed01");
    auto load = [&](const std::string& text) {
        std::ofstream(dir / "t.xml", std::ios::binary) << text;
        return load_topology_xml((dir / "t.xml").string());
    };
    CHECK(load(good).gpus.size() == 2);
    CHECK(load(slurp(corpus / "seed02")).gpus.size() == 2);
    auto damaged = [&](const std::string& text, const std::string& words) {
        CAPTURE(words);
        try {
            (void)load(text);
            FAIL_CHECK("no usage error");
        } catch (const UsageError& e) {
            CHECK(std::string(e.what()).find(words) != std::string::npos);
        }
    };
    auto replace = [&](std::string from, std::string to) {
        std::string t = good;
        t.replace(t.find(from), from.size(), to);
        return t;
    };
    damaged(replace("complete_cpuset=\"0x00000001\"", "x=\"1\""), "has a cpuset but no complete_cpuset");
    damaged(replace("complete_nodeset=\"0x00000001\" allowed", "allowed"), "has a nodeset but no complete_nodeset");
    damaged(replace("bridge_type=\"1-1\"", "bridge_type=\"2-1\""), "unknown bridge_type '2-1'");
    damaged(replace("osdev_type=\"5\"", "osdev_type=\"77\""), "unknown osdev_type '77'");
    damaged(replace("nodeset=\"0x00000001\"", "nodeset=\"0x00000001"), "malformed attribute");
    damaged(good.substr(0, good.size() / 2), "damaged XML");
    damaged(replace("</topology>", ""), "<topology> is never closed");
    damaged(replace("      </object>\n", ""), "a misplaced </");
}

TEST_CASE("device lists resolve ordinals and PCI bus ids, and reject the rest") {
    std::vector<DeviceInfo> gpus(2);
    gpus[0].ordinal = 0;
    gpus[0].pci_bus_id = "0000:1b:00.0";
    gpus[1].ordinal = 1;
    gpus[1].pci_bus_id = "0000:2c:00.0";
    CHECK(parse_device_list("1,0,1", gpus) == std::vector<int>{1, 0});
    CHECK(parse_device_list(" 2C:00.0 ", gpus) == std::vector<int>{1});
    CHECK(parse_device_list("0000:1b:00.0,1", gpus) == std::vector<int>{0, 1});
    for (const char* bad : {"2", ",", "", "gpu0", "b:00.0", "99999999999999999999", "-1"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_device_list(bad, gpus), UsageError);
    }
    CHECK_THROWS_AS(parse_device_list("0", {}), UsageError);
}

TEST_CASE("anonymize_report drops host names, UUIDs, serials and home directories") {
    const char* old_home = std::getenv("HOME");
    const std::string saved = old_home ? old_home : "";
    ::setenv("HOME", "/srv/users/alice", 1);
    nlohmann::json doc = {
        {"invocation", {{"argv", {"/home/bob/bin/interopbench", "run", "--out=/srv/users/alice/r.json",
                                  "--profile", "/Users/carol/p.json", "/srv/users/alicex/keep"}}}},
        {"host", {{"hostname", "gpu-node-17"}, {"cpu", "Intel Xeon"}}},
        {"devices", {{{"name", "NVIDIA H200"}, {"uuid", "GPU-1234"}, {"pci_bus_id", "0000:1b:00.0"},
                      {"board_serial", "1652322012345"}}}},
        {"topology", {{"source", "/home/bob/topo.xml"}, {"gpus", {{{"serial_number", 42}}}}}},
        {"environment", {{"CUDA_HOME", "/home/bob/cuda"}}},
        {"results", {{{"details", {{"ranks", {{{"rank", 0}, {"host", "gpu-node-17"}, {"device", "0"}}}}}}}}},
        {"tool", {{"version", "0.1.0"}, {"git_sha", "abc"}}},
    };
    anonymize_report(doc);
    if (old_home) ::setenv("HOME", saved.c_str(), 1);
    else ::unsetenv("HOME");
    const auto& argv = doc["invocation"]["argv"];
    CHECK(argv[0] == "interopbench"); // the program by its name
    CHECK(argv[2] == "--out=~/r.json");
    CHECK(argv[4] == "~/p.json");
    CHECK(argv[5] == "<path>/keep"); // another directory that only starts alike: no home, still a path
    CHECK(doc["invocation"]["anonymized"] == true);
    CHECK_FALSE(doc["host"].contains("hostname"));
    CHECK(doc["host"]["cpu"] == "Intel Xeon");
    CHECK(doc["devices"][0]["uuid"] == "");
    CHECK(doc["devices"][0]["board_serial"] == "");
    CHECK(doc["devices"][0]["pci_bus_id"] == "0000:1b:00.0");
    CHECK(doc["devices"][0]["name"] == "NVIDIA H200");
    CHECK(doc["topology"]["source"] == "~/topo.xml");
    CHECK(doc["topology"]["gpus"][0]["serial_number"] == 0);
    CHECK(doc["environment"]["CUDA_HOME"] == "~/cuda");
    CHECK_FALSE(doc["results"][0]["details"]["ranks"][0].contains("host"));
    CHECK(doc["results"][0]["details"]["ranks"][0]["device"] == "0");
    CHECK(doc.dump().find("gpu-node-17") == std::string::npos);
    CHECK(doc["tool"]["version"] == "0.1.0");
    const nlohmann::json once = doc;
    anonymize_report(doc);
    CHECK(doc == once);
}

TEST_CASE("reports never hold environment variables outside the allow-list") {
    const fs::path dir = scratch("privacy");
    const std::string secret1 = "s3cr3t-token-4f9a7c", secret2 = "AKIAxSECRETx9b8c7d";
    const fs::path out = dir / "report.json";
    const int code = run_binary({"run", "-s", "host_memcpy", "--size", "4K", "-a", "threads=single", "--max-time",
                                 "0.05", "--no-topology", "--format", "json", "--out", out.string()},
                                dir,
                                {"INTEROPBENCH_SECRET_TOKEN=" + secret1, "AWS_SECRET_ACCESS_KEY=" + secret2,
                                 "MY_PASSWORD=" + secret1, "NCCL_DEBUG=WARN"});
    CHECK(code == 0);
    const std::string text = slurp(out), printed = slurp(dir / "stdout");
    for (const auto* where : {&text, &printed}) {
        CHECK(where->find(secret1) == std::string::npos);
        CHECK(where->find(secret2) == std::string::npos);
        CHECK(where->find("AWS_SECRET_ACCESS_KEY") == std::string::npos);
    }
    const auto doc = load_report(out.string());
    for (const auto& [name, value] : doc["environment"].items()) {
        CAPTURE(name);
        CHECK(environment_allowed(name));
    }
    CHECK(doc["environment"].value("NCCL_DEBUG", "") == "WARN"); // the allow-list still works
    check_schema(doc);
}

TEST_CASE("--anonymize through run and show") {
    const fs::path dir = scratch("anonymize");
    const fs::path home = dir / "home-of-dana";
    fs::create_directories(home);
    const fs::path out = home / "report.json";
    const std::vector<std::string> args{"run", "-s", "host_memcpy", "--size", "4K", "-a", "threads=single",
                                        "--max-time", "0.05", "-q", "--out", out.string()};
    auto with = args;
    with.push_back("--anonymize");
    REQUIRE(run_binary(with, dir, {"HOME=" + home.string()}) == 0);
    const auto doc = load_report(out.string());
    check_schema(doc);
    CHECK(doc["invocation"]["anonymized"] == true);
    CHECK_FALSE(doc["host"].contains("hostname"));
    const auto& argv = doc["invocation"]["argv"];
    CHECK(std::find(argv.begin(), argv.end(), "~/report.json") != argv.end());
    CHECK(slurp(out).find(home.string()) == std::string::npos);
    for (const auto& d : doc["devices"]) CHECK(d["uuid"] == "");

    // show --anonymize on a plain report
    REQUIRE(run_binary(args, dir) == 0);
    CHECK(load_report(out.string())["host"].contains("hostname"));
    Child show({"show", out.string(), "--format", "json", "--anonymize"}, dir, {"HOME=" + home.string()});
    REQUIRE(show.wait() == 0);
    const auto shown = nlohmann::json::parse(show.out());
    CHECK_FALSE(shown["host"].contains("hostname"));
    CHECK(shown["invocation"]["anonymized"] == true);
}

TEST_CASE("SIGINT, SIGTERM and SIGHUP keep every finished result, status interrupted, exit 1") {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        CAPTURE(sig);
        const fs::path dir = scratch(sig == SIGINT ? "sigint" : sig == SIGTERM ? "sigterm" : "sighup");
        const fs::path out = dir / "report.json";
        Child run(long_host_run(out), dir);
        // The third configuration has started: two have finished.
        REQUIRE_MESSAGE(wait_for_stderr(run, "[3/"), "the third configuration did not start within 60 s");
        REQUIRE(::kill(run.pid, sig) == 0);
        const int code = run.wait(30);
        CAPTURE(run.err());
        CHECK(code == 1);
        REQUIRE(fs::exists(out));
        const auto doc = load_report(out.string());
        check_schema(doc);
        CHECK(doc["invocation"]["status"] == "interrupted");
        const auto& results = doc["results"];
        REQUIRE(results.size() >= 2);
        CHECK(results.size() < 15); // 4K..64M is 15 sizes: the run stopped early
        for (std::size_t i = 0; i + 1 < results.size(); ++i) CHECK(results[i]["status"] == "ok");
        const std::string last = results.back()["status"];
        CHECK((last == "ok" || last == "interrupted"));
        CHECK(run.err().find("interrupted") != std::string::npos);
    }
}

TEST_CASE("a stop signal in a configuration of millions of samples: the run stops, the report keeps every k-th, read back") {
    // One configuration sampled with no end in sight (a sample is one 4 KiB copy). The report
    // keeps at most k_max_report_samples per metric (once: 33.5 M samples made a report the
    // reader refused, and its writing held the stop for a minute). No timing is asserted: the
    // wait only bounds the test.
    const fs::path dir = scratch("stop_many_samples");
    const fs::path out = dir / "report.json";
    Child run({"run", "-s", "host_memcpy", "--size", "4K", "-a", "threads=single", "--rounds", "1", "--warmup", "0",
               "--min-samples", "50000000", "--max-samples", "50000000", "--max-time", "600", "--sample-time", "1e-7",
               "--no-topology", "-q", "--progress=json", "--out", out.string()},
              dir);
    // Past the bound: the progress lines count the samples.
    const std::size_t wanted = 3 * k_max_report_samples;
    bool past = false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(testing::deadline_s(120));
    while (!past && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const std::string err = run.err();
        const auto last = err.rfind("{\"elapsed_s\"");
        if (last == std::string::npos) continue;
        const auto line = nlohmann::json::parse(err.substr(last, err.find('\n', last) - last), nullptr, false);
        past = !line.is_discarded() && line.value("samples", 0) >= static_cast<int>(wanted);
    }
    REQUIRE_MESSAGE(past, "the run did not take ", wanted, " samples; stderr: ", run.err());
    REQUIRE(::kill(run.pid, SIGTERM) == 0);
    CHECK(run.wait(120) == 1);
    Report report;
    REQUIRE_NOTHROW(report = read_report(out.string()));
    CHECK(report.header.invocation.status == "interrupted");
    REQUIRE(report.results.size() == 1);
    const Result& r = report.results[0];
    CHECK(r.status == Status::interrupted);
    REQUIRE(!r.metrics.empty());
    for (const auto& m : r.metrics) {
        CAPTURE(m.info.name);
        CHECK(m.samples.size() <= k_max_report_samples);
        CHECK(m.samples_taken >= wanted);
        CHECK(m.stats.n >= wanted); // the statistics are of every sample taken
    }
    REQUIRE(!r.cut.empty());
    CHECK(r.cut[0].find("samples of 'bandwidth': every ") != std::string::npos);
    check_schema(load_report(out.string()));
}

TEST_CASE("a stop signal after the report is written: every file of the run is still removed") {
    // The run prints its report as JSON on stdout, a pipe nobody reads yet: it stays after
    // the report was written, its storage file still there, until the signal. The handlers
    // stay until the run's files are gone (once they were restored right after the report:
    // the signal killed the process and left its storage folder behind).
    const fs::path dir = scratch("stop_after_report"), storage = dir / "storage", out = dir / "report.json";
    fs::create_directories(storage);
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const std::string err_path = (dir / "stderr").string();
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::dup2(pipe_fds[1], 1);
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
        const int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(e, 2);
        ::execl(INTEROPBENCH_BINARY, INTEROPBENCH_BINARY, "run", "-s", "storage_read", "--storage-dir", storage.c_str(),
                "--size", "4K", "-a", "path=buffered", "-a", "cache=warm", "--rounds", "1", "--warmup", "0", "--min-samples",
                "2000", "--max-samples", "2000", "--sample-time", "1e-6", "--no-topology", "-f", "json", "--out",
                out.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(pipe_fds[1]);
    bool complete = false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(testing::deadline_s(120));
    while (!complete && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const auto doc = nlohmann::json::parse(slurp(out), nullptr, false);
        complete = !doc.is_discarded() && doc.is_object() && doc["invocation"]["status"] == "complete";
    }
    REQUIRE_MESSAGE(complete, "the report was not written; stderr: ", slurp(err_path));
    CHECK_FALSE(fs::is_empty(storage)); // the run's storage folder is still there
    REQUIRE(::kill(pid, SIGTERM) == 0);
    std::string printed;
    char buf[65536];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) != 0;)
        if (n > 0) printed.append(buf, static_cast<std::size_t>(n));
        else if (errno != EINTR) break;
    ::close(pipe_fds[0]);
    const int status = testing::wait_child(pid, 60, "interopbench after the signal");
    CAPTURE(slurp(err_path));
    CHECK(WIFEXITED(status)); // never killed by the signal before its files are removed
    CHECK(fs::is_empty(storage));
    CHECK_FALSE(nlohmann::json::parse(printed, nullptr, false).is_discarded()); // stdout whole
}

TEST_CASE("kill -9 at any moment leaves the old report or none, never a broken one") {
    const fs::path dir = scratch("kill9");
    const fs::path out = dir / "report.json";
    const std::vector<std::string> args{"run", "-s", "host_memcpy", "--size", "4K,64K,1M", "-a", "threads=single",
                                        "--max-time", "0.05", "--no-topology", "-q", "--out", out.string()};
    // A first kill before any report exists leaves none or a whole one.
    {
        Child run(args, dir);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        ::kill(run.pid, SIGKILL);
        run.wait();
        if (fs::exists(out)) CHECK_NOTHROW(load_report(out.string()));
    }
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(run_binary(args, dir) == 0);
    const double whole = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::mt19937 rng(20261129);
    std::uniform_real_distribution<double> when(0.3 * whole, 1.1 * whole); // the write comes last
    for (int i = 0; i < 8; ++i) {
        const std::string before = slurp(out);
        Child run(args, dir);
        std::this_thread::sleep_for(std::chrono::duration<double>(when(rng)));
        ::kill(run.pid, SIGKILL);
        run.wait();
        CAPTURE(i);
        REQUIRE(fs::exists(out));
        const std::string after = slurp(out);
        nlohmann::json doc;
        REQUIRE_NOTHROW(doc = load_report(out.string()));
        // A new file is the finished report or a checkpoint (written after each round).
        if (after != before) CHECK((doc["invocation"]["status"] == "complete" || doc["invocation"]["status"] == "running"));
    }
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().rfind("report.json.tmp.", 0) == 0) fs::remove(e.path());
}

// ---- injected faults: need a GPU --------------------------------------------------------

namespace {

struct FaultRun {
    int code = 0;
    nlohmann::json doc;
    std::string err;
};

FaultRun run_with_fault(const std::string& spec, const std::vector<std::string>& args, const std::string& name) {
    const fs::path dir = scratch("fault_" + name);
    const fs::path out = dir / "report.json";
    std::vector<std::string> all = args;
    for (const char* a : {"--no-topology", "-q", "--max-time", "0.2", "--out"}) all.emplace_back(a);
    all.push_back(out.string());
    Child run(all, dir, {"INTEROPBENCH_FAULT=" + spec});
    FaultRun r;
    r.code = run.wait(300);
    r.err = run.err();
    CAPTURE(r.err);
    REQUIRE(fs::exists(out));
    r.doc = load_report(out.string());
    check_schema(r.doc);
    return r;
}

/// One configuration failed with `error`, the others ran, the run completed, exit 1.
void expect_one_failed(const FaultRun& r, const std::string& error) {
    CAPTURE(r.err);
    CHECK(r.code == 1);
    CHECK(r.doc["invocation"]["status"] == "complete");
    std::size_t failed = 0, ok = 0;
    for (const auto& res : r.doc["results"]) {
        if (res["status"] == "failed") {
            ++failed;
            CHECK(res["reason"].get<std::string>().find(error) != std::string::npos);
        }
        ok += res["status"] == "ok";
    }
    CHECK(failed == 1);
    CHECK(ok + 1 == r.doc["results"].size());
    CHECK(r.err.find("fault injection: INTEROPBENCH_FAULT=") != std::string::npos);
}

const std::vector<std::string> k_copy_run{"run", "-s", "h2d_copy", "--size", "64K,1M,4M", "-a", "host_mem=pinned",
                                          "-a", "engine=ce", "-d", "0"};

} // namespace

TEST_CASE("an injected allocation, copy or launch failure fails one configuration, the run goes on") {
    if (!gpu_present()) {
        testing::skip("no usable GPU here (fault injection needs CUDA)");
        return;
    }
    expect_one_failed(run_with_fault("alloc:1", k_copy_run, "alloc"), "cudaErrorMemoryAllocation");
    expect_one_failed(run_with_fault("copy:1", k_copy_run, "copy"), "cudaErrorInvalidValue");
    expect_one_failed(run_with_fault("launch:1", k_copy_run, "launch"), "cudaErrorLaunchOutOfResources");
}

TEST_CASE("an injected NCCL failure fails one collective configuration, the run goes on") {
    if (!gpu_present()) {
        testing::skip("no usable GPU here (fault injection needs CUDA)");
        return;
    }
    const auto r = run_with_fault("nccl:1", {"run", "-s", "nccl_all_reduce", "--size", "1M,4M,16M"}, "nccl");
    const auto& results = r.doc["results"];
    if (!results.empty() && results[0]["status"] == "skipped") {
        testing::skip(results[0]["reason"].get<std::string>());
        return;
    }
    expect_one_failed(r, "communicator aborted");
}

TEST_CASE("an injected sticky error ends the run cleanly: report written, status aborted") {
    if (!gpu_present()) {
        testing::skip("no usable GPU here (fault injection needs CUDA)");
        return;
    }
    const auto r = run_with_fault("sticky:1", k_copy_run, "sticky");
    CAPTURE(r.err);
    CHECK(r.code == 1);
    CHECK(r.doc["invocation"]["status"] == "aborted");
    REQUIRE(r.doc["results"].size() == 1); // nothing runs after the context is lost
    CHECK(r.doc["results"][0]["status"] == "failed");
    CHECK(r.doc["results"][0]["reason"].get<std::string>().find("cudaErrorIllegalAddress") != std::string::npos);
    bool warned = false;
    for (const auto& w : r.doc["warnings"]) warned = warned || w.get<std::string>().find("fatal device error") != std::string::npos;
    CHECK(warned);
    CHECK(r.err.find("error: ") != std::string::npos);
    CHECK(r.err.find("the CUDA context is lost") != std::string::npos);
}

// ---- a machine other users share (as root too): the tool's own files ------------------------

#include <sys/stat.h>

#include "interopbench/private_dir.hpp"

namespace {

std::string read_text(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

/// A victim file and a link to it planted at `at` (what another user would do).
void plant_link(const fs::path& victim, const fs::path& at) {
    std::ofstream(victim) << "secret";
    fs::create_symlink(victim, at);
}

} // namespace

TEST_CASE("the private directory is this user's alone, and a new file is never made through a planted link") {
    const std::string& dir = private_dir();
    struct stat st {};
    REQUIRE(::lstat(dir.c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(st.st_uid == ::geteuid());
    CHECK(fs::path(dir).filename().string().rfind("interopbench-" + std::to_string(::getpid()) + "-", 0) == 0);

    const fs::path d = scratch("planted_link");
    plant_link(d / "victim", d / "new.json");
    CHECK_THROWS_WITH_AS(create_new_file((d / "new.json").string()), doctest::Contains("already there"), WriteError);
    CHECK(read_text(d / "victim") == "secret");
    std::string made;
    const int fd = create_unique_file(d.string(), "u-", "-x.json", made);
    REQUIRE(fd >= 0);
    ::close(fd);
    CHECK(fs::path(made).filename().string().size() == std::string("u-XXXXXX-x.json").size());
    fs::remove_all(d);
}

TEST_CASE("rounds in new processes keep their plans in a private folder, removed after the run") {
    const fs::path d = scratch("round_private");
    const fs::path tmp = d / "tmp";
    fs::create_directories(tmp);
    // Links at the names earlier versions used (pid guessed: the next few) are never followed.
    std::ofstream(d / "victim") << "secret";
    for (int k = 1; k <= 3; ++k)
        fs::create_symlink(d / "victim", tmp / ("interopbench-round-x-" + std::to_string(k) + "-plan.json"));
    const int rc = run_binary({"run", "-s", "host_memcpy", "-a", "threads=single", "--size", "4K", "--rounds", "3",
                               "--min-samples", "3", "--max-time", "0.2", "--no-topology", "-q", "--out",
                               (d / "r.json").string()},
                              d, {"TMPDIR=" + tmp.string()});
    CAPTURE(read_text(d / "stderr"));
    CHECK(rc == 0);
    CHECK(read_text(d / "victim") == "secret");
    std::size_t left = 0;
    for (const auto& e : fs::directory_iterator(tmp)) left += e.path().filename().string().rfind("interopbench-round-x-", 0) != 0;
    CHECK(left == 0); // the private folder and everything in it is gone
    fs::remove_all(d);
}

TEST_CASE("TMPDIR that does not exist, with rounds: each round runs in this process, the warning says why and what to do") {
    const fs::path d = scratch("round_no_tmpdir");
    const int rc = run_binary({"run", "-s", "host_memcpy", "-a", "threads=single", "--size", "4K", "--rounds", "2",
                               "--min-samples", "3", "--max-time", "0.2", "--no-topology", "-q", "--out",
                               (d / "r.json").string()},
                              d, {"TMPDIR=/nonexistent-interopbench-tmp"});
    CAPTURE(read_text(d / "stderr"));
    CHECK(rc == 0);
    const Report r = read_report((d / "r.json").string());
    REQUIRE(r.results.size() == 1);
    CHECK(r.results[0].rounds == 2); // measured, both rounds
    const auto& w = r.header.warnings;
    CHECK(std::any_of(w.begin(), w.end(), [](const std::string& x) {
        return x == "round 2 could not run in a new process (TMPDIR '/nonexistent-interopbench-tmp' does not exist: set "
                    "TMPDIR to a folder that only root or you may change, below folders likewise, or unset it to use /tmp); "
                    "it ran in this one";
    }));
}

TEST_CASE("the report written to and the fallback are named with control characters escaped") {
    const fs::path d = scratch("escaped_names");
    const fs::path out = d / "a\x1b[31mb.json";
    const int rc = run_binary({"run", "-s", "host_memcpy", "-a", "threads=single", "--size", "4K", "--rounds", "1",
                               "--min-samples", "3", "--max-time", "0.2", "--no-topology", "--format", "csv", "--out",
                               out.string()},
                              d);
    const std::string err = read_text(d / "stderr");
    CAPTURE(err);
    CHECK(rc == 0);
    CHECK(err.find('\x1b') == std::string::npos);
    CHECK(err.find("a\\x1b[31mb.json") != std::string::npos);
    fs::remove_all(d);
}

TEST_CASE("a default storage folder that is not this user's alone is refused, exit 2") {
    const fs::path d = scratch("shared_storage_default");
    const fs::path tmp = d / "tmp";
    fs::create_directories(tmp / ("interopbench-storage-" + std::to_string(::geteuid())));
    fs::permissions(tmp / ("interopbench-storage-" + std::to_string(::geteuid())), fs::perms::all);
    const int rc = run_binary({"run", "-s", "storage_read", "--size", "1M", "--no-topology", "--out", (d / "r.json").string()},
                              d, {"TMPDIR=" + tmp.string()});
    const std::string err = read_text(d / "stderr");
    CAPTURE(err);
    CHECK(rc == 2);
    CHECK(err.find("not this user's alone") != std::string::npos);
    fs::remove_all(d);
}

TEST_CASE("storage files: a planted link is never followed, and two runs on one folder keep their own files") {
    const fs::path d = scratch("storage_links");
    const fs::path dir = d / "storage";
    fs::create_directories(dir);
    plant_link(d / "victim", dir / "ib-storage-v1-1048576.dat"); // the name of a kept 1 MiB file
    // Kept files live at the top: the link is refused, with the file named.
    int rc = run_binary({"run", "-s", "storage_read", "-a", "path=buffered", "-a", "cache=warm", "--size", "1M", "--keep-files",
                         "--storage-dir", dir.string(), "--min-samples", "2", "--max-time", "0.5", "--no-topology",
                         "--format", "json", "--out", (d / "r1.json").string()},
                        d);
    CHECK(read_text(d / "stdout").find("symbolic link, which this tool never made") != std::string::npos);
    CHECK(read_text(d / "victim") == "secret");
    // Files not kept live in the run's own folder: the link is not even looked at.
    rc = run_binary({"run", "-s", "storage_read", "-a", "path=buffered", "-a", "cache=warm", "--size", "1M", "--storage-dir",
                     dir.string(), "--min-samples", "2", "--max-time", "0.5", "--no-topology", "-q", "--out",
                     (d / "r2.json").string()},
                    d);
    CHECK(rc == 0);
    CHECK(read_text(d / "victim") == "secret");

    // Two runs at once on one folder: each removes only what it made.
    fs::remove(dir / "ib-storage-v1-1048576.dat");
    const fs::path a = d / "a", b = d / "b";
    fs::create_directories(a);
    fs::create_directories(b);
    auto args = [&](const fs::path& o) {
        return std::vector<std::string>{"run", "-s", "storage_read", "-a", "path=buffered,mmap", "-a", "cache=warm", "--size",
                                        "4M,8M,16M", "--storage-dir", dir.string(), "--min-samples", "5", "--max-time", "0.3",
                                        "--rounds", "1", "--no-topology", "-q", "--out", (o / "r.json").string()};
    };
    Child first(args(a), a), second(args(b), b);
    CHECK(first.wait() == 0);
    CHECK(second.wait() == 0);
    for (const fs::path& o : {a, b}) {
        const nlohmann::json doc = nlohmann::json::parse(read_text(o / "r.json"));
        for (const auto& r : doc["results"]) CHECK(r["status"] == "ok");
    }
    CHECK(fs::is_empty(dir));
    fs::remove_all(d);
}

// ---- bounded inputs ---------------------------------------------------------------------------

#include "fake_scenario.hpp"
#include "interopbench/file_io.hpp"

TEST_CASE("JSON nested past the limit is refused as bad input, never parsed into a stack overflow") {
    std::string deep(100000, '[');
    deep.append(100000, ']');
    CHECK_THROWS_AS(parse_json(deep), nlohmann::json::parse_error);
    CHECK(parse_json(deep, false).is_discarded());
    std::string ok(k_max_json_depth, '[');
    ok.append(k_max_json_depth, ']');
    CHECK(parse_json(ok).is_array());
    // Brackets inside strings are text, not nesting.
    std::string text = "{\"a\": \"";
    text.append(1000, '[');
    text += "\"}";
    CHECK(parse_json(text).is_object());
    // The same in a report file: show refuses it in one line, exit 2.
    const fs::path d = scratch("deep_json");
    std::ofstream(d / "deep.json") << "{\"results\": " << deep << "}";
    for (const char* format : {"json", "html", "table"}) {
        const int rc = run_binary({"show", "--format", format, (d / "deep.json").string()}, d);
        CAPTURE(format);
        CHECK(rc == 2);
        CHECK(read_text(d / "stderr").find("is not valid JSON") != std::string::npos);
    }
    fs::remove_all(d);
}

namespace {

/// `inner` wrapped in `levels` arrays, built without recursion (as no parser would let it be).
nlohmann::json nested(int levels, nlohmann::json inner = 1) {
    for (int i = 0; i < levels; ++i) {
        nlohmann::json outer = nlohmann::json::array();
        outer.push_back(std::move(inner));
        inner = std::move(outer);
    }
    return inner;
}

} // namespace

TEST_CASE("a plugin reply nested 100000 levels deep is refused with a reason, and the plugin is listed as unusable") {
    constexpr int k_deep = 100000;
    const std::string open(k_deep, '['), close(k_deep, ']');
    // As the plugin's line arrives: parse_json refuses it before anything walks it.
    for (const std::string& line : {"{\"protocol\": 1, \"metrics\": " + open + close + "}", "{\"error\": " + open + close + "}",
                                    "{\"details\": {\"a\": " + open + close + "}}"}) {
        CHECK(parse_json(line, false).is_discarded());
        CHECK_THROWS_WITH_AS(parse_json(line), doctest::Contains("nesting deeper than 256 levels"), nlohmann::json::parse_error);
    }
    // Built in memory, past any parser: the reply readers refuse it themselves, never recursing.
    plugin::Manifest m;
    m.id = "fake_deep";
    const std::vector<MetricInfo> metrics = {{"time", "s", Better::lower, ""}};
    const auto too_deep = doctest::Contains("nests deeper than 256 levels");
    const nlohmann::json describe = {{"protocol", 1}, {"metrics", nested(k_deep)}};
    CHECK_THROWS_WITH_AS(plugin::parse_describe_reply(describe, m), too_deep, plugin::BadReply);
    const nlohmann::json error = {{"error", nested(k_deep)}};
    CHECK_THROWS_WITH_AS(plugin::parse_describe_reply(error, m), too_deep, plugin::BadReply);
    CHECK_THROWS_WITH_AS(plugin::parse_measure_reply(error, metrics), too_deep, plugin::BadReply);
    CHECK_THROWS_WITH_AS(plugin::parse_details_reply(error), too_deep, plugin::BadReply);
    const nlohmann::json values = {{"values", {{"time", nested(k_deep)}}}, {"clock", "fake"}};
    CHECK_THROWS_WITH_AS(plugin::parse_measure_reply(values, metrics), too_deep, plugin::BadReply);
    const nlohmann::json details = {{"details", {{"a", nested(k_deep)}}}};
    CHECK_THROWS_WITH_AS(plugin::parse_details_reply(details), too_deep, plugin::BadReply);
    // The limit itself is accepted (256 levels, as parse_json allows).
    CHECK(plugin::parse_details_reply({{"details", {{"a", nested(k_max_json_depth - 2)}}}}).contains("a"));

    // Through a plugin: `list` still works and names it unusable, with the reason.
    const fs::path d = scratch("deep_plugin");
    const fs::path pd = d / "plugins";
    fs::create_directories(pd);
    std::ofstream(pd / "deep.py") << "import sys\n"
                                     "where = sys.argv[1]\n"
                                     "deep = '[' * 100000 + ']' * 100000\n"
                                     "for line in sys.stdin:\n"
                                     "    if where == 'metrics':\n"
                                     "        print('{\"protocol\": 1, \"metrics\": ' + deep + '}', flush=True)\n"
                                     "    else:\n"
                                     "        print('{\"error\": ' + deep + '}', flush=True)\n";
    for (const char* where : {"metrics", "error"})
        std::ofstream(pd / fmt::format("deep_{}.json", where))
            << fmt::format(R"({{"id": "deep_{}", "protocol": 1, "command": ["python3", "deep.py", "{}"], "needs_gpu": false, "timeout_s": 30}})",
                           where, where);
    REQUIRE(run_binary({"list", "--format", "json", "--no-default-plugins", "--plugin-path", pd.string()}, d) == 0);
    const auto list = nlohmann::json::parse(read_text(d / "stdout"));
    int unusable = 0;
    for (const auto& sc : list)
        if (sc["id"].get<std::string>().rfind("deep_", 0) == 0) {
            CAPTURE(sc["summary"]);
            CHECK(sc["summary"].get<std::string>().rfind("plugin unusable: ", 0) == 0);
            ++unusable;
        }
    CHECK(unusable == 2);
    REQUIRE(run_binary({"list", "--no-default-plugins", "--plugin-path", pd.string()}, d) == 0);
    CHECK(read_text(d / "stdout").find("deep_metrics") != std::string::npos);
    fs::remove_all(d);
}

TEST_CASE("strings that are not UTF-8 are kept as escapes, and the report is written") {
    const nlohmann::json doc = {{"arg", std::string("a\xff" "b")}, {std::string("k\xc3"), {std::string("\xe2\x82")}}};
    const nlohmann::json fixed = valid_utf8(doc);
    CHECK(fixed["arg"] == "a\\xffb");
    CHECK(fixed["k\\xc3"][0] == "\\xe2\\x82");
    CHECK_NOTHROW((void)fixed.dump());
    CHECK(valid_utf8(nlohmann::json{{"ok", "caf\xc3\xa9"}})["ok"] == "caf\xc3\xa9");
    // Through the binary: an argument and a CUDA_ variable with such bytes.
    const fs::path d = scratch("not_utf8");
    const int rc = run_binary({"run", "-s", "host_memcpy", "-a", "threads=single", "--size", "4K", "--rounds", "1",
                               "--min-samples", "3", "--max-time", "0.2", "--no-topology", "-q", "--out",
                               (d / "r.json").string(), "--plugin-timeout", "30"},
                              d, {std::string("CUDA_IB_TEST=x\xff\xfe")});
    CAPTURE(read_text(d / "stderr"));
    CHECK(rc == 0);
    CHECK(load_report((d / "r.json").string())["results"].size() == 1);
    fs::remove_all(d);
}

namespace {
/// A scenario with `n` two-valued axes (what a plugin may declare): 2^n configurations.
class WideScenario final : public Scenario {
public:
    explicit WideScenario(int n) {
        m_info.id = "fake_many_axes";
        m_info.family = "fake";
        m_info.summary = "many axes";
        m_info.needs_gpu = false;
        m_info.counting = "none";
        for (int i = 0; i < n; ++i)
            m_info.axes.push_back({fmt::format("a{}", i), "two values", AxisKind::choice, {"x,y"}, {"x", "y"}});
        m_info.metrics = {{"bandwidth", "B/s", Better::higher, "x"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::optional<std::string> unsupported(const Machine&, const Params&) const override { return std::nullopt; }
    std::unique_ptr<Case> prepare(const CaseContext&, const Params&) const override { return nullptr; }

private:
    ScenarioInfo m_info;
};
} // namespace

TEST_CASE("a selection that expands past the cap of configurations is refused before anything is built") {
    Registry r;
    r.add(std::make_unique<WideScenario>(10000)); // 2^10000: the expansion never ended before
    RunPlan plan;
    plan.entries.push_back({"fake_many_axes", {}});
    Machine m;
    CHECK_THROWS_WITH_AS(expand_plan(r, plan, m), doctest::Contains("more than 100000 configurations"), UsageError);
    Registry small;
    small.add(std::make_unique<WideScenario>(10));
    plan.entries = {{"fake_many_axes", {}}};
    CHECK(expand_plan(small, plan, m).size() == 1024);
}

TEST_CASE("--confirm is bounded, outputs named another way are the same file, Ctrl-C stops a file being created") {
    const fs::path d = scratch("bounds_cli");
    int rc = run_binary({"run", "-s", "host_memcpy", "--baseline", (d / "none.json").string(), "--confirm", "1000000"}, d);
    CHECK(rc == 2);
    CHECK(read_text(d / "stderr").find("--confirm 1000000 is outside 0 to 20") != std::string::npos);
    fs::create_directories(d / "out");
    rc = run_binary({"run", "-s", "host_memcpy", "--out", (d / "out" / "x.json").string(), "--html",
                     (d / "out" / ".." / "out" / "x.json").string()},
                    d);
    CHECK(rc == 2);
    CHECK(read_text(d / "stderr").find("is the --out report") != std::string::npos);

    // The first Ctrl-C while a 1 GiB storage file is being written: the configuration ends
    // interrupted (not after the whole file), the partial file is removed, the report says so.
    const fs::path sd = d / "storage";
    fs::create_directories(sd);
    Child child({"run", "-s", "storage_read", "-a", "path=buffered", "-a", "cache=warm", "--size", "1G", "--storage-dir",
                 sd.string(), "--no-topology", "-q", "--out", (d / "r.json").string()},
                d);
    bool creating = false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!creating && std::chrono::steady_clock::now() < until) {
        std::error_code ec;
        for (fs::recursive_directory_iterator it(sd, ec), end; !ec && it != end; it.increment(ec))
            creating = creating || it->path().filename().string().find("-create-") != std::string::npos;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE_MESSAGE(creating, "the storage file was not being created within 60 s");
    ::kill(child.pid, SIGINT);
    CHECK(child.wait() == 1);
    const nlohmann::json doc = load_report((d / "r.json").string());
    REQUIRE(doc["results"].size() == 1);
    const auto& res = doc["results"][0];
    const bool stopped_early = res["status"] == "interrupted" || res["status"] == "ok";
    CHECK(stopped_early);
    if (res["status"] == "interrupted" && res["reason"].get<std::string>().find("creating") != std::string::npos)
        CHECK(res["reason"].get<std::string>().find("the partial file was removed") != std::string::npos);
    CHECK(fs::is_empty(sd));
    fs::remove_all(d);
}

TEST_CASE("a configuration whose every sample is null fails, never ok with n = 0") {
    testing::FakeBehaviour b;
    b.sample = [](int) { return Sample{std::nan(""), std::nan("")}; };
    Registry r;
    r.add(std::make_unique<testing::FakeScenario>("fake_null", b));
    RunPlan plan;
    plan.settings.warmup = 0;
    plan.settings.min_samples = 3;
    plan.settings.max_samples = 3;
    plan.settings.max_time_s = 1;
    plan.settings.rounds = 1;
    plan.entries.push_back({"fake_null", {{"size", {"1K"}}}});
    Machine m;
    const auto results = testing::run_plan(r, plan, m);
    REQUIRE(results.size() == 1);
    CHECK(results[0].status == Status::failed);
    CHECK(results[0].reason.find("no sample gave a value of the primary metric 'bandwidth'") != std::string::npos);
}

TEST_CASE("a damaged kept storage file is made again and said so, and a huge plugin manifest is not read") {
    const fs::path d = scratch("damaged_kept");
    const fs::path sd = d / "storage";
    fs::create_directories(sd);
    auto run = [&](const char* out) {
        return run_binary({"run", "-s", "storage_read", "-a", "path=buffered", "-a", "cache=warm", "--size", "2M",
                           "--keep-files", "--storage-dir", sd.string(), "--min-samples", "2", "--max-time", "0.3",
                           "--rounds", "1", "--no-topology", "-q", "--out", (d / out).string()},
                          d);
    };
    REQUIRE(run("r1.json") == 0);
    const fs::path kept = sd / "ib-storage-v1-2097152.dat";
    REQUIRE(fs::exists(kept));
    {
        std::fstream f(kept, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(1 << 20); // the middle: a check of the first and last words would not see it
        f.write("XXXXXXXX", 8);
    }
    CHECK(run("r2.json") == 0);
    const nlohmann::json doc = load_report((d / "r2.json").string());
    REQUIRE(doc["results"].size() == 1);
    CHECK(doc["results"][0]["status"] == "ok");
    CHECK(doc["results"][0]["details"]["file_notes"][0].get<std::string>().find("differed from its pattern") != std::string::npos);

    const fs::path pd = d / "plugins";
    fs::create_directories(pd);
    {
        std::ofstream big(pd / "huge.json");
        big << "{\"id\": \"huge\", \"description\": \"" << std::string(2u << 20, 'x') << "\"}";
    }
    const int rc = run_binary({"list", "--no-default-plugins", "--plugin-path", pd.string()}, d);
    CHECK(rc == 2);
    CHECK(read_text(d / "stderr").find("plugin manifest") != std::string::npos);
    fs::remove_all(d);
}
