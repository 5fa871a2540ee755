// Storage family without a GPU: storage_read on small files, the cache-state proof (mincore),
// the byte accounting, the tool's files (stale ones, cleanup after SIGINT/SIGTERM of the real
// binary), every bad input of the issue, cuFile absent, sysfs path classes.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "families/builtin.hpp"
#include "gpu/storage_io.hpp"
#include "gpu/cufile_loader.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/runner.hpp"
#include "topology/storage_devices.hpp"

using namespace interopbench;
using namespace interopbench::storage;
namespace fs = std::filesystem;

namespace {

/// A scratch directory on the build machine's disk (not tmpfs where avoidable), removed after.
struct Scratch {
    fs::path dir;
    Scratch() {
        const char* tmp = std::getenv("TMPDIR");
        std::string base = tmp && *tmp ? tmp : "/tmp";
        dir = fs::path(base) / ("ib-storage-test-" + std::to_string(::getpid()) + "-" +
                                std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
        fs::create_directories(dir);
    }
    ~Scratch() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    std::size_t entries() const {
        std::size_t n = 0;
        for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
        return n;
    }
};

Registry storage_registry() {
    return builtin_registry({"storage"});
}

std::vector<Config> expand(const Registry& r, const std::string& pattern, std::map<std::string, std::vector<std::string>> axes,
                           const Machine& m) {
    RunPlan plan;
    plan.entries.push_back({pattern, std::move(axes)});
    return expand_plan(r, plan, m);
}

RunSettings quick_settings(const std::string& dir) {
    RunSettings s;
    s.warmup = 0;
    s.min_samples = 2;
    s.max_samples = 2;
    s.max_time_s = 5;
    s.options.set_text("storage-dir", dir);
    return s;
}

double median(const Result& r, const char* metric) {
    const MetricResult* m = r.metric(metric);
    REQUIRE(m);
    return m->stats.median;
}

int run_binary(const std::vector<std::string>& args, std::string* err_text = nullptr) {
    std::string cmd = std::string(INTEROPBENCH_BINARY);
    for (const auto& a : args) cmd += " '" + a + "'";
    const std::string err_file = "/tmp/ib-storage-test-err-" + std::to_string(::getpid());
    cmd += " >/dev/null 2>" + err_file;
    const int rc = std::system(cmd.c_str());
    if (err_text) {
        std::ifstream in(err_file);
        err_text->assign(std::istreambuf_iterator<char>(in), {});
    }
    ::unlink(err_file.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

} // namespace

TEST_CASE("storage: every storage_read path reads a small file, cold and warm, and the bytes add up") {
    Scratch scratch;
    Site::instance().reset();
    const Registry r = storage_registry();
    Machine m;
    m.host_cores = 2;
    RunSettings s = quick_settings(scratch.dir.string());
    const auto configs = expand(r, "storage_read", {{"size", {"1M"}}, {"chunk", {"256K"}}, {"threads", {"1", "2"}}}, m);
    REQUIRE(configs.size() == 20);
    builtin_families().preflight(s, configs);
    Runner runner(m, s);
    int measured = 0;
    for (const Config& c : configs) {
        const Result res = runner.run_one(c);
        INFO(res.key << ": " << res.reason);
        if (res.status == Status::skipped) {
            // The only skips here: warm O_DIRECT paths, and what this directory cannot do.
            const bool expected = res.reason.find("O_DIRECT bypasses") != std::string::npos ||
                                  res.reason.find("cold cannot") != std::string::npos ||
                                  res.reason.find("O_DIRECT (") != std::string::npos ||
                                  res.reason.find("io_uring") != std::string::npos;
            CHECK(expected);
            continue;
        }
        REQUIRE(res.status == Status::ok);
        ++measured;
        CHECK(res.details.contains("file_system"));
        CHECK(res.details["path"].get<std::string>().find("host memory") != std::string::npos);
        if (c.params.get("cache") == "cold") {
            CHECK(median(res, "resident_before") == 0.0);
            // The process read at least the file from the block layer (read-ahead may add).
            CHECK(median(res, "device_bytes") >= 1024.0 * 1024);
            CHECK(median(res, "cache_bytes") == 0.0);
        } else {
            CHECK(median(res, "resident_before") == 1.0);
            CHECK(median(res, "device_bytes") == 0.0);
            CHECK(median(res, "cache_bytes") == 1024.0 * 1024);
        }
        CHECK(median(res, "bandwidth") > 0);
        CHECK(median(res, "cpu_time_per_gb") >= 0);
    }
    CHECK(measured >= 6);
    Site::instance().reset();
    CHECK(scratch.entries() == 0); // the pattern file is removed when no longer kept
}

TEST_CASE("storage: residency follows writing, dropping and reading (mincore)") {
    Scratch scratch;
    const std::string path = (scratch.dir / "f").string();
    Fd fd = open_file(path, O_CREAT | O_RDWR);
    std::vector<std::uint64_t> buf(1 << 17); // 1 MiB
    fill_file_pattern(buf.data(), 0, buf.size() * 8);
    pwrite_all(fd.get(), buf.data(), buf.size() * 8, 0, path);
    CHECK(residency(fd.get(), buf.size() * 8).pages == 256);
    CHECK(residency(fd.get(), buf.size() * 8).resident == 256); // just written
    const DropOutcome d = drop_pages(fd.get(), buf.size() * 8, false);
    const StorageDirFacts f = storage_dir_facts(scratch.dir.string(), false);
    if (f.memory_backed) {
        CHECK(d.after.resident == 256); // tmpfs cannot drop: cold is unreachable there
        return;
    }
    CHECK(d.after.resident == 0);
    pread_all(fd.get(), buf.data(), 512 * 1024, 0, path);
    const Residency half = residency(fd.get(), buf.size() * 8);
    CHECK(half.resident >= 128);
    CHECK(residency(fd.get(), 0).pages == 0);
}

TEST_CASE("storage: byte accounting from /proc/self/io counts a cold read, not a cached one") {
    Scratch scratch;
    const IoCounters c = read_io_counters();
    REQUIRE(c.valid);
    const std::string path = (scratch.dir / "f").string();
    Fd fd = open_file(path, O_CREAT | O_RDWR);
    std::vector<std::uint64_t> buf(1 << 18); // 2 MiB
    fill_file_pattern(buf.data(), 0, buf.size() * 8);
    pwrite_all(fd.get(), buf.data(), buf.size() * 8, 0, path);
    if (storage_dir_facts(scratch.dir.string(), false).memory_backed) return;
    drop_pages(fd.get(), buf.size() * 8, false);
    Accounting a(storage_dir_facts(scratch.dir.string(), false).device);
    a.start();
    pread_all(fd.get(), buf.data(), buf.size() * 8, 0, path);
    a.stop();
    CHECK(a.device_read_bytes() >= 2.0 * 1024 * 1024);
    CHECK(count_file_pattern_mismatches(buf.data(), 0, buf.size() * 8) == 0);
    a.start();
    pread_all(fd.get(), buf.data(), buf.size() * 8, 0, path);
    a.stop();
    CHECK(a.device_read_bytes() == 0.0);
    CHECK(a.cpu_seconds() >= 0);
}

TEST_CASE("storage: the pattern at an offset matches the whole-file pattern") {
    std::vector<std::uint64_t> whole(1024), part(512);
    fill_file_pattern(whole.data(), 0, whole.size() * 8);
    fill_file_pattern(part.data(), 512 * 8, part.size() * 8);
    CHECK(std::equal(part.begin(), part.end(), whole.begin() + 512));
    CHECK(count_file_pattern_mismatches(part.data(), 512 * 8, part.size() * 8) == 0);
    part[3] ^= 1;
    CHECK(count_file_pattern_mismatches(part.data(), 512 * 8, part.size() * 8) == 1);
}

TEST_CASE("storage: a file truncated while measuring fails that read with a clear error") {
    Scratch scratch;
    const std::string path = (scratch.dir / "f").string();
    {
        Fd fd = open_file(path, O_CREAT | O_RDWR);
        std::vector<char> zeros(1 << 20, 1);
        pwrite_all(fd.get(), zeros.data(), zeros.size(), 0, path);
        REQUIRE(::ftruncate(fd.get(), 1 << 19) == 0);
    }
    std::vector<char> dst(1 << 20);
    for (ReadPath p : {ReadPath::buffered, ReadPath::mmap}) {
        ReadSpec spec{p, 1 << 20, 1 << 18, 1, 1};
        CHECK_THROWS_WITH_AS(read_file(path, dst.data(), spec), doctest::Contains("truncated"), ConfigError);
    }
}

TEST_CASE("storage: disk full while writing is named") {
    Fd fd = open_file("/dev/full", O_WRONLY);
    std::vector<char> b(4096, 1);
    CHECK_THROWS_WITH_AS(pwrite_all(fd.get(), b.data(), b.size(), 0, "/dev/full"), doctest::Contains("disk full"), ConfigError);
}

TEST_CASE("storage: stale temporaries of dead processes are removed, live ones kept") {
    Scratch scratch;
    const auto dead = scratch.dir / temp_file_name(999999999, "create-1");
    const auto mine = scratch.dir / temp_file_name(::getpid(), "create-1");
    const auto other = scratch.dir / "unrelated.tmp";
    for (const auto& p : {dead, mine, other}) std::ofstream(p) << "x";
    CHECK(remove_stale_files(scratch.dir.string()) == 1);
    CHECK(!fs::exists(dead));
    CHECK(fs::exists(mine));
    CHECK(fs::exists(other));
}

TEST_CASE("storage: pattern files are kept with --keep-files and reused by the next run") {
    Scratch scratch;
    {
        PatternFile f(scratch.dir.string(), 1 << 20, true);
        CHECK(!f.reused());
    }
    CHECK(fs::exists(scratch.dir / pattern_file_name(1 << 20)));
    {
        PatternFile f(scratch.dir.string(), 1 << 20, false);
        CHECK(f.reused());
    }
    CHECK(scratch.entries() == 0); // not kept this time: removed
}

TEST_CASE("storage: bad storage directories are usage errors naming the problem, before measuring") {
    Scratch scratch;
    Site& site = Site::instance();
    site.reset();
    CHECK_THROWS_WITH_AS(site.configure((scratch.dir / "missing").string(), false, 0), doctest::Contains("does not exist"),
                         UsageError);
    std::ofstream(scratch.dir / "file") << "x";
    CHECK_THROWS_WITH_AS(site.configure((scratch.dir / "file").string(), false, 0), doctest::Contains("is not a directory"),
                         UsageError);
    CHECK_THROWS_WITH_AS(site.configure(scratch.dir.string(), false, 1ull << 60), doctest::Contains("free but"), UsageError);
    if (::geteuid() != 0) {
        fs::create_directory(scratch.dir / "ro");
        fs::permissions(scratch.dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
        CHECK_THROWS_WITH_AS(site.configure((scratch.dir / "ro").string(), false, 0), doctest::Contains("not writable"),
                             UsageError);
    }
    site.reset();
}

TEST_CASE("storage: the command line refuses bad storage input with exit 2 and one line each") {
    Scratch scratch;
    std::string err;
    CHECK(run_binary({"run", "-s", "storage_read", "--storage-dir", (scratch.dir / "nope").string(), "--size", "1M"}, &err) == 2);
    CHECK(err.find("does not exist") != std::string::npos);
    std::ofstream(scratch.dir / "file") << "x";
    CHECK(run_binary({"run", "-s", "storage_read", "--storage-dir", (scratch.dir / "file").string(), "--size", "1M"}, &err) == 2);
    CHECK(err.find("not a directory") != std::string::npos);
    CHECK(run_binary({"run", "-s", "storage_read", "--storage-dir", scratch.dir.string(), "--size", "64T"}, &err) == 2);
    CHECK(err.find("free but") != std::string::npos);
    CHECK(scratch.entries() == 1); // nothing created by the refused runs
}

TEST_CASE("storage: sizes off the direct-I/O alignment skip the O_DIRECT paths with the reason, others run") {
    Scratch scratch;
    Site::instance().reset();
    const Registry r = storage_registry();
    Machine m;
    m.host_cores = 2;
    RunSettings s = quick_settings(scratch.dir.string());
    const auto configs = expand(r, "storage_read", {{"size", {"1000B"}}, {"cache", {"cold"}}, {"path", {"odirect", "buffered"}}}, m);
    builtin_families().preflight(s, configs);
    Runner runner(m, s);
    for (const Config& c : configs) {
        const Result res = runner.run_one(c);
        INFO(res.key << ": " << res.reason);
        if (c.params.get("path") == "odirect") {
            CHECK(res.status == Status::skipped);
            const bool named = res.reason.find("not a multiple of the direct-I/O alignment") != std::string::npos ||
                               res.reason.find("O_DIRECT") != std::string::npos;
            CHECK(named);
        } else if (!Site::instance().cold_unreachable()) {
            CHECK(res.status == Status::ok);
        }
    }
    Site::instance().reset();
}

TEST_CASE("storage: qd belongs to io_uring, ring and threads to their paths, and the GPU paths skip without a GPU") {
    Scratch scratch;
    Site::instance().reset();
    Site::instance().configure(scratch.dir.string(), false, 0);
    const Registry r = storage_registry();
    Machine m;
    m.cuda_available = false;
    m.cuda_note = "no NVIDIA driver";
    const auto reads = expand(r, "storage_read", {{"path", {"buffered"}}, {"qd", {"8"}}, {"size", {"1M"}}}, m);
    for (const auto& c : reads) CHECK(*c.scenario->unsupported(m, c.params) == "qd applies to path=io_uring only");
    for (const char* id : {"storage_to_gpu", "gpu_to_storage"}) {
        const Scenario* sc = r.find(id);
        REQUIRE(sc);
        Params p({{"size", "1048576"}, {"path", "pinned"}, {"cache", "cold"}, {"chunk", "1048576"}, {"ring", "0"},
                  {"threads", "1"}, {"device", "0"}});
        const auto why = sc->unsupported(m, p);
        REQUIRE(why);
        CHECK(why->find("no NVIDIA driver") != std::string::npos);
    }
    Site::instance().reset();
}

TEST_CASE("storage: cuFile absent is a reason, not a failure") {
    ::setenv("INTEROPBENCH_CUFILE_LIBRARY", "/nonexistent/libcufile.so.0", 1);
    std::string why;
    CHECK(gpu::cufile_api(&why) == nullptr);
    CHECK(why.find("libcufile.so.0 could not be loaded") != std::string::npos);
    CHECK(gpu::cufile_driver(&why) == nullptr);
    Machine m;
    gpu::probe_cufile(m);
    const RuntimeLibrary* lib = m.library("cufile");
    REQUIRE(lib);
    CHECK(!lib->loaded());
    CHECK(lib->note.find("could not be loaded") != std::string::npos);
    const nlohmann::json facts = gpu::cufile_facts_json();
    CHECK(facts["version"] == "");
}

TEST_CASE("storage: cuFile's mode comes from its counters, or says it was not counted") {
    gpu::CufileCounts c;
    c.available = true;
    c.reads = 10;
    c.posix_reads = 10;
    CHECK(gpu::cufile_mode(c, true, false, false, false) == "compat");
    c.posix_reads = 0;
    c.nvfs_reads = 10;
    CHECK(gpu::cufile_mode(c, true, true, false, false) == "gds");
    c.nvfs_reads = 6;
    c.posix_reads = 4;
    CHECK(gpu::cufile_mode(c, true, true, false, false) == "gds+compat");
    gpu::CufileCounts none;
    CHECK(gpu::cufile_mode(none, true, false, false, false) == "compat (not counted)");
    CHECK(gpu::cufile_mode(none, true, true, false, false) == "gds (not counted)");
    CHECK(gpu::cufile_mode(none, true, true, false, true) == "compat (not counted)");
    CHECK(gpu::cufile_mode(none, true, false, true, false) == "p2pdma (not counted)");
    CHECK(gpu::cufile_version_string(1151) == "1.15.1");
    CHECK(gpu::cufile_version_string(11501) == "1.15.1");
    CHECK(gpu::cufile_error_name(5001) == "CU_FILE_DRIVER_NOT_INITIALIZED (5001)");
}

TEST_CASE("storage: PCIe path classes from sysfs paths") {
    const std::string root = "/sys/devices/pci0000:00/";
    CHECK(classify_sysfs_pci_path(root + "0000:00:02.0/virtio1/block/vda", root + "0000:00:03.0", 0, 0) == PathClass::phb);
    CHECK(classify_sysfs_pci_path(root + "0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:03:00.0/nvme/nvme0",
                                  root + "0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:04:00.0", 0, 0) == PathClass::pix);
    CHECK(classify_sysfs_pci_path(root + "0000:00:01.0/0000:03:00.0/nvme",
                                  "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", 0, 1) == PathClass::sys);
    CHECK(classify_sysfs_pci_path(root + "0000:00:01.0/0000:03:00.0/nvme",
                                  "/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", 0, 0) == PathClass::node);
    CHECK(classify_sysfs_pci_path("/sys/devices/platform/virtio-mmio.0/block/vda", root + "0000:00:03.0", -1, 0) ==
          PathClass::unknown);
}

TEST_CASE("storage: the storage directory's facts") {
    Scratch scratch;
    const StorageDirFacts f = storage_dir_facts(scratch.dir.string(), true);
    CHECK(f.exists);
    CHECK(f.is_directory);
    CHECK(f.writable);
    CHECK(!f.fs_type.empty());
    CHECK(f.free_bytes > 0);
    REQUIRE(f.odirect.has_value());
    CHECK(scratch.entries() == 0); // the probe file is gone
    CHECK(fs_type_name(0x01021994) == "tmpfs");
    CHECK(default_storage_dir().find("/interopbench-storage") != std::string::npos);
}

namespace {
/// Starts the real binary reading a large file, waits until its pattern file exists, sends
/// `sig`, and returns the directory's entry count after the process ended.
std::size_t entries_after_signal(int sig) {
    Scratch scratch;
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const int null = ::open("/dev/null", O_RDWR);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::execl(INTEROPBENCH_BINARY, INTEROPBENCH_BINARY, "run", "-s", "storage_read", "--storage-dir",
                scratch.dir.c_str(), "--size", "256M", "-a", "path=buffered", "-a", "cache=cold", "--max-time", "60",
                "--min-samples", "1000", "--max-samples", "1000", "--no-topology", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool seen = false;
    while (!seen && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        std::error_code ec;
        seen = fs::exists(scratch.dir / pattern_file_name(256ull << 20), ec);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300)); // sampling has started
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(seen);
    return scratch.entries();
}
} // namespace

TEST_CASE("storage: no file is left after SIGINT") { CHECK(entries_after_signal(SIGINT) == 0); }

TEST_CASE("storage: no file is left after SIGTERM") { CHECK(entries_after_signal(SIGTERM) == 0); }

TEST_CASE("storage: every round process uses the run's --storage-dir, not the default scratch directory") {
    // The default scratch directory is made unusable (a file where the folder would be): a
    // round that fell back to it would fail its configuration.
    Scratch scratch;
    const fs::path tmp = scratch.dir / "tmp", dir = scratch.dir / "store", out = scratch.dir / "r.json";
    fs::create_directories(tmp);
    fs::create_directories(dir);
    std::ofstream(tmp / "interopbench-storage") << "not a folder";
    const char* old = std::getenv("TMPDIR");
    const std::string saved = old ? old : "";
    ::setenv("TMPDIR", tmp.c_str(), 1);
    const int rc = run_binary({"run", "-s", "storage_read", "-a", "path=buffered", "-a", "cache=warm", "--size", "64K",
                               "--rounds", "3", "--min-samples", "3", "--max-time", "2", "--no-topology", "--storage-dir",
                               dir.string(), "--out", out.string()});
    if (old) ::setenv("TMPDIR", saved.c_str(), 1);
    else ::unsetenv("TMPDIR");
    REQUIRE(rc == 0);
    const auto report = nlohmann::json::parse(std::ifstream(out));
    REQUIRE(report["results"].size() == 1);
    const auto& r = report["results"][0];
    CHECK(r["status"] == "ok");
    CHECK(r["rounds"] == 3); // every round pooled: none failed on the default directory
    CHECK_FALSE(r["details"].contains("rounds_not_ok"));
}
