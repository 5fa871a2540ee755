// The pieces of the HTML pages (html_charts.hpp): escaping, scales, ticks and colours (the
// building blocks html.hpp names), the page's frame and tables, and the charts of a report's
// results. Every string that comes from a report goes through escape() before it reaches the
// page; numbers are formatted by the tool.
#include "presentation/html_charts.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "interopbench/params.hpp"
#include "interopbench/text.hpp"

namespace interopbench::html {

// ---- building blocks ----------------------------------------------------------------------

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 16);
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default:
                if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) out += "\xef\xbf\xbd";
                else out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        std::uint32_t cp = 0;
        const std::size_t len = utf8_sequence(text, i, cp);
        if (len == 0 || (cp >= 0x80 && cp <= 0x9f)) { // broken byte, or a whole C1 control
            out += "\xef\xbf\xbd";
            i += len == 0 ? 1 : len;
            continue;
        }
        out += text.substr(i, len);
        i += len;
    }
    return out;
}

double LinearScale::operator()(double v) const {
    if (d1 == d0) return (r0 + r1) / 2;
    return r0 + (v - d0) / (d1 - d0) * (r1 - r0);
}

double LogScale::operator()(double v) const {
    if (!(v > 0) || !(d0 > 0) || !(d1 > 0)) return r0;
    const double l0 = std::log10(d0), l1 = std::log10(d1);
    if (l1 == l0) return (r0 + r1) / 2;
    return r0 + (std::log10(v) - l0) / (l1 - l0) * (r1 - r0);
}

namespace {
std::string trim_number(double v, int digits) {
    std::string s = fmt::format("{:.{}f}", v, digits);
    if (s.find('.') != std::string::npos) {
        while (s.back() == '0') s.pop_back();
        if (s.back() == '.') s.pop_back();
    }
    return s;
}
} // namespace

std::string tick_label(double v, const std::string& unit) {
    if (!std::isfinite(v)) return "-";
    const double a = std::fabs(v);
    if (unit == "B") {
        const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
        int k = 0;
        double x = a;
        while (x >= 1024 && k < 5) {
            x /= 1024;
            ++k;
        }
        return fmt::format("{}{} {}", v < 0 ? "-" : "", trim_number(x, x < 10 ? 2 : 1), names[k]);
    }
    if (unit == "ratio") return trim_number(v * 100, a < 0.1 ? 2 : 1) + "%";
    struct Prefix {
        double f;
        const char* p;
    };
    if (unit == "s") {
        if (a == 0) return "0 s";
        const Prefix ps[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
        for (const auto& p : ps)
            if (a >= p.f || p.f == 1e-9) return trim_number(v / p.f, 2) + " " + p.p;
    }
    if (unit == "B/s") {
        const Prefix ps[] = {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "kB/s"}, {1, "B/s"}};
        for (const auto& p : ps)
            if (a >= p.f || p.f == 1) return trim_number(v / p.f, 2) + " " + p.p;
    }
    if (a != 0 && (a >= 1e6 || a < 1e-3)) return fmt::format("{:.2g}", v);
    return trim_number(v, 3);
}

std::vector<Tick> log_ticks(double lo, double hi, const std::string& unit, int max_labels) {
    std::vector<Tick> out;
    if (!(lo > 0) || !(hi > 0) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
    if (hi < lo) std::swap(lo, hi);
    if (max_labels < 2) max_labels = 2;
    const double eps = 1e-9;
    if (unit == "B") {
        const int e0 = static_cast<int>(std::ceil(std::log2(lo) - eps)), e1 = static_cast<int>(std::floor(std::log2(hi) + eps));
        if (e1 < e0) {
            out.push_back({lo, tick_label(lo, unit)});
            if (hi > lo) out.push_back({hi, tick_label(hi, unit)});
            return out;
        }
        int step = 1;
        while ((e1 - e0) / step + 1 > max_labels) step *= 2;
        for (int e = e0; e <= e1; ++e) {
            const double v = std::ldexp(1.0, e);
            out.push_back({v, (e - e0) % step == 0 ? tick_label(v, unit) : std::string()});
        }
        return out;
    }
    const int d0 = static_cast<int>(std::floor(std::log10(lo) + eps)), d1 = static_cast<int>(std::ceil(std::log10(hi) - eps));
    const bool fine = std::log10(hi) - std::log10(lo) < 2;
    int step = 1;
    while ((d1 - d0) / step + 1 > max_labels) ++step;
    for (int d = d0; d <= d1; ++d) {
        const double p = std::pow(10.0, d);
        for (double m : {1.0, 2.0, 5.0}) {
            const double v = p * m;
            if (v < lo * (1 - eps) || v > hi * (1 + eps)) continue;
            const bool major = m == 1.0 && (d - d0) % step == 0;
            if (m != 1.0 && !fine) {
                out.push_back({v, {}});
                continue;
            }
            out.push_back({v, major || fine ? tick_label(v, unit) : std::string()});
        }
    }
    std::size_t labelled = 0;
    for (const auto& t : out) labelled += !t.label.empty();
    if (labelled < 2) { // a narrow range inside one decade: round steps, as on a linear axis
        out.clear();
        for (const auto& t : linear_ticks(lo, hi, unit, 5))
            if (t.value > 0) out.push_back(t);
    }
    return out;
}

std::vector<Tick> linear_ticks(double lo, double hi, const std::string& unit, int target) {
    std::vector<Tick> out;
    if (!std::isfinite(lo) || !std::isfinite(hi)) return out;
    if (hi < lo) std::swap(lo, hi);
    if (hi == lo) return {{lo, tick_label(lo, unit)}};
    if (target < 1) target = 1;
    const double raw = (hi - lo) / target;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    double step = p;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (p * m >= raw) {
            step = p * m;
            break;
        }
    for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
        out.push_back({std::fabs(v) < step * 1e-9 ? 0.0 : v, tick_label(std::fabs(v) < step * 1e-9 ? 0.0 : v, unit)});
    return out;
}

namespace {
constexpr const char* k_palette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                     "#CC79A7", "#56B4E9", "#000000", "#F0E442"};
constexpr const char* k_dashes[] = {"", "7 3", "2 2", "9 3 2 3"};
} // namespace

const char* series_colour(std::size_t n) { return k_palette[n % 8]; }
const char* dash_pattern(std::size_t n) { return k_dashes[(n / 8) % 4]; }

std::string sequential_colour(double t) {
    // viridis, 9 stops: perceptually even, readable in grey and by colour-blind readers.
    static constexpr int stops[][3] = {{68, 1, 84},    {71, 45, 123},  {59, 82, 139},  {44, 114, 142}, {33, 145, 140},
                                       {40, 174, 128}, {94, 201, 98},  {170, 220, 50}, {253, 231, 37}};
    if (!std::isfinite(t)) t = 0;
    t = std::clamp(t, 0.0, 1.0) * 8;
    const int i = std::min(7, static_cast<int>(t));
    const double f = t - i;
    int rgb[3];
    for (int k = 0; k < 3; ++k) rgb[k] = static_cast<int>(std::lround(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f));
    return fmt::format("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
}

// ---- the page's frame, tables and SVG pieces ---------------------------------------------------

namespace {

constexpr const char* k_style = R"(<style>
body{font-family:"DejaVu Sans",Verdana,Arial,sans-serif;font-size:14px;color:#222;margin:18px 28px;max-width:1300px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:19px;border-bottom:2px solid #0072B2;margin-top:30px;padding-bottom:3px}
h3{font-size:16px;margin:18px 0 4px}
table{border-collapse:collapse;margin:6px 0 10px}
td,th{border:1px solid #ccc;padding:2px 7px;text-align:left;vertical-align:top;overflow-wrap:break-word}td.long{overflow-wrap:anywhere}
th{background:#f1f1f1}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
pre{background:#f6f6f6;padding:6px;overflow-x:auto;font-size:12px}
figure{margin:6px 0 14px}figcaption,.note{color:#555;font-size:12px;margin:2px 0}
svg.chart{display:block;background:#fff;max-width:100%;height:auto}
svg text{font-family:"DejaVu Sans",Verdana,Arial,sans-serif}
.tick{font-size:11px;fill:#333}.atitle{font-size:12px;fill:#222}.rowlabel{font-size:11px;fill:#222}
.grid{stroke:#d8d8d8;stroke-width:1}.grid2{stroke:#eee;stroke-width:1}.axis{stroke:#444;stroke-width:1}
.band{opacity:.18}.limit{stroke:#444;stroke-width:1.5;stroke-dasharray:6 4}.limtext{font-size:11px;fill:#444}
.whisker{stroke:#222;stroke-width:1}.sep{stroke:#bbb;stroke-width:1}.beyond{fill:#444}.barnote{font-size:10px;fill:#333}
.cell{font-size:10px}.cell.dark{fill:#111}.cell.light{fill:#fff}.nocell{fill:#fff;stroke:#bbb;stroke-dasharray:2 2}
.diag{fill:#e6e6e6}.bound{stroke:#000;stroke-width:2}
ul.legend{list-style:none;padding:0;margin:4px 0;display:flex;flex-wrap:wrap;gap:2px 18px;font-size:12px;max-width:1100px}ul.legend li{margin:1px 0}
svg.sw{vertical-align:middle;margin-right:5px}.eff{color:#555}
.heatmaps{display:flex;flex-wrap:wrap;gap:16px}figure.heat{margin:0}
.facets{display:flex;flex-wrap:wrap;gap:10px 22px}.facets figure{max-width:620px;margin:4px 0}.facet{font-weight:bold;font-size:13px}
.verdict-regression{color:#B33C00;font-weight:bold}.verdict-improvement{color:#007A5A;font-weight:bold}
.verdict{font-size:17px;padding:6px 10px;border-left:6px solid #999}.verdict.fail{border-color:#D55E00;background:#fbeee6}.verdict.pass{border-color:#009E73;background:#e8f6f1}
.bad{color:#B33C00}.skipblock{padding:4px 10px;border-left:6px solid #999;background:#f4f4f4}
table.heat th.col{font-weight:normal;text-align:center;vertical-align:bottom;overflow-wrap:break-word;min-width:4.5em}
table.heat th.m{overflow-wrap:break-word}table.heat td.c{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.heat small{display:block;font-size:10px;color:#444}.out{outline:2px solid #b00;outline-offset:-2px;font-weight:bold}
p.legend span{padding:1px 6px}
@media print{h2{break-after:avoid}figure{break-inside:avoid}}
</style>
)";

} // namespace

std::string page_open(const std::string& title) {
    return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
                       "img-src data:\">\n<title>{}</title>\n{}</head>\n<body>\n",
                       escape(title), k_style);
}

std::string table_html(const std::vector<std::vector<std::string>>& rows) {
    // Cells are text; every one is escaped here.
    if (rows.empty()) return {};
    std::string s = "<table><tr>";
    for (const auto& h : rows[0]) s += "<th>" + escape(h) + "</th>";
    s += "</tr>\n";
    for (std::size_t i = 1; i < rows.size(); ++i) {
        s += "<tr>";
        for (const auto& c : rows[i]) {
            const bool num = !c.empty() && (std::isdigit(static_cast<unsigned char>(c[0])) != 0);
            // A word longer than 24 characters (a result key) may break anywhere: else it would
            // hold the table wider than a narrow window.
            std::size_t word = 0, longest = 0;
            for (const char ch : c) longest = std::max(longest, word = ch == ' ' ? 0 : word + 1);
            s += (num ? "<td class=\"num\">" : longest > 24 ? "<td class=\"long\">" : "<td>") + escape(c) + "</td>";
        }
        s += "</tr>\n";
    }
    return s + "</table>\n";
}

std::string f1(double v) { return fmt::format("{:.1f}", v); }

double text_width(std::size_t chars, double px) { return 0.64 * px * static_cast<double>(chars); }

std::string shorten(const std::string& s, std::size_t max) {
    // Cut on a character boundary (never inside a UTF-8 sequence).
    if (s.size() <= max) return s;
    std::size_t cut = max - 1;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
    return s.substr(0, cut) + "\xe2\x80\xa6";
}

std::string svg_open(const Frame& f, const std::string& title) {
    return fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                       "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">\n",
                       f.width, f.height, f.width, f.height, escape(title));
}

namespace {

/// Grid lines, tick labels, axis line and title of one axis of the frame: along its bottom
/// (`horizontal`) or up its left side. Ticks that fall outside the frame are left out.
template <class Scale>
std::string frame_axis(const Frame& f, const Scale& scale, const std::vector<Tick>& ticks, const std::string& title,
                       bool horizontal) {
    const double lo = horizontal ? f.x0() : f.y1(), hi = horizontal ? f.x1() : f.y0();
    std::string s;
    for (const auto& t : ticks) {
        const double at = scale(t.value);
        if (at < lo - 0.5 || at > hi + 0.5) continue;
        const auto [ax, ay, bx, by] = horizontal ? std::array{at, f.y1(), at, f.y0()} : std::array{f.x0(), at, f.x1(), at};
        s += fmt::format("<line class=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", t.label.empty() ? "grid2" : "grid",
                         f1(ax), f1(ay), f1(bx), f1(by));
        // A label of the left axis at its very bottom would run into the bottom axis's first label.
        if (!t.label.empty() && (horizontal || at < f.y0() - 7))
            s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>",
                             f1(horizontal ? at : f.x0() - 5), f1(horizontal ? f.y0() + 15 : at + 4),
                             horizontal ? "middle" : "end", escape(t.label));
    }
    s += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", f1(f.x0()), f1(f.y0()),
                     f1(horizontal ? f.x1() : f.x0()), f1(horizontal ? f.y0() : f.y1()));
    if (horizontal)
        s += fmt::format("<text class=\"atitle\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                         f1((f.x0() + f.x1()) / 2), f1(f.height - 8), escape(title));
    else
        s += fmt::format("<text class=\"atitle\" transform=\"translate(14,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                         f1((f.y0() + f.y1()) / 2), escape(title));
    return s;
}

} // namespace

std::string x_axis(const Frame& f, const LinearScale& sx, const std::vector<Tick>& ticks, const std::string& title) {
    return frame_axis(f, sx, ticks, title, true);
}

std::string x_axis(const Frame& f, const LogScale& sx, const std::vector<Tick>& ticks, const std::string& title) {
    return frame_axis(f, sx, ticks, title, true);
}

std::string box_swatch(const std::string& colour) {
    return fmt::format("<svg class=\"sw\" width=\"12\" height=\"12\"><rect width=\"12\" height=\"12\" fill=\"{}\"/></svg>",
                       colour);
}

// ---- what the charts read of a result ------------------------------------------------------------

bool usable(const MetricResult& m) { return m.stats.n > 0 && std::isfinite(m.stats.median); }

namespace {

bool is_ok(const Result& r) { return r.status == Status::ok; }

/// The text of parameter `name`, empty when the result has none.
std::string param(const Result& r, const std::string& name) { return r.params.find(name).value_or(std::string()); }

/// The values axis `name` takes over `rows`, in order of first appearance.
std::vector<std::string> distinct_values(const std::vector<const Result*>& rows, const std::string& name) {
    std::vector<std::string> values;
    for (const auto* r : rows)
        if (std::find(values.begin(), values.end(), param(*r, name)) == values.end()) values.push_back(param(*r, name));
    return values;
}

// Details are JSON as each scenario writes them: read where they are what the charts expect.

/// obj[key] when it is a finite number.
std::optional<double> number_at(const nlohmann::json& obj, const char* key) {
    if (!obj.is_object()) return std::nullopt;
    const auto it = obj.find(key);
    if (it == obj.end() || !it->is_number() || !std::isfinite(it->get<double>())) return std::nullopt;
    return it->get<double>();
}

/// obj[key] as text: a string as it is, another value as JSON; `fallback` when absent or null.
std::string text_at(const nlohmann::json& obj, const char* key, const std::string& fallback = {}) {
    if (!obj.is_object()) return fallback;
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    return it->is_string() ? it->get<std::string>() : it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<double> detail_number(const Result& r, const char* name) { return number_at(r.details, name); }
std::string detail_text(const Result& r, const char* name) { return text_at(r.details, name); }

bool is_size_param(const std::string& name) {
    return name == "size" || name == "footprint" || name == "chunk" || name == "dataset" || name == "batch" ||
           name.ends_with("_size") || name.find("bytes") != std::string::npos;
}

std::optional<double> number(const std::string& text) {
    if (text.empty()) return std::nullopt;
    try {
        std::size_t used = 0;
        const double v = std::stod(text, &used);
        if (used == text.size() && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

std::string param_text(const std::string& name, const std::string& value) {
    if (is_size_param(name))
        if (const auto v = number(value); v && *v >= 0 && *v == std::floor(*v) && *v < 1.8e19)
            return format_size(static_cast<std::uint64_t>(*v));
    return value;
}

/// The parameters of `rows` in the order they first appear, and the values each takes.
struct ParamValues {
    std::vector<std::string> order;
    std::map<std::string, std::set<std::string>> values;
};

ParamValues param_values(const std::vector<const Result*>& rows) {
    ParamValues pv;
    for (const auto* r : rows)
        for (const auto& [k, v] : r->params.items()) {
            if (!pv.values.count(k)) pv.order.push_back(k);
            pv.values[k].insert(v);
        }
    return pv;
}

} // namespace

std::vector<std::string> varying_params(const std::vector<const Result*>& rows, const std::set<std::string>& skip) {
    const ParamValues pv = param_values(rows);
    std::vector<std::string> out;
    for (const auto& k : pv.order)
        if (!skip.count(k) && pv.values.at(k).size() > 1) out.push_back(k);
    return out;
}

std::string constant_params(const std::vector<const Result*>& rows, const std::set<std::string>& skip) {
    const ParamValues pv = param_values(rows);
    std::string out;
    for (const auto& k : pv.order)
        if (!skip.count(k) && pv.values.at(k).size() == 1)
            out += (out.empty() ? "" : ", ") + k + "=" + param_text(k, *pv.values.at(k).begin());
    return out;
}

namespace {

/// A configuration named by the parameters in `names` (those that vary; the fixed ones are
/// named in the caption), as the terminal names it (short_label: "64MiB pinned threads=4");
/// by its scenario when none of them applies.
std::string label_of(const Result& r, const std::vector<std::string>& names) {
    std::vector<std::pair<std::string, std::string>> shown;
    for (const auto& n : names)
        if (const auto v = r.params.find(n)) shown.emplace_back(n, *v);
    if (shown.empty()) return r.scenario;
    return short_label("", Params(shown)).substr(1); // the label without a scenario, so without its leading space
}

constexpr const char* k_zero_copy = "zero-copy: no bytes moved";

/// The hover text of a plotted median: the value, its uncertainty as the terminal table gives
/// it (the larger of the 95% interval's half-width and half the spread of the round medians)
/// and how many samples in how many rounds it stands on.
std::string value_tip(const Result& r, const MetricResult& m) {
    std::string s = format_value(m.stats.median, m.info.unit);
    if (m.stats.n > 1) {
        const Uncertainty u = uncertainty(m);
        s += fmt::format(" \xc2\xb1 {:.2g}% ({})", u.relative * 100,
                         std::string_view(u.source) == "rounds" ? "half the spread between rounds" : "95% interval");
    }
    const int rounds = std::max(1, r.rounds);
    return s + fmt::format(", n = {} sample{} in {} round{}", m.stats.n, m.stats.n == 1 ? "" : "s", rounds, rounds == 1 ? "" : "s");
}

/// `rows` grouped by their label under `names` (label_of): the labels in the order they first
/// appear, and each label's rows in row order.
struct LabelGroups {
    std::vector<std::string> order;
    std::map<std::string, std::vector<const Result*>> rows;
};

LabelGroups group_by_label(const std::vector<const Result*>& rows, const std::vector<std::string>& names) {
    LabelGroups g;
    for (const auto* r : rows) {
        const std::string l = label_of(*r, names);
        if (!g.rows.count(l)) g.order.push_back(l);
        g.rows[l].push_back(r);
    }
    return g;
}

/// A frame of these margins around a plot area of `plot_width` x `plot_height`.
Frame frame_around(double left, double top, double right, double bottom, double plot_width, double plot_height) {
    Frame f;
    f.left = left;
    f.top = top;
    f.right = right;
    f.bottom = bottom;
    f.width = left + plot_width + right;
    f.height = top + plot_height + bottom;
    return f;
}

std::string y_axis(const Frame& f, const LogScale& sy, const std::vector<Tick>& ticks, const std::string& title) {
    return frame_axis(f, sy, ticks, title, false);
}

std::string unit_title(const std::string& metric, const std::string& unit) {
    if (unit == "B/s") return metric + " (GB/s, GB = 1e9 B)";
    if (unit == "s") return metric + " (time)";
    if (unit == "ratio") return metric + " (%)";
    if (unit == "B") return metric + " (bytes)";
    return unit.empty() || unit == "1" ? metric : metric + " (" + unit + ")";
}

std::string swatch(std::size_t i) {
    return fmt::format("<svg class=\"sw\" width=\"26\" height=\"10\"><line x1=\"1\" y1=\"5\" x2=\"25\" y2=\"5\" stroke=\"{}\" "
                       "stroke-width=\"3\" stroke-dasharray=\"{}\"/></svg>",
                       series_colour(i), dash_pattern(i));
}

/// [lo, hi] of positive values, padded a little on a log axis; nullopt when there are none.
std::optional<std::pair<double, double>> log_extent(const std::vector<double>& values) {
    double lo = INFINITY, hi = 0;
    for (double v : values)
        if (v > 0 && std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    if (!(hi > 0)) return std::nullopt;
    if (hi / lo < 1.5) {
        const double mid = std::sqrt(hi * lo);
        lo = std::min(lo, mid / 1.25);
        hi = std::max(hi, mid * 1.25);
    }
    return std::make_pair(lo / 1.08, hi * 1.08);
}

// ---- charts ------------------------------------------------------------------------------------

/// One scenario's primary metric against its size axis, one line per configuration.
std::string size_chart(const std::vector<const Result*>& rows, const std::string& size_param, const std::string& metric,
                       double width = 880, const std::string& heading = {}) {
    std::vector<const Result*> ok;
    for (const auto* r : rows)
        if (is_ok(*r) && r->metric(metric) && usable(*r->metric(metric)) && number(param(*r, size_param))) ok.push_back(r);
    if (ok.empty()) return {};
    const std::string unit = ok[0]->metric(metric)->info.unit;
    const auto size_of = [&](const Result* r) { return *number(param(*r, size_param)); };
    // One series per configuration, its points by size. Series with the same median at every
    // size would hide each other: drawn once, named together ("A = B").
    struct Series {
        std::string label;
        std::vector<const Result*> pts;
    };
    std::vector<Series> drawn;
    bool merged = false;
    std::size_t configurations = 0;
    {
        auto [order, by_label] = group_by_label(ok, varying_params(ok, {size_param}));
        configurations = order.size();
        for (const auto& l : order) {
            auto pts = by_label[l];
            std::sort(pts.begin(), pts.end(), [&](const Result* a, const Result* b) { return size_of(a) < size_of(b); });
            const auto same = std::find_if(drawn.begin(), drawn.end(), [&](const Series& d) {
                return d.pts.size() == pts.size() && std::equal(pts.begin(), pts.end(), d.pts.begin(), [&](const Result* a, const Result* b) {
                           return size_of(a) == size_of(b) && a->metric(metric)->stats.median == b->metric(metric)->stats.median;
                       });
            });
            if (same != drawn.end()) {
                same->label += " = " + l;
                merged = true;
            } else {
                drawn.push_back({l, std::move(pts)});
            }
        }
    }
    std::vector<double> xs, ys;
    std::map<double, std::string> limits; // path bandwidth -> path name
    for (const auto* r : ok) {
        const auto* m = r->metric(metric);
        xs.push_back(size_of(r));
        ys.push_back(m->stats.median);
        if (std::isfinite(m->stats.median_ci_lo)) ys.push_back(m->stats.median_ci_lo);
        if (std::isfinite(m->stats.median_ci_hi)) ys.push_back(m->stats.median_ci_hi);
        if (unit == "B/s")
            if (const auto pb = detail_number(*r, "path_bandwidth"); pb && *pb > 0) {
                limits[*pb] = detail_text(*r, "path");
                ys.push_back(*pb);
            }
    }
    const auto xe = log_extent(xs);
    const auto ye = log_extent(ys);
    if (!xe || !ye) return {};
    Frame f;
    f.width = width;
    const LogScale sx{xe->first, xe->second, f.x0(), f.x1()};
    const LogScale sy{ye->first, ye->second, f.y0(), f.y1()};
    std::string s = svg_open(f, metric + " against " + size_param);
    s += x_axis(f, sx, log_ticks(xe->first, xe->second, "B", std::max(2, static_cast<int>((f.x1() - f.x0()) / 62))), size_param + " (bytes, log)");
    s += y_axis(f, sy, log_ticks(ye->first, ye->second, unit, 7), unit_title(metric, unit) + ", log");
    std::size_t shown = 0;
    for (const auto& [pb, path] : limits) {
        if (++shown > 4) break;
        const double y = sy(pb);
        s += fmt::format("<line class=\"limit\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", f1(f.x0()), f1(y), f1(f.x1()), f1(y));
        s += fmt::format("<text class=\"limtext\" x=\"{}\" y=\"{}\" text-anchor=\"end\">limit {} {}</text>\n", f1(f.x1() - 4),
                         f1(y - 4), escape(path), escape(tick_label(pb, unit)));
    }
    // Many series: thinner lines, no bands (they would cover each other), the legend folded.
    const bool many = drawn.size() > 20;
    bool points_only = false;
    std::string legend = "<ul class=\"legend\">";
    for (std::size_t i = 0; i < drawn.size(); ++i) {
        const auto& [label, pts] = drawn[i];
        // A line through fewer than 3 sizes, or across more than 3 decades without a point,
        // claims a shape it does not show: points instead.
        bool line = pts.size() >= 3;
        for (std::size_t k = 1; k < pts.size(); ++k) line = line && size_of(pts[k]) <= 1000 * size_of(pts[k - 1]);
        points_only = points_only || !line;
        std::string polyline, band_top, band_bottom;
        bool band = line && !many;
        for (const auto* r : pts) {
            const auto* m = r->metric(metric);
            const double x = sx(size_of(r));
            polyline += fmt::format("{},{} ", f1(x), f1(sy(m->stats.median)));
            if (std::isfinite(m->stats.median_ci_lo) && std::isfinite(m->stats.median_ci_hi) && m->stats.median_ci_lo > 0) {
                band_top += fmt::format("{},{} ", f1(x), f1(sy(m->stats.median_ci_hi)));
                band_bottom = fmt::format("{},{} ", f1(x), f1(sy(m->stats.median_ci_lo))) + band_bottom;
            } else {
                band = false;
            }
        }
        const char* c = series_colour(i);
        s += fmt::format("<g><title>{}</title>", escape(label));
        if (band) s += fmt::format("<polygon class=\"band\" fill=\"{}\" points=\"{}{}\"/>", c, band_top, band_bottom);
        if (line)
            s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-dasharray=\"{}\" points=\"{}\"/>", c,
                             many ? "1.2" : "2", dash_pattern(i), polyline);
        for (const auto* r : pts) {
            const auto* m = r->metric(metric);
            const double x = sx(size_of(r));
            if (!line && std::isfinite(m->stats.median_ci_lo) && std::isfinite(m->stats.median_ci_hi) && m->stats.median_ci_lo > 0)
                s += fmt::format("<line stroke=\"{}\" stroke-width=\"2\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", c, f1(x),
                                 f1(sy(m->stats.median_ci_lo)), f1(x), f1(sy(m->stats.median_ci_hi)));
            s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"><title>{} {}: {}</title></circle>", f1(x),
                             f1(sy(m->stats.median)), ok.size() > 200 ? 1.5 : line ? 3 : 4, c, escape(label),
                             escape(param_text(size_param, param(*r, size_param))), escape(value_tip(*r, *m)));
        }
        s += "</g>\n";
        // Efficiency at the largest size, when the run annotated it.
        std::string eff;
        if (const auto e = detail_number(*pts.back(), "efficiency"))
            eff = fmt::format(" <span class=\"eff\">{:.0f}% of limit at {}</span>", *e * 100,
                              escape(param_text(size_param, param(*pts.back(), size_param))));
        else if (const auto* em = pts.back()->metric("efficiency"); em && usable(*em) && em->info.unit == "ratio")
            eff = fmt::format(" <span class=\"eff\">efficiency {:.0f}% at {}</span>", em->stats.median * 100,
                              escape(param_text(size_param, param(*pts.back(), size_param))));
        legend += fmt::format("<li>{}{}{}</li>", swatch(i), escape(label), eff);
    }
    s += "</svg>\n";
    legend += "</ul>\n";
    if (drawn.size() > 12)
        legend = fmt::format("<details><summary>legend: {} series</summary>{}</details>\n", drawn.size(), legend);
    const std::string fixed = constant_params(ok, {size_param});
    std::string how = many ? " (intervals left out above 20 lines)" : " with its 95% interval as a band";
    if (points_only) how += "; a series of fewer than 3 sizes or with a gap over 1000x: points, the interval a whisker";
    if (merged) how += "; \"A = B\": the same median at every size, one line";
    return "<figure>" + (heading.empty() ? std::string() : "<div class=\"facet\">" + escape(heading) + "</div>") + s + legend +
           fmt::format("<figcaption>{} of {} configuration(s), median{}{}{}</figcaption></figure>\n", escape(metric),
                       configurations, escape(how),
                       limits.empty() ? "" : "; dashed: the path's theoretical limit", fixed.empty() ? "" : "; " + escape(fixed));
}

/// `rows` in a stable order that puts the configurations of one size together (the variants of
/// a size side by side): by the value of each size parameter that varies among them, smallest
/// first, in parameter order.
std::vector<const Result*> by_size(std::vector<const Result*> rows) {
    std::vector<std::string> sizes;
    for (const auto& n : varying_params(rows))
        if (is_size_param(n)) sizes.push_back(n);
    std::stable_sort(rows.begin(), rows.end(), [&](const Result* a, const Result* b) {
        for (const auto& n : sizes) {
            const double x = number(param(*a, n)).value_or(-1), y = number(param(*b, n)).value_or(-1);
            if (x != y) return x < y;
        }
        return false;
    });
    return rows;
}

/// The limit a bandwidth figure is drawn against: details.path_bandwidth (the narrowest
/// declared path's limit per counted byte), 0 when the result declares none.
double limit_of(const Result& r) { return std::max(0.0, detail_number(r, "path_bandwidth").value_or(0)); }

/// What a handoff did instead of what it was asked (details.fallback: the protocol refused and
/// a copy was timed instead); empty when it did what it was asked.
std::string fallback_of(const Result& r) { return detail_text(r, "fallback"); }

/// The far end of a bar axis over `rows`: the largest median or interval end, and (one
/// bandwidth metric) the path limits up to twice that; a limit further out would squash every
/// bar to its first pixels, and is marked at the axis's end instead.
double bar_extent(const std::vector<const Result*>& rows, const std::vector<std::string>& metrics) {
    double hi = 0;
    for (const auto* r : rows)
        for (const auto& m : metrics)
            if (const auto* mm = r->metric(m); mm && usable(*mm)) {
                hi = std::max(hi, mm->stats.median);
                if (std::isfinite(mm->stats.median_ci_hi)) hi = std::max(hi, mm->stats.median_ci_hi);
            }
    const double values = hi;
    for (const auto* r : rows)
        if (metrics.size() == 1 && r->metric(metrics[0]) && r->metric(metrics[0])->info.unit == "B/s" && limit_of(*r) <= 2 * values)
            hi = std::max(hi, limit_of(*r));
    return hi;
}

struct BarOptions {
    std::string heading;                 ///< said above the chart and in every bar's hover text
    std::vector<const Result*> among;    ///< the results whose varying parameters name the bars (default: the bars)
    std::set<std::string> unnamed;       ///< parameters left out of the bars' names (a facet's)
    double width = 880;
    double hi = 0;                       ///< the axis's far end, shared by facets (0: from the bars)
};

/// Horizontal bars, one group per configuration, one bar per metric in `metrics` (same unit),
/// on a linear axis from zero: a bar's length is its value, so lengths compare as ratios.
/// Configurations of one size are side by side (by_size), sizes apart by a line. A single
/// bandwidth bar is drawn against the limit of its path (details.path_bandwidth, dashed: one
/// line when every bar has the same, else a mark on each bar) with its efficiency. A
/// configuration that fell back to a copy (details.fallback) says so first in its name.
std::string bar_chart(const std::vector<const Result*>& rows, const std::vector<std::string>& metrics, const BarOptions& o = {}) {
    std::vector<const Result*> ok;
    for (const auto* r : rows)
        if (is_ok(*r) && r->metric(metrics[0]) && usable(*r->metric(metrics[0]))) ok.push_back(r);
    if (ok.empty()) return {};
    ok = by_size(ok);
    const std::string unit = ok[0]->metric(metrics[0])->info.unit;
    const auto names = varying_params(o.among.empty() ? ok : o.among, o.unnamed);
    const double hi = o.hi > 0 ? o.hi : bar_extent(ok, metrics);
    if (!(hi > 0)) return {};
    // Limits: a single bandwidth bar's path limit.
    std::vector<double> limits(ok.size(), 0);
    std::map<double, std::string> paths; // limit -> its path's name
    if (unit == "B/s" && metrics.size() == 1)
        for (std::size_t g = 0; g < ok.size(); ++g)
            if ((limits[g] = limit_of(*ok[g])) > 0) paths[limits[g]] = detail_text(*ok[g], "path");
    const bool one_limit = paths.size() == 1 && std::find(limits.begin(), limits.end(), 0.0) == limits.end();
    std::vector<std::string> labels;
    std::size_t longest = 0;
    for (const auto* r : ok) {
        labels.push_back((fallback_of(*r).empty() ? "" : "fallback: ") + label_of(*r, names));
        longest = std::max(longest, std::min<std::size_t>(48, labels.back().size()));
    }
    const double bar_h = metrics.size() > 1 ? 7 : 12, group_h = bar_h * metrics.size() + 6;
    Frame f;
    f.width = o.width;
    f.right = 110; // room for the value (and efficiency) after the longest bar
    // Room for the longest name, leaving the bars 200 px at least; names cut to fit.
    f.left = std::clamp(text_width(longest, 11) + 16, 90.0, std::min(360.0, f.width - f.right - 200));
    const std::size_t name_chars =
        f.left >= text_width(longest, 11) + 15 ? longest : static_cast<std::size_t>((f.left - 16) / text_width(1, 11));
    f.top = one_limit ? 24 : 8;
    f.height = f.top + f.bottom + group_h * ok.size();
    const LinearScale sx{0, hi * 1.05, f.x0(), f.x1()};
    std::string what;
    for (const auto& m : metrics) what += (what.empty() ? "" : ", ") + m;
    std::string s = svg_open(f, metrics[0] + " per configuration");
    s += x_axis(f, sx, linear_ticks(0, hi * 1.05, unit, std::max(2, static_cast<int>((f.x1() - f.x0()) / 110))),
                unit_title(unit == "s" && metrics.size() > 1 ? "time" : what, unit));
    const std::string note = o.heading.empty() ? std::string() : " (" + o.heading + ")";
    bool efficiency_metric = false, efficiency_limit = false;
    std::vector<std::string> sizes; // the size parameters that vary: a line between sizes
    for (const auto& n : varying_params(ok))
        if (is_size_param(n)) sizes.push_back(n);
    for (std::size_t g = 0; g < ok.size(); ++g) {
        const double y = f.top + g * group_h + 3;
        const std::string& label = labels[g];
        if (g > 0 && std::any_of(sizes.begin(), sizes.end(), [&](const std::string& n) { return param(*ok[g], n) != param(*ok[g - 1], n); }))
            s += fmt::format("<line class=\"sep\" x1=\"4\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", f1(y - 3), f1(f.x1()), f1(y - 3));
        s += fmt::format("<text class=\"rowlabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\"><title>{}</title>{}</text>", f1(f.x0() - 6),
                         f1(y + group_h / 2 + 1), escape(label), escape(shorten(label, name_chars)));
        // Efficiency: a metric of the result (against a reference it measured, the copy roofline),
        // else the share of its path's limit.
        std::optional<double> eff;
        if (const auto* e = ok[g]->metric("efficiency"); e && usable(*e) && e->info.unit == "ratio" && unit != "ratio") {
            eff = e->stats.median;
            efficiency_metric = true;
        } else if (limits[g] > 0) {
            if (const auto e2 = detail_number(*ok[g], "efficiency")) {
                eff = *e2;
                efficiency_limit = true;
            }
        }
        for (std::size_t k = 0; k < metrics.size(); ++k) {
            const auto* m = ok[g]->metric(metrics[k]);
            if (!m || !usable(*m)) continue;
            const double x = std::clamp(sx(m->stats.median), f.x0(), f.x1());
            const double by = y + k * bar_h;
            s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} {}: {}{}</title></rect>",
                             f1(f.x0()), f1(by), f1(std::max(0.5, x - f.x0())), f1(bar_h - 1), series_colour(k), escape(label),
                             escape(metrics[k]), escape(value_tip(*ok[g], *m)), escape(note));
            double end = x;
            if (std::isfinite(m->stats.median_ci_lo) && std::isfinite(m->stats.median_ci_hi)) {
                end = std::max(end, std::clamp(sx(m->stats.median_ci_hi), f.x0(), f.x1()));
                s += fmt::format("<line class=\"whisker\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                                 f1(std::clamp(sx(m->stats.median_ci_lo), f.x0(), f.x1())), f1(by + bar_h / 2 - 0.5), f1(end), f1(by + bar_h / 2 - 0.5));
            }
            // The value (and efficiency) at the bar's end, past the limit's mark where that would
            // cross it: one bar per row has room for it.
            if (metrics.size() == 1) {
                const std::string value = format_value(m->stats.median, unit) + (eff ? fmt::format(" ({:.0f}%)", *eff * 100) : "");
                const double mark = limits[g] > 0 ? sx(limits[g]) : -1;
                const double at = mark > end && mark < end + 6 + text_width(value.size(), 10) ? mark + 4 : end + 4;
                s += fmt::format("<text class=\"barnote\" x=\"{}\" y=\"{}\">{}</text>", f1(at), f1(by + bar_h - 2), escape(value));
            }
        }
        if (metrics.size() > 1 && eff)
            s += fmt::format("<text class=\"barnote\" x=\"{}\" y=\"{}\">{:.0f}%</text>", f1(f.x1() + 4), f1(y + group_h / 2 + 1), *eff * 100);
        if (limits[g] > 0 && !one_limit && sx(limits[g]) <= f.x1())
            s += fmt::format("<line class=\"limit\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"><title>limit {3} {4}</title></line>",
                             f1(sx(limits[g])), f1(y - 2), f1(y + group_h - 4), escape(detail_text(*ok[g], "path")),
                             escape(tick_label(limits[g], unit)));
        else if (limits[g] > 0 && !one_limit) // beyond the axis: an arrowhead at the chart's right edge, past the value
            s += fmt::format("<path class=\"beyond\" d=\"M{0} {1} l6 4 l-6 4 z\"><title>limit {2} {3}, beyond the axis</title></path>",
                             f1(f.width - 8), f1(y + group_h / 2 - 6), escape(detail_text(*ok[g], "path")),
                             escape(tick_label(limits[g], unit)));
    }
    if (one_limit && sx(paths.begin()->first) > f.x1()) {
        const auto& [pb, path] = *paths.begin();
        s += fmt::format("<text class=\"limtext\" x=\"{}\" y=\"{}\" text-anchor=\"end\">limit {} {}: beyond the axis \u2192</text>",
                         f1(f.x1()), f1(f.y1() - 8), escape(path), escape(tick_label(pb, unit)));
    } else if (one_limit) {
        const auto& [pb, path] = *paths.begin();
        const double x = sx(pb);
        const bool right_half = x > (f.x0() + f.x1()) / 2;
        s += fmt::format("<line class=\"limit\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>", f1(x), f1(f.y1() - 4), f1(f.y0()));
        s += fmt::format("<text class=\"limtext\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">limit {} {}</text>", f1(right_half ? x - 4 : x + 4),
                         f1(f.y1() - 8), right_half ? "end" : "start", escape(path), escape(tick_label(pb, unit)));
    }
    s += "</svg>\n";
    std::string legend;
    if (metrics.size() > 1) {
        legend = "<ul class=\"legend\">";
        for (std::size_t k = 0; k < metrics.size(); ++k)
            legend += fmt::format("<li>{}{}</li>", box_swatch(series_colour(k)), escape(metrics[k]));
        legend += "</ul>";
    }
    std::string caption = "median per configuration, whisker: its 95% interval";
    if (!paths.empty())
        caption += one_limit ? "; dashed: the path's theoretical limit"
                             : "; dashed: the theoretical limit of each bar's path (hover for which; an arrowhead on the right: beyond the axis)";
    if (efficiency_metric) caption += metrics.size() > 1 ? "; right: efficiency" : "; (N%): efficiency";
    if (efficiency_limit) caption += "; (N%): of the path's limit";
    if (const std::string fixed = constant_params(ok, o.unnamed); !fixed.empty()) caption += "; " + fixed;
    return "<figure>" + (o.heading.empty() ? std::string() : "<div class=\"facet\">" + escape(o.heading) + "</div>") + s + legend +
           "<figcaption>" + escape(caption) + "</figcaption></figure>\n";
}

/// Bars as bar_chart draws them; more than 12 configurations are split into charts side by
/// side by the parameter with the fewest (2 to 4) values, one axis for all: a cache state, a
/// protocol (a size parameter only when nothing else will do).
std::string faceted_bars(const std::vector<const Result*>& rows, const std::vector<std::string>& metrics, const std::string& heading = {},
                         const std::vector<const Result*>& among = {}) {
    std::vector<const Result*> ok;
    for (const auto* r : rows)
        if (is_ok(*r) && r->metric(metrics[0]) && usable(*r->metric(metrics[0]))) ok.push_back(r);
    std::string facet;
    std::vector<std::string> facet_values;
    if (ok.size() > 12)
        for (const bool size_like : {false, true})
            for (const auto& n : varying_params(ok)) {
                if (is_size_param(n) != size_like || (size_like && !facet.empty())) continue;
                const std::vector<std::string> values = distinct_values(ok, n);
                if (values.size() >= 2 && values.size() <= 4 && (facet_values.empty() || values.size() < facet_values.size())) {
                    facet = n;
                    facet_values = values;
                }
            }
    if (facet.empty()) return bar_chart(rows, metrics, {heading, among});
    std::sort(facet_values.begin(), facet_values.end(), [](const std::string& a, const std::string& b) { // the same order on every chart
        const auto x = number(a), y = number(b);
        return x && y ? *x < *y : a < b;
    });
    std::string out = heading.empty() ? std::string() : "<div class=\"facet\">" + escape(heading) + "</div>";
    out += "<div class=\"facets\">";
    const double hi = bar_extent(ok, metrics);
    for (const auto& v : facet_values) {
        std::vector<const Result*> part;
        for (const auto* r : ok)
            if (param(*r, facet) == v) part.push_back(r);
        out += bar_chart(part, metrics,
                         {facet + "=" + param_text(facet, v), among.empty() ? ok : among, {facet}, facet_values.size() == 2 ? 610.0 : 410.0, hi});
    }
    return out + "</div>\n";
}

/// The colour scale of a heatmap. Within 10x, linear from zero to the largest value: a cell's
/// colour is its share of the largest, so cells 7% apart differ by 7% of the scale, never by
/// all of it. Beyond 10x, logarithmic over the data's own range (from zero, the small cells
/// would all be one colour). `lo` and `hi` are the data's range, `from` where the colour starts.
struct HeatScale {
    double lo = 0, hi = 0, from = 0;
    bool log = false;
    double t(double v) const {
        if (log) return hi > lo ? std::log10(std::max(v, lo) / lo) / std::log10(hi / lo) : 0.5;
        return hi > from ? (v - from) / (hi - from) : 0.5;
    }
};

HeatScale heat_scale(const std::vector<double>& values) {
    HeatScale hs{INFINITY, -INFINITY, 0, false};
    for (double v : values)
        if (std::isfinite(v)) {
            hs.lo = std::min(hs.lo, v);
            hs.hi = std::max(hs.hi, v);
        }
    if (!(hs.hi >= hs.lo)) return {};
    hs.log = hs.lo > 0 && hs.hi > 10 * hs.lo;
    hs.from = hs.log ? hs.lo : std::min(0.0, hs.lo);
    return hs;
}

/// The scale in words, for a caption: what the colours span and how far apart the values are.
std::string scale_words(const HeatScale& hs, const std::string& unit) {
    if (hs.log)
        return fmt::format("colour: {} to {}, log scale of this chart's own values (more than 10x apart)", tick_label(hs.lo, unit),
                           tick_label(hs.hi, unit));
    std::string apart;
    if (hs.lo > 0 && hs.hi > hs.lo) apart = fmt::format(", {:.3g}% apart", (hs.hi / hs.lo - 1) * 100);
    else if (hs.lo > 0) apart = ", all equal";
    return fmt::format("colour: linear from {} to {} (a cell's share of the largest); values {} to {}{}", tick_label(hs.from, unit),
                       tick_label(hs.hi, unit), tick_label(hs.lo, unit), tick_label(hs.hi, unit), apart);
}

/// The colour bar, its ends labelled, and under it a bracket over the part the chart's values
/// cover (all of it on a log scale, which spans the values).
std::string heat_legend(const HeatScale& hs, const std::string& unit) {
    std::string s = "<div class=\"heatlegend\"><svg width=\"380\" height=\"44\">";
    for (int i = 0; i < 60; ++i)
        s += fmt::format("<rect x=\"{}\" y=\"0\" width=\"5.2\" height=\"14\" fill=\"{}\"/>", 40 + i * 5, sequential_colour(i / 59.0));
    const auto label = [&](double t, double v, double y, const char* anchor) {
        return fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>", f1(40 + t * 300), f1(y), anchor,
                           escape(tick_label(v, unit)));
    };
    if (hs.log) {
        s += label(0, hs.lo, 27, "middle");
        if (hs.hi > hs.lo) s += label(1, hs.hi, 27, "middle");
        for (double v = std::pow(10.0, std::ceil(std::log10(hs.lo))); v < hs.hi; v *= 10) // powers of ten between the ends' labels
            if (hs.t(v) > 0.18 && hs.t(v) < 0.82) s += label(hs.t(v), v, 27, "middle");
        return s + "</svg></div>\n";
    }
    s += label(0, hs.from, 27, "middle") + label(1, hs.hi, 27, "middle");
    // The values' span: a bracket from the lowest to the highest cell.
    const double a = 40 + std::clamp(hs.t(hs.lo), 0.0, 1.0) * 300, b = 40 + 300;
    s += fmt::format("<path d=\"M{} 16 V20 H{} V16\" fill=\"none\" stroke=\"#222\"><title>the values: {} to {}</title></path>", f1(a),
                     f1(b), escape(tick_label(hs.lo, unit)), escape(tick_label(hs.hi, unit)));
    if (hs.hi > hs.lo) s += label(hs.t(hs.lo), hs.lo, 40, "middle");
    return s + "</svg></div>\n";
}

/// One cell: coloured by its median, the value written in when it fits; a dashed empty cell
/// without a figure, `missing` saying why.
std::string heat_cell(double x, double y, double w, double h, const HeatScale& hs, const Result* r, const MetricResult* m,
                      const std::string& title, const std::string& missing = "no result") {
    if (!r || !m || !usable(*m))
        return fmt::format("<rect class=\"nocell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}: {}</title></rect>",
                           f1(x), f1(y), f1(w), f1(h), escape(title), escape(missing));
    const double t = hs.t(m->stats.median);
    std::string s = fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>", f1(x),
                                f1(y), f1(w), f1(h), sequential_colour(t), escape(title), escape(value_tip(*r, *m)));
    if (w >= 44 && h >= 14)
        s += fmt::format("<text class=\"cell {}\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", t > 0.6 ? "dark" : "light",
                         f1(x + w / 2), f1(y + h / 2 + 4), escape(tick_label(m->stats.median, m->info.unit)));
    return s;
}

/// Source x destination matrix of results keyed by a pair parameter ("0>1"), at the largest
/// size; one matrix per combination of the other varying parameters (at most 6), all on one
/// colour scale from their values.
std::string pair_heatmaps(const std::vector<const Result*>& rows, const std::string& pair_param, const std::string& metric) {
    std::vector<const Result*> ok;
    for (const auto* r : rows)
        if (is_ok(*r) && r->metric(metric) && param(*r, pair_param).find('>') != std::string::npos) ok.push_back(r);
    if (ok.empty()) return {};
    // The largest size only: the matrix shows the path, not the curve.
    std::string size_param;
    for (const auto& [k, v] : ok[0]->params.items())
        if (is_size_param(k) && number(v) && (size_param.empty() || k == "size")) size_param = k;
    double largest = -1;
    if (!size_param.empty())
        for (const auto* r : ok) largest = std::max(largest, number(param(*r, size_param)).value_or(-1));
    std::vector<const Result*> sel;
    for (const auto* r : ok)
        if (size_param.empty() || number(param(*r, size_param)).value_or(-2) == largest) sel.push_back(r);
    if (sel.empty()) return {};
    std::set<std::string> skip{pair_param};
    if (!size_param.empty()) skip.insert(size_param);
    const auto names = varying_params(sel, skip);
    auto [order, groups] = group_by_label(sel, names);
    const std::string unit = sel[0]->metric(metric)->info.unit;
    std::vector<double> values;
    for (const auto* r : sel)
        if (usable(*r->metric(metric))) values.push_back(r->metric(metric)->stats.median);
    const HeatScale hs = heat_scale(values);
    std::string out = "<div class=\"heatmaps\">";
    for (std::size_t gi = 0; gi < order.size() && gi < 6; ++gi) {
        const auto& g = groups[order[gi]];
        std::vector<std::string> ends;
        for (const auto* r : g) {
            const std::string p = param(*r, pair_param);
            const auto gt = p.find('>');
            for (const std::string& e : {p.substr(0, gt), p.substr(gt + 1)})
                if (std::find(ends.begin(), ends.end(), e) == ends.end()) ends.push_back(e);
        }
        std::sort(ends.begin(), ends.end(), [](const std::string& a, const std::string& b) {
            const auto na = number(a), nb = number(b);
            return na && nb ? *na < *nb : a < b;
        });
        const double n = static_cast<double>(ends.size());
        const double cell = std::clamp(360.0 / n, 12.0, 70.0);
        const Frame f = frame_around(60, 34, 10, 10, cell * n, cell * n);
        std::string s = svg_open(f, metric + " matrix " + order[gi]);
        s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"12\" text-anchor=\"middle\">destination</text>", f1(f.left + cell * n / 2));
        s += fmt::format("<text class=\"tick\" transform=\"translate(12,{}) rotate(-90)\" text-anchor=\"middle\">source</text>",
                         f1(f.top + cell * n / 2));
        const bool labels = cell >= 16;
        for (std::size_t i = 0; i < ends.size(); ++i) {
            if (!labels && i % 4) continue;
            s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", f1(f.left + (i + 0.5) * cell),
                             f1(f.top - 5), escape(shorten(ends[i], 6)));
            s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", f1(f.left - 4),
                             f1(f.top + (i + 0.5) * cell + 4), escape(shorten(ends[i], 6)));
        }
        for (std::size_t a = 0; a < ends.size(); ++a)
            for (std::size_t b = 0; b < ends.size(); ++b) {
                const double x = f.left + b * cell, y = f.top + a * cell;
                if (a == b) {
                    s += fmt::format("<rect class=\"diag\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", f1(x), f1(y), f1(cell), f1(cell));
                    continue;
                }
                const std::string pair = ends[a] + ">" + ends[b];
                const Result* at = nullptr;
                for (const auto* r : g)
                    if (param(*r, pair_param) == pair) at = r;
                // An empty cell says why: the configuration's skip or failure (a pair measured under
                // another, by design), else that there is none.
                std::string missing = "no result";
                if (!at)
                    for (const auto* r : rows)
                        if (!is_ok(*r) && !r->reason.empty() && param(*r, pair_param) == pair && label_of(*r, names) == order[gi] &&
                            (size_param.empty() || number(param(*r, size_param)).value_or(-2) == largest))
                            missing = std::string(to_string(r->status)) + ": " + r->reason;
                s += heat_cell(x, y, cell, cell, hs, at, at ? at->metric(metric) : nullptr, pair, missing);
            }
        s += "</svg>";
        out += fmt::format("<figure class=\"heat\">{}<figcaption>{}</figcaption></figure>", s,
                           names.empty() ? std::string() : escape(order[gi]));
    }
    out += "</div>";
    const std::string fixed = constant_params(sel, {pair_param});
    return out + heat_legend(hs, unit) +
           fmt::format("<p class=\"note\">{} from source (row) to destination (column){}; {}{}{}</p>\n", escape(metric),
                       size_param.empty() ? "" : " at the largest " + escape(size_param), escape(scale_words(hs, unit)),
                       order.size() > 6 ? fmt::format("; first 6 of {} matrices", order.size()) : std::string(),
                       fixed.empty() ? "" : "; " + escape(fixed));
}

} // namespace

/// Scenario x size matrices of a family whose scenarios share a size axis and a bandwidth
/// metric (collectives: one row per collective), each on a colour scale from its own values.
/// Results of different page-cache states (the cache axis: cold, warm) never share a matrix
/// or a scale: one matrix per state, where it has at least two sizes.
std::string family_heatmap(const std::vector<std::string>& scenarios, const std::map<std::string, std::vector<const Result*>>& by,
                           const std::string& size_param, const std::string& metric) {
    const auto plotted = [&](const Result* r) {
        const auto* m = r->metric(metric);
        return is_ok(*r) && !r->moved_no_bytes() && number(param(*r, size_param)) && m && usable(*m);
    };
    std::vector<std::string> states; // "" for results without a cache axis
    for (const auto& sc : scenarios)
        for (const auto* r : by.at(sc))
            if (plotted(r) && std::find(states.begin(), states.end(), param(*r, "cache")) == states.end())
                states.push_back(param(*r, "cache"));
    std::string out;
    for (const auto& state : states) {
        std::vector<std::string> names; // the scenarios with a result in this state
        std::set<double> sizes;
        std::vector<double> values;
        for (const auto& sc : scenarios) {
            bool any = false;
            for (const auto* r : by.at(sc))
                if (plotted(r) && param(*r, "cache") == state) {
                    sizes.insert(*number(param(*r, size_param)));
                    values.push_back(r->metric(metric)->stats.median);
                    any = true;
                }
            if (any) names.push_back(sc);
        }
        if (sizes.size() < 2) continue; // one column: the scenarios' own bars say more
        const HeatScale hs = heat_scale(values);
        const double n = static_cast<double>(sizes.size());
        const double cw = std::clamp(680.0 / n, 14.0, 80.0), ch = 22;
        const Frame f = frame_around(170, 8, 10, 40, cw * n, ch * names.size());
        const std::string heading = states.size() < 2 ? std::string() : state.empty() ? "without a cache axis" : "cache=" + state;
        std::string s = svg_open(f, metric + " per scenario and size" + (heading.empty() ? "" : ", " + heading));
        std::size_t j = 0;
        for (double sz : sizes) {
            if (cw >= 40 || j % static_cast<std::size_t>(std::ceil(40 / cw)) == 0)
                s += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", f1(f.left + (j + 0.5) * cw),
                                 f1(f.top + ch * names.size() + 14), escape(tick_label(sz, "B")));
            ++j;
        }
        s += fmt::format("<text class=\"atitle\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{} (bytes)</text>", f1(f.left + cw * n / 2),
                         f1(f.height - 6), escape(size_param));
        for (std::size_t i = 0; i < names.size(); ++i) {
            const double y = f.top + i * ch;
            s += fmt::format("<text class=\"rowlabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", f1(f.left - 6),
                             f1(y + ch / 2 + 4), escape(shorten(names[i], 26)));
            j = 0;
            for (double sz : sizes) {
                const Result* best = nullptr;
                for (const auto* r : by.at(names[i]))
                    if (plotted(r) && param(*r, "cache") == state && number(param(*r, size_param)) == sz &&
                        (!best || r->metric(metric)->stats.median > best->metric(metric)->stats.median))
                        best = r;
                s += heat_cell(f.left + j * cw, y, cw - 1, ch - 1, hs, best, best ? best->metric(metric) : nullptr,
                               best ? short_label(best->scenario, best->params) : names[i] + " " + tick_label(sz, "B"));
                ++j;
            }
        }
        s += "</svg>";
        out += "<figure>" + (heading.empty() ? std::string() : "<div class=\"facet\">" + escape(heading) + "</div>") + s +
               heat_legend(hs, "B/s") +
               fmt::format("<figcaption>{} of every scenario by {} (the best configuration of each cell); {}</figcaption></figure>\n",
                           escape(metric), escape(size_param), escape(scale_words(hs, "B/s")));
    }
    return out;
}

namespace {

/// A stage breakdown from details.stages ({name: seconds} or [{name, time|seconds}]): one bar
/// per configuration, each stage's share of the stages' summed time, so that configurations of
/// very different lengths compare; the summed time at the bar's end. details.bounding_stage, or
/// the longest, is outlined.
std::string stage_chart(const std::vector<const Result*>& rows) {
    struct Bar {
        std::string label;
        std::vector<std::pair<std::string, double>> stages;
        std::string bounding;
        double sum = 0;
    };
    std::vector<const Result*> ok;
    for (const auto* r : rows)
        if (is_ok(*r) && r->details.is_object() && r->details.contains("stages")) ok.push_back(r);
    if (ok.empty()) return {};
    ok = by_size(ok);
    const auto names = varying_params(ok);
    std::vector<Bar> bars;
    std::vector<std::string> stage_names;
    std::size_t longest = 0;
    for (const auto* r : ok) {
        Bar b{label_of(*r, names), {}, text_at(r->details, "bounding_stage")};
        const auto& st = r->details["stages"];
        if (st.is_object()) {
            for (const auto& [k, v] : st.items())
                if (v.is_number()) b.stages.emplace_back(k, v.get<double>());
                else if (const auto t = number_at(v, "time")) b.stages.emplace_back(k, *t);
        } else if (st.is_array()) {
            for (const auto& e : st)
                if (const auto t = number_at(e, "time") ? number_at(e, "time") : number_at(e, "seconds"))
                    b.stages.emplace_back(text_at(e, "name", "?"), *t);
        }
        double longest_stage = -1;
        for (const auto& [k, v] : b.stages) {
            if (!(v >= 0)) continue;
            b.sum += v;
            if (std::find(stage_names.begin(), stage_names.end(), k) == stage_names.end()) stage_names.push_back(k);
            if (b.bounding.empty() && v > longest_stage) longest_stage = v;
        }
        if (b.bounding.empty())
            for (const auto& [k, v] : b.stages)
                if (v == longest_stage) b.bounding = k;
        longest = std::max(longest, std::min<std::size_t>(48, b.label.size()));
        if (b.sum > 0) bars.push_back(std::move(b));
    }
    if (bars.empty()) return {};
    Frame f;
    f.left = std::clamp(text_width(longest, 11) + 16, 90.0, 360.0);
    f.right = 70; // the summed time
    f.top = 8;
    f.height = f.top + f.bottom + 18.0 * bars.size();
    const LinearScale sx{0, 1, f.x0(), f.x1()};
    std::string s = svg_open(f, "stage shares");
    s += x_axis(f, sx, linear_ticks(0, 1, "ratio", 5), "each stage's share of the stages' summed time (%)");
    for (std::size_t i = 0; i < bars.size(); ++i) {
        const double y = f.top + i * 18 + 3;
        s += fmt::format("<text class=\"rowlabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", f1(f.x0() - 6), f1(y + 10),
                         escape(shorten(bars[i].label, 48)));
        double acc = 0;
        for (const auto& [k, v] : bars[i].stages) {
            if (!(v >= 0)) continue;
            const auto idx = static_cast<std::size_t>(std::find(stage_names.begin(), stage_names.end(), k) - stage_names.begin());
            const bool bound = k == bars[i].bounding;
            const double share = v / bars[i].sum;
            s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"13\" fill=\"{}\"{}><title>{}: {}{}, {:.0f}% of the stages' "
                             "time</title></rect>",
                             f1(sx(acc)), f1(y), f1(std::max(0.5, sx(acc + share) - sx(acc))), series_colour(idx),
                             bound ? " class=\"bound\"" : "", escape(k), escape(format_value(v, "s")), bound ? " (bounding)" : "",
                             share * 100);
            acc += share;
        }
        s += fmt::format("<text class=\"barnote\" x=\"{}\" y=\"{}\">{}</text>", f1(f.x1() + 4), f1(y + 10),
                         escape(format_value(bars[i].sum, "s")));
    }
    s += "</svg>";
    std::string legend = "<ul class=\"legend\">";
    for (std::size_t k = 0; k < stage_names.size(); ++k)
        legend += fmt::format("<li>{}{}</li>", box_swatch(series_colour(k)), escape(stage_names[k]));
    const std::string fixed = constant_params(ok);
    return "<figure>" + s + legend +
           "</ul><figcaption>stage shares per configuration; outlined: the bounding stage; right: the stages' summed time "
           "(overlapped stages sum to more than the pass took)" +
           (fixed.empty() ? std::string() : "; " + escape(fixed)) + "</figcaption></figure>\n";
}

/// The most sizes any one configuration of `rows` has along `size_param` (the others fixed).
std::size_t longest_series(const std::vector<const Result*>& rows, const std::string& size_param) {
    std::map<std::string, std::set<std::string>> sizes;
    for (const auto* r : rows) sizes[label_of(*r, varying_params(rows, {size_param}))].insert(param(*r, size_param));
    std::size_t most = 0;
    for (const auto& [label, s] : sizes) most = std::max(most, s.size());
    return most;
}

/// The charts of one scenario's results that moved bytes, chosen from their parameters,
/// metrics and details.
std::string measured_charts(const std::vector<const Result*>& rows) {
    std::vector<const Result*> ok;
    for (const auto* r : rows)
        if (is_ok(*r) && !r->metrics.empty()) ok.push_back(r);
    if (ok.empty()) return {};
    const std::string primary = ok[0]->metrics[0].info.name;
    const std::string unit = ok[0]->metrics[0].info.unit;
    // A pair axis: the matrix shows every configuration.
    for (const auto& [k, v] : ok[0]->params.items())
        if (v.find('>') != std::string::npos) return pair_heatmaps(rows, k, primary);
    // A size axis along which some configuration has 3 sizes or more: the curve ("size" first,
    // a chunk size is then a series parameter). With fewer, a line or a log axis would say
    // little: bars compare the configurations.
    std::string size_param;
    for (const bool want_size : {true, false})
        for (const auto& [k, v] : ok[0]->params.items())
            if (size_param.empty() && is_size_param(k) && (k == "size") == want_size && number(v) && longest_series(ok, k) >= 3)
                size_param = k;
    std::string out = stage_chart(rows);
    if (!size_param.empty()) {
        // Against size, bandwidth says more than time: the last bandwidth metric the scenario
        // declares (the normalised one where there are several, e.g. a collective's bus
        // bandwidth), else the primary metric.
        std::string curve = primary;
        if (unit != "B/s")
            for (const auto& m : ok[0]->metrics)
                if (m.info.unit == "B/s") curve = m.info.name;
        // Many lines: one chart per value of the parameter with the fewest values (2 to 4;
        // a cache state, a direction), side by side, so each chart keeps a readable few.
        std::vector<const Result*> okc;
        for (const auto* r : ok)
            if (r->metric(curve)) okc.push_back(r);
        const auto names = varying_params(okc, {size_param});
        std::set<std::string> series;
        for (const auto* r : okc) series.insert(label_of(*r, names));
        std::string facet;
        std::vector<std::string> facet_values;
        if (series.size() > 6)
            for (const auto& n : names) {
                const std::vector<std::string> values = distinct_values(okc, n);
                if (values.size() >= 2 && values.size() <= 4 && (facet.empty() || values.size() < facet_values.size())) {
                    facet = n;
                    facet_values = values;
                }
            }
        if (facet.empty()) return out + size_chart(rows, size_param, curve);
        out += "<div class=\"facets\">";
        for (const auto& v : facet_values) {
            std::vector<const Result*> part;
            for (const auto* r : rows)
                if (param(*r, facet) == v) part.push_back(r);
            out += size_chart(part, size_param, curve, facet_values.size() == 2 ? 610 : 410, facet + "=" + param_text(facet, v));
        }
        return out + "</div>\n";
    }
    // Bars: where sizes differ, a bandwidth the scenario declares rather than a time (times of
    // 4 KiB and 64 MiB on one axis: the small ones vanish); else every metric in seconds side by
    // side when the primary is a time (allocation: pair, alloc and free), the copy reference
    // next to a conversion's bandwidth.
    bool sizes_vary = false;
    for (const auto& n : varying_params(ok)) sizes_vary = sizes_vary || is_size_param(n);
    if (unit == "s" && sizes_vary)
        for (const auto& m : ok[0]->metrics)
            if (m.info.unit == "B/s") return out + faceted_bars(rows, {m.info.name});
    std::vector<std::string> metrics{primary};
    for (const auto& m : ok[0]->metrics)
        if (m.info.name != primary && m.info.unit == unit && metrics.size() < 4 &&
            (unit == "s" || m.info.name.starts_with("copy_")))
            metrics.push_back(m.info.name);
    return out + faceted_bars(rows, metrics);
}

/// One line per cause of the handoffs that fell back to a copy (details.fallback), naming them:
/// their bars say "fallback: ", this says why and what was timed instead.
std::string fallback_note(const std::vector<const Result*>& rows) {
    std::vector<std::pair<std::string, std::vector<const Result*>>> causes; // fallback and error -> results
    for (const auto* r : rows) {
        if (!is_ok(*r) || fallback_of(*r).empty()) continue;
        const std::string why = detail_text(*r, "error").empty() ? fallback_of(*r) : detail_text(*r, "error") + "; " + fallback_of(*r);
        auto it = std::find_if(causes.begin(), causes.end(), [&](const auto& c) { return c.first == why; });
        if (it == causes.end()) causes.push_back({why, {r}});
        else it->second.push_back(r);
    }
    if (causes.empty()) return {};
    std::vector<const Result*> all;
    for (const auto* r : rows)
        if (is_ok(*r)) all.push_back(r);
    // Named by what varies among the scenario's results, sizes left out (one name per pair).
    std::set<std::string> sizes;
    for (const auto& n : varying_params(all))
        if (is_size_param(n)) sizes.insert(n);
    const auto names = varying_params(all, sizes);
    std::string s = "<ul class=\"fallback\">";
    for (const auto& [why, rs] : causes) {
        std::vector<std::string> labels;
        for (const auto* r : rs)
            if (const auto l = label_of(*r, names); std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
        std::string list;
        for (std::size_t i = 0; i < labels.size() && i < 8; ++i) list += (i ? ", " : "") + labels[i];
        if (labels.size() > 8) list += fmt::format(" and {} more", labels.size() - 8);
        s += fmt::format("<li><b>fell back to a copy</b> ({} configuration{}: {}): {}</li>", rs.size(), rs.size() == 1 ? "" : "s",
                         escape(list), escape(why));
    }
    return s + "</ul>\n";
}

} // namespace

/// The charts of one scenario: its results that moved bytes as measured_charts draws them,
/// those that moved none (zero-copy) by their time alone, never on a bandwidth axis, and the
/// handoffs that fell back to a copy named with why.
std::string scenario_charts(const std::vector<const Result*>& rows) {
    std::vector<const Result*> moved, zero, ok;
    for (const auto* r : rows) {
        (is_ok(*r) && r->moved_no_bytes() ? zero : moved).push_back(r);
        if (is_ok(*r)) ok.push_back(r);
    }
    std::string out = measured_charts(moved);
    if (!zero.empty())
        for (const auto& m : zero[0]->metrics)
            if (m.info.unit == "s") {
                out += faceted_bars(zero, {m.info.name}, k_zero_copy, ok);
                break;
            }
    return out + fallback_note(rows);
}

} // namespace interopbench::html
