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

/// Splits on commas, trims blanks, drops empty items.
std::vector<std::string> split_list(std::string_view text);

/// Parses an unsigned integer; throws UsageError naming `what` on failure.
std::uint64_t parse_uint(std::string_view text, std::string_view what);

/// Ordered name=value pairs of one configuration, in the scenario's axis order.
/// Values are canonical strings: sizes as decimal byte counts, the rest as given.
class Params {
public:
    Params() = default;
    explicit Params(std::vector<std::pair<std::string, std::string>> values)
        : m_values(std::move(values)) {}

    /// The value of axis `name`; throws ConfigError when the axis is absent.
    const std::string& get(std::string_view name) const;
    /// The value of axis `name`, or nothing.
    std::optional<std::string> find(std::string_view name) const;
    /// The value of axis `name` as an unsigned integer (sizes, counts).
    std::uint64_t get_uint(std::string_view name) const;
    /// Adds or replaces a value, keeping the order of first insertion.
    void set(std::string name, std::string value);

    const std::vector<std::pair<std::string, std::string>>& items() const { return m_values; }

    /// Canonical text: `a=1,b=x` in axis order. Part of result keys.
    std::string canonical() const;

private:
    std::vector<std::pair<std::string, std::string>> m_values;
};

/// Glob match with `*` and `?` (whole string). Used for scenario selection.
bool glob_match(std::string_view pattern, std::string_view text);

/// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

} // namespace interopbench
