#pragma once
// Small helpers the test files share. test_main points TMPDIR at one directory per test
// process and removes it at exit, so scratch directories need no cleanup of their own.
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "interopbench/runner.hpp"

namespace interopbench::testing {

/// An empty directory `name` under this test process's temporary directory.
inline std::filesystem::path scratch(const std::string& name) {
    const std::filesystem::path d = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
}

/// Says that the running test case cannot run here (no GPU, a recorded fixture absent) and
/// why; the caller returns at once. A test process whose every case skipped itself exits 77,
/// which CTest reports as skipped (SKIP_RETURN_CODE), never as passed; a run of many cases
/// lists the skipped ones at the end. Defined in test_main.cpp.
void skip(const std::string& reason);

/// Settings for a test that measures: `warmup` untimed samples, then `min` to `max` samples of
/// about `sample_time_s` each within `max_time_s` per configuration; the rest as RunSettings has it.
inline RunSettings sampling(int warmup, int min, int max, double max_time_s, double sample_time_s) {
    RunSettings s;
    s.warmup = warmup;
    s.min_samples = min;
    s.max_samples = max;
    s.max_time_s = max_time_s;
    s.sample_time_s = sample_time_s;
    return s;
}

/// The deadline of one run of the tool's binary from a test: long enough for a loaded machine
/// or a sanitizer build, short of CTest's own timeout. A guard against a hang, not a timing check.
inline constexpr double k_command_limit_s = 300;

/// How much slower than a quiet machine this one may be: INTEROPBENCH_TEST_TIME_FACTOR (a
/// number from 1 to 100; 1 when unset), which CI sets for the sanitizer build and loaded
/// runners. Every deadline a test waits on goes through deadline_s; the shell tests
/// (tests/fleet, tests/browser) read the same variable. A bad value ends the test process
/// with one line saying so. Defined in test_support.cpp.
double time_factor();
inline double deadline_s(double base_s) { return base_s * time_factor(); }

/// Waits for the child `pid` to end, at most deadline_s(`limit_s`), and returns its wait status.
/// Past the deadline it is killed (with its process group when it leads one) and the test
/// fails, naming `what`. Defined in test_support.cpp.
int wait_child(pid_t pid, double limit_s, const std::string& what);

/// std::system with a deadline: `command` runs under /bin/sh -c in a process group of its own
/// and its wait status is returned; past `limit_s` the group is killed and the test fails,
/// naming the command. Defined in test_support.cpp.
int run_shell(const std::string& command, double limit_s = k_command_limit_s);

/// What one run of the tool's binary returned and printed.
struct CliRun {
    int code; ///< the exit status, -1 when a signal ended it
    std::string out, err;
};

/// Where a run's standard output and error go instead of the files run_cli reads back: shell
/// redirections (">/dev/full", "2>&-"); empty: captured.
struct CliStreams {
    std::string out, err;
};

/// Runs the tool's binary with `args` (words for /bin/sh), stdin from /dev/null, through
/// run_shell; the environment (COLUMNS, LANG) is this process's, with `env` (VAR=value ...)
/// added; stdout and stderr captured unless `streams` sends them elsewhere. Defined in
/// test_support.cpp.
CliRun run_cli(const std::string& args, const std::string& env = "", const CliStreams& streams = {});

/// The name of the running test case. Defined in test_main.cpp.
const std::string& current_test_case();

/// Adds the `gpu scenario: FAMILY` cases (test_gpu_scenarios.cpp), one per family with a
/// scenario that needs a GPU, read from the registry; test_main calls it before the run.
void register_gpu_scenario_cases();

/// The whole file at `p` (empty when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

} // namespace interopbench::testing
