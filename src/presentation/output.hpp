#pragma once
/// The renderers of reports and listings (table, markdown, csv, json rows of the format
/// table); the verdict lines that open `run`, `show` and the page. Their tables are laid out
/// by table.hpp, as every human rendering's.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "interopbench/runner.hpp"
#include "interopbench/scenario.hpp"
#include "interopbench/text.hpp"
#include "presentation/table.hpp"

namespace interopbench {

struct Format;
struct ReportView;
struct ListView;

/// How tables are laid out for a person.
struct TableStyle {
    /// Columns a table must fit (fit_table: secondary metrics are left out, and the table
    /// says so, then notes wrapped); 0: no limit (--wide, markdown).
    std::size_t width = k_plain_width;
    bool all_metrics = false; ///< every metric column, even when the table is wider (--metrics all)
    /// The summary's verdict lines painted for a terminal (paint); never in markdown.
    bool color = false;
};


/// A report for people (table, markdown: `format.markdown`): its header when `view.header`
/// (show), the summary (summary_lines), then render_results.
std::string render_report(const Format& format, const ReportView& view);
/// One row per result and metric.
std::string render_report_csv(const Format& format, const ReportView& view);
/// The whole report document.
std::string render_report_json(const Format& format, const ReportView& view);

/// Results grouped per scenario, for people (table, markdown: `format.markdown`): axes that
/// vary (those constant in a section are said once above it), the primary metric with its
/// uncertainty (see uncertainty()), the efficiency against the path's limit where the result
/// knows it, the other metrics, n and a note in plain words; scenarios whose every
/// configuration was skipped are one line per reason at the end.
std::string render_results(const std::vector<Result>& results, const Format& format, const TableStyle& style = {});

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

/// summary_lines under a heading, as `run` and `show` open with them (and `run` ends): for a
/// terminal wrapped to `style.width` and, with `style.color`, painted (paint): the counts red
/// when a result failed, "! failed" lines red, the other "! " lines yellow; for markdown
/// (`markdown`) a list, never painted.
std::string render_summary(const std::vector<Result>& results, bool markdown, const TableStyle& style);

/// The matrices results carry in `details.matrix` ({title, rows, columns, cells}: e.g. the
/// frameworks plugin's zero-copy / copies / refuses by dtype and protocol) as tables, each a
/// header row ("matrix", "row", the columns) and a row per matrix row; every distinct title
/// once (first seen), matrices of the same columns in one table. Shown under a scenario's
/// results by `run`, `show` and the HTML page.
std::vector<std::vector<std::vector<std::string>>> matrix_tables(const std::vector<const nlohmann::json*>& details);

/// What `list` prints (ListView): profiles and families as a table (json: their document),
/// or the scenario catalogue. For people (table, markdown): one line per scenario, and with
/// `view.details` each scenario's axes with their defaults, metrics and byte counting, then
/// the manifests plugin scenarios come from; csv and json have every scenario whole (json:
/// with its plugin manifest as "origin"); csv of profiles and families is their table.
std::string render_listing(const Format& format, const ListView& view);
std::string render_listing_csv(const Format& format, const ListView& view);
std::string render_listing_json(const Format& format, const ListView& view);

} // namespace interopbench
