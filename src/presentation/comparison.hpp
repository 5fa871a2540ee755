#pragma once
/// Renderings of a comparison (compare.hpp decides; this says what it decided).
#include <string>

#include <nlohmann/json.hpp>

#include "interopbench/compare.hpp"

namespace interopbench {

/// Output of `compare`: aligned text, GitHub markdown, JSON, JUnit XML, an HTML page (see
/// html::render_comparison_page).
enum class CompareFormat { table, markdown, json, junit, html };

/// Renders the outcome. Table and markdown: machine differences first, then warnings, the
/// summary (counts per verdict, geomean per family) and the results, changed ones first
/// (markdown folds the unchanged ones into a <details> block). JUnit XML: one test case per
/// result, regressions as failures, inconclusive and missing results as skipped, machine
/// differences and warnings as properties.
std::string render_comparison(const CompareOutcome& outcome, CompareFormat format);

/// Where a verdict is listed: what fails the gate first (regression, missing), then
/// inconclusive, improvement, new, and unchanged last.
int listing_rank(Verdict v);

/// The comparison's power in one line: "power: 45 of 57 results can see a 10% change".
std::string power_line(const CompareOutcome& outcome);

/// The comparison in one line, as it opens every rendering: "FAIL: 1 regression, 2
/// inconclusive, 54 unchanged of 57 results" (FAIL when a result regressed or went missing).
std::string verdict_line(const CompareOutcome& outcome);

/// The outcome as a JSON document (the `json` format).
nlohmann::json comparison_json(const CompareOutcome& outcome);

} // namespace interopbench
