// Storage family without a GPU: storage_read on small files, the cache-state proof (mincore),
// the byte accounting, the tool's files (stale ones, cleanup after SIGINT/SIGTERM of the real
// binary), every bad input of the issue, cuFile absent, sysfs path classes.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "families/builtin.hpp"
#include "hostio/readers.hpp"
#include "hostio/storage_io.hpp"
#include "gpu/cufile_loader.hpp"
#include "gpu/registered_mapping.hpp"
#include <cuda_runtime.h>
#include "interopbench/errors.hpp"
#include "interopbench/runner.hpp"
#include "topology/storage_devices.hpp"
#include "../../test_support.hpp"

using namespace interopbench;
using namespace interopbench::storage;
namespace fs = std::filesystem;

namespace {

/// How many files and directories `dir` holds: what the tool left behind in a storage directory.
std::size_t entries(const fs::path& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
    return n;
}

/// The storage family's scenarios on a site in `dir` (the default site without one).
Registry storage_registry(const std::string& dir = {}) {
    FamilyOptions options;
    if (!dir.empty()) options.set_texts("storage-dir", {dir});
    return builtin_registry({"storage"}, options);
}

RunSettings quick_settings(const std::string& dir) {
    RunSettings s = testing::sampling(0, 2, 2, 5, 0.01);
    s.options.set_text("storage-dir", dir);
    return s;
}

double median(const Result& r, const char* metric) {
    const MetricResult* m = r.metric(metric);
    REQUIRE(m);
    return m->stats.median;
}

/// The binary with `args` (each a word), its exit code; its standard error in `err_text`.
int run_binary(const std::vector<std::string>& args, std::string* err_text = nullptr) {
    std::string words;
    for (const auto& a : args) words += " '" + a + "'";
    const auto r = testing::run_cli(words);
    if (err_text) *err_text = r.err;
    return r.code;
}

} // namespace

TEST_CASE("storage: every storage_read path reads a small file, cold and warm, and the bytes add up") {
    testing::ScratchDir scratch("storage");
    auto r = std::make_unique<Registry>(storage_registry(scratch.dir.string()));
    Machine m;
    m.host_cores = 2;
    RunSettings s = quick_settings(scratch.dir.string());
    auto configs = testing::expand(*r, "storage_read", {{"size", {"1M"}}, {"chunk", {"256K"}}, {"threads", {"1", "2"}}}, m);
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
        // CPU time cannot exceed the wall time of the read on every hardware thread (plus 1 ms
        // for the clocks' rounding), sample by sample and so median to median.
        const double cpu_per_gb = median(res, "cpu_time_per_gb"), gb = 1024.0 * 1024 / 1e9;
        CHECK(std::isfinite(cpu_per_gb));
        CHECK(cpu_per_gb <= (median(res, "time") * std::max(1u, std::thread::hardware_concurrency()) + 1e-3) / gb);
    }
    CHECK(measured >= 6);
    configs.clear();
    r.reset(); // the last holder of the site: its files go
    CHECK(entries(scratch.dir) == 0); // the pattern file is removed when no longer kept
}

TEST_CASE("storage: residency follows writing, dropping and reading (mincore)") {
    testing::ScratchDir scratch("storage");
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
    testing::ScratchDir scratch("storage");
    const IoCounters c = read_io_counters();
    REQUIRE(c.valid);
    const std::string path = (scratch.dir / "f").string();
    Fd fd = open_file(path, O_CREAT | O_RDWR);
    std::vector<std::uint64_t> buf(1 << 18); // 2 MiB
    fill_file_pattern(buf.data(), 0, buf.size() * 8);
    pwrite_all(fd.get(), buf.data(), buf.size() * 8, 0, path);
    if (storage_dir_facts(scratch.dir.string(), false).memory_backed) return;
    drop_pages(fd.get(), buf.size() * 8, false);
    Accounting a({storage_dir_facts(scratch.dir.string(), false).device});
    a.start();
    pread_all(fd.get(), buf.data(), buf.size() * 8, 0, path);
    a.stop();
    CHECK(a.device_read_bytes() >= 2.0 * 1024 * 1024);
    CHECK(count_file_pattern_mismatches(buf.data(), 0, buf.size() * 8) == 0);
    const auto t0 = std::chrono::steady_clock::now();
    a.start();
    pread_all(fd.get(), buf.data(), buf.size() * 8, 0, path);
    a.stop();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(a.device_read_bytes() == 0.0);
    // The process's CPU time over the read: at most its wall time on every hardware thread
    // (plus 1 ms for the clocks' rounding).
    CHECK(std::isfinite(a.cpu_seconds()));
    CHECK(a.cpu_seconds() <= wall * std::max(1u, std::thread::hardware_concurrency()) + 1e-3);
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
    testing::ScratchDir scratch("storage");
    const std::string path = (scratch.dir / "f").string();
    {
        Fd fd = open_file(path, O_CREAT | O_RDWR);
        std::vector<char> zeros(1 << 20, 1);
        pwrite_all(fd.get(), zeros.data(), zeros.size(), 0, path);
        REQUIRE(::ftruncate(fd.get(), 1 << 19) == 0);
    }
    std::vector<char> dst(1 << 20);
    for (const char* method : {"buffered", "mmap"})
        for (unsigned threads : {1u, 4u}) {
            INFO(method << " on " << threads << " thread(s)");
            ThreadPool pool(threads);
            Fd fd = open_file(path, O_RDONLY);
            const FileSlice whole{fd.get(), &path, 0, 1 << 20, dst.data(), 1 << 19};
            // The reader that meets the end names the byte it reached; the others finish.
            CHECK_THROWS_WITH_AS(read_slices(pool, read_method(method), {whole}, 1 << 18, 1),
                                 doctest::Contains("ended at byte 524288"), ConfigError);
        }
}

TEST_CASE("storage: a file truncated or written while registered fails the configuration naming it, never a SIGBUS") {
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
        (void)cudaGetLastError();
        return testing::skip("needs a GPU: registering a file mapping is a CUDA call");
    }
    if (const auto why = gpu::registered_mapping_unsupported(0, 1 << 20)) return testing::skip(*why);
    testing::ScratchDir scratch("storage");
    for (const bool truncate : {true, false}) {
        INFO((truncate ? "truncated" : "written"));
        const std::string path = (scratch.dir / (truncate ? "t" : "w")).string();
        Fd fd = open_file(path, O_CREAT | O_RDWR);
        std::vector<char> ones(1 << 20, 1);
        pwrite_all(fd.get(), ones.data(), ones.size(), 0, path);
        gpu::RegisteredMapping mapping({{path, fd.get(), 1 << 20}});
        mapping.check_unchanged(); // as registered: no error
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // a later modification time on any file system clock
        if (truncate) REQUIRE(::ftruncate(fd.get(), 1 << 19) == 0);
        else pwrite_all(fd.get(), ones.data(), 4096, 0, path);
        // The copy engine still reads the pinned pages (no fault); the check fails the configuration.
        void* dev = nullptr;
        REQUIRE(cudaMalloc(&dev, 1 << 20) == cudaSuccess);
        CHECK(cudaMemcpy(dev, mapping.data(0), 1 << 20, cudaMemcpyHostToDevice) == cudaSuccess);
        cudaFree(dev);
        CHECK_THROWS_WITH_AS(mapping.check_unchanged(), doctest::Contains(path.c_str()), ConfigError);
        CHECK_THROWS_WITH_AS(mapping.check_unchanged(), doctest::Contains(truncate ? "size 1048576 -> 524288" : "written"),
                             ConfigError);
    }
}

TEST_CASE("storage: disk full while writing is named") {
    Fd fd = open_file("/dev/full", O_WRONLY);
    std::vector<char> b(4096, 1);
    CHECK_THROWS_WITH_AS(pwrite_all(fd.get(), b.data(), b.size(), 0, "/dev/full"), doctest::Contains("disk full"), ConfigError);
}

TEST_CASE("storage: stale temporaries of dead processes are removed, live ones kept") {
    testing::ScratchDir scratch("storage");
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
    testing::ScratchDir scratch("storage");
    {
        PatternFile f({scratch.dir.string()}, {scratch.dir.string()}, 1 << 20, true);
        CHECK(!f.reused());
    }
    CHECK(fs::exists(scratch.dir / pattern_file_name(1 << 20)));
    {
        PatternFile f({scratch.dir.string()}, {scratch.dir.string()}, 1 << 20, false);
        CHECK(f.reused());
    }
    CHECK(entries(scratch.dir) == 0); // not kept this time: removed
}

TEST_CASE("storage: bad storage directories are usage errors naming the problem, before measuring") {
    testing::ScratchDir scratch("storage");
    CHECK_THROWS_WITH_AS(Site({(scratch.dir / "missing").string()}).claim(0), doctest::Contains("does not exist"), UsageError);
    std::ofstream(scratch.dir / "file") << "x";
    CHECK_THROWS_WITH_AS(Site({(scratch.dir / "file").string()}).claim(0), doctest::Contains("is not a directory"), UsageError);
    CHECK_THROWS_WITH_AS(Site({scratch.dir.string()}).claim(1ull << 60), doctest::Contains("free but"), UsageError);
    // Claims add up: two families' claims that fit apart but not together are refused.
    Site site({scratch.dir.string()});
    const std::uint64_t free = storage_dir_facts(scratch.dir.string(), false).free_bytes;
    REQUIRE(free > (256ull << 20));
    CHECK_NOTHROW(site.claim((free - (64ull << 20)) / 2));
    CHECK_THROWS_WITH_AS(site.claim((free - (64ull << 20)) / 2 + (64ull << 20)), doctest::Contains("free but"), UsageError);
    if (::geteuid() != 0) {
        fs::create_directory(scratch.dir / "ro");
        fs::permissions(scratch.dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
        CHECK_THROWS_WITH_AS(Site({(scratch.dir / "ro").string()}).claim(0), doctest::Contains("not writable"), UsageError);
    }
}

TEST_CASE("storage: the command line refuses bad storage input with exit 2 and one line each") {
    testing::ScratchDir scratch("storage");
    std::string err;
    CHECK(run_binary({"run", "-s", "storage_read", "--storage-dir", (scratch.dir / "nope").string(), "--size", "1M"}, &err) == 2);
    CHECK(err.find("does not exist") != std::string::npos);
    std::ofstream(scratch.dir / "file") << "x";
    CHECK(run_binary({"run", "-s", "storage_read", "--storage-dir", (scratch.dir / "file").string(), "--size", "1M"}, &err) == 2);
    CHECK(err.find("not a directory") != std::string::npos);
    CHECK(run_binary({"run", "-s", "storage_read", "--storage-dir", scratch.dir.string(), "--size", "64T"}, &err) == 2);
    CHECK(err.find("free but") != std::string::npos);
    CHECK(entries(scratch.dir) == 1); // nothing created by the refused runs
}

TEST_CASE("storage: sizes off the direct-I/O alignment skip the O_DIRECT paths with the reason, others run") {
    testing::ScratchDir scratch("storage");
    const Registry r = storage_registry(scratch.dir.string());
    Machine m;
    m.host_cores = 2;
    RunSettings s = quick_settings(scratch.dir.string());
    const auto configs = testing::expand(r, "storage_read", {{"size", {"1000B"}}, {"cache", {"cold"}}, {"path", {"odirect", "buffered"}}}, m);
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
        } else if (!site_of(configs).cold_unreachable()) {
            CHECK(res.status == Status::ok);
        }
    }
}

TEST_CASE("storage: qd belongs to io_uring, ring and threads to their paths, and the GPU paths skip without a GPU") {
    testing::ScratchDir scratch("storage");
    const Registry r = storage_registry(scratch.dir.string());
    Machine m;
    m.cuda_available = false;
    m.cuda_note = "no NVIDIA driver";
    const auto reads = testing::expand(r, "storage_read", {{"path", {"buffered"}}, {"qd", {"8"}}, {"size", {"1M"}}}, m);
    for (const auto& c : reads)
        CHECK(*c.scenario->unsupported(m, c.params) == "qd applies to the io_uring paths only (path=buffered)");
    for (const char* id : {"storage_to_gpu", "gpu_to_storage"}) {
        const Scenario* sc = r.find(id);
        REQUIRE(sc);
        Params p({{"size", "1048576"}, {"path", "pinned"}, {"cache", "cold"}, {"chunk", "1048576"}, {"ring", "0"},
                  {"threads", "1"}, {"device", "0"}});
        const auto why = sc->unsupported(m, p);
        REQUIRE(why);
        CHECK(why->find("no NVIDIA driver") != std::string::npos);
    }
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
    testing::ScratchDir scratch("storage");
    const StorageDirFacts f = storage_dir_facts(scratch.dir.string(), true);
    CHECK(f.exists);
    CHECK(f.is_directory);
    CHECK(f.writable);
    CHECK(!f.fs_type.empty());
    CHECK(f.free_bytes > 0);
    REQUIRE(f.odirect.has_value());
    CHECK(entries(scratch.dir) == 0); // the probe file is gone
    CHECK(fs_type_name(0x01021994) == "tmpfs");
    CHECK(default_storage_dir().find("/interopbench-storage") != std::string::npos);
}

namespace {
/// Whether a process of this user holds `file` open: the pattern file under its final name is
/// opened only to be read (it is written under a temporary name and renamed when complete).
bool held_open(const fs::path& file) {
    std::error_code ec;
    for (fs::directory_iterator p("/proc", ec), end; !ec && p != end; p.increment(ec)) {
        const std::string pid = p->path().filename().string();
        if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
        std::error_code fd_ec;
        for (fs::directory_iterator f(p->path() / "fd", fd_ec), fend; !fd_ec && f != fend; f.increment(fd_ec)) {
            std::error_code link_ec;
            if (fs::read_symlink(f->path(), link_ec) == file) return true;
        }
    }
    return false;
}

/// Starts the real binary reading a large file, waits until its pattern file is complete and
/// being read (sampling has started), sends `sig`, and returns the directory's entry count
/// after the process ended. Each wait has a deadline (60 s, a guard against a hang).
std::size_t entries_after_signal(int sig) {
    testing::ScratchDir scratch("storage");
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
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(testing::deadline_s(60));
    // The file is made in the run's own folder (.ib-run-PID-XXXXXX) there.
    fs::path pattern;
    bool reading = false;
    while (!reading && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        std::error_code ec;
        for (fs::recursive_directory_iterator it(scratch.dir, ec), end; pattern.empty() && !ec && it != end; it.increment(ec))
            if (it->path().filename() == pattern_file_name(256ull << 20)) pattern = fs::canonical(it->path(), ec);
        reading = !pattern.empty() && held_open(pattern);
    }
    CHECK_MESSAGE(reading, "within 60 s the run did not start reading its pattern file (",
                  pattern.empty() ? "the file was not made" : "made, not opened", ")");
    ::kill(pid, sig);
    testing::wait_child(pid, 60, "interopbench after the signal");
    return entries(scratch.dir);
}
} // namespace

TEST_CASE("storage: no file is left after SIGINT") { CHECK(entries_after_signal(SIGINT) == 0); }

TEST_CASE("storage: no file is left after SIGTERM") { CHECK(entries_after_signal(SIGTERM) == 0); }

TEST_CASE("storage: every round process uses the run's --storage-dir, not the default scratch directory") {
    // The default scratch directory is made unusable (a file where the folder would be): a
    // round that fell back to it would fail its configuration.
    testing::ScratchDir scratch("storage");
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

// ---- the readers, parallel and striped ------------------------------------------------------

TEST_CASE("storage: shares of slices cover every byte once, aligned, at most one per thread") {
    std::vector<char> a(10 << 20), b(3 << 20);
    const std::string pa = "a", pb = "b";
    const std::vector<FileSlice> slices{{3, &pa, 0, a.size(), a.data(), a.size()}, {4, &pb, 0, b.size(), b.data(), b.size()}};
    for (unsigned threads : {1u, 2u, 3u, 4u, 7u, 16u, 100u})
        for (std::uint64_t align : {1ull, 4096ull, 1ull << 20}) {
            INFO(threads << " threads, align " << align);
            const auto shares = share_slices(slices, threads, align);
            CHECK(shares.size() <= threads);
            std::uint64_t total = 0;
            std::map<int, std::uint64_t> next{{3, 0}, {4, 0}}; // shares are in order: each piece starts where the last ended
            for (const auto& share : shares) {
                CHECK(!share.empty());
                for (const FileSlice& s : share) {
                    CHECK(s.offset == next[s.fd]);
                    CHECK(s.offset % align == 0);
                    CHECK(static_cast<char*>(s.dst) == (s.fd == 3 ? a.data() : b.data()) + s.offset);
                    next[s.fd] += s.bytes;
                    total += s.bytes;
                }
            }
            CHECK(next[3] == a.size());
            CHECK(next[4] == b.size());
            CHECK(total == a.size() + b.size());
        }
}

TEST_CASE("storage: every read method on 1 to 8 threads reads the file exactly") {
    testing::ScratchDir scratch("storage");
    Site site({scratch.dir.string()});
    const std::uint64_t size = (8 << 20) + 4096 * 3; // not a multiple of the chunk: short last reads
    auto file = site.pattern_file(size);
    AlignedBuffer dst(size, site.dio_alignment());
    for (const ReadMethod& m : read_methods()) {
        if (read_method_unavailable(m)) continue;
        if (m.direct && site.odirect_unsupported()) continue;
        for (unsigned threads : {1u, 3u, 8u}) {
            INFO(m.name << " on " << threads << " thread(s)");
            std::memset(dst.get(), 0, size);
            ThreadPool pool(threads);
            Fd fd = open_file(file->path(), read_open_flags(m));
            CHECK(read_slices(pool, m, {{fd.get(), &file->path(), 0, size, dst.get(), size}}, 1 << 20, 8) == size);
            CHECK(count_file_pattern_mismatches(dst.get(), 0, size) == 0);
        }
    }
}

TEST_CASE("storage: a chunk reader at depth hands back every chunk once, in any order") {
    if (read_method_unavailable(read_method("io_uring"))) return;
    testing::ScratchDir scratch("storage");
    Site site({scratch.dir.string()});
    if (site.odirect_unsupported()) return;
    const std::uint64_t size = 4 << 20, chunk = 256 << 10;
    auto file = site.pattern_file(size);
    AlignedBuffer ring(4 * chunk, 4096);
    Fd fd = open_file(file->path(), read_open_flags(read_method("io_uring")));
    ChunkReader reader(read_method("io_uring"), fd.get(), file->path(), 3, size, {{ring.get(), 4 * chunk}});
    std::vector<std::size_t> free{0, 1, 2, 3};
    std::uint64_t next = 0, seen = 0;
    while (seen < size) {
        while (reader.can_submit() && next < size && !free.empty()) {
            const std::size_t slot = free.back();
            free.pop_back();
            reader.submit(static_cast<char*>(ring.get()) + slot * chunk, next, chunk, slot);
            next += chunk;
        }
        CHECK(reader.in_flight() <= 3);
        const ChunkReader::Done d = reader.wait();
        CHECK(count_file_pattern_mismatches(static_cast<char*>(ring.get()) + d.tag * chunk, d.offset, d.bytes) == 0);
        seen += d.bytes;
        free.push_back(d.tag);
    }
    CHECK(next == size);
}

TEST_CASE("storage: a pinned pool runs each thread on its own fixed CPU, and gives the caller its CPUs back") {
    cpu_set_t before;
    REQUIRE(::sched_getaffinity(0, sizeof(before), &before) == 0);
    ThreadPool pool(5, true);
    REQUIRE(pool.cpus().size() == 5);
    for (int c : pool.cpus()) CHECK(CPU_ISSET(c, &before));
    std::vector<int> ran(5, -1);
    for (int round = 0; round < 3; ++round) {
        pool.run([&](unsigned t) { ran[t] = ::sched_getcpu(); });
        for (unsigned t = 0; t < 5; ++t) CHECK(ran[t] == pool.cpus()[t]);
    }
    cpu_set_t after;
    REQUIRE(::sched_getaffinity(0, sizeof(after), &after) == 0);
    CHECK(CPU_EQUAL(&before, &after));
    CHECK(ThreadPool(3).cpus().empty());
}

TEST_CASE("storage: thread and queue-depth bounds are refused with the reason") {
    CHECK(threads_refused(0, 8)->find("at least 1") != std::string::npos);
    CHECK(threads_refused(33, 8)->find("more than 4 per hardware thread") != std::string::npos);
    CHECK(!threads_refused(32, 8));
    CHECK(threads_refused(2000, 1000)->find("at most 1024") != std::string::npos);
    CHECK(queue_depth_refused(0));
    CHECK(queue_depth_refused(4097));
    CHECK(!queue_depth_refused(4096));
    const Registry r = storage_registry();
    Machine m;
    m.host_cores = 2;
    const auto configs = testing::expand(r, "storage_read", {{"path", {"buffered"}}, {"threads", {"9"}}, {"size", {"1M"}}}, m);
    REQUIRE(!configs.empty());
    for (const auto& c : configs)
        CHECK(c.scenario->unsupported(m, c.params)->find("more than 4 per hardware thread (2 here)") != std::string::npos);
}

TEST_CASE("storage: several storage directories stripe the files and spread the readers and a directory named twice is refused") {
    testing::ScratchDir scratch("storage");
    for (const char* d : {"d0", "d1", "d2"}) fs::create_directory(scratch.dir / d);
    const std::vector<std::string> dirs{(scratch.dir / "d0").string(), (scratch.dir / "d1").string(),
                                        (scratch.dir / "d2").string()};
    CHECK_THROWS_WITH_AS(Site({dirs[0], dirs[1], dirs[0] + "/"}).claim(0), doctest::Contains("named twice"), UsageError);
    auto site_ptr = std::make_unique<Site>(dirs);
    Site& site = *site_ptr;
    site.claim(0);
    CHECK(site.dirs().size() == 3);
    const std::uint64_t size = 5 << 20;
    auto file = site.pattern_file(size);
    REQUIRE(file->segments().size() == 3);
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < 3; ++i) {
        const Segment& seg = file->segments()[i];
        CHECK(seg.path.rfind(dirs[i] + "/", 0) == 0);
        CHECK(seg.offset == at);
        CHECK(fs::file_size(seg.path) == seg.bytes);
        at += seg.bytes;
    }
    CHECK(at == size);
    // Read back through the same readers the scenarios use: threads over the stripes.
    std::vector<char> dst(size + 8);
    std::vector<Fd> fds;
    std::vector<FileSlice> slices;
    for (const Segment& seg : file->segments()) fds.push_back(open_file(seg.path, O_RDONLY));
    for (std::size_t i = 0; i < 3; ++i)
        slices.push_back({fds[i].get(), &file->segments()[i].path, 0, file->segments()[i].bytes,
                          dst.data() + file->segments()[i].offset, file->segments()[i].bytes});
    ThreadPool pool(4);
    read_slices(pool, read_method("buffered"), slices, 1 << 20, 1);
    CHECK(count_file_pattern_mismatches(dst.data(), 0, size) == 0);
    file.reset();
    site_ptr.reset();
    for (const auto& d : dirs) CHECK(fs::is_empty(d)); // the stripes were guarded and removed
}

TEST_CASE("storage: storage_read over two directories and four threads through the binary") {
    testing::ScratchDir scratch("storage");
    fs::create_directory(scratch.dir / "a");
    fs::create_directory(scratch.dir / "b");
    const std::string out = (scratch.dir / "r.json").string();
    std::string err;
    const int rc = run_binary({"run", "-s", "storage_read", "--axis", "path=buffered,mmap", "--axis", "cache=warm", "--axis",
                               "threads=1,4", "--size", "6M", "--storage-dir", (scratch.dir / "a").string(), "--storage-dir",
                               (scratch.dir / "b").string(), "--min-samples", "2", "--max-time", "2", "--no-topology",
                               "--out", out},
                              &err);
    INFO(err);
    CHECK(rc == 0);
    std::ifstream in(out);
    const nlohmann::json j = nlohmann::json::parse(in);
    int ok = 0;
    for (const auto& res : j["results"]) {
        CHECK(res["status"] == "ok");
        ok += res["status"] == "ok";
        CHECK(res["details"]["storage_dirs"].size() == 2);
        CHECK(res["details"]["file"].get<std::string>().find("2 files:") == 0);
    }
    CHECK(ok == 4);
    CHECK(fs::is_empty(scratch.dir / "a"));
    CHECK(fs::is_empty(scratch.dir / "b"));
}
