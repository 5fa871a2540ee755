// The fleet page: the verdict, what was left out, then per hardware class its outliers in
// words and its judged results as tables: a row per machine (the figures of all its GPUs in
// one cell, the lowest shown), a column per result, its header written across and wrapping
// (never rotated: rotated headers ran into the legend and off the window), at most
// k_columns columns a table so that a table fits an 800 px window; tables per family. The
// verdict as `fleet --format json` writes it is embedded for tools reading the page.
#include <algorithm>

#include <fmt/format.h>

#include "interopbench/fleet.hpp"
#include "interopbench/html_embed.hpp"
#include "presentation/fleet_view.hpp"
#include "presentation/html_charts.hpp"
#include "presentation/output.hpp"

namespace interopbench::html {

namespace {

using fleet::Figure;
using fleet::Outcome;
using fleet::Row;

/// Result columns per table: "100%" cells and the machine's name fit 800 px at this many.
constexpr std::size_t k_columns = 6;

std::string percent(double ratio) { return fmt::format("{:.0f}%", ratio * 100); }

const char* cell_colour(const Figure& f) {
    if (f.failed) return "#ffd0c4";
    return f.ratio >= 0.97 ? "#c8e6c9" : f.ratio >= 0.90 ? "#fff3c4" : "#ffd0c4";
}

/// One figure for the hover text: where (the GPU), its value against the reference, causes.
std::string figure_text(const Outcome& o, const Row& r, const Figure& f) {
    std::string s = f.gpu.empty() ? std::string() : f.gpu + ": ";
    s += f.failed ? "failed: " + f.reason
                  : fmt::format("{}, {} of the {} median {} (bar: {} short)", format_value(f.value, r.unit), percent(f.ratio),
                                r.reference, format_value(r.median, r.unit), percent(f.bar));
    for (const auto& x : o.outliers)
        if (&o.rows[x.row] == &r && &o.rows[x.row].figures[x.figure] == &f)
            for (const auto& c : x.causes) s += "\ncause: " + c;
    return s;
}

/// The cell of `member` in row `r`: its lowest figure (a failure lowest of all), outlined when
/// one of its figures is an outlier, the number of its GPUs under it when it has several.
std::string cell(const Outcome& o, const Row& r, std::size_t member) {
    std::vector<const Figure*> mine;
    for (const auto& f : r.figures)
        if (f.member == member) mine.push_back(&f);
    if (mine.empty()) return "<td></td>";
    const Figure* low = *std::min_element(mine.begin(), mine.end(), [](const Figure* a, const Figure* b) {
        return a->failed != b->failed ? a->failed : a->ratio < b->ratio;
    });
    const bool outlier = std::any_of(mine.begin(), mine.end(), [](const Figure* f) { return f->outlier; });
    std::string title;
    for (const auto* f : mine) title += (title.empty() ? "" : "\n") + figure_text(o, r, *f);
    return fmt::format("<td class=\"c{}\" style=\"background:{}\" title=\"{}\">{}{}</td>", outlier ? " out" : "", cell_colour(*low),
                       escape(title), low->failed ? "failed" : percent(low->ratio),
                       mine.size() > 1 ? fmt::format("<small>lowest of {}</small>", mine.size()) : "");
}

/// The judged rows of one family of a class as tables of at most k_columns results.
std::string family_tables(const Outcome& o, const std::vector<const Row*>& rows) {
    std::string s;
    for (std::size_t at = 0; at < rows.size(); at += k_columns) {
        const std::vector<const Row*> part(rows.begin() + static_cast<std::ptrdiff_t>(at),
                                           rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), at + k_columns)));
        std::vector<std::size_t> members; // those with a figure here, in member order
        for (const Row* r : part)
            for (const auto& f : r->figures)
                if (std::find(members.begin(), members.end(), f.member) == members.end()) members.push_back(f.member);
        std::sort(members.begin(), members.end());
        s += "<table class=\"heat\"><tr><th class=\"m\">machine</th>";
        for (const Row* r : part) {
            // A line may break after an underscore too (scenario names are one long word).
            std::string name;
            for (const char c : escape(fleet::row_label(*r))) name += c == '_' ? std::string("_<wbr>") : std::string(1, c);
            s += "<th class=\"col\" title=\"" + escape(r->key) + "\">" + name + "</th>";
        }
        s += "</tr>\n";
        for (const std::size_t m : members) {
            s += "<tr><th class=\"m\">" + escape(o.members[m].label) + "</th>";
            for (const Row* r : part) s += cell(o, *r, m);
            s += "</tr>\n";
        }
        s += "</table>\n";
    }
    return s;
}

} // namespace

std::string render_fleet_page(const Outcome& o) {
    std::string s = page_open("interopbench fleet");
    s += fmt::format("<h1>interopbench fleet</h1>\n<p class=\"verdict {}\"><b>{}</b></p>\n", o.outliers.empty() ? "pass" : "fail",
                     escape(fleet::verdict_line(o)));
    if (!o.excluded.empty() || !o.notes.empty()) {
        s += "<ul>";
        for (const auto& e : o.excluded) s += "<li>left out: " + escape(e) + "</li>";
        for (const auto& n : o.notes) s += "<li>" + escape(n) + "</li>";
        s += "</ul>\n";
    }
    s += "<p class=\"legend\">cell: the machine's figure as a share of its class's median (oriented: below 100% is worse); "
         "<span style=\"background:#c8e6c9\">&ge; 97%</span> <span style=\"background:#fff3c4\">90-97%</span> "
         "<span style=\"background:#ffd0c4\">below 90%</span> <span class=\"out\">outlier</span>; a machine with several GPUs: "
         "its lowest; hover for the value, the median and the causes</p>\n";
    for (const auto& klass : o.classes) {
        std::size_t machines = 0, unjudged = 0;
        for (const auto& m : o.members) machines += m.hardware_class == klass;
        for (const auto& r : o.rows) unjudged += r.hardware_class == klass && !r.judged;
        s += "<h2>" + escape(klass) + "</h2>\n" + fmt::format("<p class=\"note\">{} machine(s){}</p>\n", machines,
                                                              unjudged ? fmt::format("; {} more result(s) measured on fewer than 3 "
                                                                                     "machines or GPUs of this class: not judged",
                                                                                     unjudged)
                                                                       : std::string());
        bool any = false;
        for (const auto& x : o.outliers) {
            if (o.rows[x.row].hardware_class != klass) continue;
            if (!any) s += "<h3>Outliers, worst first</h3><ul>\n";
            any = true;
            s += "<li>" + escape(fleet::outlier_line(o, x)) + "<ul>";
            for (const auto& c : x.causes) s += "<li>cause: " + escape(c) + "</li>";
            s += "</ul></li>\n";
        }
        if (any) s += "</ul>\n";
        // Judged results by family, in the order they come.
        std::vector<std::string> families;
        for (const auto& r : o.rows) {
            const std::string& f = r.family.empty() ? r.scenario : r.family;
            if (r.hardware_class == klass && r.judged && std::find(families.begin(), families.end(), f) == families.end())
                families.push_back(f);
        }
        for (const auto& family : families) {
            std::vector<const Row*> rows;
            for (const auto& r : o.rows)
                if (r.hardware_class == klass && r.judged && (r.family.empty() ? r.scenario : r.family) == family) rows.push_back(&r);
            s += "<h3>" + escape(family) + "</h3>\n" + family_tables(o, rows);
        }
    }
    // The verdict as `fleet --format json` writes it, for tools reading the page.
    s += fmt::format("<script type=\"application/json\" id=\"interopbench-fleet\">{}</script>\n", embed_json(fleet::outcome_json(o)));
    return s + "</body>\n</html>\n";
}

} // namespace interopbench::html
