#pragma once
/// Parameters of one configuration, and the parsing of size and list expressions.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace interopbench {

/// Parses a byte size: a positive integer with an optional binary suffix
/// K, M, G, T (also KiB, MiB, GiB, TiB, case-insensitive) or B. `4K` = 4096.
/// Throws UsageError naming the text and the accepted forms on anything else
/// (zero, negative, fractional bytes, unknown suffix, overflow).
std::uint64_t parse_size(std::string_view text);

/// Formats a byte count with binary units as accepted by parse_size: "4KiB", "1GiB",
/// "1536B" when not a whole number of a larger unit.
std::string format_size(std::uint64_t bytes);

/// Expands a size expression into sizes in ascending order of appearance:
///  - a comma list of items; each item is a size or a range
///  - `LO:HI` doubles from LO to HI; `LO:HI:xF` multiplies by F; `LO:HI:+S` adds S.
/// HI is included when the steps land on it. Throws UsageError on a reversed range,
/// a zero step, a factor below 2, or more than 10000 values.
std::vector<std::uint64_t> parse_size_list(std::string_view text);

/// `s` without leading and trailing white space.
std::string_view trim(std::string_view s);

/// Splits on commas, trims blanks, drops empty items.
std::vector<std::string> split_list(std::string_view text);

/// Parses "5%" or "0.05" into 0.05 (thresholds, noise targets). Throws UsageError for
/// anything else, negatives, non-finite values, and plain numbers of 1 or more (ambiguous:
/// write "5%").
double parse_fraction(std::string_view text, std::string_view what);

/// Parses an unsigned integer; throws UsageError naming `what` on failure.
std::uint64_t parse_uint(std::string_view text, std::string_view what);

/// An ordered pair of GPU ordinals, "A>B" in text.
struct DevicePair {
    int src = 0;
    int dst = 0;
    bool operator==(const DevicePair&) const = default;
};

/// Parses "A>B" (blanks around the numbers allowed) into two GPU ordinals. Throws
/// UsageError for anything else: missing '>', non-numeric, negative or huge ordinals, A == B.
DevicePair parse_device_pair(std::string_view text);

/// Ordered name=value pairs of one configuration, in the scenario's axis order.
///
/// Every value has its canonical text (sizes and integers as decimal numbers, pairs as
/// "A>B", choices as given), made once, for keys and reports. Values set through
/// set_number / set_pair (axis expansion does this, parsing each value once) also carry
/// their typed form, which cases read without parsing again. Params read back from a
/// report carry text only.
class Params {
public:
    Params() = default;
    /// Text-only values (reports, tests of text handling).
    explicit Params(const std::vector<std::pair<std::string, std::string>>& values);

    /// The text of axis `name`; throws ConfigError when the axis is absent.
    const std::string& get(std::string_view name) const;
    /// The text of axis `name`, or nothing.
    std::optional<std::string> find(std::string_view name) const;
    /// The number (size in bytes, integer, GPU ordinal) of axis `name`; throws ConfigError
    /// when the axis is absent or holds no number.
    std::uint64_t get_uint(std::string_view name) const;
    /// A GPU ordinal (device axes).
    int device(std::string_view name) const;
    /// A GPU pair (device_pair axes); throws ConfigError when absent or not a pair.
    DevicePair pair(std::string_view name) const;
    /// The number or pair of axis `name`, or nothing (absent or text only).
    std::optional<std::uint64_t> find_number(std::string_view name) const;
    std::optional<DevicePair> find_pair(std::string_view name) const;

    /// Adds or replaces a value, keeping the order of first insertion.
    void set(std::string name, std::string text);
    void set_number(std::string name, std::uint64_t value);
    void set_pair(std::string name, DevicePair value);

    /// name -> canonical text, in axis order.
    const std::vector<std::pair<std::string, std::string>>& items() const { return m_text; }

    /// Canonical text: `a=1,b=x` in axis order. Part of result keys.
    std::string canonical() const;

private:
    struct Typed {
        std::optional<std::uint64_t> number;
        std::optional<DevicePair> pair;
    };
    std::size_t slot(std::string name);
    const Typed* typed(std::string_view name) const;

    std::vector<std::pair<std::string, std::string>> m_text;
    std::vector<Typed> m_typed; ///< parallel to m_text
};

/// Glob match with `*` and `?` (whole string). Used for scenario selection.
bool glob_match(std::string_view pattern, std::string_view text);

/// Edit distance with adjacent swaps counted once (Damerau-Levenshtein, optimal string
/// alignment): "rnu" is one step from "run", as a typist's slip is.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate nearest to `name` when it is near enough to be a typo of it (at most 2
/// edits, or a third of the name's length for long names, and never a total rewrite);
/// nothing otherwise. The first of equally near candidates wins. For "did you mean".
std::optional<std::string> closest_match(std::string_view name, const std::vector<std::string>& candidates);

} // namespace interopbench
