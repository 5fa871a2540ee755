// The comparison page: machine differences first, warnings, counts, the geometric mean per
// family, then every result's ratio with its interval, coloured by verdict, and the comparison
// as `compare --format json` writes it, embedded for tools reading the page.
#include <algorithm>
#include <cmath>

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
