#include "interopbench/params.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "interopbench/errors.hpp"

namespace interopbench {
std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

namespace {

constexpr const char* k_size_hint =
    "write a positive whole number of bytes with an optional unit: 4096, 4K, 64KiB, 1M, 2G";

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

} // namespace

std::uint64_t parse_uint(std::string_view text, std::string_view what) {
    const std::string t(trim(text));
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

double parse_fraction(std::string_view text, std::string_view what) {
    const std::string hint = "write a percentage such as 5% or a fraction such as 0.05";
    std::string_view t = trim(text);
    const bool percent = !t.empty() && t.back() == '%';
    if (percent) t.remove_suffix(1);
    double v = 0;
    const std::string s(trim(t));
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < 0)
        throw UsageError(fmt::format("invalid {} '{}'", what, text), hint);
    if (percent) return v / 100.0;
    if (v >= 1) throw UsageError(fmt::format("ambiguous {} '{}': a fraction must be below 1", what, text), hint);
    return v;
}

std::uint64_t parse_size(std::string_view text) {
    const std::string t(trim(text));
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
    const std::string suffix = lower(std::string(trim(std::string_view(t).substr(i))));
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
        std::string item(trim(text.substr(start, comma - start)));
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
        std::string step = c2 == std::string::npos ? "x2" : std::string(trim(item.substr(c2 + 1)));
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

namespace {

std::optional<int> parse_ordinal(std::string_view text) {
    text = trim(text);
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0)
        return std::nullopt;
    return value;
}

} // namespace

DevicePair parse_device_pair(std::string_view text) {
    const auto gt = text.find('>');
    if (gt != std::string_view::npos) {
        const auto src = parse_ordinal(text.substr(0, gt));
        const auto dst = parse_ordinal(text.substr(gt + 1));
        if (src && dst) {
            if (*src == *dst)
                throw UsageError(fmt::format("GPU pair '{}' names the same GPU twice", text),
                                 "a pair is two different GPU ordinals, e.g. pair=0>1");
            return {*src, *dst};
        }
    }
    throw UsageError(fmt::format("'{}' is not a GPU pair", text),
                     "write a pair as SOURCE>DESTINATION GPU ordinals, e.g. pair=0>1");
}

Params::Params(const std::vector<std::pair<std::string, std::string>>& values) {
    for (const auto& [k, v] : values) set(k, v);
}

const std::string& Params::get(std::string_view name) const {
    for (const auto& [k, v] : m_text)
        if (k == name) return v;
    throw ConfigError(fmt::format("configuration has no axis '{}'", name));
}

std::optional<std::string> Params::find(std::string_view name) const {
    for (const auto& [k, v] : m_text)
        if (k == name) return v;
    return std::nullopt;
}

const Params::Typed* Params::typed(std::string_view name) const {
    for (std::size_t i = 0; i < m_text.size(); ++i)
        if (m_text[i].first == name) return &m_typed[i];
    return nullptr;
}

std::optional<std::uint64_t> Params::find_number(std::string_view name) const {
    const Typed* t = typed(name);
    return t ? t->number : std::nullopt;
}

std::optional<DevicePair> Params::find_pair(std::string_view name) const {
    const Typed* t = typed(name);
    return t ? t->pair : std::nullopt;
}

std::uint64_t Params::get_uint(std::string_view name) const {
    if (const auto v = find_number(name)) return *v;
    (void)get(name); // absent: says so
    throw ConfigError(fmt::format("axis '{}' holds no number ('{}')", name, get(name)));
}

int Params::device(std::string_view name) const { return static_cast<int>(get_uint(name)); }

DevicePair Params::pair(std::string_view name) const {
    if (const auto v = find_pair(name)) return *v;
    (void)get(name);
    throw ConfigError(fmt::format("axis '{}' holds no GPU pair ('{}')", name, get(name)));
}

std::size_t Params::slot(std::string name) {
    for (std::size_t i = 0; i < m_text.size(); ++i)
        if (m_text[i].first == name) return i;
    m_text.emplace_back(std::move(name), std::string{});
    m_typed.emplace_back();
    return m_text.size() - 1;
}

void Params::set(std::string name, std::string text) {
    const std::size_t i = slot(std::move(name));
    m_text[i].second = std::move(text);
    m_typed[i] = {};
}

void Params::set_number(std::string name, std::uint64_t value) {
    const std::size_t i = slot(std::move(name));
    m_text[i].second = std::to_string(value);
    m_typed[i] = {value, std::nullopt};
}

void Params::set_pair(std::string name, DevicePair value) {
    const std::size_t i = slot(std::move(name));
    m_text[i].second = fmt::format("{}>{}", value.src, value.dst);
    m_typed[i] = {std::nullopt, value};
}

std::string Params::canonical() const {
    std::string out;
    for (const auto& [k, v] : m_text) {
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
    // Three rows: the swap of two neighbours looks two rows back.
    std::vector<std::size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                cur[j] = std::min(cur[j], before[j - 2] + 1);
        }
        std::swap(before, prev);
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::optional<std::string> closest_match(std::string_view name, const std::vector<std::string>& candidates) {
    const std::size_t limit = std::max<std::size_t>(2, name.size() / 3);
    std::optional<std::string> best;
    std::size_t best_d = limit + 1;
    for (const std::string& c : candidates) {
        const std::size_t d = edit_distance(name, c);
        // Fewer edits than letters: "x" is no typo of "ls".
        if (d < best_d && d < name.size() && d < c.size()) {
            best_d = d;
            best = c;
        }
    }
    return best;
}

} // namespace interopbench
