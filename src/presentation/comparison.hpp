#pragma once
/// Renderings of a comparison (compare.hpp decides; this says what it decided).
#include <string>

#include <nlohmann/json.hpp>

#include "interopbench/compare.hpp"

namespace interopbench {

struct Format;
struct ComparisonView;

/// The renderers of `compare`'s rows of the format table (the page is html.hpp's).
/// Table and markdown (`format.markdown`): machine differences first, then warnings, the
/// summary (counts per verdict, geomean per family) and the results, changed ones first
/// (markdown folds the unchanged ones into a <details> block).
std::string render_comparison(const Format& format, const ComparisonView& view);
/// comparison_json as text.
std::string render_comparison_json(const Format& format, const ComparisonView& view);
/// JUnit XML: one test case per result, regressions as failures, inconclusive and missing
/// results as skipped, machine differences and warnings as properties.
std::string render_junit(const Format& format, const ComparisonView& view);

/// Where a verdict is listed: what fails the gate first (regression, missing), then
/// inconclusive, improvement, new, and unchanged last.
int listing_rank(Verdict v);

/// The comparison's power in one line, at the threshold in use: "power: 45 of 57 results
/// measured in both reports can see a 10% change (twice the 5% threshold)".
std::string power_line(const CompareOutcome& outcome);

/// The comparison in one line, as it opens every rendering: "FAIL: 1 regression, 2
/// inconclusive, 54 unchanged of 57 results" (FAIL when a result regressed or went missing),
/// "PASS (weak: 27 of 50 inconclusive): ..." for a weak pass (weak_pass). With `color` (a
/// terminal) the verdict is painted: FAIL red, PASS green, a weak PASS yellow.
std::string verdict_line(const CompareOutcome& outcome, bool color = false);

/// The outcome as a JSON document (the `json` format).
nlohmann::json comparison_json(const CompareOutcome& outcome);

} // namespace interopbench
