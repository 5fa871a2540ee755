// Hardening, second round: files in and out, messages and terminal safety, validation of
// numbers and versions, and topology at scale. One test case per class of defect; most run
// the real binary, as a user would. No timing asserts.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <limits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "fuzz/harness.hpp"
#include "interopbench/cleanup.hpp"
#include "interopbench/compare.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/file_io.hpp"
#include "presentation/output.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/report.hpp"
#include "topology/topology.hpp"

using namespace interopbench;
namespace fs = std::filesystem;

namespace {

using testing::scratch;
using testing::slurp;

void put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

/// Reads the FIFO end `fd` (opened O_NONBLOCK) into `out` until a writer has come and closed
/// it; false when that has not happened within `limit_s` (a guard against a hang) or once
/// `writer_gone` is set with nothing to read. Before any writer, poll() reports nothing on
/// Linux, so the wait is for the writer.
bool drain_fifo(int fd, std::string& out, double limit_s, const std::atomic<bool>& writer_gone) {
    limit_s = testing::deadline_s(limit_s);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    char buf[65536];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
        if (ready == 0 && writer_gone) return false;
        if (ready <= 0) continue; // the deadline, or EINTR: checked again above
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) out.append(buf, static_cast<std::size_t>(n));
        else if (n == 0) return true; // the writer closed
        else if (errno != EAGAIN && errno != EINTR) return false;
    }
}

std::string quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

using interopbench::testing::run_cli;
using Run = interopbench::testing::CliRun;

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

/// A usage error: exit 2, an `error:` line and at most a `hint:` line, nothing raw.
void expect_usage(const Run& r, const std::string& words) {
    CAPTURE(r.err);
    CHECK(r.code == 2);
    CHECK(r.err.rfind("error: ", 0) == 0);
    CHECK(r.err.find(words) != std::string::npos);
    CHECK(lines(r.err) <= 2);
    if (lines(r.err) == 2) CHECK(r.err.find("\nhint: ") != std::string::npos);
    CHECK(r.err.find("json.exception") == std::string::npos);
    CHECK(r.err.find("Could not convert") == std::string::npos);
}

std::string report_text(const std::string& host = "h", const std::vector<double>& samples = {1e10, 1.01e10, 0.99e10},
                        const std::string& version = "\"1.1\"") {
    nlohmann::json doc = {
        {"schema", {{"name", "interopbench.report"}}},
        {"host", {{"hostname", host}, {"cpu", "c"}, {"logical_cpus", 2}}},
        {"invocation", {{"status", "complete"}}},
        {"warnings", nlohmann::json::array({host})},
        {"results",
         {{{"key", "host_memcpy/size=4096,note=" + host},
           {"scenario", "host_memcpy"},
           {"status", "ok"},
           {"params", {{"size", "4096"}, {"note", host}}},
           {"param_order", {"size", "note"}},
           {"metrics",
            {{{"name", "bandwidth"},
              {"unit", "B/s"},
              {"better", "higher"},
              {"stats", {{"n", samples.size()}, {"median", samples[samples.size() / 2]}}},
              {"samples", samples}}}}}}}};
    std::string text = doc.dump(1);
    const std::string marker = "\"schema\": {";
    text.insert(text.find(marker) + marker.size(), "\"version\": " + version + ", ");
    return text;
}

/// hwloc XML of a machine with `gpus` NVIDIA GPUs on two sockets: each host bridge holds
/// one PCIe switch (an upstream port and `per_switch` downstream ports, a GPU on each).
std::string generated_topology(std::size_t gpus, std::size_t per_switch) {
    std::string xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" allowed_cpuset="0x00000003" nodeset="0x00000003" complete_nodeset="0x00000003" allowed_nodeset="0x00000003" gp_index="1">
)";
    int gp = 10;
    std::size_t gpu = 0;
    for (int socket = 0; socket < 2; ++socket) {
        const std::string set = socket == 0 ? "0x00000001" : "0x00000002";
        xml += fmt::format(R"(    <object type="Package" os_index="{0}" cpuset="{1}" complete_cpuset="{1}" nodeset="{1}" complete_nodeset="{1}" gp_index="{2}">
      <object type="NUMANode" os_index="{0}" cpuset="{1}" complete_cpuset="{1}" nodeset="{1}" complete_nodeset="{1}" gp_index="{3}" local_memory="1073741824"/>
      <object type="Core" os_index="{0}" cpuset="{1}" complete_cpuset="{1}" nodeset="{1}" complete_nodeset="{1}" gp_index="{4}">
        <object type="PU" os_index="{0}" cpuset="{1}" complete_cpuset="{1}" nodeset="{1}" complete_nodeset="{1}" gp_index="{5}"/>
      </object>
)",
                           socket, set, gp, gp + 1, gp + 2, gp + 3);
        gp += 4;
        const std::size_t mine = socket == 0 ? (gpus + 1) / 2 : gpus / 2;
        for (std::size_t done = 0; done < mine;) {
            // One PCI domain per switch keeps every bus id unique (256 buses per domain).
            const unsigned domain = static_cast<unsigned>(gp);
            xml += fmt::format(R"(      <object type="Bridge" gp_index="{}" bridge_type="0-1" depth="0" bridge_pci="{:04x}:[00-ff]">
        <object type="Bridge" gp_index="{}" bridge_type="1-1" depth="1" bridge_pci="{:04x}:[01-ff]" pci_busid="{:04x}:00:00.0" pci_type="0604 [10b5:9797] [0000:0000] 00" pci_link_speed="31.5">
)",
                               gp, domain, gp + 1, domain, domain);
            gp += 2;
            for (std::size_t port = 0; port < per_switch && done < mine; ++port, ++done, ++gpu) {
                const unsigned bus = static_cast<unsigned>(port + 2);
                xml += fmt::format(R"(          <object type="Bridge" gp_index="{}" bridge_type="1-1" depth="2" bridge_pci="{:04x}:[{:02x}-{:02x}]" pci_busid="{:04x}:01:{:02x}.0" pci_type="0604 [10b5:9797] [0000:0000] 00" pci_link_speed="31.5">
            <object type="PCIDev" gp_index="{}" pci_busid="{:04x}:{:02x}:00.0" pci_type="0302 [10de:2335] [10de:18be] a1" pci_link_speed="63.0"/>
          </object>
)",
                                   gp, domain, bus, bus, domain, port % 32, gp + 1, domain, bus);
                gp += 2;
            }
            xml += "        </object>\n      </object>\n";
        }
        xml += "    </object>\n";
    }
    xml += "  </object>\n</topology>\n";
    return xml;
}

} // namespace

// ---- 1. one reader for every input file ----------------------------------------------------

TEST_CASE("inputs that are not regular files are refused at once, naming what they are") {
    const fs::path d = scratch("reader");
    const std::string good = (d / "good.json").string();
    put(good, report_text());
    const std::string fifo = (d / "fifo").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    fs::create_directory(d / "dir");
    fs::create_symlink("loop_b", d / "loop_a");
    fs::create_symlink("loop_a", d / "loop_b");
    const std::string loop = (d / "loop_a").string();
    // A sparse file beyond the limit: refused from its size, never read.
    {
        const int fd = ::open((d / "huge.json").c_str(), O_WRONLY | O_CREAT, 0644);
        REQUIRE(fd >= 0);
        REQUIRE(::ftruncate(fd, static_cast<off_t>(k_max_report_bytes + 1)) == 0);
        ::close(fd);
    }
    expect_usage(run_cli("show /dev/zero"), "character device, not a regular file");
    expect_usage(run_cli("compare /dev/zero " + quote(good)), "not a regular file");
    expect_usage(run_cli("run -s host_memcpy --size 4K --no-topology -q --baseline /dev/zero"), "not a regular file");
    expect_usage(run_cli("show " + quote(fifo)), "FIFO");
    expect_usage(run_cli("show " + quote((d / "dir").string())), "is a directory");
    expect_usage(run_cli("show " + quote(loop)), "loop of symbolic links");
    expect_usage(run_cli("show " + quote((d / "huge.json").string())), "larger than");
    expect_usage(run_cli("run --profile " + quote(fifo)), "FIFO");
    expect_usage(run_cli("run --profile " + quote((d / "dir").string())), "is a directory");
    expect_usage(run_cli("run --profile " + quote(loop)), "loop of symbolic links");
    expect_usage(run_cli("topo --from " + quote(fifo)), "FIFO");
    expect_usage(run_cli("topo --from /dev/zero"), "not a regular file");
    expect_usage(run_cli("topo --from " + quote((d / "dir").string())), "is a directory");
    // The sidecar goes through the same reader.
    const fs::path xml = d / "t.xml";
    fs::copy_file(INTEROPBENCH_SOURCE_DIR "/tests/data/topology/switch-tree-6gpu.xml", xml);
    REQUIRE(::mkfifo((xml.string() + ".nvlink.json").c_str(), 0600) == 0);
    expect_usage(run_cli("topo --from " + quote(xml.string())), "NVLink sidecar");
    // The library call itself.
    CHECK_THROWS_WITH_AS(read_input_file(fifo, "report", 100), doctest::Contains("FIFO"), UsageError);
    CHECK(read_input_file(good, "report", k_max_report_bytes) == slurp(good));
    CHECK_THROWS_WITH_AS(read_input_file(good, "report", 10), doctest::Contains("larger than"), UsageError);
}

TEST_CASE("the fuzz harness reads baselines through the one reader: the corpus replays cleanly") {
    const fs::path root = INTEROPBENCH_SOURCE_DIR "/tests/fuzz/corpus/baseline";
    std::size_t n = 0;
    for (const auto& entry : fs::directory_iterator(root)) {
        const std::string bytes = slurp(entry.path());
        CAPTURE(entry.path().string());
        CHECK_NOTHROW(fuzz::baseline(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
        ++n;
    }
    CHECK(n > 0);
}

// ---- 2. the write path ---------------------------------------------------------------------

TEST_CASE("writes never replace what is not a regular file, follow links, keep modes, leave no temporaries") {
    const fs::path d = scratch("writer");
    const std::string base = (d / "base.json").string();
    put(base, report_text());
    const std::string cmp = "compare " + quote(base) + " " + quote(base) + " --format json --out ";

    SUBCASE("/dev/null and other device nodes are written in place") {
        CHECK(run_cli(cmp + "/dev/null").code == 0);
        struct stat st {};
        REQUIRE(::stat("/dev/null", &st) == 0);
        CHECK(S_ISCHR(st.st_mode));
        const std::string node = (d / "null").string();
        if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) { // as root only
            CHECK(run_cli(cmp + quote(node)).code == 0);
            REQUIRE(::lstat(node.c_str(), &st) == 0);
            CHECK(S_ISCHR(st.st_mode));
        }
        // A device that fails the write: an OS failure, exit 1, one error line.
        const Run full = run_cli(cmp + "/dev/full");
        CHECK(full.code == 1);
        CHECK(full.err.rfind("error: cannot write '/dev/full'", 0) == 0);
        CHECK(lines(full.err) == 1);
    }
    SUBCASE("a FIFO is written into, never replaced; without a reader the write fails at once") {
        const std::string fifo = (d / "fifo").string();
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        const Run none = run_cli(cmp + quote(fifo));
        CHECK(none.code == 1);
        CHECK(none.err.find("no process reads this FIFO") != std::string::npos);
        // The reading end is open before the run (non-blocking: no wait for a writer); a thread
        // drains it until the run's write closes it, with a deadline.
        const int rfd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        REQUIRE(rfd >= 0);
        std::string got;
        bool drained = false;
        std::atomic<bool> run_ended{false};
        std::thread reader([&] { drained = drain_fifo(rfd, got, testing::k_command_limit_s, run_ended); });
        const Run r = run_cli(cmp + quote(fifo));
        run_ended = true;
        reader.join();
        ::close(rfd);
        CHECK_MESSAGE(drained, "the FIFO was not written and closed within ", testing::k_command_limit_s, " s");
        CHECK(r.code == 0);
        CHECK(nlohmann::json::parse(got).is_object());
        struct stat st {};
        REQUIRE(::lstat(fifo.c_str(), &st) == 0);
        CHECK(S_ISFIFO(st.st_mode));
    }
    SUBCASE("a symbolic link is followed: the link stays, its target is written") {
        put(d / "target.json", "old");
        fs::create_symlink("target.json", d / "link.json");
        CHECK(run_cli(cmp + quote((d / "link.json").string())).code == 0);
        CHECK(fs::is_symlink(d / "link.json"));
        CHECK(nlohmann::json::parse(slurp(d / "target.json")).is_object());
        // A dangling link creates its target.
        fs::create_symlink("new.json", d / "dangling.json");
        CHECK(run_cli(cmp + quote((d / "dangling.json").string())).code == 0);
        CHECK(fs::is_symlink(d / "dangling.json"));
        CHECK(fs::is_regular_file(d / "new.json"));
        // A loop is a usage error, before anything is compared.
        fs::create_symlink("loop2", d / "loop1");
        fs::create_symlink("loop1", d / "loop2");
        expect_usage(run_cli(cmp + quote((d / "loop1").string())), "loop of symbolic links");
    }
    SUBCASE("the mode is kept; a read-only file is refused, never replaced") {
        const fs::path f = d / "private.json";
        put(f, "old");
        ::chmod(f.c_str(), 0640);
        CHECK(run_cli(cmp + quote(f.string())).code == 0);
        struct stat st {};
        REQUIRE(::stat(f.c_str(), &st) == 0);
        CHECK((st.st_mode & 07777) == 0640);
        const fs::path ro = d / "readonly.json";
        put(ro, "keep");
        ::chmod(ro.c_str(), 0444);
        expect_usage(run_cli(cmp + quote(ro.string())), "read-only");
        CHECK(slurp(ro) == "keep");
        REQUIRE(::stat(ro.c_str(), &st) == 0);
        CHECK((st.st_mode & 07777) == 0444);
    }
    SUBCASE("a legal 255-byte file name is written: the temporary's name is short") {
        const fs::path f = d / (std::string(250, 'n') + ".json");
        CHECK(f.filename().string().size() == 255);
        const Run r = run_cli(cmp + quote(f.string()));
        CAPTURE(r.err);
        CHECK(r.code == 0);
        CHECK(fs::is_regular_file(f));
        expect_usage(run_cli(cmp + quote((d / std::string(256, 'x')).string())), "longer than");
    }
    SUBCASE("stale temporaries of a killed writer are removed by the next write to that path") {
        const fs::path target = d / "r.json";
        write_file_atomic(target.string(), "first\n");
        // What kill -9 leaves: a temporary of our naming whose process is gone.
        pid_t dead = ::fork();
        if (dead == 0) ::_exit(0);
        testing::wait_child(dead, 60, "a child that exits at once");
        for (const auto& e : fs::directory_iterator(d))
            CHECK(e.path().filename().string().rfind(".interopbench-", 0) != 0); // a write leaves none
        // The tool's naming: ".interopbench-<FNV-1a of the file name>-<pid>-XXXXXX".
        auto stale_name = [&](pid_t pid) {
            std::uint64_t h = 0xcbf29ce484222325ULL;
            for (unsigned char c : std::string("r.json")) {
                h ^= c;
                h *= 0x100000001b3ULL;
            }
            return fmt::format(".interopbench-{:016x}-{}-AbC123", h, pid);
        };
        put(d / stale_name(dead), std::string(1000, 'x'));
        put(d / stale_name(::getppid()), "alive");
        const int guarded_before = cleanup::guarded_count(); // the process's private folder may be one
        write_file_atomic(target.string(), "third\n");
        CHECK(slurp(target) == "third\n");
        CHECK_FALSE(fs::exists(d / stale_name(dead)));
        CHECK(fs::exists(d / stale_name(::getppid()))); // another process's write in progress
        CHECK(cleanup::guarded_count() == guarded_before);
    }
    SUBCASE("compare --out naming an input is refused, by file identity") {
        const std::string fresh = (d / "fresh.json").string();
        put(fresh, report_text());
        fs::create_hard_link(fresh, d / "hard.json");
        fs::create_symlink("base.json", d / "soft.json");
        for (const std::string& out : std::vector<std::string>{base, fresh, (d / "hard.json").string(), (d / "soft.json").string(),
                                      (d / "." / "base.json").string()}) {
            CAPTURE(out);
            expect_usage(run_cli("compare " + quote(base) + " " + quote(fresh) + " --out " + quote(out)),
                         "it would be overwritten");
        }
        CHECK(slurp(base) == report_text());
    }
}

// ---- 3. output and messages ------------------------------------------------------------------

TEST_CASE("a closed or full stderr never crashes / a lost stdout is exit 1") {
    const fs::path d = scratch("streams");
    const std::string base = (d / "base.json").string();
    put(base, report_text());
    const std::string missing = quote((d / "missing.json").string());
    for (const char* redirect : {"2>&-", "2>/dev/full"}) {
        CAPTURE(redirect);
        CHECK(run_cli("show " + missing, "", {"", redirect}).code == 2);
        CHECK(run_cli("show " + quote(base), "", {"", redirect}).code == 0);
        // A run that prints notes to stderr still writes its report.
        const std::string out = (d / "r.json").string();
        const Run r = run_cli("run -s host_memcpy -a threads=single --size 4K --min-samples 2 --max-time 0.2 "
                              "--no-topology --out " + quote(out),
                              "", {"", redirect});
        CHECK(r.code >= 0);
        CHECK(r.code <= 1);
        CHECK(fs::exists(out));
        fs::remove(out);
    }
    const Run full = run_cli("show " + quote(base), "", {">/dev/full"});
    CHECK(full.code == 1);
    CHECK(full.err.find("could not write standard output") != std::string::npos);
    const Run closed = run_cli("compare " + quote(base) + " " + quote(base), "", {">&-"});
    CHECK(closed.code == 1);
    CHECK(closed.err.find("standard output is closed") != std::string::npos);
    CHECK(run_cli("list --format json", "", {">/dev/full"}).code == 1);
    CHECK(run_cli("topo --from " INTEROPBENCH_SOURCE_DIR "/tests/data/topology/switch-tree-6gpu.xml", "", {">/dev/full"}).code == 1);
    // Nothing printed, nothing lost: a quiet run with a closed stdout succeeds.
    const std::string out = (d / "q.json").string();
    CHECK(run_cli("run -s host_memcpy -a threads=single --size 4K --min-samples 2 --max-time 0.2 --no-topology -q --out " +
                      quote(out),
                  ">&-")
              .code == 0);
    CHECK(fs::exists(out));
}

TEST_CASE("library messages never reach users raw: which file, which field, what to do") {
    const fs::path d = scratch("messages");
    auto report_with = [&](const char* name, const std::string& text) {
        put(d / name, text);
        return quote((d / name).string());
    };
    std::string text = report_text();
    text.replace(text.find("\"status\": \"ok\""), 14, "\"status\": \"ok\", \"reason\": 5");
    expect_usage(run_cli("show " + report_with("reason.json", text)), "results[0]: 'reason' must be a string");
    text = report_text();
    text.replace(text.find("\"median\""), 8, "\"median\": \"x\", \"mean\"");
    expect_usage(run_cli("show " + report_with("median.json", text)), "metrics[0].stats.median' must be a number");
    expect_usage(run_cli("run --min-samples abc"), "--min-samples': 'abc' is not a whole number");
    expect_usage(run_cli("run --max-time fast"), "is not a number");
    put(d / "side.xml", slurp(INTEROPBENCH_SOURCE_DIR "/tests/data/topology/switch-tree-6gpu.xml"));
    put(d / "side.xml.nvlink.json", R"({"schema": "interopbench.nvlink", "version": 1, "gpus": [{"pci_bus_id": 7}]})");
    expect_usage(run_cli("topo --from " + quote((d / "side.xml").string())), "malformed NVLink sidecar");
    // Usage errors are an error line and at most a hint line, the cross-machine refusal too.
    nlohmann::json a = nlohmann::json::parse(report_text()), b = a;
    a["devices"] = {{{"ordinal", 0}, {"name", "H100"}}};
    b["devices"] = {{{"ordinal", 0}, {"name", "A100"}}, {{"ordinal", 1}, {"name", "A100"}}};
    put(d / "a.json", a.dump());
    put(d / "b.json", b.dump());
    const Run cross = run_cli("compare " + quote((d / "a.json").string()) + " " + quote((d / "b.json").string()));
    expect_usage(cross, "different hardware");
    CHECK(cross.err.find("GPU0 model: 'H100' vs 'A100'") != std::string::npos);
    CHECK(cross.out.empty());
}

TEST_CASE("report text reaches the terminal with control characters escaped / JSON and CSV stay exact") {
    const fs::path d = scratch("escape");
    const std::string evil = "evil\x1b]0;owned\x07\x1b[2J\r\nerror: forged line\xc2\x9b" "31m";
    const std::string path = (d / "evil.json").string();
    put(path, report_text(evil));
    for (const char* format : {"table", "markdown"}) {
        CAPTURE(format);
        const Run r = run_cli(std::string("show --format ") + format + " " + quote(path));
        CHECK(r.code == 0);
        CHECK(r.out.find('\x1b') == std::string::npos);
        CHECK(r.out.find('\r') == std::string::npos);
        CHECK(r.out.find("\xc2\x9b") == std::string::npos);
        CHECK(r.out.find("\nerror: forged line") == std::string::npos);
        CHECK(r.out.find("evil\\x1b]0;owned") != std::string::npos);
    }
    const Run js = run_cli("show --format json " + quote(path));
    CHECK(nlohmann::json::parse(js.out)["host"]["hostname"] == evil);
    const Run csv = run_cli("show --format csv " + quote(path));
    CHECK(csv.out.find("error: forged line") != std::string::npos); // exact: CSV quotes, never rewrites
    const Run cmp = run_cli("compare " + quote(path) + " " + quote(path));
    CHECK(cmp.out.find('\x1b') == std::string::npos);
    // Error messages too: a file name with an escape sequence.
    const Run err = run_cli("show " + quote((d / "x\x1b[31m.json").string()));
    CHECK(err.err.find('\x1b') == std::string::npos);
    CHECK(display_text("a\tb\nc\x7f\xff") == "a\\tb\\nc\\x7f\\xff");
    CHECK(display_text(display_text("\x1b[1m")) == display_text("\x1b[1m"));
}

TEST_CASE("utf8_sequence accepts well-formed sequences only") {
    std::uint32_t cp = 0;
    CHECK(utf8_sequence("\xc3\xa9", 0, cp) == 2);
    CHECK(cp == 0xe9);
    CHECK(utf8_sequence("\xe2\x86\x92", 0, cp) == 3);
    CHECK(cp == 0x2192);
    CHECK(utf8_sequence("\xf0\x9f\x98\x80", 0, cp) == 4);
    CHECK(cp == 0x1f600);
    CHECK(utf8_sequence("a", 0, cp) == 0);              // ASCII is not a multi-byte sequence
    CHECK(utf8_sequence("\xc0\xaf", 0, cp) == 0);       // overlong
    CHECK(utf8_sequence("\xe0\x80\xaf", 0, cp) == 0);   // overlong
    CHECK(utf8_sequence("\xed\xa0\x80", 0, cp) == 0);   // surrogate
    CHECK(utf8_sequence("\xf4\x90\x80\x80", 0, cp) == 0); // past U+10FFFF
    CHECK(utf8_sequence("\xe2\x86", 0, cp) == 0);       // cut short
    CHECK(utf8_sequence("\xc3(", 0, cp) == 0);           // not a continuation byte
    CHECK(utf8_sequence("x", 5, cp) == 0);               // past the end
}

TEST_CASE("under a non-UTF-8 locale human output is ASCII only") {
    const fs::path d = scratch("ascii");
    const std::string path = (d / "r.json").string();
    put(path, report_text("caf\xc3\xa9"));
    auto ascii = [](const std::string& s) {
        return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    };
    for (const std::string& args : std::vector<std::string>{"list", "show " + quote(path), "compare " + quote(path) + " " + quote(path)}) {
        CAPTURE(args);
        const Run c = run_cli(args, "LC_ALL=C LANG=C");
        CHECK(c.code == 0);
        CHECK(ascii(c.out));
        CHECK(ascii(c.err));
    }
    const Run shown = run_cli("show " + quote(path), "LC_ALL=C");
    CHECK(shown.out.find("+/-") != std::string::npos);
    CHECK(shown.out.find("caf\\u00e9") != std::string::npos);
    const Run utf8 = run_cli("show " + quote(path), "LC_ALL=C.UTF-8");
    if (utf8.out.find("caf\xc3\xa9") != std::string::npos) // where the C.UTF-8 locale exists
        CHECK(utf8.out.find("\xc2\xb1") != std::string::npos);
}

// ---- 4. validation and numbers ---------------------------------------------------------------

TEST_CASE("only \"1.N\" schema versions are read") {
    const fs::path d = scratch("versions");
    int i = 0;
    for (const char* bad : {"1.0", "\"0.9\"", "\"01.0\"", "\"1.0.0\"", "\"1.x\"", "\"1\"", "\"1.01\"", "\"\"", "null", "\"-1.0\""}) {
        CAPTURE(bad);
        const fs::path p = d / fmt::format("v{}.json", i++);
        put(p, report_text("h", {1, 2, 3}, bad));
        const Run r = run_cli("show " + quote(p.string()));
        expect_usage(r, "schema version");
        CHECK(lines(r.err) <= 2);
    }
    for (const char* good : {"\"1.0\"", "\"1.1\"", "\"1.25\""}) {
        CAPTURE(good);
        put(d / "good.json", report_text("h", {1, 2, 3}, good));
        CHECK_NOTHROW(load_report((d / "good.json").string()));
    }
    put(d / "newer.json", report_text("h", {1, 2, 3}, "\"2.0\""));
    expect_usage(run_cli("show " + quote((d / "newer.json").string())), "newer than this interopbench");
}

TEST_CASE("compare: a drop to zero is a regression, huge samples give finite figures") {
    const fs::path d = scratch("numbers");
    put(d / "base.json", report_text("h", {1.1385e11, 1.1385e11, 1.1385e11, 1.14e11, 1.13e11}));
    put(d / "zero.json", report_text("h", {0, 0, 0, 0, 0}));
    const Run z = run_cli("compare " + quote((d / "base.json").string()) + " " + quote((d / "zero.json").string()));
    CAPTURE(z.out);
    CHECK(z.code == 1);
    CHECK(z.out.find("regression") != std::string::npos);
    CHECK(z.out.find("not positive") == std::string::npos);
    put(d / "huge.json", report_text("h", {1e308, 1.7e308, 1.79e308, 1e308, 1.5e308}));
    put(d / "tiny.json", report_text("h", {1e-300, 2e-300, 1e-300, 3e-300, 1e-300}));
    for (const auto& [a, b] : {std::pair{"huge.json", "huge.json"}, std::pair{"tiny.json", "huge.json"}}) {
        const Run r = run_cli("compare " + quote((d / a).string()) + " " + quote((d / b).string()));
        CAPTURE(r.out);
        CHECK(r.code <= 1);
        for (const char* word : {"inf", "nan", "-nan"}) CHECK(r.out.find(word) == std::string::npos);
        const Run j = run_cli("compare --format json " + quote((d / a).string()) + " " + quote((d / b).string()));
        const auto doc = nlohmann::json::parse(j.out);
        for (const auto& res : doc["results"])
            for (const auto& m : res["metrics"]) {
                CHECK(m["ratio"].is_number());
                CHECK(m["ci"][0].is_number());
                CHECK(m["ci"][1].is_number());
            }
    }
}

TEST_CASE("--devices syntax is checked without a GPU") {
    for (const char* bad : {"garbage", "0,x", "1b:00", "0000:1b:00.8", "zz:00.0", "99999999999", "0:"}) {
        CAPTURE(bad);
        expect_usage(run_cli(std::string("run -s host_memcpy --size 4K --no-topology -q --devices ") + quote(bad)), "");
        CHECK_THROWS_AS(check_device_list_syntax(bad), UsageError);
    }
    for (const char* good : {"0", "0,1", "1b:00.0", "0000:1b:00.0", "0000:1B:00.0,3"}) CHECK_NOTHROW(check_device_list_syntax(good));
}

TEST_CASE("an empty value of any option is a usage error") {
    const fs::path d = scratch("empty");
    put(d / "base.json", report_text());
    const std::string base = quote((d / "base.json").string());
    for (const std::string& args : std::vector<std::string>
         {std::string("run --out ''"), std::string("run --size ''"), std::string("run --profile ''"), std::string("run -s ''"),
          std::string("run --devices ''"), std::string("run --min-samples ''"), std::string("show ''"),
          "show --format '' " + base, "compare " + base + " ''", "compare " + base + " " + base + " --out ''",
          "compare " + base + " " + base + " --threshold ''", std::string("list -s ''"), std::string("topo --from ''"),
          std::string("topo --format ''"), std::string("doctor --format ''")}) {
        CAPTURE(args);
        expect_usage(run_cli(args), "empty value");
    }
}

TEST_CASE("settings that are not finite numbers are refused before anything runs") {
    for (const char* args : {"--max-time inf", "--noise nan", "--noise inf", "--sample-time inf", "--max-time nan"}) {
        CAPTURE(args);
        expect_usage(run_cli(std::string("run -s host_memcpy --size 4K --no-topology ") + args), "");
    }
    const fs::path d = scratch("settings");
    put(d / "p.json", R"({"settings": {"warmup": 99999999999}, "scenarios": [{"pattern": "host_memcpy"}]})");
    expect_usage(run_cli("run --profile " + quote((d / "p.json").string())), "out of range");
    RunSettings s;
    s.max_time_s = std::numeric_limits<double>::infinity();
    CHECK_THROWS_AS(s.validate(), UsageError);
}

// ---- 5. topology at scale --------------------------------------------------------------------

TEST_CASE("topology: path classes from a generated machine, and 10,000 GPUs finish") {
    const fs::path d = scratch("scale");
    // Small and known: 6 GPUs, 3 per socket, at most 2 per switch: PIX on a switch, NODE
    // across a socket's host bridges, SYS across sockets.
    put(d / "small.xml", generated_topology(6, 2));
    const Topology small = load_topology_xml((d / "small.xml").string());
    REQUIRE(small.gpus.size() == 6);
    REQUIRE(small.pairs.size() == 30);
    auto cls = [&](const Topology& t, std::size_t a, std::size_t b) { return t.pair(a, b)->label(); };
    // Sorted by bus id: the domains follow the order of generation, socket 0 first.
    CHECK(cls(small, 0, 1) == "PIX");
    CHECK(cls(small, 0, 2) == "NODE");
    CHECK(cls(small, 0, 3) == "SYS");
    CHECK(cls(small, 3, 4) == "PIX");
    CHECK(cls(small, 4, 5) == "NODE");
    for (const auto& p : small.pairs) CHECK(small.pair(p.from, p.to) == &p);

    // Within the limit every pair is classified.
    put(d / "mid.xml", generated_topology(k_max_pair_gpus, 8));
    const Topology mid = load_topology_xml((d / "mid.xml").string());
    CHECK(mid.gpus.size() == k_max_pair_gpus);
    CHECK(mid.pairs.size() == k_max_pair_gpus * (k_max_pair_gpus - 1));
    CHECK(cls(mid, 0, 7) == "PIX");
    CHECK(cls(mid, 0, 8) == "NODE");
    CHECK(cls(mid, 0, k_max_pair_gpus - 1) == "SYS");

    // A recorded rack: GPUs listed with their locality, pairs beyond the limit left out, said so.
    put(d / "rack.xml", generated_topology(10000, 32));
    const Run r = run_cli("topo --format json --from " + quote((d / "rack.xml").string()));
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["gpus"].size() == 10000);
    CHECK(doc["pairs"].empty());
    bool noted = false;
    for (const auto& n : doc["notes"]) noted |= n.get<std::string>().find("at most") != std::string::npos;
    CHECK(noted);
    CHECK(doc["gpus"][9999]["numa_nodes"] == nlohmann::json::array({1}));
    const Run table = run_cli("topo --from " + quote((d / "rack.xml").string()));
    CHECK(table.code == 0);
}
