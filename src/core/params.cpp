#include "interopbench/params.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "interopbench/errors.hpp"

namespace interopbench {
namespace {

constexpr const char* k_size_hint =
    "write a positive whole number of bytes with an optional unit: 4096, 4K, 64KiB, 1M, 2G";

std::string trim(std::string_view s) {
    std::size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    return std::string(s.substr(b, e - b));
}

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

} // namespace

std::uint64_t parse_uint(std::string_view text, std::string_view what) {
    const std::string t = trim(text);
    if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        throw UsageError(fmt::format("invalid {} '{}': not a whole number", what, text),
                         fmt::format("give {} as a non-negative whole number", what));
    std::uint64_t v = 0;
    for (char c : t) {
        const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
        if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10)
            throw UsageError(fmt::format("invalid {} '{}': too large", what, text));
        v = v * 10 + d;
    }
    return v;
}

std::uint64_t parse_size(std::string_view text) {
    const std::string t = trim(text);
    std::size_t i = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    if (i == 0) {
        const char* why = t.empty() ? "empty" : (t[0] == '-' ? "negative" : "not a number");
        throw UsageError(fmt::format("invalid size '{}': {}", text, why), k_size_hint);
    }
    if (i < t.size() && t[i] == '.')
        throw UsageError(fmt::format("invalid size '{}': fractional sizes are not accepted", text), k_size_hint);
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < i; ++k) {
        const std::uint64_t d = static_cast<std::uint64_t>(t[k] - '0');
        if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10)
            throw UsageError(fmt::format("invalid size '{}': too large", text), k_size_hint);
        v = v * 10 + d;
    }
    const std::string suffix = lower(trim(std::string_view(t).substr(i)));
    unsigned shift = 0;
    if (suffix.empty() || suffix == "b") shift = 0;
    else if (suffix == "k" || suffix == "kb" || suffix == "kib") shift = 10;
    else if (suffix == "m" || suffix == "mb" || suffix == "mib") shift = 20;
    else if (suffix == "g" || suffix == "gb" || suffix == "gib") shift = 30;
    else if (suffix == "t" || suffix == "tb" || suffix == "tib") shift = 40;
    else
        throw UsageError(fmt::format("invalid size '{}': unknown unit '{}'", text, suffix), k_size_hint);
    if (v == 0) throw UsageError(fmt::format("invalid size '{}': must be greater than zero", text), k_size_hint);
    if (shift && v > (std::numeric_limits<std::uint64_t>::max() >> shift))
        throw UsageError(fmt::format("invalid size '{}': too large", text), k_size_hint);
    return v << shift;
}

std::string format_size(std::uint64_t bytes) {
    static constexpr const char* k_units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        ++u;
    }
    return fmt::format("{}{}", bytes, k_units[u]);
}

std::vector<std::string> split_list(std::string_view text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t comma = text.find(',', start);
        if (comma == std::string_view::npos) comma = text.size();
        std::string item = trim(text.substr(start, comma - start));
        if (!item.empty()) out.push_back(std::move(item));
        start = comma + 1;
    }
    return out;
}

std::vector<std::uint64_t> parse_size_list(std::string_view text) {
    constexpr std::size_t k_max_values = 10000;
    std::vector<std::uint64_t> out;
    const auto items = split_list(text);
    if (items.empty())
        throw UsageError(fmt::format("invalid size list '{}': empty", text), k_size_hint);
    for (const auto& item : items) {
        const auto c1 = item.find(':');
        if (c1 == std::string::npos) {
            out.push_back(parse_size(item));
            continue;
        }
        const auto c2 = item.find(':', c1 + 1);
        const std::uint64_t lo = parse_size(item.substr(0, c1));
        const std::uint64_t hi = parse_size(item.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1));
        if (lo > hi)
            throw UsageError(fmt::format("invalid size range '{}': the start is larger than the end", item),
                             fmt::format("write the smaller size first: {}:{}", format_size(hi), format_size(lo)));
        std::string step = c2 == std::string::npos ? "x2" : trim(item.substr(c2 + 1));
        const std::string range_hint = "a range is LO:HI (doubling), LO:HI:xF (multiply by F >= 2) or LO:HI:+S (add S)";
        if (step.size() < 2 || (step[0] != 'x' && step[0] != '*' && step[0] != '+'))
            throw UsageError(fmt::format("invalid size range step '{}' in '{}'", step, item), range_hint);
        if (step[0] == '+') {
            const std::uint64_t add = parse_size(step.substr(1));
            for (std::uint64_t v = lo; v <= hi; v += add) {
                out.push_back(v);
                if (out.size() > k_max_values || hi - v < add) break;
            }
        } else {
            const std::uint64_t f = parse_uint(step.substr(1), "range factor");
            if (f < 2) throw UsageError(fmt::format("invalid size range factor in '{}': must be at least 2", item), range_hint);
            for (std::uint64_t v = lo; v <= hi; v *= f) {
                out.push_back(v);
                if (v > hi / f) break;
            }
        }
        if (out.size() > k_max_values)
            throw UsageError(fmt::format("size list '{}' has more than {} values", text, k_max_values),
                             "use a larger step");
    }
    return out;
}

const std::string& Params::get(std::string_view name) const {
    for (const auto& [k, v] : m_values)
        if (k == name) return v;
    throw ConfigError(fmt::format("configuration has no axis '{}'", name));
}

std::optional<std::string> Params::find(std::string_view name) const {
    for (const auto& [k, v] : m_values)
        if (k == name) return v;
    return std::nullopt;
}

std::uint64_t Params::get_uint(std::string_view name) const {
    return parse_uint(get(name), name);
}

void Params::set(std::string name, std::string value) {
    for (auto& [k, v] : m_values)
        if (k == name) {
            v = std::move(value);
            return;
        }
    m_values.emplace_back(std::move(name), std::move(value));
}

std::string Params::canonical() const {
    std::string out;
    for (const auto& [k, v] : m_values) {
        if (!out.empty()) out += ',';
        out += k;
        out += '=';
        out += v;
    }
    return out;
}

bool glob_match(std::string_view p, std::string_view t) {
    std::size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
    while (ti < t.size()) {
        if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
            ++pi;
            ++ti;
        } else if (pi < p.size() && p[pi] == '*') {
            star = pi++;
            mark = ti;
        } else if (star != std::string_view::npos) {
            pi = star + 1;
            ti = ++mark;
        } else {
            return false;
        }
    }
    while (pi < p.size() && p[pi] == '*') ++pi;
    return pi == p.size();
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

} // namespace interopbench
