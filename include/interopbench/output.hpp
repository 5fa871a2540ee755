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

/// A value in its unit for people: "55.41 GB/s" (GB = 1e9), "12.3 us", "4.00 KiB".
std::string format_value(double value, const std::string& unit);

/// Renders results grouped per scenario. Table and markdown show the median and the
/// relative CI half-width of each metric; csv has one row per result and metric.
std::string render_results(const std::vector<Result>& results, OutputFormat format);

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

/// Scenario catalogue for `list`.
std::string render_scenarios(const std::vector<const ScenarioInfo*>& scenarios, OutputFormat format);

} // namespace interopbench
