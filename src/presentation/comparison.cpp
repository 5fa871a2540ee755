#include "presentation/comparison.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "interopbench/text.hpp"
#include "presentation/formats.hpp"
#include "presentation/output.hpp"
#include "presentation/table.hpp"

namespace interopbench {

namespace {

std::string pct(double ratio) {
    // Beyond +999900% the change reads better as a factor (and (ratio - 1) * 100 may overflow).
    if (ratio >= 1e4) return fmt::format("{}{:.3g}", glyph(Glyph::times), ratio);
    return fmt::format("{:+.1f}%", (ratio - 1) * 100);
}

} // namespace

namespace {

nlohmann::json metric_json(const MetricComparison& m) {
    nlohmann::json j = {{"name", m.name},
                        {"unit", m.unit},
                        {"better", m.better == Better::higher ? "higher" : "lower"},
                        {"verdict", to_string(m.verdict)},
                        {"base_median", m.base_median},
                        {"new_median", m.new_median},
                        {"base_n", m.base_n},
                        {"new_n", m.new_n},
                        {"threshold", m.threshold},
                        {"gated", m.gated},
                        {"noise", m.noise},
                        {"noise_scaled", m.noise_scaled},
                        {"noisy", m.noisy},
                        {"base_rounds", m.base_rounds},
                        {"new_rounds", m.new_rounds},
                        {"detectable", m.detectable},
                        {"note", m.note}};
    if (m.has_ratio) {
        j["ratio"] = m.ratio;
        j["ci"] = {m.ci_lo, m.ci_hi};
    } else {
        j["ratio"] = nullptr;
        j["ci"] = nullptr;
    }
    return j;
}

std::string xml_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default:
            // Control characters are not allowed in XML 1.0.
            if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
            else out += c;
        }
    }
    return out;
}

std::string value_cell(double v, const std::string& unit) { return v > 0 || v < 0 ? format_value(v, unit) : "-"; }


// The results of one listing as a table, each named by its short label without the axis
// values every row shares (said once above the table); the interval is what a narrow table
// leaves out first, and the why (which names the metric shown) wraps.
std::string results_table(const std::vector<const ResultComparison*>& rs, bool with_verdict, bool md, std::size_t width) {
    std::vector<std::pair<std::string, Params>> keys;
    std::vector<const Params*> configs;
    for (const auto* r : rs) keys.push_back(split_key(r->key));
    for (const auto& k : keys) configs.push_back(&k.second);
    const auto shared = shared_axes(configs);
    std::string out;
    if (!shared.empty()) out += wrap(display_text("every result here: " + axes_text(shared)), width, md ? "" : "  ") + (md ? "\n" : "");
    std::vector<TableColumn> cols{{"verdict", {}},      {"result", {}, false, true}, {"base", {}},
                                  {"new", {}},          {"change", {}},              {"95% interval", {}, true},
                                  {"why", {}, false, true}};
    for (std::size_t i = 0; i < rs.size(); ++i) {
        const ResultComparison& r = *rs[i];
        const auto* m = shown_metric(r);
        const std::string label = short_label(keys[i].first, without_axes(keys[i].second, shared));
        // The why names the metric its figures are of.
        const std::string why = m && !r.reason.starts_with(m->name) ? m->name + ": " + r.reason : r.reason;
        const std::vector<std::string> cells =
            m ? std::vector<std::string>{to_string(r.verdict), label, value_cell(m->base_median, m->unit),
                                         format_value(m->new_median, m->unit), // has a ratio: 0 is a measured zero
                                         pct(m->ratio), fmt::format("[{}, {}]", pct(m->ci_lo), pct(m->ci_hi)), why}
              : std::vector<std::string>{to_string(r.verdict), label, "", "", "", "", why};
        for (std::size_t c = 0; c < cols.size(); ++c) cols[c].cells.push_back(cells[c]);
    }
    if (!with_verdict) cols.erase(cols.begin());
    TableLayout layout;
    layout.width = md ? 0 : width;
    layout.markdown = md;
    return out + fit_table(std::move(cols), layout);
}

} // namespace

int listing_rank(Verdict v) {
    switch (v) {
    case Verdict::regression: return 0;
    case Verdict::missing: return 1;
    case Verdict::inconclusive: return 2;
    case Verdict::improvement: return 3;
    case Verdict::added: return 4;
    case Verdict::unchanged: return 5;
    }
    return 6;
}

std::string power_line(const CompareOutcome& o) {
    return fmt::format("power: {} of {} result{} measured in both reports can see a {:.3g}% change (twice the {:.3g}% "
                       "threshold)",
                       o.sensitive, o.in_both, o.in_both == 1 ? "" : "s", o.power_change * 100, o.threshold * 100);
}

namespace {

// The verdict line in two parts: the verdict ("FAIL", "PASS", "PASS (weak: ...)") with its
// tone, and the counts that follow it.
struct VerdictWords {
    std::string verdict, counts;
    Tone tone = Tone::good;
};

VerdictWords verdict_words(const CompareOutcome& o) {
    const bool fail = o.count(Verdict::regression) > 0 || o.count(Verdict::missing) > 0;
    std::vector<std::string> parts;
    for (const Verdict v : {Verdict::regression, Verdict::missing, Verdict::inconclusive, Verdict::improvement,
                            Verdict::added, Verdict::unchanged})
        if (const std::size_t n = o.count(v)) {
            std::string word = to_string(v);
            if (n > 1 && (v == Verdict::regression || v == Verdict::improvement)) word += "s";
            parts.push_back(fmt::format("{} {}", n, word));
        }
    VerdictWords w;
    w.counts = fmt::format("{} of {} result{}", fmt::join(parts, ", "), o.results.size(), o.results.size() == 1 ? "" : "s");
    if (fail) {
        w.verdict = "FAIL";
        w.tone = Tone::bad;
    } else if (weak_pass(o)) {
        w.verdict = fmt::format("PASS (weak: {} of {} inconclusive)", o.count(Verdict::inconclusive), o.results.size());
        w.tone = Tone::unsure;
    } else {
        w.verdict = "PASS";
    }
    return w;
}

} // namespace

std::string verdict_line(const CompareOutcome& o, bool color) {
    const VerdictWords w = verdict_words(o);
    return paint(w.verdict, w.tone, color) + ": " + w.counts;
}

namespace {

std::string render_text(const CompareOutcome& o, bool md, bool color, std::size_t width) {
    width = md ? 0 : width;
    std::string out;
    auto heading = [&](const std::string& title) { out += md ? "\n### " + title + "\n\n" : "\n" + title + "\n"; };
    out += md ? fmt::format("## interopbench compare: {} vs {}\n\n**{}**\n", display_text(o.base_label),
                            display_text(o.new_label), verdict_line(o))
              : wrap(verdict_line(o, color), width, "", "  ") + wrap(power_line(o), width, "", "  ") +
                    wrap(fmt::format("interopbench compare: {} (base) vs {} (new)", display_text(o.base_label),
                                     display_text(o.new_label)),
                         width, "", "  ");
    if (md) out += power_line(o) + "\n";
    if (!o.fingerprint.empty()) {
        heading(o.cross_machine ? "Machine differences (compared across machines)" : "Machine differences");
        std::vector<std::vector<std::string>> rows{{"fact", "kind", "base", "new"}};
        for (const auto& d : o.fingerprint)
            rows.push_back({d.field, d.hardware ? "hardware" : "software", d.base.empty() ? "-" : d.base,
                            d.fresh.empty() ? "-" : d.fresh});
        out += render_table(rows, md, width);
    }
    if (!o.warnings.empty()) {
        heading("Warnings");
        for (const auto& w : o.warnings) out += md ? "- " + display_text(w) + "\n" : wrap("warning: " + display_text(w), width, "", "  ");
    }
    heading("Summary");
    std::vector<std::vector<std::string>> counts{{"verdict", "results"}};
    for (std::size_t v = 0; v < k_verdict_count; ++v)
        counts.push_back({to_string(static_cast<Verdict>(v)), std::to_string(o.counts[v])});
    out += render_table(counts, md, width);
    if (!o.families.empty()) {
        out += "\n";
        std::vector<std::vector<std::string>> fam{
            {"family", "compared", "geomean new/base (>1 better)", fmt::format("can see {:.3g}%", o.power_change * 100)}};
        for (const auto& f : o.families)
            fam.push_back({f.family, std::to_string(f.compared),
                           f.geomean < 1e6 ? fmt::format("{:.3f}", f.geomean) : fmt::format("{:.3g}", f.geomean),
                           fmt::format("{} of {}", f.sensitive, f.results)});
        out += render_table(fam, md, width);
    }
    std::vector<const ResultComparison*> listed, changed, same;
    for (const auto& r : o.results) listed.push_back(&r);
    std::stable_sort(listed.begin(), listed.end(), [](const ResultComparison* a, const ResultComparison* b) {
        return listing_rank(a->verdict) < listing_rank(b->verdict);
    });
    for (const auto* r : listed) (r->verdict == Verdict::unchanged ? same : changed).push_back(r);
    if (!changed.empty()) {
        heading("Changed, uncertain, missing and new results");
        out += results_table(changed, true, md, width);
    }
    // The unchanged results: their heading says their verdict.
    if (!same.empty()) {
        if (md) {
            out += fmt::format("\n<details><summary>Unchanged results ({})</summary>\n\n", same.size());
            out += results_table(same, false, true, 0);
            out += "\n</details>\n";
        } else {
            heading("Unchanged results");
            out += results_table(same, false, false, width);
        }
    }
    return out;
}

} // namespace

std::string render_junit(const Format&, const ComparisonView& view) {
    const CompareOutcome& o = view.outcome;
    std::size_t failures = o.count(Verdict::regression);
    std::size_t skipped = o.count(Verdict::inconclusive) + o.count(Verdict::missing);
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format("<testsuites name=\"interopbench compare\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
                       o.results.size(), failures, skipped);
    out += fmt::format("  <testsuite name=\"{} vs {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" errors=\"0\">\n",
                       xml_escape(o.base_label), xml_escape(o.new_label), o.results.size(), failures, skipped);
    if (!o.fingerprint.empty() || !o.warnings.empty()) {
        out += "    <properties>\n";
        for (const auto& d : o.fingerprint)
            out += fmt::format("      <property name=\"{}\" value=\"{} -> {}\"/>\n", xml_escape(d.field), xml_escape(d.base),
                               xml_escape(d.fresh));
        for (const auto& w : o.warnings) out += fmt::format("      <property name=\"warning\" value=\"{}\"/>\n", xml_escape(w));
        out += "    </properties>\n";
    }
    for (const auto& r : o.results) {
        out += fmt::format("    <testcase classname=\"{}.{}\" name=\"{}\"", xml_escape(r.family.empty() ? "interopbench" : r.family),
                           xml_escape(r.scenario), xml_escape(r.key));
        const bool failed = r.verdict == Verdict::regression;
        const bool skip = r.verdict == Verdict::inconclusive || r.verdict == Verdict::missing;
        if (!failed && !skip) {
            out += fmt::format("><system-out>{}: {}</system-out></testcase>\n", to_string(r.verdict), xml_escape(r.reason));
            continue;
        }
        out += ">\n";
        if (failed) {
            std::string body;
            for (const auto& m : r.metrics)
                body += fmt::format("{}: {} -> {} ({}), {}\n", m.name, value_cell(m.base_median, m.unit),
                                    value_cell(m.new_median, m.unit), m.has_ratio ? pct(m.ratio) : "-", to_string(m.verdict));
            const auto* m = shown_metric(r);
            const std::string message = m ? fmt::format("{} {} [{}, {}]: {}", m->name, pct(m->ratio), pct(m->ci_lo),
                                                        pct(m->ci_hi), r.reason)
                                          : r.reason;
            out += fmt::format("      <failure type=\"regression\" message=\"{}\">{}</failure>\n", xml_escape(message),
                               xml_escape(body));
        } else {
            out += fmt::format("      <skipped message=\"{}: {}\"/>\n", to_string(r.verdict), xml_escape(r.reason));
        }
        out += "    </testcase>\n";
    }
    out += "  </testsuite>\n</testsuites>\n";
    return out;
}

nlohmann::json comparison_json(const CompareOutcome& o) {
    nlohmann::json fp = nlohmann::json::array();
    for (const auto& d : o.fingerprint)
        fp.push_back({{"field", d.field}, {"base", d.base}, {"new", d.fresh}, {"hardware", d.hardware}});
    nlohmann::json counts = nlohmann::json::object();
    for (std::size_t v = 0; v < k_verdict_count; ++v) counts[to_string(static_cast<Verdict>(v))] = o.counts[v];
    nlohmann::json families = nlohmann::json::array();
    for (const auto& f : o.families)
        families.push_back({{"family", f.family}, {"compared", f.compared}, {"geomean", f.geomean}, {"results", f.results},
                            {"sensitive", f.sensitive}});
    nlohmann::json results = nlohmann::json::array();
    for (const auto& r : o.results) {
        nlohmann::json metrics = nlohmann::json::array();
        for (const auto& m : r.metrics) metrics.push_back(metric_json(m));
        results.push_back({{"key", r.key},
                           {"scenario", r.scenario},
                           {"family", r.family},
                           {"verdict", to_string(r.verdict)},
                           {"reason", r.reason},
                           {"metrics", metrics}});
    }
    return {{"base", o.base_label},  {"new", o.new_label},          {"cross_machine", o.cross_machine},
            {"threshold", o.threshold}, {"fingerprint_differences", fp}, {"warnings", o.warnings},
            {"summary",
             {{"counts", counts},
              {"families", families},
              {"weak", weak_pass(o)},
              {"power", {{"change", o.power_change}, {"in_both", o.in_both}, {"sensitive", o.sensitive}}}}},
            {"results", results}};
}

std::string render_comparison(const Format& format, const ComparisonView& view) {
    return render_text(view.outcome, format.markdown, view.color && !format.markdown, view.width);
}

std::string render_comparison_json(const Format&, const ComparisonView& view) {
    return comparison_json(view.outcome).dump(2) + "\n";
}

} // namespace interopbench
