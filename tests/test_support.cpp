// The waits the tests share: a child process, or a shell command, each with a deadline that
// fails the test by name instead of hanging it (a guard, never a timing check); and the test
// of that deadline. Also the check for a recorded fixture, whose absence fails the test in CI.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "test_support.hpp"

namespace interopbench::testing {

double time_factor() {
    static const double factor = [] {
        const char* v = std::getenv("INTEROPBENCH_TEST_TIME_FACTOR");
        if (v == nullptr || *v == '\0') return 1.0;
        char* end = nullptr;
        const double f = std::strtod(v, &end);
        if (end == v || *end != '\0' || !(f >= 1 && f <= 100)) {
            std::fprintf(stderr, "error: INTEROPBENCH_TEST_TIME_FACTOR=%s is not a number from 1 to 100; unset it or "
                                 "give e.g. 3 for a machine three times slower\n", v);
            std::exit(2);
        }
        return f;
    }();
    return factor;
}

int wait_child(pid_t pid, double limit_s, const std::string& what) {
    limit_s = deadline_s(limit_s);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    int status = 0;
    for (;;) {
        const pid_t got = ::waitpid(pid, &status, WNOHANG);
        if (got == pid) return status;
        if (got < 0 && errno != EINTR) {
            FAIL_CHECK(fmt::format("{}: waitpid failed: errno {}", what, errno));
            return status;
        }
        if (std::chrono::steady_clock::now() > until) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Past the deadline: the child and, where it leads one, its process group are killed.
    if (::getpgid(pid) == pid) ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    FAIL_CHECK(fmt::format("{} did not end within {:g} s (a guard against a hang, not a timing check): killed", what,
                           limit_s));
    return status;
}

int run_shell(const std::string& command, double limit_s) {
    const pid_t pid = ::fork();
    REQUIRE_MESSAGE(pid >= 0, "fork failed");
    if (pid == 0) {
        ::setpgid(0, 0); // its own group: a command past its deadline is killed with its children
        ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::setpgid(pid, pid); // also here, so that the group exists before any deadline
    return wait_child(pid, limit_s, fmt::format("the command `{}`", command));
}

CliRun run_cli(const std::string& args, const std::string& env, const CliStreams& streams) {
    const std::filesystem::path dir = scratch("cli");
    const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
    const std::string redirect = (streams.out.empty() ? ">'" + out + "'" : streams.out) + " " +
                                 (streams.err.empty() ? "2>'" + err + "'" : streams.err);
    const int status = run_shell((env.empty() ? "" : "env " + env + " ") + "'" + std::string(INTEROPBENCH_BINARY) + "' " + args +
                                 " " + redirect + " </dev/null");
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

bool have_fixture(const std::string& path) {
    if (std::filesystem::exists(path)) return true;
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL_CHECK("fixture missing in CI: " << path);
    return false;
}

bool need_fixture(const std::string& path) {
    if (have_fixture(path)) return true;
    skip(path + " absent");
    return false;
}

} // namespace interopbench::testing

// The one failure expected here is the deadline's own: any other failed check fails the case.
TEST_CASE("a command past its deadline is killed with its children, and the test fails saying so" *
          doctest::expected_failures(1)) {
    using namespace interopbench::testing;
    const std::filesystem::path dir = scratch("deadline");
    const std::string pidfile = (dir / "pid").string();
    const int status = run_shell("sleep 600 & echo $! > '" + pidfile + "'; wait", 0.5);
    CHECK(WIFSIGNALED(status));
    long pid = 0;
    std::ifstream(pidfile) >> pid;
    REQUIRE(pid > 0);
    // The background sleep was in the command's group: gone too (a zombie counts as gone).
    auto gone = [pid] {
        const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
        const auto close = stat.rfind(')');
        return stat.empty() || (close != std::string::npos && close + 2 < stat.size() &&
                                (stat[close + 2] == 'Z' || stat[close + 2] == 'X'));
    };
    for (int i = 0; i < deadline_s(500) && !gone(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(gone());
}
