#include "presentation/fleet_view.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "presentation/formats.hpp"
#include "presentation/output.hpp"

namespace interopbench::fleet {

namespace {

std::string percent(double ratio) { return fmt::format("{:.0f}%", ratio * 100); }

} // namespace

std::string row_label(const Row& row) {
    std::vector<std::pair<std::string, std::string>> axes;
    const auto slash = row.key.find('/');
    if (slash != std::string::npos) {
        std::string rest = row.key.substr(slash + 1);
        std::size_t at = 0;
        while (at < rest.size()) {
            const auto comma = rest.find(',', at);
            const std::string item = rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
            const auto eq = item.find('=');
            if (eq != std::string::npos) axes.emplace_back(item.substr(0, eq), item.substr(eq + 1));
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
    }
    return short_label(row.scenario, Params(axes));
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

/// Per class, the results table: one row per result key.
std::vector<std::vector<std::string>> results_table(const Outcome& o, const std::string& klass) {
    std::vector<std::vector<std::string>> t{{"result", "n", "median", "spread", "lowest", "outliers"}};
    for (const auto& row : o.rows) {
        if (row.hardware_class != klass || !row.judged) continue;
        std::size_t n = 0, outliers = 0;
        const Figure* lowest = nullptr;
        for (const auto& f : row.figures) {
            if (f.outlier) ++outliers;
            if (f.failed) continue;
            ++n;
            if (row.judged && (!lowest || f.ratio < lowest->ratio)) lowest = &f;
        }
        t.push_back({row_label(row), std::to_string(n),
                     row.judged ? format_value(row.median, row.unit) + (row.reference == "expected" ? " (expected)" : "") : "-",
                     row.judged ? fmt::format("{:.1f}%", row.spread * 100) : "-",
                     lowest ? fmt::format("{} {}", percent(lowest->ratio), where(o, *lowest)) : "-",
                     outliers ? std::to_string(outliers) : ""});
    }
    return t;
}

} // namespace

std::string render_text(const Format& format, const Outcome& o) {
    const bool markdown = format.markdown;
    std::string s;
    const auto line = [&](const std::string& text) { s += display_text(text) + "\n"; };
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
        s += markdown ? "## " + display_text(heading) + "\n" : wrap(display_text(heading), terminal_width(), "");
        s += "\n";
        bool any = false;
        for (const auto& x : o.outliers) {
            if (o.rows[x.row].hardware_class != klass) continue;
            if (!any) line(markdown ? "Outliers, worst first:\n" : "outliers, worst first:");
            any = true;
            line((markdown ? "- " : "! ") + outlier_line(o, x));
            for (const auto& c : x.causes) line((markdown ? "  - cause: " : "    cause: ") + c);
        }
        for (const auto& x : o.dropped) {
            if (o.rows[x.row].hardware_class != klass) continue;
            line((markdown ? "- dropped, " : "  dropped, ") + outlier_line(o, x));
        }
        if (any || markdown) s += "\n";
        s += render_table(results_table(o, klass), markdown);
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

std::string render_json(const Format&, const Outcome& o) { return outcome_json(o).dump(2) + "\n"; }

} // namespace interopbench::fleet
