#pragma once
/// `interopbench fleet`: the reports of many machines (or one multi-node report), one verdict.
///
/// Machines are grouped by hardware class (GPU models and count, the GPUs' maximum link, the
/// CPU model); classes are judged apart, never mixed. Within a class, every result key (the
/// configuration without its `device` axis, so the GPUs of one machine are compared too)
/// gets the fleet's median and robust spread of its primary metric, and every (machine, GPU)
/// figure its ratio to that median, oriented so that below 1 is worse. A figure is an
/// outlier when its shortfall (1 - ratio) exceeds all three of: the threshold (default 10%),
/// the fleet's spread (three robust standard deviations of the log ratios: 1.4826 x their
/// median deviation over the faster half, which slow outliers cannot widen; as a shortfall,
/// 1 - exp(-3 sigma)) and its own spread between rounds (the range of its round
/// medians over their median). A configuration that failed on a machine where others of its
/// class measured it is an outlier too. Each outlier gets the probable causes the facts in
/// its report support (link below its maximum, NVLinks down, clocks held back, other
/// processes on the GPU, ECC errors, CPUs far from the GPU, a cgroup I/O or CPU limit, a
/// loaded host, software that differs from the rest of the fleet, the run's warnings).
///
/// Reports are read one at a time and only a compact summary of each is kept, so memory
/// grows with machines x results, not with the reports' samples.
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/conditions.hpp"
#include "interopbench/limits.hpp"
#include "interopbench/report.hpp"

namespace interopbench::fleet {

/// Tuning of the verdict.
struct Options {
    double threshold = 0.10;   ///< smallest shortfall that can make an outlier
    double spread_factor = 3;  ///< robust standard deviations of the fleet a figure must lie beyond
    bool skip_unreadable = false; ///< a file that is no report is excluded (said) instead of an error
    /// Applied to each report as it is read (the command line sets its results against today's
    /// limits); nothing when empty.
    std::function<void(Report& report)> prepare;
};

/// A GPU of a machine, as its report describes it.
struct Gpu {
    std::string label; ///< PCI bus id, else "GPU<ordinal>"
    int ordinal = -1;
    std::string name, uuid;
    int pcie_gen_current = 0, pcie_width_current = 0, pcie_gen_max = 0, pcie_width_max = 0; ///< 0: unknown
    int nvlinks = -1, nvlinks_active = -1; ///< -1: unknown
};

/// One machine: a single-host report, or one host of a multi-node report.
struct Member {
    std::string label;    ///< unique in the fleet: the host name, or the report's file name when hosts share a name or have none
    std::string file;     ///< the report it came from
    std::string hostname; ///< empty in anonymized reports
    std::string hardware_class;
    std::string finished; ///< when its run ended (ISO-8601), to keep the newest of duplicates
    std::string identity; ///< host name and GPU UUIDs; empty when the report cannot tell (anonymized)
    // facts the causes are drawn from
    std::string cpu, kernel, driver, cuda_runtime, nccl, tool_revision;
    int logical_cpus = 0;
    std::uint64_t memory_bytes = 0;
    std::vector<Gpu> gpus;
    std::optional<ReportConditions> conditions; ///< the report's "conditions" block, when it has one
    std::vector<std::string> warnings;
};

/// One (machine, GPU) figure of a result key.
struct Figure {
    std::size_t member = 0;
    std::string gpu;     ///< Gpu::label of the GPU the configuration used; empty for host-only results
    bool failed = false; ///< the configuration failed there (value meaningless)
    std::string reason;  ///< why it failed
    double value = 0;    ///< the primary metric's median
    double own_spread = 0; ///< range of its round medians over their median (0 with one round)
    std::optional<double> efficiency; ///< share of its path's limit, where the result knows it
    std::string path;          ///< details.path: the narrowest declared path's label
    std::vector<PathKind> crosses; ///< the kinds of the paths the result declares (declared_paths)
    std::string device_number; ///< storage results: the file's block device "MAJ:MIN"
    std::string key;           ///< the full result key (with the device axis)
    nlohmann::json axes;       ///< axis name -> canonical text, for re-measuring
    // judged
    double ratio = 1;     ///< to the reference median, oriented: below 1 is worse
    double bar = 0;       ///< the shortfall it had to exceed
    bool outlier = false;
};

/// One result key within one hardware class.
struct Row {
    std::string hardware_class, key, scenario, family, metric, unit;
    bool higher_is_better = true;
    std::vector<Figure> figures;
    bool judged = false;
    std::string not_judged; ///< why not: "measured on 2 machines; 3 needed"
    double median = 0;      ///< the reference: the fleet's median, or the expected value
    double spread = 0;      ///< robust standard deviation of the log ratios (about the relative one when small)
    std::string reference = "fleet"; ///< "fleet" or "expected"
};

/// An outlier: row and figure indices, and why.
struct Outlier {
    std::size_t row = 0, figure = 0;
    std::vector<std::string> causes;
    /// --confirmed-by: "repeated" (kept), "not repeated" (dropped), "not re-measured"; empty
    /// when no confirmation was given.
    std::string confirmation;
    double confirm_ratio = 0;
};

/// Expected values per hardware class and result key, written from a healthy fleet.
struct Expectation {
    double median = 0, spread = 0;
    std::size_t n = 0;
    std::string unit;
    bool higher_is_better = true;
};
using Expectations = std::map<std::string, Expectation>; ///< "class\x1fkey\x1fmetric" -> expectation

struct Outcome {
    std::vector<Member> members;
    std::vector<std::string> classes;
    std::vector<Row> rows;
    std::vector<Outlier> outliers;     ///< kept ones (confirmed or unconfirmed)
    std::vector<Outlier> dropped;      ///< flagged, then not repeated when re-measured
    std::vector<std::string> excluded; ///< "FILE: why", reports left out
    std::vector<std::string> notes;    ///< remarks on the fleet as a whole
    std::size_t reports = 0;
    Options options;
};

/// Reads every report (single-host or multi-node) and judges the fleet. `expect` (optional)
/// replaces the fleet's median and spread where it has the class and key. Throws UsageError
/// for a file that is no report (unless skip_unreadable), for an empty list, and when no
/// result could be judged (no key measured on three machines of one class and none expected).
Outcome analyse(const std::vector<std::string>& files, const Options& options, const Expectations* expect = nullptr);

/// Re-measurements of flagged results (`run` reports of the flagged machines): an outlier
/// is kept only when its re-measured value also falls short by more than its bar; the others
/// move to `dropped`. Reports are matched to machines by host name and GPU UUIDs (anonymized
/// reports cannot be matched: UsageError).
void apply_confirmations(Outcome& outcome, const std::vector<std::string>& files);

/// The process exit code: 1 with an outlier, else 0.
int exit_code(const Outcome& outcome);

/// Expected values from a judged fleet (rows with at least three figures), as the JSON file
/// --expect reads.
nlohmann::json expectations_json(const Outcome& outcome);
/// Parses that file's document; throws UsageError naming `origin` and the problem.
Expectations parse_expectations(const nlohmann::json& doc, const std::string& origin);

/// The re-measurement of the flagged results: per flagged machine, the `run` arguments
/// (after the program name) measuring exactly its flagged configurations in `rounds`
/// rounds, writing `<dir>/<label>-confirm.json`.
struct ConfirmStep {
    std::size_t member = 0;
    std::vector<std::string> args;
    std::string out;
};
std::vector<ConfirmStep> confirm_plan(const Outcome& outcome, int rounds, const std::string& dir);

/// The one line that opens every rendering: "FAIL: 2 outliers on 2 of 5 machines (a, b)".
std::string verdict_line(const Outcome& outcome);

} // namespace interopbench::fleet
