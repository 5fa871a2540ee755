#include "families/plugin/warden.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

extern char** environ;

namespace interopbench::plugin {
namespace {

std::vector<ProcEntry> all_processes() {
    std::vector<ProcEntry> out;
    DIR* d = ::opendir("/proc");
    if (!d) return out;
    while (const dirent* e = ::readdir(d)) {
        char* end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (!end || *end || pid <= 0) continue;
        std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
        std::string stat((std::istreambuf_iterator<char>(in)), {});
        // "PID (NAME) STATE PPID PGRP SESSION ...": NAME may hold blanks and parentheses.
        const auto open = stat.find('('), close = stat.rfind(')');
        if (open == std::string::npos || close == std::string::npos || close < open) continue;
        ProcEntry p{pid, 0, 0, 0, 0, stat.substr(open + 1, close - open - 1)};
        if (std::sscanf(stat.c_str() + close + 1, " %c %ld %ld %ld", &p.state, &p.ppid, &p.pgrp, &p.sid) != 4) continue;
        out.push_back(std::move(p));
    }
    ::closedir(d);
    return out;
}

volatile sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

void report(const char* word, long value) {
    char line[64];
    const int n = std::snprintf(line, sizeof line, "%s %ld\n", word, value);
    (void)!::write(k_warden_status_fd, line, static_cast<std::size_t>(n)); // interopbench may be gone
}

void reap_all() {
    int status = 0;
    while (::waitpid(-1, &status, WNOHANG) > 0) {
    }
}

/// The children of `pid`, of all its threads: /proc/PID/task/TID/children (an empty list for a
/// process that is gone).
std::vector<long> children_of(long pid) {
    std::vector<long> out;
    const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    DIR* d = ::opendir(tasks.c_str());
    if (!d) return out;
    while (const dirent* e = ::readdir(d)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        std::ifstream in(tasks + "/" + e->d_name + "/children");
        for (long child = 0; in >> child;) out.push_back(child);
    }
    ::closedir(d);
    return out;
}

/// Whether the kernel lists each process's children (/proc/PID/task/TID/children, a kernel
/// built with CONFIG_PROC_CHILDREN); else /proc is scanned.
bool children_listed() {
    static const bool listed = [] {
        const long me = ::getpid();
        return static_cast<bool>(std::ifstream("/proc/" + std::to_string(me) + "/task/" + std::to_string(me) + "/children"));
    }();
    return listed;
}

/// Every process below the warden, parents before their children: its own children (every
/// orphan of the plugin's processes becomes one: the subreaper) and theirs, read through
/// /proc/PID/task/TID/children, else (no such file) a scan of /proc.
std::vector<long> below_me() {
    const long me = ::getpid();
    if (!children_listed()) {
        std::vector<long> out;
        for (const auto& p : descendants_of(me)) out.push_back(p.pid);
        return out;
    }
    std::vector<long> out = children_of(me);
    for (std::size_t i = 0; i < out.size() && out.size() < 100000; ++i)
        for (const long c : children_of(out[i])) out.push_back(c);
    return out;
}

// Everything below the warden is killed until nothing is left but the plugin's zombie: the
// cgroup at once where there is one; else, pass after pass, the plugin's group (its id reserved
// by the plugin, an unreaped child) and every process below the warden, children and their
// children, found afresh in each pass (an id is not reused before its process is reaped). A
// process that forks anew and exits at once is caught: its child is below it while it lives,
// and the warden's own child once it is gone (the subreaper). The passes go on while they find
// processes not seen before, and stop 5 s after the last new one (one stuck in the kernel
// cannot keep the warden alive for long), 60 s at the most.
void end_plugin(pid_t plugin, const std::string& cgroup) {
    if (!cgroup.empty()) kill_cgroup(cgroup);
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto last_new = start;
    std::set<long> seen;
    for (int pass = 0;; ++pass) {
        if (plugin > 0) (void)::kill(-plugin, SIGKILL);
        bool left = false;
        for (const long p : below_me()) {
            if (p == plugin) continue;
            left = true;
            (void)::kill(static_cast<pid_t>(p), SIGKILL);
            if (seen.insert(p).second) last_new = clock::now();
            // Reaped once ended where it is the warden's child (ECHILD for the others); the
            // plugin stays, its group id reserved until the end.
            int status = 0;
            (void)::waitpid(static_cast<pid_t>(p), &status, WNOHANG);
        }
        siginfo_t info{};
        if (plugin > 0 && (::waitid(P_PID, static_cast<id_t>(plugin), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
                           info.si_pid != plugin))
            left = true;
        const auto now = clock::now();
        if (!left || now - last_new >= std::chrono::seconds(5) || now - start >= std::chrono::seconds(60)) break;
        // At once at first (a forking process lives for a moment), then gently.
        if (pass < 2000) std::this_thread::yield();
        else std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    reap_all();
    if (!cgroup.empty()) remove_cgroup(cgroup);
}

} // namespace

std::vector<ProcEntry> descendants_of(long root) {
    const auto procs = all_processes();
    std::set<long> tree{root};
    for (bool grew = true; grew;) {
        grew = false;
        for (const auto& p : procs)
            if (!tree.count(p.pid) && tree.count(p.ppid)) grew = tree.insert(p.pid).second || grew;
    }
    std::vector<ProcEntry> out;
    for (const auto& p : procs)
        if (p.pid != root && tree.count(p.pid)) out.push_back(p);
    return out;
}

std::vector<ProcEntry> live_below(long warden, long plugin) {
    std::vector<ProcEntry> found;
    for (int scan = 0; scan < 5 && found.empty(); ++scan) {
        if (scan > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (!children_listed()) {
            for (auto& p : descendants_of(warden))
                if (p.pid != plugin && !p.ended()) found.push_back(std::move(p));
            continue;
        }
        std::vector<long> todo = children_of(warden);
        for (std::size_t i = 0; i < todo.size() && todo.size() < 100000; ++i)
            for (const long c : children_of(todo[i])) todo.push_back(c);
        for (const long pid : todo) {
            if (pid == plugin) continue;
            std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
            std::string stat((std::istreambuf_iterator<char>(in)), {});
            const auto open = stat.find('('), close = stat.rfind(')');
            if (open == std::string::npos || close == std::string::npos || close < open) continue; // gone since
            ProcEntry p{pid, 0, 0, 0, 0, stat.substr(open + 1, close - open - 1)};
            if (std::sscanf(stat.c_str() + close + 1, " %c %ld %ld %ld", &p.state, &p.ppid, &p.pgrp, &p.sid) != 4 || p.ended())
                continue;
            found.push_back(std::move(p));
        }
    }
    return found;
}

std::string make_plugin_cgroup() {
    if (const char* v = std::getenv("INTEROPBENCH_PLUGIN_CGROUP"); v && std::string_view(v) == "off") return {};
    // This process's cgroup (v2: the line "0::PATH"), below a cgroup2 mount of the root.
    std::ifstream cgroups("/proc/self/cgroup");
    std::string line, own;
    while (std::getline(cgroups, line))
        if (line.rfind("0::/", 0) == 0) own = line.substr(3);
    if (own.empty() || own.find(' ') != std::string::npos) return {};
    std::ifstream mounts("/proc/self/mountinfo");
    std::string mount;
    while (mount.empty() && std::getline(mounts, line)) {
        // ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS... - TYPE SOURCE OPTIONS
        const auto dash = line.find(" - ");
        if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
        std::istringstream fields(line.substr(0, dash));
        std::string id, parent, device, root, point;
        fields >> id >> parent >> device >> root >> point;
        if (root == "/" && point.find('\\') == std::string::npos) mount = point;
    }
    if (mount.empty()) return {};
    static std::atomic<int> made{0};
    const std::string dir = mount + (own == "/" ? std::string{} : own) + "/interopbench-plugin-" +
                            std::to_string(::getpid()) + "-" + std::to_string(made++);
    if (::mkdir(dir.c_str(), 0755) != 0) return {};
    if (::access((dir + "/cgroup.kill").c_str(), W_OK) != 0) {
        (void)::rmdir(dir.c_str());
        return {};
    }
    return dir;
}

void kill_cgroup(const std::string& cgroup) noexcept {
    const int fd = ::open((cgroup + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    (void)!::write(fd, "1", 1);
    ::close(fd);
}

void remove_cgroup(const std::string& cgroup) noexcept {
    for (int i = 0; i < 200; ++i) {
        if (::rmdir(cgroup.c_str()) == 0 || errno != EBUSY) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5)); // the killed are still leaving it
    }
}

int warden_main(int argc, char** argv) {
    if (argc < 4 || ::fcntl(k_warden_status_fd, F_GETFD) < 0 || ::fcntl(k_warden_lifeline_fd, F_GETFD) < 0) {
        std::fprintf(stderr, "%s is started by interopbench for its plugins, never by hand\n", k_warden_command.data());
        return 2;
    }
    // The status pipe's reader may be gone: a write must not end the warden before it cleans.
    ::signal(SIGPIPE, SIG_IGN);
    ::signal(SIGINT, SIG_IGN); // the terminal's Ctrl-C is interopbench's to handle
    struct sigaction sa{};
    sa.sa_handler = on_stop;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGHUP, &sa, nullptr);
    (void)::prctl(PR_SET_CHILD_SUBREAPER, 1);

    const bool from_fd = ::fcntl(k_warden_program_fd, F_GETFD) >= 0; // before a new descriptor may take 5
    const std::string cgroup = std::string_view(argv[2]) == "-" ? std::string{} : argv[2];
    const std::string join = cgroup.empty() ? std::string{} : cgroup + "/cgroup.procs";
    int exec_status[2];
    if (::pipe2(exec_status, O_CLOEXEC) != 0) {
        report("failed", errno);
        return 1;
    }
    const pid_t warden = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        report("failed", errno);
        return 1;
    }
    if (pid == 0) {
        // The plugin: a process group of its own (interopbench ends the group), killed should
        // the warden die first; only async-signal-safe calls until exec.
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != warden) ::_exit(127);
        // Into the plugin's cgroup: all it starts stays there. Where it cannot join, its group
        // and the warden's scans still contain it.
        if (!join.empty()) {
            const int fd = ::open(join.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd >= 0) {
                (void)!::write(fd, "0", 1);
                ::close(fd);
            }
        }
        // Only the program and the exec status (close-on-exec) stay open.
        ::close(k_warden_status_fd);
        ::close(k_warden_lifeline_fd);
#ifdef SYS_close_range
        if (::syscall(SYS_close_range, static_cast<unsigned>(k_warden_fds), static_cast<unsigned>(exec_status[1] - 1), 0u) != 0 ||
            ::syscall(SYS_close_range, static_cast<unsigned>(exec_status[1] + 1), ~0u, 0u) != 0)
#endif
            for (int fd = k_warden_fds; fd < 4096; ++fd)
                if (fd != exec_status[1]) ::close(fd);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
        if (from_fd) ::syscall(SYS_execveat, k_warden_program_fd, "", argv + 3, environ, AT_EMPTY_PATH);
        else ::execve(argv[3], argv + 3, environ);
        const int e = errno;
        (void)!::write(exec_status[1], &e, sizeof e);
        ::_exit(127);
    }
    ::setpgid(pid, pid); // also here: no race with the child's own call
    ::close(exec_status[1]);
    // The plugin's pipes belong to the plugin and interopbench: the warden keeping a copy of
    // the plugin's stdout would hide the plugin's end from interopbench.
    const int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd <= 2; ++fd) ::dup2(null, fd);
    if (null > 2) ::close(null);
    int exec_errno = 0;
    ssize_t n;
    do n = ::read(exec_status[0], &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
    ::close(exec_status[0]);
    if (n == static_cast<ssize_t>(sizeof exec_errno)) {
        report("failed", exec_errno);
        end_plugin(pid, cgroup);
        return 1;
    }
    report("started", pid);

    bool told = false;
    while (!g_stop) {
        pollfd life{k_warden_lifeline_fd, POLLIN, 0};
        const int r = ::poll(&life, 1, 20);
        if (r > 0) break; // EOF or a byte: either way interopbench is done with this plugin
        if (r < 0 && errno != EINTR) break;
        // Orphans that ended come to the warden: reaped as they go, so that a process forking
        // anew does not fill the machine's process table with zombies (the plugin is kept).
        for (const long c : children_listed() ? children_of(::getpid()) : std::vector<long>{})
            if (c != pid) {
                int status = 0;
                (void)::waitpid(static_cast<pid_t>(c), &status, WNOHANG);
            }
        if (!told) {
            // WNOWAIT: the plugin stays a zombie, its group id reserved, until the end.
            siginfo_t info{};
            if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
                report(info.si_code == CLD_EXITED ? "exited" : "signal", info.si_status);
                told = true;
            }
        }
    }
    end_plugin(pid, cgroup);
    return 0;
}

} // namespace interopbench::plugin
