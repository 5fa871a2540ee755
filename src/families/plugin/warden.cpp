#include "families/plugin/warden.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
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

// Everything below the warden is killed until nothing is left; orphans of the killed come
// back to the warden (the subreaper) and are reaped here. Bounded: a process stuck in the
// kernel cannot keep the warden alive for long.
void end_everything() {
    const long me = ::getpid();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
        bool live = false;
        for (const auto& p : descendants_of(me))
            if (!p.ended()) {
                live = true;
                (void)::kill(static_cast<pid_t>(p.pid), SIGKILL);
            }
        reap_all();
        if (!live) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    reap_all();
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

int warden_main(int argc, char** argv) {
    if (argc < 3 || ::fcntl(k_warden_status_fd, F_GETFD) < 0 || ::fcntl(k_warden_lifeline_fd, F_GETFD) < 0) {
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
        if (from_fd) ::syscall(SYS_execveat, k_warden_program_fd, "", argv + 2, environ, AT_EMPTY_PATH);
        else ::execve(argv[2], argv + 2, environ);
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
        end_everything();
        return 1;
    }
    report("started", pid);

    bool told = false;
    while (!g_stop) {
        pollfd life{k_warden_lifeline_fd, POLLIN, 0};
        const int r = ::poll(&life, 1, 20);
        if (r > 0) break; // EOF or a byte: either way interopbench is done with this plugin
        if (r < 0 && errno != EINTR) break;
        if (!told) {
            // WNOWAIT: the plugin stays a zombie, its group id reserved, until the end.
            siginfo_t info{};
            if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
                report(info.si_code == CLD_EXITED ? "exited" : "signal", info.si_status);
                told = true;
            }
        }
    }
    end_everything();
    return 0;
}

} // namespace interopbench::plugin
