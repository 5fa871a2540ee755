#pragma once
/// Human and machine renderings of results: table, csv, markdown, json; the aligned table
/// every human rendering is made of; the verdict lines that open `run`, `show` and the page.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "interopbench/runner.hpp"
#include "interopbench/scenario.hpp"
#include "interopbench/text.hpp"

namespace interopbench {

/// The shape of a rendering of results or scenarios; the names users give are the format
/// table's (presentation/formats.hpp).
enum class OutputFormat { table, json, csv, markdown };

/// How tables are laid out for a person.
struct TableStyle {
    /// Columns a table must fit (secondary metrics are left out, then notes shortened, and
    /// the table says so); 0: no limit (--wide, markdown).
    std::size_t width = 100;
    bool all_metrics = false; ///< every metric column, even when the table is wider (--metrics all)
};


/// Renders results grouped per scenario. Table and markdown: axes that vary (those constant
/// in a section are said once above it), the primary metric with its uncertainty (see
/// uncertainty()), the efficiency against the path's limit where the result knows it, the
/// other metrics, n and a note in plain words; scenarios whose every configuration was
/// skipped are one line per reason at the end. csv has one row per result and metric.
std::string render_results(const std::vector<Result>& results, OutputFormat format, const TableStyle& style = {});

/// Skipped results grouped by reason, in order of first appearance, each with its count and
/// its scenarios (in order of first appearance); with `whole_only`, only scenarios whose
/// every configuration was skipped. The tables, the summary and the page group them so.
struct SkipGroup {
    std::string reason;
    std::size_t count = 0;
    std::vector<std::string> scenarios;
};
std::vector<SkipGroup> skip_groups(const std::vector<Result>& results, bool whole_only);

/// The verdict first: a few lines that open `run`, `show` and the page: how many results are
/// ok, failed, skipped (one line per reason), noisy; per family its best figure and, where
/// known, its share of the path's limit; what stands out (pageable far slower than pinned,
/// results below 80% of their limit, failures), each such line starting with "! ".
std::vector<std::string> summary_lines(const std::vector<Result>& results);
/// summary_lines for a terminal (wrapped to `width`, 0: unwrapped) or markdown; "" for
/// other formats.
std::string render_summary(const std::vector<Result>& results, OutputFormat format, std::size_t width = 100);

/// Simple aligned text table; first row is the header. Right-aligns cells that start with
/// a digit. `markdown` renders a GitHub table instead ('|' in cells escaped). Every cell goes
/// through display_text.
std::string render_table(const std::vector<std::vector<std::string>>& rows, bool markdown = false);

/// Words of `text` wrapped to `width` columns (0: one line), every line indented by `indent`
/// and ended by a newline. Text for a terminal (display_text it first).
std::string wrap(const std::string& text, std::size_t width, const std::string& indent);

/// The matrices results carry in `details.matrix` ({title, rows, columns, cells}: e.g. the
/// frameworks plugin's zero-copy / copies / refuses by dtype and protocol) as tables, each a
/// header row ("matrix", "row", the columns) and a row per matrix row; every distinct title
/// once (first seen), matrices of the same columns in one table. Shown under a scenario's
/// results by `run`, `show` and the HTML page.
std::vector<std::vector<std::vector<std::string>>> matrix_tables(const std::vector<const nlohmann::json*>& details);

/// Scenario catalogue for `list`: one line per scenario, and with `details` (table and
/// markdown) each scenario's axes with their defaults, metrics and byte counting; json and
/// csv are always whole.
std::string render_scenarios(const std::vector<const ScenarioInfo*>& scenarios, OutputFormat format, bool details);

} // namespace interopbench
