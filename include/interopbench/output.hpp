#pragma once
/// Human and machine renderings of results: table, csv, markdown, json.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "interopbench/runner.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench {

enum class OutputFormat { table, json, csv, markdown };
/// Parses "table|json|csv|markdown"; throws UsageError otherwise.
OutputFormat parse_format(const std::string& text);

/// True when human output must be plain ASCII: the locale's character set (LC_ALL, LC_CTYPE,
/// LANG; read once, without changing the process's locale) is not UTF-8, as under LANG=C.
/// The one place that decides; every human renderer asks it through glyph and display_text.
bool ascii_output();

/// Symbols of the human renderings: "±", "—", "×", "µ", "→" or, under ascii_output(),
/// "+/-", "-", "x", "u", "->".
enum class Glyph { plus_minus, dash, times, micro, arrow };
const char* glyph(Glyph g);

/// Length of the well-formed multi-byte UTF-8 sequence starting at text[at] (2 to 4 bytes;
/// overlong forms, surrogates and code points past U+10FFFF refused) and its code point;
/// 0 when the bytes there are not one (an ASCII byte included).
std::size_t utf8_sequence(std::string_view text, std::size_t at, std::uint32_t& code_point);

/// Text for a terminal or a markdown page, from anything (report fields, file names, error
/// messages): control characters (C0 with CR, LF and TAB, DEL, C1) and bytes that are not
/// UTF-8 are shown escaped ("\x1b", "\n"), so a crafted report cannot move the cursor,
/// forge lines or change colours; under ascii_output() the symbols of Glyph are spelt in
/// ASCII and other non-ASCII characters escaped ("\u00e9"). Backslashes are kept, so the
/// function is idempotent. JSON and CSV outputs do not use it: they stay exact.
std::string display_text(std::string_view text);

/// A value in its unit for people, three significant digits: "55.4 GB/s" (GB = 1e9),
/// "12.3 us", "1.50KiB" (whole binary sizes stay exact: "64MiB").
std::string format_value(double value, const std::string& unit);

/// A configuration named for people: the scenario, then each axis value, sizes in binary
/// units, a number with its axis name: "storage_read 64MiB buffered warm threads=4".
std::string short_label(const std::string& scenario, const Params& params);

/// A duration for people: "850 ms", "42 s", "3 min 05 s", "1 h 02 min".
std::string format_duration(double seconds);

/// How tables are laid out for a person.
struct TableStyle {
    /// Columns a table must fit (secondary metrics are left out, then notes shortened, and
    /// the table says so); 0: no limit (--wide, markdown).
    std::size_t width = 100;
    bool all_metrics = false; ///< every metric column, even when the table is wider (--metrics all)
};

/// The width a table should fit on standard output: COLUMNS when set, the terminal's width
/// when stdout is one, 100 otherwise.
std::size_t terminal_width();

/// The uncertainty people are shown for a result's primary metric: the larger of the 95%
/// interval's relative half-width and half the relative spread between round medians, and
/// which of the two it is ("ci" or "rounds").
struct Uncertainty {
    double relative = 0;
    const char* source = "ci";
};
Uncertainty uncertainty(const MetricResult& m);

/// Renders results grouped per scenario. Table and markdown: axes that vary (those constant
/// in a section are said once above it), the primary metric with its uncertainty (see
/// uncertainty()), the efficiency against the path's limit where the result knows it, the
/// other metrics, n and a note in plain words; scenarios whose every configuration was
/// skipped are one line per reason at the end. csv has one row per result and metric.
std::string render_results(const std::vector<Result>& results, OutputFormat format, const TableStyle& style = {});

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
