// The comparison page: machine differences first, warnings, counts, the geometric mean and the
// verdicts per family, then every result's ratio with its interval, coloured by verdict, and
// the comparison as `compare --format json` writes it, embedded for tools reading the page.
// Every ratio on the page is oriented one way, stated at its top: above 1 is better (new/base
// where higher is better, base/new where lower is better), as the family geomeans of the text
// compare are; colours are the verdicts compare decided, never the side of 1 a dot falls on.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "interopbench/html_embed.hpp"
#include "interopbench/text.hpp"
#include "presentation/comparison.hpp"
#include "presentation/html_charts.hpp"

namespace interopbench::html {

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

constexpr const char* k_orientation = "above 1 is better: new/base where higher is better, base/new where lower is better";

/// A ratio new/base turned so that above 1 is better; 0 and beyond a double's range stay finite.
double oriented(double ratio, Better better) {
    if (better == Better::higher) return ratio;
    return ratio > 0 ? 1 / ratio : std::numeric_limits<double>::max();
}

/// A ratio with 3 decimals (`digits`), a huge one (a drop to zero of a time) by its exponent.
std::string ratio_text(double v, int digits = 3) { return v < 1e4 ? fmt::format("{:.{}f}", v, digits) : fmt::format("{:.3g}", v); }

struct Oriented {
    double ratio = 1, lo = 1, hi = 1; ///< lo <= hi
};

Oriented oriented(const MetricComparison& m) {
    const double a = oriented(m.ci_lo, m.better), b = oriented(m.ci_hi, m.better);
    return {oriented(m.ratio, m.better), std::min(a, b), std::max(a, b)};
}

/// The results of each verdict in `family`, in listing order: "1 regression", ", 1 improvement", ", 4 unchanged".
std::vector<std::pair<Verdict, std::string>> verdict_parts(const CompareOutcome& o, const std::string& family) {
    std::array<std::size_t, k_verdict_count> n{};
    for (const auto& r : o.results)
        if ((r.family.empty() ? r.scenario : r.family) == family) ++n[static_cast<std::size_t>(r.verdict)];
    std::vector<std::pair<Verdict, std::string>> parts;
    for (Verdict v : {Verdict::regression, Verdict::missing, Verdict::inconclusive, Verdict::improvement, Verdict::added,
                      Verdict::unchanged})
        if (const std::size_t k = n[static_cast<std::size_t>(v)])
            parts.emplace_back(v, fmt::format("{}{} {}", parts.empty() ? "" : ", ", k, to_string(v)));
    return parts;
}

std::size_t text_length(const std::vector<std::pair<Verdict, std::string>>& parts) {
    std::size_t n = 0;
    for (const auto& [v, text] : parts) n += text.size();
    return n;
}

} // namespace

std::string render_comparison_page(const CompareOutcome& o) {
    std::string out = page_open("interopbench comparison " + o.base_label + " vs " + o.new_label);
    const bool fail = o.count(Verdict::regression) > 0 || o.count(Verdict::missing) > 0;
    out += fmt::format("<h1>interopbench comparison</h1>\n<p class=\"verdict {}\"><b>{}</b></p>\n"
                       "<p>{}</p>\n<p>base <b>{}</b>, new <b>{}</b>; threshold {:.1f}%{}</p>\n"
                       "<p class=\"orientation\">Every ratio on this page: {}.</p>\n",
                       fail ? "fail" : "pass", escape(verdict_line(o)), escape(power_line(o)), escape(o.base_label),
                       escape(o.new_label), o.threshold * 100, o.cross_machine ? "; across machines" : "", k_orientation);
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
        // Per family: the geometric mean of the primary metric's ratio (a dot on a log axis,
        // neutral: a mean is no verdict), and the family's verdicts in their colours.
        // Room on the right for the longest line of verdicts (10 px text, the bold ones wider).
        std::size_t longest = 0;
        for (const auto& fs : o.families) longest = std::max(longest, text_length(verdict_parts(o, fs.family)));
        Frame f;
        f.left = 170;
        f.right = 64 + 1.1 * text_width(longest, 10) + 8; // bold parts are wider
        f.width = f.left + 320 + f.right;
        f.top = 8;
        f.height = f.top + f.bottom + 22.0 * o.families.size();
        double lo = 0.8, hi = 1.25;
        for (const auto& fs : o.families)
            if (fs.geomean > 0 && std::isfinite(fs.geomean)) {
                lo = std::min(lo, fs.geomean / 1.1);
                hi = std::max(hi, fs.geomean * 1.1);
            }
        const LogScale sx{lo, hi, f.x0(), f.x1()};
        std::string s = svg_open(f, "geometric mean and verdicts per family");
        s += x_axis(f, sx, log_ticks(lo, hi, "1", 6), "geometric mean of the primary metric's ratio (log), above 1 better");
        const double x1 = sx(1.0);
        s += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", f1(x1), f1(f.y1()), f1(x1), f1(f.y0()));
        for (std::size_t i = 0; i < o.families.size(); ++i) {
            const auto& fs = o.families[i];
            const double y = f.top + i * 22 + 4;
            s += fmt::format("<text class=\"rowlabel\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{} ({})</text>", f1(f.x0() - 6),
                             f1(y + 11), escape(shorten(fs.family, 20)), fs.compared);
            s += fmt::format("<text class=\"barnote\" x=\"{}\" y=\"{}\">", f1(f.x1() + 64), f1(y + 11));
            for (const auto& [v, text] : verdict_parts(o, fs.family))
                s += fmt::format("<tspan fill=\"{}\"{}>{}</tspan>", verdict_colour(v),
                                 v == Verdict::regression || v == Verdict::improvement ? " font-weight=\"bold\"" : "", text);
            s += "</text>";
            if (!(fs.geomean > 0) || !std::isfinite(fs.geomean)) continue;
            const double x = sx(fs.geomean);
            s += fmt::format("<line stroke=\"#222\" stroke-width=\"1.5\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", f1(x1), f1(y + 7), f1(x),
                             f1(y + 7));
            s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"#222\"><title>{} ({} compared): geometric mean {:.4f}, "
                             "above 1 better</title></circle>",
                             f1(x), f1(y + 7), escape(fs.family), fs.compared, fs.geomean);
            s += fmt::format("<text class=\"barnote\" x=\"{}\" y=\"{}\">{:.3f}</text>", f1(f.x1() + 8), f1(y + 11), fs.geomean);
        }
        out += "<figure>" + s +
               "</svg><figcaption>dot: geometric mean per family of the primary metric's ratio, above 1 better (results "
               "compared); right: the mean, then the family's verdicts as compare decided them</figcaption></figure>\n";
    }
    // Every result's shown metric (as the text compare lists it): the ratio, oriented, with its interval.
    struct Item {
        const ResultComparison* r;
        const MetricComparison* m;
    };
    std::vector<Item> items;
    for (const auto& r : o.results) items.push_back({&r, shown_metric(r)});
    std::stable_sort(items.begin(), items.end(),
                     [](const Item& a, const Item& b) { return listing_rank(a.r->verdict) < listing_rank(b.r->verdict); });
    out += "<h2>Results</h2>\n";
    if (!items.empty()) {
        double lo = 1 / 1.3, hi = 1.3;
        for (const auto& it : items)
            if (it.m) {
                const Oriented q = oriented(*it.m);
                for (double v : {q.ratio, q.lo, q.hi})
                    if (v > 0 && std::isfinite(v)) {
                        lo = std::min(lo, v / 1.05);
                        hi = std::max(hi, v * 1.05);
                    }
            }
        lo = std::max(lo, 1e-3);
        hi = std::min(hi, 1e3);
        std::size_t longest = 0;
        for (const auto& it : items) longest = std::max(longest, std::min<std::size_t>(64, it.r->key.size()));
        Frame f;
        f.left = std::clamp(text_width(longest, 11) + 16, 120.0, 470.0);
        f.right = 130;
        f.top = 8;
        f.height = f.top + f.bottom + 16.0 * items.size();
        const LogScale sx{lo, hi, f.x0(), f.x1()};
        std::string s = svg_open(f, "ratio per result");
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#eeeeee\"/>", f1(sx(1 / (1 + o.threshold))),
                         f1(f.y1()), f1(sx(1 + o.threshold) - sx(1 / (1 + o.threshold))), f1(f.y0() - f.y1()));
        s += x_axis(f, sx, log_ticks(lo, hi, "1", 8), "ratio (log), above 1 better; grey: within the threshold");
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
                const Oriented q = oriented(*m);
                const auto clampx = [&](double v) { return std::clamp(sx(std::clamp(v, lo, hi)), f.x0(), f.x1()); };
                s += fmt::format("<line stroke=\"{}\" stroke-width=\"2\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", c, f1(clampx(q.lo)),
                                 f1(y), f1(clampx(q.hi)), f1(y));
                s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"><title>{} {} ({} is better): base {}, new {}; "
                                 "ratio {} [{}, {}], above 1 better</title></circle>",
                                 f1(clampx(q.ratio)), f1(y), c, escape(label), escape(m->name),
                                 m->better == Better::higher ? "higher" : "lower", escape(format_value(m->base_median, m->unit)),
                                 escape(format_value(m->new_median, m->unit)), ratio_text(q.ratio, 4), ratio_text(q.lo, 4),
                                 ratio_text(q.hi, 4));
                note = ratio_text(q.ratio) + " " + note;
            }
            s += fmt::format("<text class=\"barnote\" x=\"{}\" y=\"{}\" style=\"fill:{}\">{}</text>", f1(f.x1() + 6), f1(y + 4), c,
                             escape(note));
        }
        out += "<figure>" + s + "</svg><ul class=\"legend\">";
        for (Verdict v : {Verdict::regression, Verdict::improvement, Verdict::unchanged, Verdict::inconclusive, Verdict::missing})
            out += fmt::format("<li>{}{}</li>", box_swatch(verdict_colour(v)), to_string(v));
        out += "</ul><figcaption>dot: ratio of medians, above 1 better; whisker: its bootstrap interval; colour: the result's "
               "verdict</figcaption></figure>\n";
    }
    std::vector<std::vector<std::string>> t{{"verdict", "result", "metric", "base", "new", "ratio (above 1 better)", "interval", "reason"}};
    for (const auto& [r, m] : items) {
        if (!m) {
            t.push_back({to_string(r->verdict), r->key, "-", "-", "-", "-", "-", r->reason});
            continue;
        }
        const Oriented q = oriented(*m);
        t.push_back({to_string(r->verdict), r->key, m->name + (m->better == Better::higher ? ", higher better" : ", lower better"),
                     format_value(m->base_median, m->unit), format_value(m->new_median, m->unit), ratio_text(q.ratio, 4),
                     "[" + ratio_text(q.lo, 4) + ", " + ratio_text(q.hi, 4) + "]", r->reason});
    }
    out += table_html(t);
    // The comparison as `compare --format json` writes it (ratios there are new/base), for tools reading the page.
    out += fmt::format("<script type=\"application/json\" id=\"interopbench-comparison\">{}</script>\n",
                       embed_json(comparison_json(o)));
    return out + "</body>\n</html>\n";
}

} // namespace interopbench::html
