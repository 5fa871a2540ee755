#pragma once
/// One run of a plan, the same for the binary and the tests: the configurations measured in
/// order by the Runner (in RunSettings::rounds rounds: the first in this process, each later
/// one over the configurations that ended ok, in a new process where the caller can start
/// one, the rounds then pooled by merge_rounds), with signals (SIGINT, SIGTERM, SIGHUP stop after the current
/// sample), checkpoints of the report, the MPI gather and merge, the topology annotation,
/// the final write (with a fallback file when it fails) and the baseline gate.
///
/// The core knows no family and no hardware library: the caller hands in the registry's
/// configurations and the machine-specific steps (topology discovery, annotation, progress)
/// and the renderer of the report's page.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/compare.hpp"
#include "interopbench/report.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {

/// The stop signals (SIGINT, SIGTERM, SIGHUP) handled while an object of this class lives;
/// scopes nest, the outermost installs the handlers (unblocking the signals, and clearing
/// g_interrupted: a new run) and restores the ones before. The first stop signal sets
/// g_interrupted: the run stops after its current sample and writes what it has. A further one
/// kills the guarded process groups, removes every guarded file and folder (cleanup.hpp) and
/// ends the process by that signal.
class StopSignals {
public:
    StopSignals();
    ~StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;
    /// Handles them for the rest of the process, from now until after the static objects made
    /// later (the private folder, private_dir.hpp) are destroyed at exit. The commands that make
    /// files call it before they make any, so that a stop signal at any moment, also after the
    /// report was written, leaves none of them behind.
    static void for_process();
};

/// Machine-specific steps, each optional.
struct SessionHooks {
    /// Adds facts to finished results: path facts from the topology document (null when
    /// none was discovered), and whatever needs the whole run's results.
    std::function<void(const nlohmann::json& topology, std::vector<Result>& results)> annotate;
    /// Called before each configuration: the round (from 1) of how many, this round's
    /// configurations and the index (from 0) of the one that starts. run_round is expected
    /// to report its own progress the same way.
    std::function<void(int round, int rounds, std::size_t index, const std::vector<Config>& configs)> progress;
    /// Where the runner publishes what the configuration in progress is doing (its phase and
    /// samples), to be read from any thread while it runs; null: not published. run_round is
    /// expected to relay its process's the same way.
    LiveProgress* live = nullptr;
    /// Called before flagged results are measured again for the gate (--confirm).
    std::function<void(std::size_t flagged, int rounds)> confirming;
    /// Measures round `round` (from 2) of `configs` with `settings` in a fresh process and
    /// returns its results. Throws (any exception) when that process could not run; the
    /// session then warns and measures the round in this process. Without this hook, and
    /// under MPI, every round runs in this process, each with a fresh setup.
    std::function<std::vector<Result>(const std::vector<Config>& configs, const RunSettings& settings, int round)>
        run_round;
    /// The report's HTML page (SessionOptions::html) from the final report; without it no
    /// page is written.
    std::function<std::string(const Report& report)> page;
    /// The conditions now (topology/conditions_probe.hpp): called before the first configuration and
    /// after the last; the report's "conditions" block. Without it the report has none.
    std::function<ConditionsSnapshot()> conditions;
};

struct SessionOptions {
    std::string out;               ///< report path, or empty for none
    std::string html;              ///< path of the report's HTML page (written after it), or empty
    bool anonymize = false;        ///< applies to the checkpoints and the final report
    double checkpoint_interval_s = 10;
    bool handle_signals = true;    ///< handle SIGINT/SIGTERM/SIGHUP while it runs (StopSignals)
    /// The baseline report to gate on (none: no gate), as read and checked before the run.
    std::optional<Report> baseline;
    CompareOptions compare;        ///< thresholds and labels of the gate
    int confirm = 0;               ///< re-measurements of each flagged result
};

struct SessionResult {
    RunRecord record;              ///< with the (merged) results and the final status
    Report report;                 ///< the final report, as written (rank 0; empty elsewhere)
    bool root = true;              ///< this process writes and prints (rank 0)
    bool interrupted = false;
    std::string fatal;             ///< the fatal device error that stopped the run, or empty
    int ok = 0, skipped = 0, failed = 0;
    std::string written;           ///< where the final report went: `out`, a fallback, or empty
    std::string write_error;       ///< why `out` could not be written (the run's finding), or empty
    std::string html_written;      ///< `html` once written
    std::string html_error;        ///< why `html` could not be written, or empty
    std::vector<std::string> checkpoint_warnings; ///< checkpoint writes that failed
    std::optional<CompareOutcome> gate; ///< the comparison with the baseline, when one was given
};

/// Runs `configs` on `machine` and finishes the record `rec` (argv, plan, topology set by
/// the caller). Never throws for a configuration's failure; a final write that fails is
/// reported in SessionResult::write_error with the finished report saved to a fallback.
SessionResult run_session(const std::vector<Config>& configs, RunRecord rec, const Machine& machine,
                          const SessionOptions& options, const SessionHooks& hooks = {});

/// Where the report goes when `out` cannot be written: a new file in temp_folder() ($TMPDIR or
/// /tmp, refused when another user may change it) named "interopbench-unsaved-XXXXXX-" + the
/// name of `out`, its random part made with O_EXCL (never through a planted link). Writes
/// `content` there and returns the path; throws WriteError, or UsageError for such a TMPDIR.
std::string save_fallback_report(const std::string& out, const std::string& content);

} // namespace interopbench
