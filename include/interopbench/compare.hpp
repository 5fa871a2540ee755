#pragma once
/// Comparing two reports: matching results, deciding regressions (presentation/comparison.hpp
/// renders the outcome).
///
/// Results are matched by key (scenario and canonical parameters, the device slot being
/// the `device` or `pair` value). For every metric both sides measured, the ratio of
/// medians new/base gets a confidence interval from a seeded bootstrap over the samples
/// kept in the reports, so the same pair of reports always gives the same verdicts. Where the
/// reports hold several rounds (each a fresh process), the interval also covers the spread
/// between rounds (Welch's t interval of the log round medians), and the minimum effect is
/// at least the range of the round medians: what moves between processes is never called a
/// change. A metric regresses only when its whole interval lies beyond the minimum effect in
/// the metric's bad direction; an interval that straddles the threshold is inconclusive. A
/// result's verdict comes from its gated metrics (the primary one unless told otherwise).
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/errors.hpp"
#include "interopbench/report.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench {

/// Outcome of one metric or one result. `added` is a result only the new report has.
enum class Verdict { regression, improvement, unchanged, inconclusive, missing, added };
inline constexpr std::size_t k_verdict_count = 6;
/// "regression", "improvement", "unchanged", "inconclusive", "missing", "new".
const char* to_string(Verdict v);

/// A minimum effect for the results of scenarios matching `scenario` (a glob), and for
/// one metric when `metric` is not empty; a rule naming a metric also makes that metric
/// decide the verdict (see MetricComparison::gated).
struct ThresholdRule {
    std::string scenario;
    std::string metric;
    double value = 0.05;
};

/// How two reports are compared.
struct CompareOptions {
    double threshold = 0.05;            ///< minimum relative effect for every metric
    std::vector<ThresholdRule> rules;   ///< per scenario or metric; see threshold_for
    /// Absolute tolerance per unit for results without rounds on either side (where the noise
    /// between processes is not measured): the effective threshold is then
    /// max(threshold, floor / base median). The default
    /// keeps sub-10 us times from being gated on fractions of a microsecond: host API
    /// costs under 1 us were seen to move by 0.4 us between two processes on one machine.
    std::map<std::string, double> floors{{"s", 500e-9}};
    std::size_t min_samples = 5;        ///< fewer samples on either side: inconclusive
    int resamples = 2000;               ///< bootstrap resamples
    std::uint64_t seed = 0x1b5eedULL;   ///< bootstrap seed; fixed so verdicts are repeatable
    double confidence = 0.95;           ///< confidence level of the ratio's interval
    /// The noise allowance: a result is gated only beyond this many times the range of its
    /// round medians (the noisier side, rescaled to three rounds: spread_as_three_rounds). Three rounds see less than two runs move: in
    /// recorded back-to-back pairs (tests/data/reports/rounds, an H200 and a loaded 2-core
    /// host) one change in ten between runs exceeded the range of its rounds, one in fifty
    /// twice it, and the comparison's own interval comes on top.
    double noise_factor = 2.0;
    bool cross_machine = false;         ///< allow different hardware; also compare efficiency
    std::string base_label = "base";    ///< names shown in outputs (file names)
    std::string new_label = "new";
};


/// Adds a `--threshold` value: "5%" sets the global threshold; "SCENARIO=3%" and
/// "SCENARIO.METRIC=3%" add a rule (SCENARIO may be a glob). Throws UsageError.
void add_threshold(CompareOptions& options, std::string_view spec);

/// Adds a `--floor` value "UNIT=VALUE": VALUE in the unit, and for unit "s" also with a
/// suffix ns, us, ms or s ("s=2us"). "UNIT=0" removes the floor. Throws UsageError.
void add_floor(CompareOptions& options, std::string_view spec);

/// The threshold for a metric: a rule naming scenario and metric wins over one naming only
/// the scenario, which wins over the global value; among rules of the same kind the last
/// given wins.
double threshold_for(const CompareOptions& options, const std::string& scenario,
                     const std::string& metric);

/// Ratio of medians new/base and its bootstrap percentile interval.
struct RatioEstimate {
    double ratio = 0;
    double lo = 0, hi = 0;
};

/// Resamples both sample sets with replacement `resamples` times (seeded, deterministic on
/// every platform) and takes percentiles of the ratio of medians. NaN samples are dropped.
/// Both sets must hold at least one sample and base's median must not be zero.
RatioEstimate bootstrap_median_ratio(std::vector<double> base, std::vector<double> fresh,
                                     int resamples, std::uint64_t seed, double confidence);

/// One fact that differs between the machines of two reports.
struct FingerprintDiff {
    std::string field;  ///< e.g. "GPU0 model", "driver", "GPU0>GPU1 path"
    std::string base, fresh;
    bool hardware = false; ///< hardware differs (refuse to gate); otherwise software or state
};

/// The machine facts of a report's header that make figures comparable, field -> (value,
/// hardware): GPU count and models, PCIe generation and width (maximum), NVLinks per GPU, path
/// class of each GPU pair (hardware); NVLinks up, driver, CUDA and NCCL versions (not
/// hardware: printed, never a reason to refuse). Facts a report lacks or leaves empty are left out.
std::map<std::string, std::pair<std::string, bool>> fingerprint(const ReportHeader& header);

/// The facts held by both reports that differ, hardware first (a fact only one report
/// holds, e.g. topology from a run without discovery, is not a difference).
std::vector<FingerprintDiff> compare_fingerprints(const ReportHeader& base, const ReportHeader& fresh);

/// One metric of one result, both sides measured (or why not).
struct MetricComparison {
    std::string name, unit;
    Better better = Better::higher;
    double base_median = 0, new_median = 0;
    std::size_t base_n = 0, new_n = 0;
    double ratio = 0, ci_lo = 0, ci_hi = 0; ///< new/base; 0 when not computed (see has_ratio)
    /// The ratio and its interval were computed: the base median is positive and the new one
    /// is not negative. A ratio of 0 is a drop to zero (a regression where higher is better).
    /// Ratios beyond a double's range are clamped to its largest value, with a note.
    bool has_ratio = false;
    double threshold = 0;                   ///< effective relative threshold
    /// Between rounds (see RunSettings::rounds, and several baseline reports): the relative
    /// range of the round medians, (max - min) / median, of the noisier side; 0 when neither
    /// side has two rounds.
    double noise = 0;
    /// The noise the threshold is set from: each side's range rescaled to three rounds
    /// (spread_as_three_rounds), the larger; more rounds narrow it instead of widening it.
    double noise_scaled = 0;
    std::size_t base_rounds = 0, new_rounds = 0; ///< round medians on each side (0: one round)
    bool noisy = false; ///< the noise allowance exceeds the configured threshold: gated beyond it
    /// The smallest relative change in the bad direction that this comparison would call a
    /// regression, from the threshold and the interval's width; 0 when no ratio.
    double detectable = 0;
    Verdict verdict = Verdict::inconclusive;
    std::string note; ///< why inconclusive, or where the figure comes from
    /// Decides the result's verdict: the primary metric (metrics[0], the one sampling
    /// converged on), metrics a threshold rule names, and efficiency across machines.
    /// Other metrics are compared and shown only.
    bool gated = false;
};

/// One result key: its verdict, why, and every metric compared.
struct ResultComparison {
    std::string key, scenario, family;
    Verdict verdict = Verdict::unchanged;
    std::string reason; ///< e.g. "bandwidth beyond ±5.0%", a noise note, a status, "only in base"
    std::vector<MetricComparison> metrics;
    /// The gated metric that decided the verdict (first of that verdict), or nullptr.
    const MetricComparison* deciding() const;
};

/// Geometric mean over a family of the primary metric's ratio, oriented so that above 1
/// means better (bandwidth up, time down).
struct FamilySummary {
    std::string family;
    std::size_t compared = 0;
    double geomean = 1;
    std::size_t results = 0;   ///< results of the family found in both reports
    std::size_t sensitive = 0; ///< of those, how many can see the power change (see CompareOutcome)
};

/// The change a comparison's power is stated against, from the threshold in use: twice it
/// (10% at the default 5%). A result "can see" it when its deciding (or first gated) metric
/// would call a change of this size in the bad direction a regression
/// (MetricComparison::detectable at most this): the threshold plus an uncertainty no wider
/// than the threshold itself. A change of the threshold's own size is seen by none, since the
/// whole interval must lie beyond the threshold.
double power_change(double threshold);


/// Everything a comparison found, ready to render.
struct CompareOutcome {
    std::string base_label, new_label;
    std::vector<FingerprintDiff> fingerprint;
    bool cross_machine = false;
    double threshold = 0.05;
    double power_change = 0.10; ///< power_change(threshold): the change the power is stated against
    std::vector<std::string> warnings;
    std::vector<ResultComparison> results; ///< base order, then results only in new
    std::array<std::size_t, k_verdict_count> counts{}; ///< indexed by Verdict
    std::vector<FamilySummary> families;   ///< in order of first appearance
    /// The comparison's power: of the results measured in both reports (ok on both sides), how many can see a
    /// change of `power_change` (a result of too few samples, or without a ratio, sees nothing).
    std::size_t in_both = 0, sensitive = 0;

    std::size_t count(Verdict v) const { return counts[static_cast<std::size_t>(v)]; }
};

/// Throws UsageError when two results of `report` share a key (naming `label`).
void check_unique_keys(const Report& report, const std::string& label);

/// Several reports of one build as one baseline: each result's samples are pooled over the
/// reports that measured it ok, and its round medians are every report's round medians (or
/// its median, for a report of one round), so the spread between the reports' processes is
/// what compare gates beyond. The first report gives everything else. Throws UsageError
/// when two of them come from different hardware or a report has duplicate keys.
Report pool_baselines(const std::vector<Report>& reports, const std::vector<std::string>& labels);

/// One result of each report compared (the same key): every metric measured on both sides,
/// the primary one and those a threshold rule names deciding the verdict. What compare_reports
/// does for each key the reports share, and the --confirm re-measurements for theirs.
ResultComparison compare_result(const Result& base, const Result& fresh, const CompareOptions& options);

/// Compares two reports (see read_report). Throws UsageError for duplicate keys,
/// and when the hardware differs and `options.cross_machine` is false (the hint names
/// --cross-machine). Never throws for differing results. Statuses: ok in base and failed
/// in new is a regression; skipped in both is unchanged; any other status that is not ok
/// on either side is inconclusive. Warns when the resolved profiles (name or hash) differ,
/// when the recorded environment (CUDA_*, NCCL_*) differs, when a run did not complete,
/// and when a threshold rule matches no result.
CompareOutcome compare_reports(const Report& base, const Report& fresh, const CompareOptions& options);

/// Keys worth measuring again before believing them: regressions (new failures included),
/// and results inconclusive because their interval straddles the threshold. In result order.
std::vector<std::string> flagged_keys(const CompareOutcome& outcome);

/// Re-decides flagged results after `reruns` (key -> re-measured results). A regression
/// stays one only when every re-run, compared with the base on its own, regresses too;
/// otherwise it becomes inconclusive.
/// A noisy inconclusive result takes the verdict the re-runs agree on, if they all agree.
/// Counts and family summaries are recomputed.
void apply_confirmations(CompareOutcome& outcome, const Report& base,
                         const std::map<std::string, std::vector<Result>>& reruns, const CompareOptions& options);

/// The metric a result is shown by: the deciding one, else (a verdict set by re-measurements)
/// the first gated one; nullptr without a ratio.
const MetricComparison* shown_metric(const ResultComparison& r);

/// A pass (no regression, nothing missing) is weak when at least a quarter of its results are
/// inconclusive: the gate saw too little to vouch for the new report. The exit code is the
/// same (compare_exit_code); the verdict says so.
bool weak_pass(const CompareOutcome& outcome);

/// failed (1) on any regression or any result of the base missing from the new report;
/// inconclusive (3) when `fail_on_inconclusive` and some result is inconclusive; ok otherwise.
ExitCode compare_exit_code(const CompareOutcome& outcome, bool fail_on_inconclusive);

} // namespace interopbench
