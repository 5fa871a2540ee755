#include "families/plugin/plugin_process.hpp"
#include "interopbench/file_io.hpp"
#include "families/plugin/warden.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "interopbench/cleanup.hpp"
#include "interopbench/text.hpp"
#include "interopbench/runner.hpp"

extern char** environ;

namespace interopbench::plugin {
namespace {

using clock = std::chrono::steady_clock;

// A reply longer than this is garbage, not a reply (a details matrix is a few hundred KiB).
constexpr std::size_t k_max_line = 64u << 20;

void set_nonblocking(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void close_fd(int& fd) noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

// Writes to a pipe whose reader may be gone: SIGPIPE is blocked for the write and a pending
// one taken back, so a dead plugin is an EPIPE error here and never ends interopbench.
ssize_t write_no_sigpipe(int fd, const char* data, std::size_t size) {
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    const ssize_t n = ::write(fd, data, size);
    const int err = errno;
    if (n < 0 && err == EPIPE) {
        const timespec zero{0, 0};
        while (sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    errno = err;
    return n;
}

// Waits are cut in slices so that a stop signal delivered to another thread (whose poll
// would not see EINTR) is still noticed within one slice.
constexpr int k_slice_ms = 100;

int remaining_ms(clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    return left <= 0 ? 0 : left >= k_slice_ms ? k_slice_ms : static_cast<int>(left) + 1;
}

std::string shorten(std::string s) {
    if (s.size() > 80) { // in place: GCC 12 warns falsely (-Warray-bounds) on substr + "..." here
        s.resize(77);
        s += "...";
    }
    return display_text(s);
}

} // namespace

void Process::start(const std::vector<std::string>& argv, int cwd_fd, int program_fd) {
    kill();
    if (argv.empty()) throw ProtocolError(fmt::format("plugin '{}' has no command", m_label));
    // Everything the child needs is made before fork: after it, only async-signal-safe calls.
    // The child becomes the warden (this binary again, warden.hpp), which starts the plugin.
    // A cgroup of its own where one may be made (warden.hpp): killed whole, however it forks.
    m_cgroup = make_plugin_cgroup();
    std::vector<std::string> warden_argv{"interopbench-plugin-warden", std::string(k_warden_command),
                                         m_cgroup.empty() ? std::string("-") : m_cgroup};
    warden_argv.insert(warden_argv.end(), argv.begin(), argv.end());
    std::vector<char*> args;
    for (auto& a : warden_argv) args.push_back(a.data());
    args.push_back(nullptr);
    std::vector<std::string> env_text{"INTEROPBENCH_PLUGIN_PROTOCOL=1"};
    if (!std::getenv("PYTHONUNBUFFERED")) env_text.emplace_back("PYTHONUNBUFFERED=1");
    std::vector<char*> env;
    for (char** e = environ; e && *e; ++e)
        if (std::strncmp(*e, "INTEROPBENCH_PLUGIN_PROTOCOL=", 29) != 0) env.push_back(*e);
    for (auto& e : env_text) env.push_back(e.data());
    env.push_back(nullptr);

    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1}, life[2] = {-1, -1};
    auto close_all = [&] {
        for (int* p : {in, out, err, status, life})
            for (int i = 0; i < 2; ++i) close_fd(p[i]);
    };
    if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC) || ::pipe2(status, O_CLOEXEC) ||
        ::pipe2(life, O_CLOEXEC)) {
        const int e = errno;
        close_all();
        throw ProtocolError(fmt::format("plugin '{}' could not be started: pipe: {}", m_label, std::strerror(e)));
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int e = errno;
        close_all();
        throw ProtocolError(fmt::format("plugin '{}' could not be started: fork: {}", m_label, std::strerror(e)));
    }
    if (pid == 0) {
        // The warden: a process group of its own, so that a Ctrl-C at the terminal reaches
        // interopbench only. It outlives a killed interopbench on purpose: to end the plugin.
        ::setpgid(0, 0);
        // The plugin's folder, held since it was checked, is the warden's and the plugin's.
        const int cd = ::fchdir(cwd_fd) == 0 ? 0 : errno;
        // Each descriptor to its place: first all above the targets, then down (a source may
        // sit on a target's number).
        const int from[k_warden_fds] = {in[0], out[1], err[1], status[1], life[0], program_fd};
        const int count = program_fd >= 0 ? k_warden_fds : k_warden_program_fd;
        int high[k_warden_fds];
        for (int i = 0; i < count; ++i)
            if ((high[i] = ::fcntl(from[i], F_DUPFD, 16)) < 0) ::_exit(127);
        for (int i = 0; i < count; ++i)
            if (::dup2(high[i], i) < 0) ::_exit(127);
        // Descriptors interopbench holds (report temporaries, storage files) stay with it.
#ifdef SYS_close_range
        if (::syscall(SYS_close_range, static_cast<unsigned>(count), ~0u, 0u) != 0)
#endif
            for (int fd = count; fd < 4096; ++fd) ::close(fd);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
        int e = cd;
        if (e == 0) {
            ::execve("/proc/self/exe", args.data(), env.data());
            e = errno;
        }
        char line[32];
        const int n = std::snprintf(line, sizeof line, "failed %d\n", e);
        (void)!::write(k_warden_status_fd, line, static_cast<std::size_t>(n));
        ::_exit(127);
    }
    ::setpgid(pid, pid); // also here: no race with the child's own call
    close_fd(in[0]);
    close_fd(out[1]);
    close_fd(err[1]);
    close_fd(status[1]);
    close_fd(life[0]);
    m_warden = pid;
    m_in = in[1];
    m_out = out[0];
    m_err = err[0];
    m_status = status[0];
    m_lifeline = life[1];
    m_outbuf.clear();
    m_errbuf.clear();
    m_statusbuf.clear();
    m_end.clear();
    // The warden's first line: the plugin started, or why not.
    std::string first;
    while (true) {
        char c;
        const ssize_t n = ::read(m_status, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || c == '\n' || first.size() > 64) break;
        first += c;
    }
    long value = 0;
    if (std::sscanf(first.c_str(), "started %ld", &value) == 1 && value > 0) {
        m_pid = static_cast<int>(value);
        m_guard = cleanup::guard_process_group(m_pid);
    } else {
        const bool failed = std::sscanf(first.c_str(), "failed %ld", &value) == 1;
        kill();
        throw ProtocolError(fmt::format("plugin '{}' could not be started: {}: {}", m_label, argv[0],
                                        failed ? std::strerror(static_cast<int>(value)) : "its warden ended"));
    }
    set_nonblocking(m_in);
    set_nonblocking(m_out);
    set_nonblocking(m_err);
    set_nonblocking(m_status);
}

bool Process::ended(int wait_ms) noexcept {
    if (!m_end.empty()) return true;
    if (m_status < 0) return false;
    const auto until = clock::now() + std::chrono::milliseconds(wait_ms);
    while (true) {
        char buf[256];
        const ssize_t n = ::read(m_status, buf, sizeof buf);
        if (n > 0) m_statusbuf.append(buf, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = m_statusbuf.find('\n')) != std::string::npos) {
            const std::string line = m_statusbuf.substr(0, nl);
            m_statusbuf.erase(0, nl + 1);
            int v = 0;
            if (std::sscanf(line.c_str(), "exited %d", &v) == 1) m_end = fmt::format("exited with code {}", v);
            else if (std::sscanf(line.c_str(), "signal %d", &v) == 1)
                m_end = fmt::format("was killed by signal {} ({})", v, strsignal(v));
        }
        if (!m_end.empty()) return true;
        if (n == 0) { // the warden is gone, killed (it ends only when told): so is the plugin
            m_end = "lost its warden";
            return true;
        }
        const int left = remaining_ms(until);
        if (left <= 0) return false;
        pollfd p{m_status, POLLIN, 0};
        (void)::poll(&p, 1, std::min(left, 10));
    }
}

void Process::fail(const std::string& what) {
    kill();
    throw ProtocolError(what);
}

bool Process::read_stderr() noexcept {
    if (m_err < 0) return false;
    char buf[4096];
    const ssize_t n = ::read(m_err, buf, sizeof buf);
    if (n > 0) {
        m_errbuf.append(buf, static_cast<std::size_t>(n));
        forward_stderr(false);
        return true;
    }
    if (n == 0) close_fd(m_err);
    return false;
}

void Process::forward_stderr(bool everything) noexcept {
    try {
        std::size_t start = 0, nl;
        while ((nl = m_errbuf.find('\n', start)) != std::string::npos) {
            std::fprintf(stderr, "[plugin %s] %s\n", m_label.c_str(), display_text(m_errbuf.substr(start, nl - start)).c_str());
            start = nl + 1;
        }
        m_errbuf.erase(0, start);
        if ((everything && !m_errbuf.empty()) || m_errbuf.size() > 65536) {
            std::fprintf(stderr, "[plugin %s] %s\n", m_label.c_str(), display_text(m_errbuf).c_str());
            m_errbuf.clear();
        }
    } catch (...) {
        m_errbuf.clear();
    }
}

std::string Process::exit_text() {
    // The pipe closed: the process is ending; give it a moment to end with its status.
    const std::string text = ended(2000) ? m_end : "closed its output";
    kill();
    return text;
}

nlohmann::json Process::request(const nlohmann::json& message, double timeout_s) {
    const std::string op = message.value("op", std::string{"?"});
    if (m_pid <= 0) throw ProtocolError(fmt::format("plugin '{}' is not running", m_label));
    const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
    const auto late = [&] {
        return fmt::format("plugin '{}' did not answer '{}' within {:g} s (set the manifest's timeout_s or --plugin-timeout)",
                           m_label, op, timeout_s);
    };
    const std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::size_t sent = 0;
    while (sent < line.size()) {
        const ssize_t n = write_no_sigpipe(m_in, line.data() + sent, line.size() - sent);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR && !g_interrupted) continue;
        if (n < 0 && errno == EINTR) {
            kill();
            throw Interrupted("interrupted while talking to the plugin");
        }
        if (n < 0 && errno == EAGAIN) {
            pollfd p[3] = {{m_in, POLLOUT, 0}, {m_err, POLLIN, 0}, {m_status, POLLIN, 0}};
            const int r = ::poll(p, 3, remaining_ms(deadline));
            if (r == 0 && clock::now() >= deadline) fail(late());
            if (p[1].revents) read_stderr();
            if (p[2].revents && ended(0)) fail(fmt::format("plugin '{}' could not be sent '{}': it {}", m_label, op, m_end));
            if ((r < 0 && errno == EINTR && g_interrupted) || (r == 0 && g_interrupted)) {
                kill();
                throw Interrupted("interrupted while talking to the plugin");
            }
            continue;
        }
        const std::string how = errno == EPIPE ? exit_text() : std::string(std::strerror(errno));
        fail(fmt::format("plugin '{}' could not be sent '{}': it {}", m_label, op, how));
    }
    while (true) {
        std::size_t nl;
        while ((nl = m_outbuf.find('\n')) != std::string::npos) {
            std::string reply = m_outbuf.substr(0, nl);
            m_outbuf.erase(0, nl + 1);
            if (!reply.empty() && reply.back() == '\r') reply.pop_back();
            if (reply.find_first_not_of(" \t") == std::string::npos) continue; // blank lines are allowed
            nlohmann::json j = parse_json(reply, false);
            // NaN and Infinity are what a JSON writer that allows them (Python's json.dumps) puts
            // for a value it lacks: no JSON reader takes them.
            const bool nan = j.is_discarded() && (reply.find("NaN") != std::string::npos || reply.find("Infinity") != std::string::npos);
            if (j.is_discarded() || !j.is_object())
                fail(fmt::format("plugin '{}' answered '{}' with a line that is not a JSON object: '{}' ({})", m_label, op,
                                 shorten(reply),
                                 nan ? "NaN and Infinity are not JSON: answer null for a value the plugin lacks "
                                       "(in Python, json.dumps(..., allow_nan=False) finds them)"
                                     : "the protocol owns stdout: print logs to stderr"));
            return j;
        }
        if (m_outbuf.size() > k_max_line)
            fail(fmt::format("plugin '{}' answered '{}' with a line longer than {} MiB", m_label, op, k_max_line >> 20));
        // Checked on every pass, not only when the plugin is silent: a plugin that prints
        // blank lines (or stderr) forever must still meet its deadline and the stop signal.
        if (g_interrupted) {
            kill();
            throw Interrupted("interrupted while waiting for the plugin");
        }
        if (clock::now() >= deadline) fail(late());
        // The status pipe too: a plugin (or its warden) that ended fails the request at once,
        // also when a process it started keeps its stdout open.
        pollfd p[3] = {{m_out, POLLIN, 0}, {m_err, POLLIN, 0}, {m_status, POLLIN, 0}};
        const int r = ::poll(p, 3, remaining_ms(deadline));
        if (r < 0) {
            if (errno == EINTR && g_interrupted) {
                kill();
                throw Interrupted("interrupted while waiting for the plugin");
            }
            if (errno == EINTR) continue;
            fail(fmt::format("plugin '{}': poll: {}", m_label, std::strerror(errno)));
        }
        if (r == 0 && g_interrupted) {
            kill();
            throw Interrupted("interrupted while waiting for the plugin");
        }
        if (r == 0) {
            if (clock::now() >= deadline) fail(late());
            continue;
        }
        if (m_err >= 0 && p[1].revents) read_stderr();
        if (p[2].revents && ended(0)) {
            // A reply written before the end is still taken.
            if (read_stdout() && m_outbuf.find('\n') != std::string::npos) continue;
            fail(fmt::format("plugin '{}' {} before answering '{}'", m_label, m_end, op));
        }
        if (p[0].revents) {
            char buf[65536];
            const ssize_t n = ::read(m_out, buf, sizeof buf);
            if (n > 0) m_outbuf.append(buf, static_cast<std::size_t>(n));
            else if (n == 0) {
                const std::string how = exit_text();
                fail(fmt::format("plugin '{}' {} before answering '{}'", m_label, how, op));
            } else if (errno != EAGAIN && errno != EINTR) {
                fail(fmt::format("plugin '{}': read: {}", m_label, std::strerror(errno)));
            }
        }
    }
}

std::vector<ProcEntry> Process::live_descendants() const {
    // Everything the plugin started is below its warden (orphans come back to the warden, a
    // subreaper), whatever session or group it moved to.
    if (m_warden <= 0) return {};
    return live_below(m_warden, m_pid);
}

std::vector<std::string> Process::strays() const {
    std::vector<std::string> found;
    for (const auto& p : live_descendants()) found.push_back(fmt::format("{} ({})", p.pid, p.name));
    return found;
}

std::string Process::stop(double grace_s) noexcept {
    if (m_pid <= 0) return {};
    std::string note;
    try {
        close_fd(m_in); // EOF: the plugin's cue to exit
        const auto until = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(grace_s));
        bool exited = false;
        while (true) {
            if (ended(0)) {
                exited = true;
                break;
            }
            if (clock::now() >= until) break;
            pollfd p[2] = {{m_err, POLLIN, 0}, {m_out, POLLIN, 0}};
            if (::poll(p, 2, 10) > 0) {
                if (p[0].revents) read_stderr();
                if (p[1].revents) {
                    char buf[4096];
                    if (::read(m_out, buf, sizeof buf) == 0) close_fd(m_out);
                }
            }
        }
        const auto left = strays();
        if (!exited) note = fmt::format("did not exit within {:g} s of the end of its input", grace_s);
        if (!left.empty())
            note += fmt::format("{}left {} process(es) behind: {}", note.empty() ? "" : "; ", left.size(),
                                fmt::join(left, ", "));
    } catch (...) {
    }
    kill();
    return note;
}

bool Process::read_stdout() noexcept {
    bool got = false;
    char buf[65536];
    ssize_t n;
    while (m_out >= 0 && (n = ::read(m_out, buf, sizeof buf)) > 0) {
        m_outbuf.append(buf, static_cast<std::size_t>(n));
        got = true;
    }
    return got;
}

void Process::kill() noexcept {
    if (m_warden <= 0) {
        close_fds();
        if (!m_cgroup.empty()) remove_cgroup(std::exchange(m_cgroup, {}));
        return;
    }
    // The plugin's cgroup and its group at once (its warden keeps the leader a zombie, so the
    // id is still this group's), then the lifeline closes: the warden kills whatever is left
    // below it, reaps it and exits. A killed warden leaves this to here.
    if (!m_cgroup.empty()) kill_cgroup(m_cgroup);
    if (m_pid > 0) (void)::kill(-m_pid, SIGKILL);
    close_fd(m_lifeline);
    int status = 0;
    // The warden's passes end 5 s after the last process they found new, at most 60 s after
    // they began (warden.cpp): it is killed only past that.
    const auto until = clock::now() + std::chrono::seconds(70);
    while (true) {
        const pid_t r = ::waitpid(m_warden, &status, WNOHANG);
        if (r == m_warden || (r < 0 && errno != EINTR)) break;
        if (clock::now() >= until) { // a warden that cannot end: what is below it is orphaned
            (void)::kill(m_warden, SIGKILL);
            while (::waitpid(m_warden, &status, 0) < 0 && errno == EINTR) {
            }
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    while (read_stderr()) {
    }
    forward_stderr(true);
    close_fds();
    if (!m_cgroup.empty()) remove_cgroup(std::exchange(m_cgroup, {}));
    cleanup::release_process_group(m_guard);
    m_guard = -1;
    m_pid = -1;
    m_warden = -1;
}

void Process::close_fds() noexcept {
    close_fd(m_lifeline);
    close_fd(m_status);
    close_fd(m_in);
    close_fd(m_out);
    close_fd(m_err);
}

} // namespace interopbench::plugin
