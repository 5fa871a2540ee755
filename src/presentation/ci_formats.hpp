#pragma once
/// Outputs that CI systems read natively: github-action-benchmark's custom JSON (one file per
/// direction), Bencher Metric Format JSON, and OpenMetrics text (GitLab's metrics reports).
///
/// Every format names a figure by its result key ("<scenario>/<canonical params>"), which is
/// the same in every run of the same plan, plus the metric where the format needs one name
/// per value. Only ok results go out, and of those only metrics with samples and a finite
/// median; the value is the median, the interval the 95% confidence interval of the median,
/// both in the report's SI unit (B/s, s, B, ratio, 1).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "interopbench/compare.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {

/// The CI system that reads a format: a field of the format table's rows
/// (presentation/formats.hpp), none for the formats that are not for CI.
enum class CiSystem {
    none,
    benchmark_action_bigger,  ///< github-action-benchmark, tool customBiggerIsBetter
    benchmark_action_smaller, ///< github-action-benchmark, tool customSmallerIsBetter
    bmf,                      ///< Bencher Metric Format, `bencher run --adapter json`
    openmetrics,              ///< OpenMetrics text, GitLab `artifacts:reports:metrics`
};

/// Which metrics of each result go out.
enum class CiMetrics {
    primary, ///< the primary metric (metrics[0]); for a comparison also every gated metric
    all,     ///< every metric
};

/// Parses a metric selection, the one set of words of every --metrics and --export-metrics:
/// "primary" (tables: the primary metric and the others that fit; CI formats: each result's
/// primary metric) or "all"; "compact", an earlier word for primary, is read as primary.
/// Throws UsageError otherwise (with the near word).
CiMetrics parse_ci_metrics(const std::string& text);

struct Format;
struct ReportView;
struct ComparisonView;

/// A `--export FORMAT=PATH` value: a row of the format table (presentation/formats.hpp) that
/// --export accepts, and the file.
struct CiExport {
    const Format* format = nullptr;
    std::string path;
};

/// Parses "FORMAT=PATH"; throws UsageError (naming the formats) for a missing '=', an empty
/// path or a format --export does not write.
CiExport parse_ci_export(std::string_view spec);

/// Checks exports before any work: every path writable (check_output_path), no two exports
/// to one file, and none on a file the command reads or writes otherwise (`taken`: what it
/// is, e.g. "the --out report", and its path; empty paths are ignored). Throws UsageError.
void check_ci_exports(const std::vector<CiExport>& exports,
                      const std::vector<std::pair<std::string, std::string>>& taken);

/// A report's results (`view.results`, `view.metrics`) in the CI format `format`
/// (`format.ci_system`):
/// - benchmark-action: a JSON array of {name, unit, value, range, extra}; name is
///   "<key> <metric>", value a number, range "± <half-width of the interval>", extra a
///   string of lines (samples, interval, stop reason). The bigger file holds only metrics
///   where higher is better, the smaller file only those where lower is better.
/// - bmf: {"<key>": {"<measure>": {value, lower_value, upper_value}}}; the measure is the
///   metric in kebab case with its unit ("bandwidth-bytes-per-second", "time-seconds"), so
///   no measure mixes units and none takes a Bencher built-in (latency in ns).
/// - openmetrics: one gauge family per metric and unit ("interopbench_time_seconds"), a
///   `key` label per sample, TYPE/UNIT/HELP before each family's samples, "# EOF" last.
std::string render_ci(const Format& format, const ReportView& view);

/// A comparison in the CI format `format`: the values of the new report's results
/// (`view.fresh`, as above), each annotated with what the comparison found for it:
/// benchmark-action puts the result's verdict and reason, the metric's ratio new/base with
/// its interval and the base median into `extra`; bmf carries the new values only;
/// openmetrics adds the family interopbench_compare_ratio (labels key, metric, estimate =
/// point|lower|upper) for every metric with a ratio, and interopbench_compare_results (label
/// verdict) counting results per verdict.
std::string render_ci(const Format& format, const ComparisonView& view);

/// An OpenMetrics metric or label name from any text: characters outside
/// [a-zA-Z0-9_] become '_', and a leading digit gets a '_' before it.
std::string openmetrics_name(std::string_view text);

/// An OpenMetrics label value or HELP text: '\', '"' and newline escaped as \\, \" and \n.
std::string openmetrics_escape(std::string_view text);

} // namespace interopbench
