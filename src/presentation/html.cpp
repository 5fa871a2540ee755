// The HTML reporter. Every string that comes from a report goes through escape() before it
// reaches the page; numbers are formatted by the tool. The page has one script element, the
// embedded report (type application/json, never executed), and no external reference.
#include "presentation/html.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

#include <fmt/format.h>

#include "interopbench/html_embed.hpp"
#include "interopbench/text.hpp"
#include "presentation/comparison.hpp"
#include "presentation/output.hpp"
#include "interopbench/params.hpp"
#include "interopbench/report.hpp"

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

// ---- reading a report, whatever its field types ---------------------------------------------

namespace {

using nlohmann::json;

std::string str_of(const json& obj, const char* key, const std::string& fallback = {}) {
    if (!obj.is_object()) return fallback;
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    return it->is_string() ? it->get<std::string>() : it->dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<double> num_of(const json& obj, const char* key) {
    if (!obj.is_object()) return std::nullopt;
    const auto it = obj.find(key);
    if (it == obj.end() || !it->is_number()) return std::nullopt;
    const double v = it->get<double>();
    if (!std::isfinite(v)) return std::nullopt;
    return v;
}

struct Metric {
    std::string name, unit, better;
    double median = NAN, lo = NAN, hi = NAN;
    std::size_t n = 0;
    Uncertainty spread; ///< what the terminal table shows as "± (ci|rounds)"
    bool usable() const { return n > 0 && std::isfinite(median); }
};

struct Row {
    std::string key, scenario, family, status, reason, counting;
    int rounds = 1;
    std::vector<std::pair<std::string, std::string>> params; ///< in param_order when given
    std::vector<Metric> metrics;
    const json* details = nullptr;
    bool ok() const { return status == "ok"; }
    std::string param(const std::string& name) const {
        for (const auto& [k, v] : params)
            if (k == name) return v;
        return {};
    }
    bool has_param(const std::string& name) const {
        for (const auto& [k, v] : params)
            if (k == name) return true;
        return false;
    }
    const Metric* metric(const std::string& name) const {
        for (const auto& m : metrics)
            if (m.name == name) return &m;
        return nullptr;
    }
    std::optional<double> detail(const char* name) const { return details ? num_of(*details, name) : std::nullopt; }
};

std::vector<Row> read_rows(const json& report) {
    std::vector<Row> rows;
    if (!report.is_object() || !report.contains("results") || !report["results"].is_array()) return rows;
    for (const auto& r : report["results"]) {
        if (!r.is_object()) continue;
        Row row;
        row.key = str_of(r, "key");
        row.scenario = str_of(r, "scenario", "?");
        row.family = str_of(r, "family", row.scenario);
        row.status = str_of(r, "status", "?");
        row.reason = str_of(r, "reason");
        row.counting = str_of(r, "counting");
        row.rounds = static_cast<int>(std::clamp(num_of(r, "rounds").value_or(1), 1.0, 1e6));
        if (r.contains("params") && r["params"].is_object()) {
            const auto& p = r["params"];
            std::set<std::string> done;
            if (r.contains("param_order") && r["param_order"].is_array())
                for (const auto& n : r["param_order"])
                    if (n.is_string() && p.contains(n.get<std::string>()) && done.insert(n.get<std::string>()).second)
                        row.params.emplace_back(n.get<std::string>(), str_of(p, n.get<std::string>().c_str()));
            for (const auto& [k, v] : p.items())
                if (!done.count(k)) row.params.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
        }
        if (r.contains("metrics") && r["metrics"].is_array())
            for (const auto& m : r["metrics"]) {
                if (!m.is_object()) continue;
                Metric mm;
                mm.name = str_of(m, "name", "?");
                mm.unit = str_of(m, "unit");
                mm.better = str_of(m, "better", "higher");
                if (m.contains("stats") && m["stats"].is_object()) {
                    const auto& s = m["stats"];
                    mm.median = num_of(s, "median").value_or(NAN);
                    mm.n = static_cast<std::size_t>(std::max(0.0, num_of(s, "n").value_or(0)));
                    if (s.contains("median_ci") && s["median_ci"].is_array() && s["median_ci"].size() == 2 &&
                        s["median_ci"][0].is_number() && s["median_ci"][1].is_number()) {
                        mm.lo = s["median_ci"][0].get<double>();
                        mm.hi = s["median_ci"][1].get<double>();
                    }
                }
                // The uncertainty the way the terminal table computes it, from the same fields.
                MetricResult mr;
                mr.stats.n = mm.n;
                mr.stats.median = std::isfinite(mm.median) ? mm.median : 0;
                mr.stats.median_ci_lo = std::isfinite(mm.lo) ? mm.lo : mr.stats.median;
                mr.stats.median_ci_hi = std::isfinite(mm.hi) ? mm.hi : mr.stats.median;
                if (m.contains("round_medians") && m["round_medians"].is_array())
                    for (const auto& v : m["round_medians"])
                        if (v.is_number() && std::isfinite(v.get<double>())) mr.round_medians.push_back(v.get<double>());
                mm.spread = uncertainty(mr);
                row.metrics.push_back(std::move(mm));
            }
        if (r.contains("details") && r["details"].is_object()) row.details = &r["details"];
        rows.push_back(std::move(row));
    }
    return rows;
}

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

ParamValues param_values(const std::vector<const Row*>& rows) {
    ParamValues pv;
    for (const auto* r : rows)
        for (const auto& [k, v] : r->params) {
            if (!pv.values.count(k)) pv.order.push_back(k);
            pv.values[k].insert(v);
        }
    return pv;
}

/// Parameters that take more than one value among `rows`, minus `skip`: what tells the
/// configurations apart (the constant ones are named once, in the chart's caption).
std::vector<std::string> varying_params(const std::vector<const Row*>& rows, const std::set<std::string>& skip = {}) {
    const ParamValues pv = param_values(rows);
    std::vector<std::string> out;
    for (const auto& k : pv.order)
        if (!skip.count(k) && pv.values.at(k).size() > 1) out.push_back(k);
    return out;
}

std::string constant_params(const std::vector<const Row*>& rows, const std::set<std::string>& skip = {}) {
    const ParamValues pv = param_values(rows);
    std::string out;
    for (const auto& k : pv.order)
        if (!skip.count(k) && pv.values.at(k).size() == 1)
            out += (out.empty() ? "" : ", ") + k + "=" + param_text(k, *pv.values.at(k).begin());
    return out;
}

/// A configuration named by the parameters in `names` (those that vary; the fixed ones are
/// named in the caption), as the terminal names it (short_label: "64MiB pinned threads=4");
/// by its scenario when none of them applies.
std::string label_of(const Row& r, const std::vector<std::string>& names) {
    std::vector<std::pair<std::string, std::string>> shown;
    for (const auto& n : names)
        if (r.has_param(n)) shown.emplace_back(n, r.param(n));
    if (shown.empty()) return r.scenario;
    return short_label("", Params(shown)).substr(1); // the label without a scenario, so without its leading space
}

/// True when the result moved no bytes: a zero-copy handoff (details.pointer_shared or
/// details.zero_copy true, or a count of bytes moved or copied that is 0). Its "bandwidth" is
/// the size over the time of a pointer exchange, not a transfer: it is shown by its time.
bool moved_nothing(const Row& r) {
    if (r.details)
        for (const char* flag : {"pointer_shared", "zero_copy"})
            if (const auto it = r.details->find(flag); it != r.details->end() && it->is_boolean() && it->get<bool>()) return true;
    for (const char* count : {"bytes_moved", "copied", "copied_bytes"}) {
        if (const auto d = r.detail(count); d && *d == 0) return true;
        if (const auto* m = r.metric(count); m && m->usable() && m->unit == "B" && m->median == 0) return true;
    }
    return false;
}

constexpr const char* k_zero_copy = "zero-copy: no bytes moved";

/// The hover text of a plotted median: the value, its uncertainty as the terminal table gives
/// it (the larger of the 95% interval's half-width and half the spread of the round medians)
/// and how many samples in how many rounds it stands on.
std::string value_tip(const Row& r, const Metric& m) {
    std::string s = format_value(m.median, m.unit);
    if (m.n > 1)
        s += fmt::format(" \xc2\xb1 {:.2g}% ({})", m.spread.relative * 100,
                         std::string_view(m.spread.source) == "rounds" ? "half the spread between rounds" : "95% interval");
    return s + fmt::format(", n = {} sample{} in {} round{}", m.n, m.n == 1 ? "" : "s", r.rounds, r.rounds == 1 ? "" : "s");
}

/// `rows` grouped by their label under `names` (label_of): the labels in the order they first
/// appear, and each label's rows in row order.
struct LabelGroups {
    std::vector<std::string> order;
    std::map<std::string, std::vector<const Row*>> rows;
};

LabelGroups group_by_label(const std::vector<const Row*>& rows, const std::vector<std::string>& names) {
    LabelGroups g;
    for (const auto* r : rows) {
        const std::string l = label_of(*r, names);
        if (!g.rows.count(l)) g.order.push_back(l);
        g.rows[l].push_back(r);
    }
    return g;
}

std::string shorten(const std::string& s, std::size_t max) {
    // Cut on a character boundary (never inside a UTF-8 sequence).
    if (s.size() <= max) return s;
    std::size_t cut = max - 1;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
    return s.substr(0, cut) + "\xe2\x80\xa6";
}

std::string f1(double v) { return fmt::format("{:.1f}", v); }

// ---- SVG pieces ------------------------------------------------------------------------------

struct Frame {
    double width = 880, height = 340, left = 78, right = 16, top = 14, bottom = 46;
    double x0() const { return left; }
    double x1() const { return width - right; }
    double y0() const { return height - bottom; }
    double y1() const { return top; }
};

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

std::string svg_open(const Frame& f, const std::string& title) {
    return fmt::format("<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                       "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">\n",
                       f.width, f.height, f.width, f.height, escape(title));
}

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
        if (!t.label.empty())
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

template <class Scale>
std::string x_axis(const Frame& f, const Scale& sx, const std::vector<Tick>& ticks, const std::string& title) {
    return frame_axis(f, sx, ticks, title, true);
}

template <class Scale>
std::string y_axis(const Frame& f, const Scale& sy, const std::vector<Tick>& ticks, const std::string& title) {
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

std::string box_swatch(const std::string& colour) {
    return fmt::format("<svg class=\"sw\" width=\"12\" height=\"12\"><rect width=\"12\" height=\"12\" fill=\"{}\"/></svg>",
                       colour);
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
std::string size_chart(const std::vector<const Row*>& rows, const std::string& size_param, const std::string& metric,
                       double width = 880, const std::string& heading = {}) {
    std::vector<const Row*> ok;
    for (const auto* r : rows)
        if (r->ok() && r->metric(metric) && r->metric(metric)->usable() && number(r->param(size_param))) ok.push_back(r);
    if (ok.empty()) return {};
    const std::string unit = ok[0]->metric(metric)->unit;
    const auto size_of = [&](const Row* r) { return *number(r->param(size_param)); };
    // One series per configuration, its points by size. Series with the same median at every
    // size would hide each other: drawn once, named together ("A = B").
    struct Series {
        std::string label;
        std::vector<const Row*> pts;
    };
    std::vector<Series> drawn;
    bool merged = false;
    std::size_t configurations = 0;
    {
        auto [order, by_label] = group_by_label(ok, varying_params(ok, {size_param}));
        configurations = order.size();
        for (const auto& l : order) {
            auto pts = by_label[l];
            std::sort(pts.begin(), pts.end(), [&](const Row* a, const Row* b) { return size_of(a) < size_of(b); });
            const auto same = std::find_if(drawn.begin(), drawn.end(), [&](const Series& d) {
                return d.pts.size() == pts.size() && std::equal(pts.begin(), pts.end(), d.pts.begin(), [&](const Row* a, const Row* b) {
                           return size_of(a) == size_of(b) && a->metric(metric)->median == b->metric(metric)->median;
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
        ys.push_back(m->median);
        if (std::isfinite(m->lo)) ys.push_back(m->lo);
        if (std::isfinite(m->hi)) ys.push_back(m->hi);
        if (unit == "B/s")
            if (const auto pb = r->detail("path_bandwidth"); pb && *pb > 0) {
                limits[*pb] = r->details ? str_of(*r->details, "path") : std::string();
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
            polyline += fmt::format("{},{} ", f1(x), f1(sy(m->median)));
            if (std::isfinite(m->lo) && std::isfinite(m->hi) && m->lo > 0) {
                band_top += fmt::format("{},{} ", f1(x), f1(sy(m->hi)));
                band_bottom = fmt::format("{},{} ", f1(x), f1(sy(m->lo))) + band_bottom;
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
            if (!line && std::isfinite(m->lo) && std::isfinite(m->hi) && m->lo > 0)
                s += fmt::format("<line stroke=\"{}\" stroke-width=\"2\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", c, f1(x),
                                 f1(sy(m->lo)), f1(x), f1(sy(m->hi)));
            s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"><title>{} {}: {}</title></circle>", f1(x),
                             f1(sy(m->median)), ok.size() > 200 ? 1.5 : line ? 3 : 4, c, escape(label),
                             escape(param_text(size_param, r->param(size_param))), escape(value_tip(*r, *m)));
        }
        s += "</g>\n";
        // Efficiency at the largest size, when the run annotated it.
        std::string eff;
        if (const auto e = pts.back()->detail("efficiency"))
            eff = fmt::format(" <span class=\"eff\">{:.0f}% of limit at {}</span>", *e * 100,
                              escape(param_text(size_param, pts.back()->param(size_param))));
        else if (const auto* em = pts.back()->metric("efficiency"); em && em->usable() && em->unit == "ratio")
            eff = fmt::format(" <span class=\"eff\">efficiency {:.0f}% at {}</span>", em->median * 100,
                              escape(param_text(size_param, pts.back()->param(size_param))));
        legend += fmt::format("<li>{}{}{}</li>", swatch(i), escape(label), eff);
    }
    s += "</svg>\n";
    legend += "</ul>\n";
    if (drawn.size() > 24)
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

/// Horizontal bars, one group per configuration, one bar per metric in `metrics` (same unit),
/// on a linear axis from zero: a bar's length is its value, so lengths compare as ratios.
/// `heading`, when given, is said above the chart and in every bar's hover text. Bars are named
/// by the parameters that vary among `among` (the scenario's results, when the bars are a part
/// of them), else among the bars.
std::string bar_chart(const std::vector<const Row*>& rows, const std::vector<std::string>& metrics, const std::string& heading = {},
                      const std::vector<const Row*>& among = {}) {
    std::vector<const Row*> ok;
    for (const auto* r : rows)
        if (r->ok() && r->metric(metrics[0]) && r->metric(metrics[0])->usable()) ok.push_back(r);
    if (ok.empty()) return {};
    const std::string unit = ok[0]->metric(metrics[0])->unit;
    const auto names = varying_params(among.empty() ? ok : among);
    double hi = 0;
    for (const auto* r : ok)
        for (const auto& m : metrics)
            if (const auto* mm = r->metric(m); mm && mm->usable()) {
                hi = std::max(hi, mm->median);
                if (std::isfinite(mm->hi)) hi = std::max(hi, mm->hi);
            }
    if (!(hi > 0)) return {};
    const double bar_h = metrics.size() > 1 ? 7 : 12, group_h = bar_h * metrics.size() + 6;
    Frame f;
    f.left = 300;
    f.right = 90; // room for the value (or the efficiency) after the longest bar
    f.top = 8;
    f.height = f.top + f.bottom + group_h * ok.size();
    const LinearScale sx{0, hi * 1.05, f.x0(), f.x1()};
    std::string what;
    for (const auto& m : metrics) what += (what.empty() ? "" : ", ") + m;
    std::string s = svg_open(f, metrics[0] + " per configuration");
    s += x_axis(f, sx, linear_ticks(0, hi * 1.05, unit, 6), unit_title(unit == "s" && metrics.size() > 1 ? "time" : what, unit));
    const std::string note = heading.empty() ? std::string() : " (" + heading + ")";
    for (std::size_t g = 0; g < ok.size(); ++g) {
        const double y = f.top + g * group_h + 3;
        const std::string label = label_of(*ok[g], names);
        s += fmt::format("<text class=\"rowlabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\"><title>{}</title>{}</text>", f1(f.x0() - 6),
                         f1(y + group_h / 2 + 1), escape(label), escape(shorten(label, 48)));
        for (std::size_t k = 0; k < metrics.size(); ++k) {
            const auto* m = ok[g]->metric(metrics[k]);
            if (!m || !m->usable()) continue;
            const double x = std::clamp(sx(m->median), f.x0(), f.x1());
            const double by = y + k * bar_h;
            s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} {}: {}{}</title></rect>",
                             f1(f.x0()), f1(by), f1(std::max(0.5, x - f.x0())), f1(bar_h - 1), series_colour(k), escape(label),
                             escape(metrics[k]), escape(value_tip(*ok[g], *m)), escape(note));
            double end = x;
            if (std::isfinite(m->lo) && std::isfinite(m->hi)) {
                end = std::max(end, std::clamp(sx(m->hi), f.x0(), f.x1()));
                s += fmt::format("<line class=\"whisker\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
                                 f1(std::clamp(sx(m->lo), f.x0(), f.x1())), f1(by + bar_h / 2 - 0.5), f1(end), f1(by + bar_h / 2 - 0.5));
            }
            // The value at the bar's end: one bar per row has room for it.
            if (metrics.size() == 1)
                s += fmt::format("<text class=\"barnote\" x=\"{}\" y=\"{}\">{}</text>", f1(end + 4), f1(by + bar_h - 2),
                                 escape(format_value(m->median, unit)));
        }
        // Efficiency against a reference (the copy roofline, the path), when measured.
        if (const auto* e = ok[g]->metric("efficiency"); e && e->usable() && e->unit == "ratio" && unit != "ratio")
            s += fmt::format("<text class=\"barnote\" x=\"{}\" y=\"{}\">{:.0f}%</text>", f1(f.x1() + 4), f1(y + group_h / 2 + 1),
                             e->median * 100);
    }
    s += "</svg>\n";
    std::string legend;
    if (metrics.size() > 1) {
        legend = "<ul class=\"legend\">";
        for (std::size_t k = 0; k < metrics.size(); ++k)
            legend += fmt::format("<li>{}{}</li>", box_swatch(series_colour(k)), escape(metrics[k]));
        legend += "</ul>";
    }
    const std::string fixed = constant_params(ok);
    return "<figure>" + (heading.empty() ? std::string() : "<div class=\"facet\">" + escape(heading) + "</div>") + s + legend +
           fmt::format("<figcaption>median per configuration, whisker: its 95% interval{}{}</figcaption></figure>\n",
                       ok[0]->metric("efficiency") ? "; right: efficiency" : "", fixed.empty() ? "" : "; " + escape(fixed));
}

/// The colour scale of a heatmap, from the range of its own data: logarithmic when the largest
/// value is more than 10 times the smallest, linear otherwise.
struct HeatScale {
    double lo = 0, hi = 0;
    bool log = false;
    double t(double v) const {
        if (!(hi > lo)) return 0.5;
        return log ? std::log10(std::max(v, lo) / lo) / std::log10(hi / lo) : (v - lo) / (hi - lo);
    }
};

HeatScale heat_scale(const std::vector<double>& values) {
    HeatScale hs{INFINITY, -INFINITY, false};
    for (double v : values)
        if (std::isfinite(v)) {
            hs.lo = std::min(hs.lo, v);
            hs.hi = std::max(hs.hi, v);
        }
    if (!(hs.hi >= hs.lo)) return {};
    hs.log = hs.lo > 0 && hs.hi > 10 * hs.lo;
    return hs;
}

/// The scale in words, for a caption: "colour: 1.2 GB/s to 31.6 GB/s, log scale of this chart's own values".
std::string scale_words(const HeatScale& hs, const std::string& unit) {
    return fmt::format("colour: {} to {}, {} scale of this chart's own values", tick_label(hs.lo, unit), tick_label(hs.hi, unit),
                       hs.log ? "log" : "linear");
}

std::string heat_legend(const HeatScale& hs, const std::string& unit) {
    std::string s = "<div class=\"heatlegend\"><svg width=\"380\" height=\"34\">";
    for (int i = 0; i < 60; ++i)
        s += fmt::format("<rect x=\"{}\" y=\"0\" width=\"5.2\" height=\"14\" fill=\"{}\"/>", 40 + i * 5, sequential_colour(i / 59.0));
    const auto label = [&](double t, double v) {
        return fmt::format("<text class=\"tick\" x=\"{}\" y=\"28\" text-anchor=\"middle\">{}</text>", f1(40 + t * 300),
                           escape(tick_label(v, unit)));
    };
    s += label(0, hs.lo);
    if (hs.hi > hs.lo) s += label(1, hs.hi);
    if (hs.log) // the powers of ten in between, where they leave room for the ends' labels
        for (double v = std::pow(10.0, std::ceil(std::log10(hs.lo))); v < hs.hi; v *= 10)
            if (hs.t(v) > 0.18 && hs.t(v) < 0.82) s += label(hs.t(v), v);
    return s + "</svg></div>\n";
}

std::string heat_cell(double x, double y, double w, double h, const HeatScale& hs, const Row* r, const Metric* m,
                      const std::string& title) {
    if (!r || !m || !m->usable())
        return fmt::format("<rect class=\"nocell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}: no result</title></rect>",
                           f1(x), f1(y), f1(w), f1(h), escape(title));
    const double t = hs.t(m->median);
    std::string s = fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>", f1(x),
                                f1(y), f1(w), f1(h), sequential_colour(t), escape(title), escape(value_tip(*r, *m)));
    if (w >= 44 && h >= 14)
        s += fmt::format("<text class=\"cell {}\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", t > 0.6 ? "dark" : "light",
                         f1(x + w / 2), f1(y + h / 2 + 4), escape(tick_label(m->median, m->unit)));
    return s;
}

/// Source x destination matrix of results keyed by a pair parameter ("0>1"), at the largest
/// size; one matrix per combination of the other varying parameters (at most 6), all on one
/// colour scale from their values.
std::string pair_heatmaps(const std::vector<const Row*>& rows, const std::string& pair_param, const std::string& metric) {
    std::vector<const Row*> ok;
    for (const auto* r : rows)
        if (r->ok() && r->metric(metric) && r->param(pair_param).find('>') != std::string::npos) ok.push_back(r);
    if (ok.empty()) return {};
    // The largest size only: the matrix shows the path, not the curve.
    std::string size_param;
    for (const auto& [k, v] : ok[0]->params)
        if (is_size_param(k) && number(v) && (size_param.empty() || k == "size")) size_param = k;
    double largest = -1;
    if (!size_param.empty())
        for (const auto* r : ok) largest = std::max(largest, number(r->param(size_param)).value_or(-1));
    std::vector<const Row*> sel;
    for (const auto* r : ok)
        if (size_param.empty() || number(r->param(size_param)).value_or(-2) == largest) sel.push_back(r);
    if (sel.empty()) return {};
    std::set<std::string> skip{pair_param};
    if (!size_param.empty()) skip.insert(size_param);
    const auto names = varying_params(sel, skip);
    auto [order, groups] = group_by_label(sel, names);
    const std::string unit = sel[0]->metric(metric)->unit;
    std::vector<double> values;
    for (const auto* r : sel)
        if (r->metric(metric)->usable()) values.push_back(r->metric(metric)->median);
    const HeatScale hs = heat_scale(values);
    std::string out = "<div class=\"heatmaps\">";
    for (std::size_t gi = 0; gi < order.size() && gi < 6; ++gi) {
        const auto& g = groups[order[gi]];
        std::vector<std::string> ends;
        for (const auto* r : g) {
            const std::string p = r->param(pair_param);
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
                const Row* at = nullptr;
                for (const auto* r : g)
                    if (r->param(pair_param) == ends[a] + ">" + ends[b]) at = r;
                s += heat_cell(x, y, cell, cell, hs, at, at ? at->metric(metric) : nullptr, ends[a] + ">" + ends[b]);
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

/// Scenario x size matrices of a family whose scenarios share a size axis and a bandwidth
/// metric (collectives: one row per collective), each on a colour scale from its own values.
/// Results of different page-cache states (the cache axis: cold, warm) never share a matrix
/// or a scale: one matrix per state, where it has at least two sizes.
std::string family_heatmap(const std::vector<std::string>& scenarios, const std::map<std::string, std::vector<const Row*>>& by,
                           const std::string& size_param, const std::string& metric) {
    const auto usable = [&](const Row* r) {
        const auto* m = r->metric(metric);
        return r->ok() && !moved_nothing(*r) && number(r->param(size_param)) && m && m->usable();
    };
    std::vector<std::string> states; // "" for results without a cache axis
    for (const auto& sc : scenarios)
        for (const auto* r : by.at(sc))
            if (usable(r) && std::find(states.begin(), states.end(), r->param("cache")) == states.end())
                states.push_back(r->param("cache"));
    std::string out;
    for (const auto& state : states) {
        std::vector<std::string> names; // the scenarios with a result in this state
        std::set<double> sizes;
        std::vector<double> values;
        for (const auto& sc : scenarios) {
            bool any = false;
            for (const auto* r : by.at(sc))
                if (usable(r) && r->param("cache") == state) {
                    sizes.insert(*number(r->param(size_param)));
                    values.push_back(r->metric(metric)->median);
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
                const Row* best = nullptr;
                for (const auto* r : by.at(names[i]))
                    if (usable(r) && r->param("cache") == state && number(r->param(size_param)) == sz &&
                        (!best || r->metric(metric)->median > best->metric(metric)->median))
                        best = r;
                s += heat_cell(f.left + j * cw, y, cw - 1, ch - 1, hs, best, best ? best->metric(metric) : nullptr,
                               best ? short_label(best->scenario, Params(best->params)) : names[i] + " " + tick_label(sz, "B"));
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

/// A stage breakdown from details.stages ({name: seconds} or [{name, time|seconds}]) as one
/// stacked bar per configuration; details.bounding_stage, or the longest, is outlined.
std::string stage_chart(const std::vector<const Row*>& rows) {
    struct Bar {
        std::string label;
        std::vector<std::pair<std::string, double>> stages;
        std::string bounding;
    };
    std::vector<const Row*> ok;
    for (const auto* r : rows)
        if (r->ok() && r->details && r->details->contains("stages")) ok.push_back(r);
    if (ok.empty()) return {};
    const auto names = varying_params(ok);
    std::vector<Bar> bars;
    std::vector<std::string> stage_names;
    double hi = 0;
    for (const auto* r : ok) {
        Bar b{label_of(*r, names), {}, str_of(*r->details, "bounding_stage")};
        const auto& st = (*r->details)["stages"];
        if (st.is_object()) {
            for (const auto& [k, v] : st.items())
                if (v.is_number()) b.stages.emplace_back(k, v.get<double>());
                else if (v.is_object() && num_of(v, "time")) b.stages.emplace_back(k, *num_of(v, "time"));
        } else if (st.is_array()) {
            for (const auto& e : st)
                if (const auto t = num_of(e, "time") ? num_of(e, "time") : num_of(e, "seconds"))
                    b.stages.emplace_back(str_of(e, "name", "?"), *t);
        }
        double sum = 0, longest = -1;
        for (const auto& [k, v] : b.stages) {
            if (!(v >= 0)) continue;
            sum += v;
            if (std::find(stage_names.begin(), stage_names.end(), k) == stage_names.end()) stage_names.push_back(k);
            if (b.bounding.empty() && v > longest) longest = v;
        }
        if (b.bounding.empty())
            for (const auto& [k, v] : b.stages)
                if (v == longest) b.bounding = k;
        hi = std::max(hi, sum);
        if (!b.stages.empty()) bars.push_back(std::move(b));
    }
    if (bars.empty() || !(hi > 0)) return {};
    Frame f;
    f.left = 300;
    f.top = 8;
    f.height = f.top + f.bottom + 18.0 * bars.size();
    const LinearScale sx{0, hi * 1.05, f.x0(), f.x1()};
    std::string s = svg_open(f, "stage breakdown");
    s += x_axis(f, sx, linear_ticks(0, hi * 1.05, "s", 6), "time per stage, stacked (s)");
    for (std::size_t i = 0; i < bars.size(); ++i) {
        const double y = f.top + i * 18 + 3;
        s += fmt::format("<text class=\"rowlabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", f1(f.x0() - 6), f1(y + 10),
                         escape(shorten(bars[i].label, 48)));
        double acc = 0;
        for (const auto& [k, v] : bars[i].stages) {
            if (!(v >= 0)) continue;
            const auto idx = static_cast<std::size_t>(std::find(stage_names.begin(), stage_names.end(), k) - stage_names.begin());
            const bool bound = k == bars[i].bounding;
            s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"13\" fill=\"{}\"{}><title>{}: {}{}</title></rect>",
                             f1(sx(acc)), f1(y), f1(std::max(0.5, sx(acc + v) - sx(acc))), series_colour(idx),
                             bound ? " class=\"bound\"" : "", escape(k), escape(format_value(v, "s")), bound ? " (bounding)" : "");
            acc += v;
        }
    }
    s += "</svg>";
    std::string legend = "<ul class=\"legend\">";
    for (std::size_t k = 0; k < stage_names.size(); ++k)
        legend += fmt::format("<li>{}{}</li>", box_swatch(series_colour(k)), escape(stage_names[k]));
    return "<figure>" + s + legend +
           "</ul><figcaption>stage breakdown; outlined: the bounding stage</figcaption></figure>\n";
}

/// The charts of one scenario's results that moved bytes, chosen from their parameters,
/// metrics and details.
std::string measured_charts(const std::vector<const Row*>& rows) {
    std::vector<const Row*> ok;
    for (const auto* r : rows)
        if (r->ok() && !r->metrics.empty()) ok.push_back(r);
    if (ok.empty()) return {};
    const std::string primary = ok[0]->metrics[0].name;
    const std::string unit = ok[0]->metrics[0].unit;
    std::string out;
    // A pair axis: the matrix.
    for (const auto& [k, v] : ok[0]->params)
        if (v.find('>') != std::string::npos) {
            out += pair_heatmaps(rows, k, primary);
            break;
        }
    // A size axis with several sizes: the curve.
    std::string size_param;
    // The size axis that varies, "size" first (a chunk size is then a series parameter).
    for (const bool want_size : {true, false})
        for (const auto& [k, v] : ok[0]->params)
            if (size_param.empty() && is_size_param(k) && (k == "size") == want_size && number(v)) {
                std::set<std::string> values;
                for (const auto* r : ok) values.insert(r->param(k));
                if (values.size() > 1) size_param = k;
            }
    out += stage_chart(rows);
    if (!size_param.empty()) {
        // Against size, bandwidth says more than time: the last bandwidth metric the scenario
        // declares (the normalised one where there are several, e.g. a collective's bus
        // bandwidth), else the primary metric.
        std::string curve = primary;
        if (unit != "B/s")
            for (const auto& m : ok[0]->metrics)
                if (m.unit == "B/s") curve = m.name;
        // Many lines: one chart per value of the parameter with the fewest values (2 to 4;
        // a cache state, a direction), side by side, so each chart keeps a readable few.
        std::vector<const Row*> okc;
        for (const auto* r : ok)
            if (r->metric(curve)) okc.push_back(r);
        const auto names = varying_params(okc, {size_param});
        std::set<std::string> series;
        for (const auto* r : okc) series.insert(label_of(*r, names));
        std::string facet;
        std::vector<std::string> facet_values;
        if (series.size() > 6)
            for (const auto& n : names) {
                std::vector<std::string> values;
                for (const auto* r : okc)
                    if (std::find(values.begin(), values.end(), r->param(n)) == values.end()) values.push_back(r->param(n));
                if (values.size() >= 2 && values.size() <= 4 && (facet.empty() || values.size() < facet_values.size())) {
                    facet = n;
                    facet_values = values;
                }
            }
        if (facet.empty()) return out + size_chart(rows, size_param, curve);
        out += "<div class=\"facets\">";
        for (const auto& v : facet_values) {
            std::vector<const Row*> part;
            for (const auto* r : rows)
                if (r->param(facet) == v) part.push_back(r);
            out += size_chart(part, size_param, curve, facet_values.size() == 2 ? 610 : 410, facet + "=" + param_text(facet, v));
        }
        return out + "</div>\n";
    }
    if (!out.empty()) return out; // the matrix (or stages) already shows every configuration
    // Otherwise bars: every metric in seconds side by side when the primary is a time
    // (allocation: pair, alloc and free), the copy reference next to a conversion's bandwidth.
    std::vector<std::string> metrics{primary};
    for (const auto& m : ok[0]->metrics)
        if (m.name != primary && m.unit == unit && metrics.size() < 4 && (unit == "s" || m.name.starts_with("copy_")))
            metrics.push_back(m.name);
    return out + bar_chart(rows, metrics);
}

/// The charts of one scenario: its results that moved bytes as measured_charts draws them,
/// those that moved none (zero-copy) by their time alone, never on a bandwidth axis.
std::string scenario_charts(const std::vector<const Row*>& rows) {
    std::vector<const Row*> moved, zero, ok;
    for (const auto* r : rows) {
        (r->ok() && moved_nothing(*r) ? zero : moved).push_back(r);
        if (r->ok()) ok.push_back(r);
    }
    std::string out = measured_charts(moved);
    if (!zero.empty())
        for (const auto& m : zero[0]->metrics)
            if (m.unit == "s") {
                out += bar_chart(zero, {m.name}, k_zero_copy, ok);
                break;
            }
    return out;
}

// ---- page ------------------------------------------------------------------------------------

constexpr const char* k_style = R"(<style>
body{font-family:"DejaVu Sans",Verdana,Arial,sans-serif;font-size:14px;color:#222;margin:18px 28px;max-width:1300px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:19px;border-bottom:2px solid #0072B2;margin-top:30px;padding-bottom:3px}
h3{font-size:16px;margin:18px 0 4px}
table{border-collapse:collapse;margin:6px 0 10px}td,th{border:1px solid #ccc;padding:2px 7px;text-align:left;vertical-align:top}
th{background:#f1f1f1}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f6f6f6;padding:6px;overflow-x:auto;font-size:12px}
figure{margin:6px 0 14px}figcaption,.note{color:#555;font-size:12px;margin:2px 0}
svg.chart{display:block;background:#fff;max-width:100%;height:auto}
svg text{font-family:"DejaVu Sans",Verdana,Arial,sans-serif}
.tick{font-size:11px;fill:#333}.atitle{font-size:12px;fill:#222}.rowlabel{font-size:11px;fill:#222}
.grid{stroke:#d8d8d8;stroke-width:1}.grid2{stroke:#eee;stroke-width:1}.axis{stroke:#444;stroke-width:1}
.band{opacity:.18}.limit{stroke:#444;stroke-width:1.5;stroke-dasharray:6 4}.limtext{font-size:11px;fill:#444}
.whisker{stroke:#222;stroke-width:1}.barnote{font-size:10px;fill:#333}
.cell{font-size:10px}.cell.dark{fill:#111}.cell.light{fill:#fff}.nocell{fill:#fff;stroke:#bbb;stroke-dasharray:2 2}
.diag{fill:#e6e6e6}.bound{stroke:#000;stroke-width:2}
ul.legend{list-style:none;padding:0;margin:4px 0;display:flex;flex-wrap:wrap;gap:2px 18px;font-size:12px;max-width:1100px}ul.legend li{margin:1px 0}
svg.sw{vertical-align:middle;margin-right:5px}.eff{color:#555}
.heatmaps{display:flex;flex-wrap:wrap;gap:16px}figure.heat{margin:0}
.facets{display:flex;flex-wrap:wrap;gap:10px 22px}.facets figure{max-width:620px;margin:4px 0}.facet{font-weight:bold;font-size:13px}
.verdict-regression{color:#B33C00;font-weight:bold}.verdict-improvement{color:#007A5A;font-weight:bold}
.verdict{font-size:17px;padding:6px 10px;border-left:6px solid #999}.verdict.fail{border-color:#D55E00;background:#fbeee6}.verdict.pass{border-color:#009E73;background:#e8f6f1}
.bad{color:#B33C00}.skipblock{padding:4px 10px;border-left:6px solid #999;background:#f4f4f4}
@media print{h2{break-after:avoid}figure{break-inside:avoid}}
</style>
)";

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
            s += (num ? "<td class=\"num\">" : "<td>") + escape(c) + "</td>";
        }
        s += "</tr>\n";
    }
    return s + "</table>\n";
}

/// The GPU x GPU matrix of path classes, as `topo` prints it, from the report's topology.
std::string topology_matrix(const json& topo) {
    if (!topo.is_object() || !topo.contains("gpus") || !topo["gpus"].is_array() || topo["gpus"].empty()) return {};
    const auto& gpus = topo["gpus"];
    std::vector<std::string> labels;
    for (const auto& g : gpus) labels.push_back(str_of(g, "label", "GPU" + str_of(g, "index", "?")));
    std::map<std::pair<std::string, std::string>, std::string> cls;
    if (topo.contains("pairs") && topo["pairs"].is_array())
        for (const auto& p : topo["pairs"]) cls[{str_of(p, "from"), str_of(p, "to")}] = str_of(p, "class", "?");
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> head{""};
    for (const auto& l : labels) head.push_back(l);
    head.push_back("host path");
    head.push_back("CPU affinity");
    rows.push_back(head);
    for (std::size_t i = 0; i < gpus.size() && i < 64; ++i) {
        std::vector<std::string> row{labels[i]};
        for (std::size_t j = 0; j < gpus.size(); ++j) {
            if (i == j) row.push_back("X");
            else {
                const auto it = cls.find({str_of(gpus[i], "index"), str_of(gpus[j], "index")});
                row.push_back(it == cls.end() ? "-" : it->second);
            }
        }
        const json hp = gpus[i].is_object() && gpus[i].contains("host_path") ? gpus[i]["host_path"] : json();
        const auto bw = num_of(hp, "bandwidth");
        row.push_back(str_of(hp, "class", "-") + (bw ? " " + tick_label(*bw, "B/s") : std::string()));
        row.push_back(str_of(gpus[i], "cpus", "-"));
        rows.push_back(std::move(row));
    }
    return "<h3>Topology</h3>\n" + table_html(rows);
}

// `text`, or `missing` when the report leaves it empty.
std::string or_missing(const std::string& text, const char* missing) { return text.empty() ? missing : text; }

std::string header_html(const ReportHeader& h) {
    const auto& host = h.host;
    const auto& sw = h.software;
    const auto& inv = h.invocation;
    std::string s = fmt::format("<h1>interopbench report: {}</h1>\n", escape(or_missing(host.hostname, "(host not recorded)")));
    s += fmt::format("<p class=\"note\">{} to {} ({}), profile {}, interopbench {} {}</p>\n", escape(or_missing(inv.started, "?")),
                     escape(or_missing(inv.finished, "?")), escape(or_missing(inv.status, "?")), escape(or_missing(inv.profile, "-")),
                     escape(or_missing(h.tool.version, "?")), escape(h.tool.git_sha));
    std::vector<std::vector<std::string>> facts{{"host", "OS", "kernel", "CPU", "CPUs", "memory", "driver", "CUDA", "NCCL"}};
    facts.push_back({or_missing(host.hostname, "-"), or_missing(host.os, "-"), or_missing(host.kernel, "-"), or_missing(host.cpu, "-"),
                     host.logical_cpus ? std::to_string(host.logical_cpus) : "-",
                     host.memory_bytes ? tick_label(static_cast<double>(host.memory_bytes), "B") : "-",
                     or_missing(sw.driver_release.empty() ? sw.cuda_driver : sw.driver_release, "-"), or_missing(sw.cuda_runtime, "-"),
                     or_missing(sw.version_of("nccl"), "-")});
    s += table_html(facts);
    if (!h.devices.empty()) {
        std::vector<std::vector<std::string>> devs{{"GPU", "name", "PCI bus id", "SMs", "memory", "compute capability"}};
        for (const auto& d : h.devices)
            devs.push_back({std::to_string(d.ordinal), or_missing(d.name, "?"), or_missing(d.pci_bus_id, "?"),
                            d.sm_count ? std::to_string(d.sm_count) : "?",
                            d.memory_bytes ? tick_label(static_cast<double>(d.memory_bytes), "B") : "-",
                            or_missing(d.compute_capability, "-")});
        s += table_html(devs);
    } else {
        s += "<p class=\"note\">no GPU recorded</p>\n";
    }
    s += topology_matrix(h.topology.document);
    if (!h.warnings.empty()) {
        s += "<h3>Warnings</h3><ul>";
        for (const auto& w : h.warnings) s += "<li>" + escape(w) + "</li>";
        s += "</ul>\n";
    }
    return s;
}

std::string anchor(const std::string& text) {
    std::string a = "f-";
    for (unsigned char c : text) a += std::isalnum(c) ? static_cast<char>(c) : '-';
    return a;
}

} // namespace

std::string render_report_page(const nlohmann::json& report) {
    const auto rows = read_rows(report);
    std::vector<std::string> families, scenarios;
    std::map<std::string, std::vector<std::string>> fam_scen;
    std::map<std::string, std::vector<const Row*>> by;
    for (const auto& r : rows) {
        if (!fam_scen.count(r.family)) families.push_back(r.family);
        if (!by.count(r.scenario)) {
            fam_scen[r.family].push_back(r.scenario);
            scenarios.push_back(r.scenario);
        }
        by[r.scenario].push_back(&r);
    }
    const ReportHeader header = read_header(report);
    std::string out = page_open("interopbench report " + header.host.hostname);
    out += header_html(header);
    // The verdict first: the same lines as the terminal's summary.
    std::vector<std::string> summary;
    std::vector<SkipGroup> skipped;
    try {
        const auto results = report_results(report);
        summary = summary_lines(results);
        skipped = skip_groups(results, true);
    } catch (const std::exception& e) {
        summary = {std::string("! the results could not be summarised: ") + e.what()};
    }
    out += "<section class=\"summary\"><h2 id=\"summary\">Summary</h2>\n<ul class=\"summary\">";
    for (const auto& l : summary)
        out += l.rfind("! ", 0) == 0 ? "<li class=\"bad\">" + escape(l.substr(2)) + "</li>" : "<li>" + escape(l) + "</li>";
    out += "</ul>\n";
    // Scenarios of which every configuration was skipped get no section of their own (a
    // machine without a GPU would show one empty section per GPU scenario): one block per
    // reason says how many there are. The list at the end has every configuration.
    std::set<std::string> all_skipped;
    for (const auto& g : skipped) {
        all_skipped.insert(g.scenarios.begin(), g.scenarios.end());
        std::string names;
        for (const auto& sc : g.scenarios) names += (names.empty() ? "" : ", ") + sc;
        out += fmt::format("<p class=\"skipblock\"><b>Skipped: {}</b><br>{} configuration{} of {} scenario{}: {}</p>\n",
                           escape(g.reason.empty() ? "no reason recorded" : g.reason), g.count,
                           g.count == 1 ? "" : "s", g.scenarios.size(), g.scenarios.size() == 1 ? "" : "s", escape(names));
    }
    // Families of which nothing was measured get no section: the summary and the list at the
    // end say why.
    std::vector<std::string> measured;
    for (const auto& f : families)
        if (std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.family == f && r.ok(); })) measured.push_back(f);
    out += "<p>Contents:";
    for (const auto& f : measured) out += fmt::format(" <a href=\"#{}\">{}</a>", escape(anchor(f)), escape(f));
    out += " <a href=\"#not-measured\">not measured</a></p></section>\n";
    for (const auto& fam : measured) {
        out += fmt::format("<section class=\"family\"><h2 id=\"{}\">{}</h2>\n", escape(anchor(fam)), escape(fam));
        std::string charts;
        // Collectives and the like: several scenarios over one size axis, one bandwidth metric.
        const auto& scs = fam_scen[fam];
        if (scs.size() >= 3) {
            std::map<std::string, std::size_t> bw_metric_count;
            std::string size_param;
            std::size_t sized = 0;
            for (const auto& sc : scs) {
                const Row* first = nullptr;
                for (const auto* r : by[sc])
                    if (r->ok() && !r->metrics.empty()) first = first ? first : r;
                if (!first) continue;
                for (const auto& [k, v] : first->params)
                    if (k == "size") {
                        size_param = k;
                        ++sized;
                    }
                for (const auto& m : first->metrics)
                    if (m.unit == "B/s") ++bw_metric_count[m.name];
            }
            std::string metric;
            for (const auto& [name, count] : bw_metric_count)
                if (count == sized && sized == scs.size()) metric = name; // the last in name order shared by all
            // Prefer the metric declared last by the first scenario (the bus bandwidth of collectives).
            if (!metric.empty())
                for (const auto* r : by[scs[0]])
                    if (r->ok()) {
                        for (const auto& m : r->metrics)
                            if (m.unit == "B/s" && bw_metric_count[m.name] == scs.size()) metric = m.name;
                        break;
                    }
            if (!metric.empty() && !size_param.empty()) charts += family_heatmap(scs, by, size_param, metric);
        }
        for (const auto& sc : scs) {
            if (all_skipped.count(sc)) continue; // said once, above
            const auto& rs = by[sc];
            std::string counting;
            for (const auto* r : rs)
                if (!r->counting.empty()) counting = r->counting;
            std::size_t ok = 0;
            for (const auto* r : rs) ok += r->ok();
            std::string c = scenario_charts(rs);
            charts += fmt::format("<h3>{}</h3>\n<p class=\"note\">{} of {} configuration(s) measured{}{}</p>\n", escape(sc), ok,
                                  rs.size(), counting.empty() ? "" : "; bytes: ", escape(counting));
            if (c.empty()) charts += "<p class=\"note\">nothing to plot: no configuration of this scenario was measured</p>\n";
            charts += c;
            // The scenario's own explanations (details.diagnosis), one per configuration.
            std::string said;
            for (const auto* r : rs)
                if (r->details && r->details->contains("diagnosis") && (*r->details)["diagnosis"].is_string())
                    said += "<li><b>" + escape(r->key.substr(r->key.find('/') + 1)) + "</b>: " +
                            escape((*r->details)["diagnosis"].get<std::string>()) + "</li>";
            if (!said.empty()) charts += "<ul class=\"diagnosis\">" + said + "</ul>\n";
            // Matrices the results carry (details.matrix), as tables.
            std::vector<const json*> details;
            for (const auto* r : rs) details.push_back(r->details);
            for (const auto& t : matrix_tables(details)) charts += table_html(t);
        }
        out += charts + "</section>\n";
    }
    // Skipped and failed results, with their reasons.
    std::vector<std::vector<std::string>> problems{{"status", "scenario", "configuration", "reason"}};
    for (const auto& r : rows) {
        if (!r.ok()) problems.push_back({r.status, r.scenario, r.key, r.reason.empty() ? "(no reason recorded)" : r.reason});
        else if (r.metrics.empty() || !r.metrics[0].usable())
            problems.push_back({"ok, no figure", r.scenario, r.key,
                                "the primary metric has no finite median (NaN or left out): not plotted"});
    }
    out += "<section><h2 id=\"not-measured\">Skipped, failed and without figures</h2>\n";
    out += problems.size() > 1 ? fmt::format("<details><summary>{} configuration(s)</summary>\n{}</details>\n",
                                             problems.size() - 1, table_html(problems))
                               : "<p>every configuration was measured</p>\n";
    out += "</section>\n";
    out += fmt::format("<script type=\"application/json\" id=\"{}\">{}</script>\n</body>\n</html>\n", k_report_block_id,
                       embed_json(report));
    return out;
}

// ---- comparison page ------------------------------------------------------------------------

namespace {
const char* verdict_colour(Verdict v) {
    switch (v) {
    case Verdict::regression: return "#D55E00";
    case Verdict::improvement: return "#009E73";
    case Verdict::inconclusive: return "#E69F00";
    case Verdict::unchanged: return "#777777";
    default: return "#56B4E9";
    }
}
} // namespace

std::string render_comparison_page(const CompareOutcome& o) {
    std::string out = page_open("interopbench comparison " + o.base_label + " vs " + o.new_label);
    const bool fail = o.count(Verdict::regression) > 0 || o.count(Verdict::missing) > 0;
    out += fmt::format("<h1>interopbench comparison</h1>\n<p class=\"verdict {}\"><b>{}</b></p>\n"
                       "<p>{}</p>\n<p>base <b>{}</b>, new <b>{}</b>; threshold {:.1f}%{}</p>\n",
                       fail ? "fail" : "pass", escape(verdict_line(o)), escape(power_line(o)), escape(o.base_label),
                       escape(o.new_label),
                       o.threshold * 100, o.cross_machine ? "; across machines" : "");
    out += "<h2>Machine differences</h2>\n";
    if (o.fingerprint.empty()) out += "<p>none: the same hardware and software</p>\n";
    else {
        std::vector<std::vector<std::string>> t{{"fact", "base", "new", "kind"}};
        for (const auto& d : o.fingerprint) t.push_back({d.field, d.base, d.fresh, d.hardware ? "hardware" : "software or state"});
        out += table_html(t);
    }
    if (!o.warnings.empty()) {
        out += "<h2>Warnings</h2><ul>";
        for (const auto& w : o.warnings) out += "<li>" + escape(w) + "</li>";
        out += "</ul>\n";
    }
    out += "<h2>Summary</h2>\n";
    std::vector<std::vector<std::string>> counts{{"verdict", "results"}};
    for (std::size_t v = 0; v < k_verdict_count; ++v)
        counts.push_back({to_string(static_cast<Verdict>(v)), std::to_string(o.counts[v])});
    out += table_html(counts);
    if (!o.families.empty()) {
        // Geometric mean per family, oriented so that right of 1 is better.
        Frame f;
        f.left = 170;
        f.top = 8;
        f.height = f.top + f.bottom + 22.0 * o.families.size();
        double lo = 0.8, hi = 1.25;
        for (const auto& fs : o.families)
            if (fs.geomean > 0 && std::isfinite(fs.geomean)) {
                lo = std::min(lo, fs.geomean / 1.1);
                hi = std::max(hi, fs.geomean * 1.1);
            }
        const LogScale sx{lo, hi, f.x0(), f.x1()};
        std::string s = svg_open(f, "geometric mean per family");
        s += x_axis(f, sx, log_ticks(lo, hi, "1", 8), "geometric mean of the primary metric's ratio, oriented: > 1 is better");
        const double x1 = sx(1.0);
        for (std::size_t i = 0; i < o.families.size(); ++i) {
            const auto& fs = o.families[i];
            const double y = f.top + i * 22 + 4;
            s += fmt::format("<text class=\"rowlabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{} ({})</text>", f1(f.x0() - 6),
                             f1(y + 11), escape(shorten(fs.family, 20)), fs.compared);
            if (!(fs.geomean > 0) || !std::isfinite(fs.geomean)) continue;
            const double x = sx(fs.geomean);
            // Coloured by the family's verdicts, not by the side of 1 its mean falls on: a
            // family whose results are all unchanged is grey, however its mean leans.
            bool regressed = false, improved = false;
            for (const auto& r : o.results)
                if ((r.family.empty() ? r.scenario : r.family) == fs.family) {
                    regressed = regressed || r.verdict == Verdict::regression;
                    improved = improved || r.verdict == Verdict::improvement;
                }
            // A dot, not a bar: the axis is logarithmic, where a bar's length would not be its value.
            s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"><title>{} ({} compared): {:.4f}</title></circle>", f1(x),
                             f1(y + 7), regressed ? "#D55E00" : improved ? "#009E73" : "#999999", escape(fs.family), fs.compared,
                             fs.geomean);
            s += fmt::format("<text class=\"barnote\" x=\"{}\" y=\"{}\">{:.3f}</text>", f1(std::max(x, x1) + 8), f1(y + 11), fs.geomean);
        }
        s += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", f1(x1), f1(f.y1()), f1(x1), f1(f.y0()));
        out += "<figure>" + s + "</svg><figcaption>dot: geometric mean per family (results compared)</figcaption></figure>\n";
    }
    // Every result's deciding (or primary) metric: ratio new/base with its interval.
    struct Item {
        const ResultComparison* r;
        const MetricComparison* m;
    };
    std::vector<Item> items;
    for (const auto& r : o.results) {
        const MetricComparison* m = r.deciding();
        if (!m)
            for (const auto& mm : r.metrics)
                if (mm.gated && mm.has_ratio) m = &mm;
        if (!m && !r.metrics.empty() && r.metrics[0].has_ratio) m = &r.metrics[0];
        items.push_back({&r, m && m->has_ratio ? m : nullptr});
    }
    std::stable_sort(items.begin(), items.end(),
                     [](const Item& a, const Item& b) { return listing_rank(a.r->verdict) < listing_rank(b.r->verdict); });
    out += "<h2>Results</h2>\n";
    if (!items.empty()) {
        double lo = 1 / 1.3, hi = 1.3;
        for (const auto& it : items)
            if (it.m) {
                for (double v : {it.m->ratio, it.m->ci_lo, it.m->ci_hi})
                    if (v > 0 && std::isfinite(v)) {
                        lo = std::min(lo, v / 1.05);
                        hi = std::max(hi, v * 1.05);
                    }
            }
        lo = std::max(lo, 1e-3);
        hi = std::min(hi, 1e3);
        Frame f;
        f.left = 430;
        f.right = 130;
        f.top = 8;
        f.height = f.top + f.bottom + 16.0 * items.size();
        const LogScale sx{lo, hi, f.x0(), f.x1()};
        std::string s = svg_open(f, "ratio per result");
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#eeeeee\"/>", f1(sx(1 / (1 + o.threshold))),
                         f1(f.y1()), f1(sx(1 + o.threshold) - sx(1 / (1 + o.threshold))), f1(f.y0() - f.y1()));
        s += x_axis(f, sx, log_ticks(lo, hi, "1", 8), "ratio new / base of the deciding metric (log); grey: within the threshold");
        s += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", f1(sx(1)), f1(f.y1()), f1(sx(1)), f1(f.y0()));
        for (std::size_t i = 0; i < items.size(); ++i) {
            const auto& [r, m] = items[i];
            const double y = f.top + i * 16 + 8;
            const std::string label = r->key;
            s += fmt::format("<text class=\"rowlabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\"><title>{}</title>{}</text>", f1(f.x0() - 6),
                             f1(y + 4), escape(label), escape(shorten(label, 64)));
            const char* c = verdict_colour(r->verdict);
            std::string note = to_string(r->verdict);
            if (m) {
                const auto clampx = [&](double v) { return std::clamp(sx(std::clamp(v, lo, hi)), f.x0(), f.x1()); };
                s += fmt::format("<line stroke=\"{}\" stroke-width=\"2\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", c, f1(clampx(m->ci_lo)),
                                 f1(y), f1(clampx(m->ci_hi)), f1(y));
                s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"><title>{} {}: {:.4f} [{:.4f}, {:.4f}] ({} is better)</title></circle>",
                                 f1(clampx(m->ratio)), f1(y), c, escape(label), escape(m->name), m->ratio, m->ci_lo, m->ci_hi,
                                 m->better == Better::higher ? "higher" : "lower");
                note = fmt::format("{:.3f} {}", m->ratio, note);
            }
            s += fmt::format("<text class=\"barnote\" x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>", f1(f.x1() + 6), f1(y + 4), c,
                             escape(note));
        }
        out += "<figure>" + s + "</svg><ul class=\"legend\">";
        for (Verdict v : {Verdict::regression, Verdict::improvement, Verdict::unchanged, Verdict::inconclusive, Verdict::missing})
            out += fmt::format("<li>{}{}</li>", box_swatch(verdict_colour(v)), to_string(v));
        out += "</ul><figcaption>dot: ratio of medians; whisker: its bootstrap interval</figcaption></figure>\n";
    }
    std::vector<std::vector<std::string>> t{{"verdict", "result", "metric", "base", "new", "ratio", "interval", "reason"}};
    for (const auto& [r, m] : items)
        t.push_back({to_string(r->verdict), r->key, m ? m->name : "-", m ? format_value(m->base_median, m->unit) : "-",
                     m ? format_value(m->new_median, m->unit) : "-", m ? fmt::format("{:.4f}", m->ratio) : "-",
                     m ? fmt::format("[{:.4f}, {:.4f}]", m->ci_lo, m->ci_hi) : "-", r->reason});
    out += table_html(t);
    // The comparison as `compare --format json` writes it, for tools reading the page.
    out += fmt::format("<script type=\"application/json\" id=\"interopbench-comparison\">{}</script>\n",
                       embed_json(comparison_json(o)));
    return out + "</body>\n</html>\n";
}

} // namespace interopbench::html
