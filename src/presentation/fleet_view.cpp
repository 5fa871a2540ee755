#include "presentation/fleet_view.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "presentation/formats.hpp"
#include "presentation/output.hpp"
#include "presentation/table.hpp"

namespace interopbench::fleet {

namespace {

std::string percent(double ratio) { return fmt::format("{:.0f}%", ratio * 100); }

} // namespace

std::string row_label(const Row& row) {
    return short_label(row.scenario, split_key(row.key).second);
}

namespace {

std::string where(const Outcome& o, const Figure& f) {
    const std::string& label = o.members[f.member].label;
    return f.gpu.empty() ? label : fmt::format("{} {}", label, f.gpu);
}

} // namespace

std::string outlier_line(const Outcome& o, const Outlier& x) {
    const Row& row = o.rows[x.row];
    const Figure& f = row.figures[x.figure];
    std::string line = f.failed ? fmt::format("{}: {} failed where its class measured it", where(o, f), row_label(row))
                                : fmt::format("{}: {} {}, {} of the {} median {} (bar: {} short)", where(o, f), row_label(row),
                                              format_value(f.value, row.unit), percent(f.ratio), row.reference,
                                              format_value(row.median, row.unit), percent(f.bar));
    if (!x.confirmation.empty())
        line += x.confirmation == "not re-measured" ? "; not re-measured"
                                                    : fmt::format("; re-measured: {} ({})", percent(x.confirm_ratio), x.confirmation);
    return line;
}

namespace {

// Rows named by their short labels without the axis values all of them share, which
// `shared` receives (said once above their table).
std::vector<std::string> labels_of(const std::vector<const Row*>& rows, std::vector<std::pair<std::string, std::string>>& shared) {
    std::vector<std::pair<std::string, Params>> keys;
    std::vector<const Params*> configs;
    for (const Row* r : rows) keys.push_back(split_key(r->key));
    for (const auto& k : keys) configs.push_back(&k.second);
    shared = shared_axes(configs);
    std::vector<std::string> labels;
    for (std::size_t i = 0; i < rows.size(); ++i) labels.push_back(short_label(rows[i]->scenario, without_axes(keys[i].second, shared)));
    return labels;
}

// A table under what all its rows share, said once: the axis values, and the columns `once`
// names where every row has the same (non-empty) cell.
std::string table_under(const std::vector<std::pair<std::string, std::string>>& shared, std::vector<TableColumn> cols,
                        const std::vector<std::string>& once, const TableLayout& layout) {
    std::vector<std::string> said;
    if (!shared.empty()) said.push_back(axes_text(shared));
    for (auto c = cols.begin(); c != cols.end();) {
        const auto& cells = c->cells;
        const bool same = cells.size() > 1 && !cells[0].empty() && std::find(once.begin(), once.end(), c->header) != once.end() &&
                          std::all_of(cells.begin(), cells.end(), [&](const std::string& t) { return t == cells[0]; });
        if (same) said.push_back(c->header + " " + cells[0]);
        c = same ? cols.erase(c) : c + 1;
    }
    std::string out;
    if (!said.empty()) {
        const std::string line = fmt::format("every result here: {}", fmt::join(said, ", "));
        out += layout.markdown ? display_text(line) + "\n\n" : wrap(display_text(line), layout.width, layout.indent);
    }
    return out + fit_table(std::move(cols), layout);
}

/// Per class, the results table: one row per result key.
std::string results_table(const Outcome& o, const std::string& klass, const TableLayout& layout) {
    std::vector<const Row*> rows;
    for (const auto& row : o.rows)
        if (row.hardware_class == klass && row.judged) rows.push_back(&row);
    std::vector<std::pair<std::string, std::string>> shared;
    const auto labels = labels_of(rows, shared);
    std::vector<TableColumn> t{{"result", {}, false, true}, {"n", {}}, {"median", {}}, {"spread", {}},
                               {"lowest", {}, false, true}, {"outliers", {}}};
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& row = *rows[i];
        std::size_t n = 0, outliers = 0;
        const Figure* lowest = nullptr;
        for (const auto& f : row.figures) {
            if (f.outlier) ++outliers;
            if (f.failed) continue;
            ++n;
            if (!lowest || f.ratio < lowest->ratio) lowest = &f;
        }
        const std::vector<std::string> cells{
            labels[i], std::to_string(n), format_value(row.median, row.unit) + (row.reference == "expected" ? " (expected)" : ""),
            fmt::format("{:.1f}%", row.spread * 100), lowest ? fmt::format("{} {}", percent(lowest->ratio), where(o, *lowest)) : "-",
            outliers ? std::to_string(outliers) : ""};
        for (std::size_t c = 0; c < t.size(); ++c) t[c].cells.push_back(cells[c]);
    }
    return table_under(shared, std::move(t), {}, layout);
}

// A class's outliers grouped by machine, then by their causes (the same causes said once):
// "! node4: 5 results, cause: ..." and a table of the figures under it.
// With `color` (a terminal) the "! " and machine of each group are painted red.
std::string outlier_groups(const Outcome& o, const std::string& klass, bool md, std::size_t width, bool color) {
    struct Group {
        std::size_t member;
        const std::vector<std::string>* causes;
        std::vector<const Outlier*> outliers;
    };
    std::vector<Group> groups;
    for (const auto& x : o.outliers) {
        if (o.rows[x.row].hardware_class != klass) continue;
        const std::size_t member = o.rows[x.row].figures[x.figure].member;
        auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& e) { return e.member == member && *e.causes == x.causes; });
        if (g == groups.end()) {
            // After the machine's other groups: a machine's outliers stay together.
            auto at = groups.end();
            for (auto it = groups.begin(); it != groups.end(); ++it)
                if (it->member == member) at = it + 1;
            g = groups.insert(at, Group{member, &x.causes, {}});
        }
        g->outliers.push_back(&x);
    }
    if (groups.empty()) return {};
    std::string out = md ? "Outliers, worst first (bar: the shortfall a figure had to exceed):\n\n"
                         : wrap("outliers, worst first (bar: the shortfall a figure had to exceed):", width, "");
    for (const auto& g : groups) {
        const std::size_t n = g.outliers.size();
        const auto& causes = *g.causes;
        std::string head = fmt::format("{}: {} result{}", o.members[g.member].label, n, n == 1 ? "" : "s");
        if (causes.size() == 1) head += ", cause: " + causes[0];
        else if (causes.size() > 1) head += fmt::format(", {} causes:", causes.size());
        if (md) {
            out += "- " + display_text(head) + "\n";
        } else {
            std::string text = wrap(display_text(head), width, "! ", "    ");
            const std::string lead = "! " + display_text(o.members[g.member].label); // on the first line, whole
            if (text.starts_with(lead)) text = paint(lead, Tone::bad, color) + text.substr(lead.size());
            out += text;
        }
        if (causes.size() > 1)
            for (const auto& c : causes) out += md ? "  - cause: " + display_text(c) + "\n" : wrap(display_text(c), width, "    cause: ", "      ");
        std::vector<const Row*> rows;
        for (const auto* x : g.outliers) rows.push_back(&o.rows[x->row]);
        std::vector<std::pair<std::string, std::string>> shared;
        const auto labels = labels_of(rows, shared);
        std::vector<TableColumn> t{{"result", {}, false, true}, {"GPU", {}}, {"figure", {}}, {"of median", {}},
                                   {"median", {}}, {"bar", {}}, {"re-measured", {}, false, true}};
        for (std::size_t i = 0; i < g.outliers.size(); ++i) {
            const Outlier& x = *g.outliers[i];
            const Row& row = o.rows[x.row];
            const Figure& f = row.figures[x.figure];
            const std::vector<std::string> cells{
                labels[i],
                f.gpu,
                f.failed ? "failed" : format_value(f.value, row.unit),
                f.failed ? "-" : percent(f.ratio),
                format_value(row.median, row.unit) + (row.reference == "expected" ? " (expected)" : ""),
                f.failed ? "-" : percent(f.bar),
                x.confirmation.empty() || x.confirmation == "not re-measured"
                    ? x.confirmation
                    : fmt::format("{} ({})", percent(x.confirm_ratio), x.confirmation)};
            for (std::size_t c = 0; c < t.size(); ++c) t[c].cells.push_back(cells[c]);
        }
        TableLayout layout;
        layout.width = width;
        layout.markdown = md;
        layout.indent = md ? "" : "    ";
        out += (md ? "\n" : "") + table_under(shared, std::move(t), {"GPU"}, layout) + (md ? "\n" : "");
    }
    return out;
}

} // namespace

std::string render_text(const Format& format, const FleetView& view) {
    const Outcome& o = view.outcome;
    const bool markdown = format.markdown;
    const std::size_t width = markdown ? 0 : view.width;
    std::string s;
    // A paragraph: wrapped to the width, its further lines indented.
    const auto line = [&](const std::string& text) { s += wrap(display_text(text), width, "", "  "); };
    line(markdown ? "**" + verdict_line(o) + "**" : verdict_line(o));
    std::size_t judged = 0;
    for (const auto& r : o.rows) judged += r.judged ? 1 : 0;
    line(fmt::format("{} report(s), {} machine(s) in {} hardware class(es), {} of {} results judged; an outlier falls short "
                     "of the median by more than {}, {} robust standard deviations of its class and its own spread between rounds",
                     o.reports, o.members.size(), o.classes.size(), judged, o.rows.size(), percent(o.options.threshold),
                     o.options.spread_factor));
    if (markdown) s += "\n";
    for (const auto& e : o.excluded) line((markdown ? "- left out: " : "left out: ") + e);
    for (const auto& n : o.notes) line((markdown ? "- note: " : "note: ") + n);
    TableLayout layout;
    layout.width = width;
    layout.markdown = markdown;
    for (const auto& klass : o.classes) {
        std::vector<std::string> names;
        for (const auto& m : o.members)
            if (m.hardware_class == klass) names.push_back(m.label);
        s += "\n";
        const std::size_t shown = std::min<std::size_t>(names.size(), 12); // a large fleet: -f json lists them all
        const std::string heading =
            fmt::format("class {}: {} machine(s): {}{}", klass, names.size(),
                        fmt::join(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                        names.size() > shown ? fmt::format(" and {} more", names.size() - shown) : "");
        s += markdown ? "## " + display_text(heading) + "\n" : wrap(display_text(heading), width, "", "  ");
        s += "\n";
        const std::string groups = outlier_groups(o, klass, markdown, width, view.color && !markdown);
        s += groups;
        bool dropped = false;
        for (const auto& x : o.dropped) {
            if (o.rows[x.row].hardware_class != klass) continue;
            if (!dropped && !markdown) line("dropped, not repeated when re-measured:");
            dropped = true;
            s += markdown ? "- dropped, " + display_text(outlier_line(o, x)) + "\n" : wrap(display_text(outlier_line(o, x)), width, "  ", "    ");
        }
        if (!groups.empty() || dropped || markdown) s += "\n";
        s += results_table(o, klass, layout);
        std::size_t unjudged = 0;
        for (const auto& r : o.rows) unjudged += r.hardware_class == klass && !r.judged ? 1 : 0;
        if (unjudged)
            line(fmt::format("{}{} more result(s) measured on fewer than 3 machines or GPUs of this class: not judged "
                             "(-f json lists them)",
                             markdown ? "\n" : "", unjudged));
    }
    return s;
}

nlohmann::json outcome_json(const Outcome& o) {
    nlohmann::json members = nlohmann::json::array();
    for (const auto& m : o.members) {
        nlohmann::json gpus = nlohmann::json::array();
        for (const auto& g : m.gpus)
            gpus.push_back({{"label", g.label}, {"name", g.name}, {"uuid", g.uuid},
                            {"pcie", {{"gen_current", g.pcie_gen_current}, {"width_current", g.pcie_width_current},
                                      {"gen_max", g.pcie_gen_max}, {"width_max", g.pcie_width_max}}}});
        members.push_back({{"machine", m.label}, {"file", m.file}, {"hostname", m.hostname}, {"class", m.hardware_class},
                           {"cpu", m.cpu}, {"driver", m.driver}, {"cuda_runtime", m.cuda_runtime}, {"revision", m.tool_revision},
                           {"gpus", gpus}});
    }
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : o.rows) {
        nlohmann::json figures = nlohmann::json::array();
        for (const auto& f : r.figures) {
            nlohmann::json j = {{"machine", o.members[f.member].label}, {"gpu", f.gpu}, {"key", f.key}, {"outlier", f.outlier}};
            if (f.failed) {
                j["failed"] = true;
                j["reason"] = f.reason;
            } else {
                j["value"] = f.value;
                j["own_spread"] = f.own_spread;
                if (r.judged) {
                    j["ratio"] = f.ratio;
                    j["bar"] = f.bar;
                }
                if (f.efficiency) j["efficiency"] = *f.efficiency;
            }
            figures.push_back(std::move(j));
        }
        nlohmann::json j = {{"class", r.hardware_class}, {"key", r.key}, {"metric", r.metric}, {"unit", r.unit},
                            {"better", r.higher_is_better ? "higher" : "lower"}, {"judged", r.judged}, {"figures", figures}};
        if (r.judged) {
            j["median"] = r.median;
            j["spread"] = r.spread;
            j["reference"] = r.reference;
        } else {
            j["not_judged"] = r.not_judged;
        }
        rows.push_back(std::move(j));
    }
    const auto outlier_json = [&](const Outlier& x) {
        const Row& r = o.rows[x.row];
        const Figure& f = r.figures[x.figure];
        nlohmann::json j = {{"machine", o.members[f.member].label}, {"gpu", f.gpu}, {"key", f.key}, {"metric", r.metric},
                            {"causes", x.causes}};
        if (f.failed) j["failed"] = f.reason;
        else {
            j["value"] = f.value;
            j["median"] = r.median;
            j["ratio"] = f.ratio;
            j["bar"] = f.bar;
        }
        if (!x.confirmation.empty()) {
            j["confirmation"] = x.confirmation;
            if (x.confirmation != "not re-measured") j["confirm_ratio"] = x.confirm_ratio;
        }
        return j;
    };
    nlohmann::json outliers = nlohmann::json::array(), dropped = nlohmann::json::array();
    for (const auto& x : o.outliers) outliers.push_back(outlier_json(x));
    for (const auto& x : o.dropped) dropped.push_back(outlier_json(x));
    return {{"schema", "interopbench.fleet"},
            {"version", "1.0"},
            {"verdict", verdict_line(o)},
            {"pass", o.outliers.empty()},
            {"threshold", o.options.threshold},
            {"spread_factor", o.options.spread_factor},
            {"reports", o.reports},
            {"classes", o.classes},
            {"machines", members},
            {"outliers", outliers},
            {"dropped", dropped},
            {"excluded", o.excluded},
            {"notes", o.notes},
            {"results", rows}};
}

std::string render_json(const Format&, const FleetView& view) { return outcome_json(view.outcome).dump(2) + "\n"; }

} // namespace interopbench::fleet
