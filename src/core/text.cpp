#include "interopbench/text.hpp"

#include <langinfo.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <locale.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "interopbench/errors.hpp"

namespace interopbench {

bool ascii_output() {
    static const bool ascii = [] {
        // The locale the environment asks for, without making it the process's locale.
        locale_t loc = ::newlocale(LC_CTYPE_MASK, "", static_cast<locale_t>(nullptr));
        if (!loc) return true; // an unknown locale name: C, which is ASCII
        const std::string codeset = ::nl_langinfo_l(CODESET, loc);
        ::freelocale(loc);
        return codeset != "UTF-8";
    }();
    return ascii;
}

namespace {
struct GlyphText {
    const char* utf8;
    const char* ascii;
};
constexpr GlyphText k_glyphs[] = {
    {"\u00b1", "+/-"}, {"\u2014", "-"}, {"\u00d7", "x"}, {"\u00b5", "u"}, {"\u2192", "->"},
};
} // namespace

const char* glyph(Glyph g) {
    const auto& t = k_glyphs[static_cast<int>(g)];
    return ascii_output() ? t.ascii : t.utf8;
}

std::size_t utf8_sequence(std::string_view text, std::size_t at, std::uint32_t& code_point) {
    if (at >= text.size()) return 0;
    const auto c = static_cast<unsigned char>(text[at]);
    // The length from the lead byte, then the continuation bytes.
    const std::size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (len == 0 || at + len > text.size()) return 0;
    std::uint32_t cp = len == 2 ? c & 0x1fu : len == 3 ? c & 0x0fu : c & 0x07u;
    for (std::size_t k = 1; k < len; ++k) {
        const auto cc = static_cast<unsigned char>(text[at + k]);
        if ((cc & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (cc & 0x3fu);
    }
    if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return 0;
    if (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) return 0;
    code_point = cp;
    return len;
}

std::string display_text(std::string_view text) {
    const bool ascii = ascii_output();
    std::string out;
    out.reserve(text.size());
    const auto byte = [&](unsigned char c) { out += fmt::format("\\x{:02x}", c); };
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            switch (c) {
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c == 0x7f) byte(c);
                else out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        std::uint32_t cp = 0;
        const std::size_t len = utf8_sequence(text, i, cp);
        if (len == 0) {
            byte(c);
            ++i;
            continue;
        }
        const std::string_view seq = text.substr(i, len);
        i += len;
        if (cp >= 0x80 && cp <= 0x9f) { // C1 controls (CSI is one)
            out += fmt::format("\\u{:04x}", cp);
            continue;
        }
        if (!ascii) {
            out += seq;
            continue;
        }
        const GlyphText* g = nullptr;
        for (const auto& t : k_glyphs)
            if (seq == t.utf8) g = &t;
        if (g) out += g->ascii;
        else out += fmt::format("\\u{:04x}", cp);
    }
    return out;
}

std::string format_value(double v, const std::string& unit) {
    if (!std::isfinite(v)) return "-";
    const double a = std::fabs(v);
    // Beyond any real figure (a damaged or crafted report): exponent notation, never hundreds
    // of digits.
    if (a >= 1e18) return fmt::format("{:.3g} {}", v, unit);
    // Three significant digits: more than the measurement can tell is noise on the screen.
    auto sig3 = [](double x) { return fmt::format("{:.{}f}", x, std::fabs(x) >= 99.95 ? 0 : std::fabs(x) >= 9.995 ? 1 : 2); };
    if (unit == "B/s") {
        if (a >= 0.9995e12) return sig3(v / 1e12) + " TB/s";
        if (a >= 0.9995e9) return sig3(v / 1e9) + " GB/s";
        if (a >= 0.9995e6) return sig3(v / 1e6) + " MB/s";
        return sig3(v / 1e3) + " kB/s";
    }
    if (unit == "s") {
        if (a >= 0.9995) return sig3(v) + " s";
        if (a >= 0.9995e-3) return sig3(v * 1e3) + " ms";
        if (a >= 0.9995e-6) return sig3(v * 1e6) + " us";
        return sig3(v * 1e9) + " ns";
    }
    if (unit == "B") {
        // Whole units stay exact ("64MiB"); anything else reads in the largest unit that
        // fits, to three significant figures ("4.00GiB", not "4194306KiB").
        static const char* const k_units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        int k = 0;
        double x = a;
        while (x >= 1024 && k < 6) {
            x /= 1024;
            ++k;
        }
        if (v == std::floor(v) && a < 1.8e19 && (k == 0 || x == std::floor(x)))
            return format_size(static_cast<std::uint64_t>(a));
        return fmt::format("{}{:.{}f}{}", v < 0 ? "-" : "", x, x < 10 ? 2 : x < 100 ? 1 : 0, k_units[k]);
    }
    if (unit == "ratio") return fmt::format("{:.3g}%", v * 100);
    return fmt::format("{:.3g}", v);
}

std::string param_cell(const std::string& name, const std::string& value) {
    // The size axes of the built-in families (a report keeps values as text, not kinds).
    if (name == "size" || name == "footprint" || name == "chunk" || name == "batch" || name == "dataset" ||
        name.find("bytes") != std::string::npos || name.ends_with("_size")) {
        try {
            return format_value(static_cast<double>(std::stoull(value)), "B");
        } catch (const std::exception&) {
        }
    }
    return value;
}

std::string short_label(const std::string& scenario, const Params& params) {
    std::string out = scenario;
    for (const auto& [k, v] : params.items()) {
        const std::string cell = param_cell(k, v);
        const bool word = !v.empty() && !std::isdigit(static_cast<unsigned char>(v[0]));
        out += " " + (word || cell != v ? cell : k + "=" + v);
    }
    return out;
}

std::pair<std::string, Params> split_key(const std::string& key) {
    const auto slash = key.find('/');
    if (slash == std::string::npos) return {key, Params{}};
    std::vector<std::pair<std::string, std::string>> axes;
    const std::string rest = key.substr(slash + 1);
    for (std::size_t at = 0; at < rest.size();) {
        const auto comma = std::min(rest.find(',', at), rest.size());
        const std::string item = rest.substr(at, comma - at);
        if (const auto eq = item.find('='); eq != std::string::npos) axes.emplace_back(item.substr(0, eq), item.substr(eq + 1));
        at = comma + 1;
    }
    return {key.substr(0, slash), Params(axes)};
}

namespace {
// Code points a terminal draws two columns wide (East Asian Wide and Fullwidth, and the
// emoji blocks), and those it draws in none (combining marks, zero-width characters).
constexpr std::pair<std::uint32_t, std::uint32_t> k_wide[] = {
    {0x1100, 0x115f},   {0x231a, 0x231b},   {0x2329, 0x232a},   {0x23e9, 0x23ec},   {0x2614, 0x2615},
    {0x2e80, 0x303e},   {0x3041, 0x33ff},   {0x3400, 0x4dbf},   {0x4e00, 0x9fff},   {0xa000, 0xa4cf},
    {0xa960, 0xa97f},   {0xac00, 0xd7a3},   {0xf900, 0xfaff},   {0xfe10, 0xfe19},   {0xfe30, 0xfe6f},
    {0xff00, 0xff60},   {0xffe0, 0xffe6},   {0x1f300, 0x1f64f}, {0x1f900, 0x1f9ff}, {0x20000, 0x3fffd},
};
constexpr std::pair<std::uint32_t, std::uint32_t> k_zero[] = {
    {0x0300, 0x036f}, {0x0483, 0x0489}, {0x0591, 0x05bd}, {0x0610, 0x061a}, {0x064b, 0x065f},
    {0x200b, 0x200f}, {0x202a, 0x202e}, {0x2060, 0x2064}, {0x20d0, 0x20ff}, {0xfe00, 0xfe0f},
    {0xfe20, 0xfe2f}, {0xfeff, 0xfeff},
};
bool in(const auto& ranges, std::uint32_t cp) {
    for (const auto& [lo, hi] : ranges)
        if (cp >= lo && cp <= hi) return true;
    return false;
}
} // namespace

std::size_t display_width(std::string_view text) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < text.size();) {
        // A colour of paint (ESC [ digits m) takes no column.
        if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
            const std::size_t end = text.find_first_not_of("0123456789;", i + 2);
            if (end != std::string_view::npos && text[end] == 'm') {
                i = end + 1;
                continue;
            }
        }
        std::uint32_t cp = 0;
        const std::size_t len = utf8_sequence(text, i, cp);
        if (len == 0) {
            ++n;
            ++i;
            continue;
        }
        i += len;
        n += in(k_zero, cp) ? 0 : in(k_wide, cp) ? 2 : 1;
    }
    return n;
}

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "-";
    if (seconds < 1) return fmt::format("{:.0f} ms", seconds * 1e3);
    if (seconds < 60) return fmt::format("{:.0f} s", seconds);
    const auto total = static_cast<long long>(std::llround(seconds));
    if (total < 3600) return fmt::format("{} min {:02} s", total / 60, total % 60);
    return fmt::format("{} h {:02} min", total / 3600, (total % 3600) / 60);
}

std::size_t terminal_width() {
    if (const char* c = std::getenv("COLUMNS"); c && *c) {
        char* end = nullptr;
        const long v = std::strtol(c, &end, 10);
        if (end && !*end && v >= 40 && v <= 10000) return static_cast<std::size_t>(v);
    }
    winsize ws{};
    if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
    return k_plain_width;
}

std::string paint(std::string_view text, Tone tone, bool on) {
    if (!on || text.empty()) return std::string(text);
    // SGR 31 red, 32 green, 33 yellow; 0 resets every attribute.
    const char* code = tone == Tone::bad ? "31" : tone == Tone::good ? "32" : "33";
    return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
}

ColorMode parse_color_mode(std::string_view word) {
    if (word == "auto") return ColorMode::auto_;
    if (word == "always") return ColorMode::always;
    if (word == "never") return ColorMode::never;
    throw UsageError(fmt::format("unknown --color '{}'", word), "use --color=auto, --color=always or --color=never");
}

bool color_wanted(ColorMode mode, bool terminal) {
    if (mode != ColorMode::auto_) return mode == ColorMode::always;
    if (!terminal || std::getenv("NO_COLOR")) return false;
    const char* term = std::getenv("TERM");
    return term && *term && std::string_view(term) != "dumb";
}

} // namespace interopbench
