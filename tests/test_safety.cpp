// Safe on a machine other users share, the tool run as root: a path is trusted only when no
// other user may change any component of it (trust.hpp), what was checked is what is used (the
// path held open; a FIFO never blocks), TMPDIR likewise, and a run's folder is swept only when
// its lock proves that no live run holds it, whatever PID its name shows (private_dir.hpp).
// Another user's situation is made with chown to nobody (uid 65534) when the tests run as root,
// and with modes otherwise. No timing is asserted.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "families/plugin/plugin.hpp"
#include "gpu/cufile_loader.hpp"
#include "hostio/storage_io.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/private_dir.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/report.hpp"
#include "interopbench/trust.hpp"
#include "test_support.hpp"
#include "topology/storage_devices.hpp"

using namespace interopbench;
namespace fs = std::filesystem;

namespace {

constexpr uid_t k_nobody = 65534;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void make_dir(const fs::path& p, mode_t mode) {
    fs::create_directories(p);
    REQUIRE(::chmod(p.c_str(), mode) == 0);
}

/// A process id that names no process here (as a run's in another PID namespace or on another
/// host may not).
long dead_pid() {
    for (long pid = 4190000; pid > 1000; --pid)
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return pid;
    return 999999999;
}

/// A run folder as a run makes it, `dir/name` with its lock file, and a file in it.
fs::path run_folder_like(const fs::path& dir, const std::string& name) {
    const fs::path f = dir / name;
    fs::create_directory(f);
    REQUIRE(::chmod(f.c_str(), 0700) == 0);
    std::ofstream(f / ".lock");
    std::ofstream(f / "data") << "x";
    return f;
}

const fs::path k_plugins = fs::path(INTEROPBENCH_SOURCE_DIR) / "tests" / "data" / "plugins";

/// A plugin folder: the fake plugin (`prelude` first), started by a shell script that reads it
/// and names no file by an absolute path, so that what runs is found from the folder the
/// plugin was started in; its manifest `fake_swap`.
void plugin_folder(const fs::path& dir, mode_t mode, const std::string& prelude = "") {
    fs::create_directories(dir);
    std::ofstream(dir / "fake.py") << prelude << testing::slurp(k_plugins / "fake.py");
    std::ofstream(dir / "fake.sh") << "#!/bin/sh\nexec python3 -c \"$(cat fake.py)\" good\n";
    REQUIRE(::chmod((dir / "fake.sh").c_str(), 0755) == 0);
    std::ofstream(dir / "fake_swap.json")
        << R"({"id": "fake_swap", "protocol": 1, "command": ["./fake.sh"], "needs_gpu": false, "timeout_s": 10})";
    REQUIRE(::chmod(dir.c_str(), mode) == 0);
}

} // namespace

TEST_CASE("safety: a path is trusted only when no other user may change any component of it, from / down") {
    const fs::path d = testing::scratch("trust_rule");
    make_dir(d / "mine" / "plugins", 0755);
    const TrustedPath held = open_trusted((d / "mine" / "plugins").string(), TrustRule::plugin_folder);
    CHECK(held);
    CHECK(held.path() == fs::canonical(d / "mine" / "plugins").string());

    // A folder above that any user may write: whoever may rename what is in it may swap the path.
    make_dir(d / "open" / "plugins", 0755);
    REQUIRE(::chmod((d / "open").c_str(), 0777) == 0);
    const TrustedPath open = open_trusted((d / "open" / "plugins").string(), TrustRule::plugin_folder);
    CHECK_FALSE(open);
    CHECK(open.problem() == fmt::format("'{}': '{}' may be written by any user (mode 777)", (d / "open" / "plugins").string(),
                                        fs::canonical(d / "open").string()));
    CHECK(contains(open.why(), "; keep plugins where only root or you may change them"));
    // The same through a link kept in a safe folder: the target's folders count.
    fs::create_directory_symlink(d / "open" / "plugins", d / "mine" / "link");
    CHECK(contains(untrusted((d / "mine" / "link").string(), TrustRule::plugin_folder).value_or(""), "may be written by any user"));

    // A sticky folder (like /tmp) may hold the path: only an entry's owner may move the entry.
    make_dir(d / "sticky" / "plugins", 0755);
    REQUIRE(::chmod((d / "sticky").c_str(), 01777) == 0);
    CHECK_FALSE(untrusted((d / "sticky" / "plugins").string(), TrustRule::plugin_folder));
    // ...and be the folder the tool makes its own entries in, never a folder of plugins.
    CHECK_FALSE(untrusted((d / "sticky").string(), TrustRule::storage_folder));
    CHECK_FALSE(untrusted((d / "sticky").string(), TrustRule::temp_folder));
    CHECK(contains(untrusted((d / "sticky").string(), TrustRule::plugin_folder).value_or(""), "(mode 1777)"));

    // Relative to a held folder, ".." walks up through checked folders.
    std::ofstream(d / "mine" / "script.py") << "pass\n";
    CHECK(open_trusted_at(held, "../script.py", TrustRule::plugin_program));
    CHECK(contains(open_trusted_at(held, "../missing.py", TrustRule::plugin_program).problem(), "does not exist"));
    // The kind: a folder where a file is expected, a link where the tool never made one.
    CHECK(contains(untrusted((d / "mine").string(), TrustRule::plugin_manifest).value_or(""), "is a folder, not a regular file"));
    fs::create_symlink(d / "mine" / "script.py", d / "mine" / "kept.dat");
    CHECK(contains(untrusted((d / "mine" / "kept.dat").string(), TrustRule::storage_file).value_or(""),
                   "is a symbolic link, which this tool never made"));

    if (::geteuid() != 0) return; // the cases of another user's files need root (chown to nobody)
    // A root-owned folder inside a folder that nobody owns: nobody may swap it.
    make_dir(d / "theirs" / "plugins", 0755);
    REQUIRE(::chown((d / "theirs").c_str(), k_nobody, k_nobody) == 0);
    CHECK(contains(untrusted((d / "theirs" / "plugins").string(), TrustRule::plugin_folder).value_or(""),
                   fmt::format("'{}' belongs to another user (uid 65534)", fs::canonical(d / "theirs").string())));
    // In a sticky folder, an entry of nobody's (a link too) is nobody's to replace.
    fs::create_directory_symlink(d / "mine" / "plugins", d / "sticky" / "link");
    REQUIRE(::lchown((d / "sticky" / "link").c_str(), k_nobody, k_nobody) == 0);
    CHECK(contains(untrusted((d / "sticky" / "link").string(), TrustRule::plugin_folder).value_or(""), "uid 65534"));
    // A group other than root's or this user's may not write it.
    make_dir(d / "group", 0775);
    REQUIRE(::chown((d / "group").c_str(), 0, k_nobody) == 0);
    CHECK(contains(untrusted((d / "group").string(), TrustRule::plugin_folder).value_or(""), "may be written by group 65534"));
    fs::remove_all(d);
}

TEST_CASE("safety: a FIFO where a file is expected is refused at once, never opened") {
    const fs::path d = testing::scratch("trust_fifo");
    REQUIRE(::mkfifo((d / "fifo.json").c_str(), 0644) == 0);
    // Each of these would wait forever for a writer if the FIFO were opened for reading.
    CHECK(contains(untrusted((d / "fifo.json").string(), TrustRule::plugin_manifest).value_or(""),
                   "is a FIFO, not a regular file"));
    CHECK(contains(untrusted((d / "fifo.json").string(), TrustRule::storage_file).value_or(""), "is a FIFO"));
    fs::create_symlink(d / "fifo.json", d / "link.json");
    CHECK(contains(untrusted((d / "link.json").string(), TrustRule::plugin_manifest).value_or(""), "is a FIFO"));
    // A plugin folder holding FIFOs named like manifests: listed without them, at once.
    Registry r;
    std::vector<std::string> warnings;
    plugin::register_from(r, {{d.string(), true}}, std::nullopt, warnings);
    CHECK(r.all().empty());
    // A kept storage file that is a FIFO.
    const fs::path kept = d / storage::pattern_file_name(4096);
    REQUIRE(::mkfifo(kept.c_str(), 0600) == 0);
    CHECK(contains(storage::untrusted_file(kept.string()).value_or(""), "is a FIFO"));
    fs::remove_all(d);
}

TEST_CASE("safety: a plugin folder swapped after its check runs nothing but what was checked (a swapping loop)") {
    // The folder named is swapped with one any user may write (as a folder another user owns
    // would be swapped by its owner). A check that passes holds what it checked: the manifest is
    // read, the plugin started and its script found in that folder, so the other folder's
    // script never runs. The old check of the name alone, then a start by the name, ran it
    // whenever the swap fell between the two.
    const fs::path d = testing::scratch("trust_swap");
    const fs::path marker = d / "the-other-script-ran";
    plugin_folder(d / "checked", 0755);
    plugin_folder(d / "other", 0777, "open('" + marker.string() + "', 'a').write('ran')\n");
    const fs::path named = d / "plugins", other = d / "other";
    fs::rename(d / "checked", named);
    auto swap = [&] { return ::renameat2(AT_FDCWD, named.c_str(), AT_FDCWD, other.c_str(), RENAME_EXCHANGE) == 0; };
    auto summary = [](const Registry& r) { return r.all()[0]->info().summary; };
    {
        // Once, between the check and the start.
        Registry r;
        std::vector<std::string> warnings;
        plugin::register_from(r, {{named.string(), true}}, std::nullopt, warnings);
        REQUIRE(r.all().size() == 1);
        REQUIRE(swap());
        CHECK(summary(r).find("unusable") == std::string::npos);
        REQUIRE(swap());
        CHECK_FALSE(fs::exists(marker));
    }
    // Continuously, while plugins are found and started.
    std::atomic<bool> stop{false};
    std::atomic<long> swaps{0};
    std::thread swapper([&] {
        while (!stop) {
            if (swap()) ++swaps;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    // Each start takes milliseconds, many swaps: the name is either folder at random when it
    // starts, so the old code lost about every other time, and 16 times in a row at 2^-16.
    int described = 0, refused = 0;
    for (int i = 0; i < 4000 && described < 16; ++i) {
        Registry r;
        std::vector<std::string> warnings;
        plugin::register_from(r, {{named.string(), true}}, std::nullopt, warnings);
        if (r.all().empty()) {
            ++refused; // the check found the other folder
            continue;
        }
        CHECK(summary(r).find("unusable") == std::string::npos);
        ++described;
    }
    stop = true;
    swapper.join();
    CAPTURE(swaps.load());
    CAPTURE(described);
    CAPTURE(refused);
    CHECK(described == 16);
    CHECK_FALSE(fs::exists(marker));
    fs::remove_all(d);
}

TEST_CASE("safety: a TMPDIR another user may change is refused with one line naming it and the fix") {
    const fs::path d = testing::scratch("trust_tmpdir");
    make_dir(d / "open" / "tmp", 0700);
    REQUIRE(::chmod((d / "open").c_str(), 0777) == 0);
    const std::string outer = std::getenv("TMPDIR");
    ::setenv("TMPDIR", (d / "open" / "tmp").c_str(), 1);
    try {
        (void)temp_folder();
        FAIL("TMPDIR in a folder any user may write was taken");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) == fmt::format("TMPDIR '{}': '{}' may be written by any user (mode 777)",
                                                   (d / "open" / "tmp").string(), fs::canonical(d / "open").string()));
        CHECK(contains(e.hint(), "set TMPDIR to a folder that only root or you may change"));
    }
    if (::geteuid() == 0) { // in a folder nobody owns (mode 755): nobody may swap the folder
        make_dir(d / "theirs" / "tmp", 0700);
        REQUIRE(::chown((d / "theirs").c_str(), k_nobody, k_nobody) == 0);
        ::setenv("TMPDIR", (d / "theirs" / "tmp").c_str(), 1);
        CHECK_THROWS_WITH_AS((void)temp_folder(), doctest::Contains("belongs to another user (uid 65534)"), UsageError);
    }
    ::setenv("TMPDIR", outer.c_str(), 1);
    // Through the binary: the default storage folder would be made there; refused, exit 2.
    const fs::path err = d / "stderr";
    const int status = testing::run_shell("env TMPDIR=" + (d / "open" / "tmp").string() + " " INTEROPBENCH_BINARY
                                          " run -s storage_read --size 1M --no-topology -q >/dev/null 2>" + err.string());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    const std::string text = testing::slurp(err);
    CAPTURE(text);
    CHECK(contains(text, "error: TMPDIR"));
    CHECK(contains(text, "may be written by any user"));
    CHECK(contains(text, "hint: set TMPDIR"));
    CHECK(fs::is_empty(d / "open" / "tmp")); // nothing was made in it
    fs::remove_all(d);
}

TEST_CASE("safety: a run folder is swept only when no live run holds its lock, whatever PID its name shows") {
    const fs::path d = testing::scratch("sweep_lock");
    const long pid = dead_pid();
    // A live run in another PID namespace or on another host sharing the folder: its PID names
    // no process here, but it holds its folder's lock. The old sweep went by the PID alone.
    const fs::path live = run_folder_like(d, fmt::format(".ib-run-{}-abcdef", pid));
    const int holder = ::open((live / ".lock").c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(holder >= 0);
    REQUIRE(::flock(holder, LOCK_EX) == 0);
    // Without a lock file (being made, or made by an older version): left.
    const fs::path unlocked = d / fmt::format(".ib-run-{}-ghijkl", pid);
    fs::create_directory(unlocked);
    REQUIRE(::chmod(unlocked.c_str(), 0700) == 0);
    CHECK(storage::remove_stale_files(d.string()) == 0);
    CHECK(fs::exists(live / "data"));
    CHECK(fs::exists(unlocked));
    // The run ended (its lock released, as the kernel does for a killed process): swept.
    ::close(holder);
    CHECK(storage::remove_stale_files(d.string()) == 1);
    CHECK_FALSE(fs::exists(live));

    // The private folders in TMPDIR follow the same rule.
    const fs::path tmp = temp_folder();
    const fs::path priv = run_folder_like(tmp, fmt::format("interopbench-{}-mnopqr", pid));
    const int priv_holder = ::open((priv / ".lock").c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(::flock(priv_holder, LOCK_EX) == 0);
    CHECK(remove_stale_private_dirs() == 0);
    CHECK(fs::exists(priv / "data"));
    ::close(priv_holder);
    CHECK(remove_stale_private_dirs() == 1);
    CHECK_FALSE(fs::exists(priv));

    // A folder this process holds is never swept; once destroyed, it and its contents are gone.
    std::string made;
    {
        RunFolder mine(d.string(), ".ib-run-");
        made = mine.path();
        std::ofstream(fs::path(made) / "file") << "x";
        CHECK(fs::exists(fs::path(made) / ".lock"));
        CHECK_FALSE(remove_ended_run_folder(made));
        CHECK(fs::exists(fs::path(made) / "file"));
    }
    CHECK_FALSE(fs::exists(made));

    if (::geteuid() == 0) { // another user's folder, lock free or not, is theirs
        const fs::path theirs = run_folder_like(d, fmt::format(".ib-run-{}-stuvwx", pid));
        REQUIRE(::chown(theirs.c_str(), k_nobody, k_nobody) == 0);
        CHECK(storage::remove_stale_files(d.string()) == 0);
        CHECK(fs::exists(theirs));
    }
    fs::remove_all(d);
}

TEST_CASE("safety: sweeping while another process makes and uses its run folders never takes a live one (a loop)") {
    // The lock file is locked before it is named, so no sweep finds a live folder unlocked.
    const fs::path d = testing::scratch("sweep_race");
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        int lost = 0;
        for (int i = 0; i < 400; ++i) {
            try {
                RunFolder f(d.string(), ".ib-run-");
                const std::string file = f.path() + "/data";
                const int fd = ::open(file.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
                if (fd < 0) ++lost;
                else ::close(fd);
                if (::access(file.c_str(), F_OK) != 0) ++lost;
            } catch (...) {
                ++lost;
            }
        }
        ::_exit(lost > 100 ? 100 : lost);
    }
    int sweeps = 0, status = 0;
    while (::waitpid(child, &status, WNOHANG) == 0) {
        storage::remove_stale_files(d.string());
        ++sweeps;
    }
    CAPTURE(sweeps);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0); // the number of folders lost while held
    CHECK(fs::is_empty(d));
    fs::remove_all(d);
}

TEST_CASE("safety: cuFile reads a private copy of its configuration and logs into the private folder, never the working directory") {
    // Saved and restored: the variables this case sets, as the tool's own or as a user's.
    struct Env {
        std::vector<std::pair<std::string, std::optional<std::string>>> saved;
        Env() {
            for (const char* name : {"CUFILE_ENV_PATH_JSON", "CUFILE_LOGFILE_PATH", "INTEROPBENCH_CUFILE_USER_CONFIG",
                                     "INTEROPBENCH_OWN_ENV"}) {
                const char* v = std::getenv(name);
                saved.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
                ::unsetenv(name);
            }
        }
        ~Env() {
            for (const auto& [name, value] : saved)
                if (value) ::setenv(name.c_str(), value->c_str(), 1);
                else ::unsetenv(name.c_str());
        }
    } env;
    const fs::path d = testing::scratch("cufile_config");
    make_dir(d / "conf", 0755);
    const fs::path user = d / "conf" / "cufile.json";
    std::ofstream(user) << "{\n  // cufile.json carries comments\n  \"logging\": {\"dir\": \"/var/log/elsewhere\", \"level\": \"INFO\"},\n"
                           "  \"properties\": {\"allow_compat_mode\": true, \"force_compat_mode\": false}\n}\n";
    ::setenv("CUFILE_ENV_PATH_JSON", user.c_str(), 1);
    std::string why;
    const std::string copy = gpu::private_cufile_config(&why);
    CAPTURE(why);
    REQUIRE(!copy.empty());
    CHECK(copy.rfind(private_dir() + "/cufile-", 0) == 0);
    struct stat st {};
    REQUIRE(::lstat(copy.c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(st.st_uid == ::geteuid());
    const auto config = nlohmann::json::parse(testing::slurp(copy));
    CHECK(config["logging"]["dir"] == private_dir()); // its log goes where only this run writes
    CHECK(config["logging"]["level"] == "INFO");      // the user's level stays
    CHECK(config["properties"]["allow_compat_mode"] == true);
    CHECK(std::string(std::getenv("CUFILE_ENV_PATH_JSON")) == copy);
    CHECK(std::string(std::getenv("CUFILE_LOGFILE_PATH")) == private_dir() + "/cufile.log");
    CHECK(own_environment("CUFILE_ENV_PATH_JSON"));
    // The facts a report shows name the user's file, read from there.
    const CufileHostFacts facts = cufile_host_facts();
    CHECK(facts.config_path == user.string());
    CHECK(facts.config_from_env);
    CHECK(facts.allow_compat_mode == std::optional<bool>(true));
    // Again (a round's process inherits the variables): a copy of the user's file, not of the copy.
    const std::string again = gpu::private_cufile_config(&why);
    REQUIRE(!again.empty());
    CHECK(again != copy);
    CHECK(nlohmann::json::parse(testing::slurp(again))["logging"]["level"] == "INFO");

    // cuFile's own reason, from its log in the private folder: the first line it marked ERROR.
    const std::string log = " 07-12-2026 10:00:00:123 [pid=41 tid=41] NOTICE  cufio-drv:107 opening the driver\n"
                            " 07-12-2026 10:00:00:124 [pid=41 tid=41] ERROR  cufio-drv:720 nvidia-fs.ko driver not loaded\n"
                            " 07-12-2026 10:00:00:125 [pid=41 tid=41] ERROR  cufio:280 cuFileDriverOpen failed: error\n";
    CHECK(gpu::cufile_first_error(log) == "ERROR cufio-drv:720 nvidia-fs.ko driver not loaded");
    CHECK(gpu::cufile_first_error("no trouble here\n") == "");
    CHECK(gpu::cufile_first_error("an error of some kind\n") == "an error of some kind");
    std::ofstream(private_dir() + "/cufile.log") << log;
    CHECK(gpu::cufile_log_reason() == "ERROR cufio-drv:720 nvidia-fs.ko driver not loaded");
    fs::remove(private_dir() + "/cufile.log");
    // Where the configuration names the folder alone, cuFile names its file itself.
    std::ofstream(private_dir() + "/cufile_41_2026-12-07.log") << log;
    CHECK(gpu::cufile_log_reason() == "ERROR cufio-drv:720 nvidia-fs.ko driver not loaded");
    fs::remove(private_dir() + "/cufile_41_2026-12-07.log");

    // A file the user named that another user may change: refused, never copied nor replaced.
    ::unsetenv("INTEROPBENCH_OWN_ENV");
    ::unsetenv("INTEROPBENCH_CUFILE_USER_CONFIG");
    ::setenv("CUFILE_ENV_PATH_JSON", user.c_str(), 1);
    REQUIRE(::chmod((d / "conf").c_str(), 0777) == 0);
    CHECK(gpu::private_cufile_config(&why).empty());
    CHECK(why == fmt::format("its configuration CUFILE_ENV_PATH_JSON '{}': '{}' may be written by any user (mode 777); keep the "
                             "file where only root or you may change it, and every folder above it too, or name another",
                             user.string(), fs::canonical(d / "conf").string()));
    CHECK(std::string(std::getenv("CUFILE_ENV_PATH_JSON")) == user.string()); // left as the user set it
    REQUIRE(::chmod((d / "conf").c_str(), 0755) == 0);
    if (::geteuid() == 0) {
        REQUIRE(::chown(user.c_str(), k_nobody, k_nobody) == 0);
        CHECK(gpu::private_cufile_config(&why).empty());
        CHECK(contains(why, "belongs to another user (uid 65534)"));
        REQUIRE(::chown(user.c_str(), 0, 0) == 0);
    }
    // A file named that is missing, or no JSON: refused with the reason.
    ::setenv("CUFILE_ENV_PATH_JSON", (d / "conf" / "missing.json").c_str(), 1);
    CHECK(gpu::private_cufile_config(&why).empty());
    CHECK(contains(why, "does not exist"));
    std::ofstream(d / "conf" / "bad.json") << "{ not json";
    ::setenv("CUFILE_ENV_PATH_JSON", (d / "conf" / "bad.json").c_str(), 1);
    CHECK(gpu::private_cufile_config(&why).empty());
    CHECK(contains(why, "is not a JSON object"));
    // A log file the user chose stays theirs.
    ::setenv("CUFILE_ENV_PATH_JSON", user.c_str(), 1);
    ::setenv("CUFILE_LOGFILE_PATH", (d / "mine.log").c_str(), 1);
    CHECK_FALSE(gpu::private_cufile_config(&why).empty());
    CHECK(std::string(std::getenv("CUFILE_LOGFILE_PATH")) == (d / "mine.log").string());
}
