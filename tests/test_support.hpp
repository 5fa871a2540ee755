#pragma once
// Small helpers the test files share, one copy of each. test_main points TMPDIR at one
// directory per test process and removes it at exit, so scratch() directories need no
// cleanup of their own.
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "interopbench/runner.hpp"

namespace interopbench::testing {

/// An empty directory `name` under this test process's temporary directory.
inline std::filesystem::path scratch(const std::string& name) {
    const std::filesystem::path d = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
}

/// A fresh directory of its own under this process's temporary directory, removed with its
/// contents when the object goes: for a case that needs several at once, or leaves files
/// (a storage directory) that must not reach the next case. `dir` names it; `tag` goes into
/// the name, to tell the family's directories apart in a listing.
class ScratchDir {
public:
    explicit ScratchDir(const std::string& tag = "test") {
        static std::atomic<unsigned> made{0};
        dir = std::filesystem::temp_directory_path() /
              ("ib-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(++made));
        std::filesystem::create_directories(dir);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    std::filesystem::path dir;
};

/// The configurations of a plan with the one entry `pattern` and `axes`, as expand_plan
/// makes them for `machine`; a plan's errors (UsageError) come through.
inline std::vector<Config> expand(const Registry& registry, const std::string& pattern,
                                  std::map<std::string, std::vector<std::string>> axes, const Machine& machine) {
    RunPlan plan;
    plan.entries.push_back({pattern, std::move(axes)});
    return expand_plan(registry, plan, machine);
}

/// A machine that claims `gpus` GPUs without asking CUDA, for the decisions made before any
/// GPU work (plan expansion, skip reasons): ordinals 0 to gpus-1, each named "fake" with
/// `memory` bytes, all of them free; `selected` as --devices chose (every GPU when empty).
/// Anything else a case needs (a library loaded, host cores) it sets on the result.
inline Machine fake_machine(int gpus, std::uint64_t memory, std::vector<int> selected = {}) {
    Machine m;
    m.cuda_available = true;
    for (int i = 0; i < gpus; ++i) {
        DeviceInfo d;
        d.ordinal = i;
        d.name = "fake";
        d.total_memory = d.free_memory = memory;
        m.devices.push_back(d);
        if (selected.empty()) m.selected.push_back(i);
    }
    if (!selected.empty()) m.selected = std::move(selected);
    return m;
}

/// Whether the recorded fixture at `path` exists. The shared fixtures beside the checkout
/// (../shared/fixtures/) are part of CI's machine: there (CI=true) a missing one fails the
/// test case; elsewhere it is only absent. Defined in test_support.cpp.
bool have_fixture(const std::string& path);

/// have_fixture for a case that cannot run without the fixture: where it is absent the case
/// is marked skipped, naming the file (skip), and the caller returns at once.
bool need_fixture(const std::string& path);

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
