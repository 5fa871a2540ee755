#pragma once
/// Text for people, shared by every message and rendering: the locale's character set, the
/// symbols, escaping of untrusted text for a terminal, values in their units, durations,
/// configuration labels, the terminal's width. Whole outputs (tables, reports, pages) are the
/// presentation layer's (src/presentation/).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "interopbench/params.hpp"

namespace interopbench {

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

/// An axis value for people: the values of the size axes of the built-in families ("size",
/// "chunk", "..._size", "...bytes...") in binary units ("64MiB"), others as given.
std::string param_cell(const std::string& name, const std::string& value);

/// A configuration named for people: the scenario, then each axis value, sizes in binary
/// units, a number with its axis name: "storage_read 64MiB buffered warm threads=4".
std::string short_label(const std::string& scenario, const Params& params);

/// A result key ("h2d_copy/size=1073741824,host_mem=pinned") split into its scenario and
/// its axis values, as text; a key without '/' is all scenario.
std::pair<std::string, Params> split_key(const std::string& key);

/// Columns `text` takes on a terminal: one per character, two for East Asian wide and
/// fullwidth characters and most emoji, none for combining marks, zero-width characters and
/// the colours of paint (SGR sequences: ESC [ digits m); a byte that is not UTF-8 counts one
/// (display_text shows it escaped anyway).
std::size_t display_width(std::string_view text);

/// A duration for people: "850 ms", "42 s", "3 min 05 s", "1 h 02 min".
std::string format_duration(double seconds);

/// The width of output that is no terminal's (a pipe, a file) when COLUMNS is not set.
inline constexpr std::size_t k_plain_width = 100;

/// The width a table should fit on standard output: COLUMNS when set (40 to 10000), the
/// terminal's width when stdout is one, k_plain_width otherwise.
std::size_t terminal_width();

/// How a verdict reads on a terminal: bad in red (FAIL, a regression, an outlier, a failure),
/// good in green (PASS, an improvement), unsure in yellow (inconclusive, a weak pass, what
/// stands out without failing).
enum class Tone { bad, good, unsure };

/// `text` in its tone's colour (an ANSI SGR sequence before it, the reset after) when `on`,
/// else `text` as it is. The one place escape codes are made: for finished text only (a
/// wrapped line, a verdict word), never a cell whose width a table still counts, never
/// JSON, CSV, markdown or a file.
std::string paint(std::string_view text, Tone tone, bool on);

/// --color: `auto` paints only a terminal, `always` whatever the output is, `never` nothing.
enum class ColorMode { auto_, always, never };

/// "auto", "always" or "never". Throws UsageError for another word.
ColorMode parse_color_mode(std::string_view word);

/// Whether output for people is painted: `always` yes, `never` no; `auto` only when the output
/// is a terminal, TERM is not "dumb" and NO_COLOR is not set (whatever its value,
/// no-color.org).
bool color_wanted(ColorMode mode, bool terminal);

} // namespace interopbench
