#pragma once
/// Human and machine renderings of results: table, csv, markdown, json.
#include <string>
#include <vector>

#include "interopbench/runner.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench {

enum class OutputFormat { table, json, csv, markdown };
/// Parses "table|json|csv|markdown"; throws UsageError otherwise.
OutputFormat parse_format(const std::string& text);

/// A value in its unit for people: "55.41 GB/s" (GB = 1e9), "12.3 us", "4.00 KiB".
std::string format_value(double value, const std::string& unit);

/// Renders results grouped per scenario. Table and markdown show the median and the
/// relative CI half-width of each metric; csv has one row per result and metric.
std::string render_results(const std::vector<Result>& results, OutputFormat format);

/// Simple aligned text table; first row is the header. Right-aligns cells that start with
/// a digit. `markdown` renders a GitHub table instead.
std::string render_table(const std::vector<std::vector<std::string>>& rows, bool markdown = false);

/// Scenario catalogue for `list`.
std::string render_scenarios(const std::vector<const ScenarioInfo*>& scenarios, OutputFormat format);

} // namespace interopbench
