// The report page: the machine, the verdict, one section per family with its charts, what was
// not measured, and the report itself embedded (a script element of type application/json,
// never executed: the page's only script), so that the page reads back as its report.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "interopbench/html_embed.hpp"
#include "interopbench/report.hpp"
#include "presentation/html_charts.hpp"
#include "presentation/output.hpp"

namespace interopbench::html {
namespace {

/// The GPU x GPU matrix of path classes, as `topo` prints it, from the report's topology.
std::string topology_matrix(const ReportHeader::Topology& topo) {
    if (topo.gpus.empty()) return {};
    const auto& gpus = topo.gpus;
    std::vector<std::string> labels;
    for (const auto& g : gpus)
        labels.push_back(!g.label.empty() ? g.label : "GPU" + (g.index >= 0 ? std::to_string(g.index) : std::string("?")));
    std::map<std::pair<int, int>, std::string> cls;
    for (const auto& p : topo.pairs) cls[{p.from, p.to}] = p.path_class.empty() ? "?" : p.path_class;
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
                const auto it = cls.find({gpus[i].index, gpus[j].index});
                row.push_back(it == cls.end() ? "-" : it->second);
            }
        }
        const auto& bw = gpus[i].host_path_bandwidth;
        row.push_back((gpus[i].host_path_class.empty() ? std::string("-") : gpus[i].host_path_class) +
                      (bw ? " " + tick_label(*bw, "B/s") : std::string()));
        row.push_back(gpus[i].cpus.empty() ? "-" : gpus[i].cpus);
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
    s += topology_matrix(h.topology);
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

/// The family a result is shown under: its own, else its scenario's name.
const std::string& family_of(const Result& r) { return r.family.empty() ? r.scenario : r.family; }

/// Collectives and the like: the family's scenarios (three or more) over one size axis with one
/// bandwidth metric in common, as one scenario x size matrix; empty otherwise.
std::string family_matrix(const std::vector<std::string>& scs, const std::map<std::string, std::vector<const Result*>>& by) {
    if (scs.size() < 3) return {};
    std::map<std::string, std::size_t> bw_metric_count;
    std::string size_param;
    std::size_t sized = 0;
    for (const auto& sc : scs) {
        const Result* first = nullptr;
        for (const auto* r : by.at(sc))
            if (r->status == Status::ok && !r->metrics.empty()) first = first ? first : r;
        if (!first) continue;
        if (first->params.find("size")) {
            size_param = "size";
            ++sized;
        }
        for (const auto& m : first->metrics)
            if (m.info.unit == "B/s") ++bw_metric_count[m.info.name];
    }
    std::string metric;
    for (const auto& [name, count] : bw_metric_count)
        if (count == sized && sized == scs.size()) metric = name; // the last in name order shared by all
    // Prefer the metric declared last by the first scenario (the bus bandwidth of collectives).
    if (!metric.empty())
        for (const auto* r : by.at(scs[0]))
            if (r->status == Status::ok) {
                for (const auto& m : r->metrics)
                    if (m.info.unit == "B/s" && bw_metric_count[m.info.name] == scs.size()) metric = m.info.name;
                break;
            }
    if (metric.empty() || size_param.empty()) return {};
    return family_heatmap(scs, by, size_param, metric);
}

/// Results that were not measured (skipped, failed, or ok without a figure), grouped by
/// scenario, status and reason in the order they first appear.
struct ProblemGroup {
    std::string status, reason;
    std::vector<const Result*> results;
};

std::vector<ProblemGroup> problem_groups(const std::vector<const Result*>& results) {
    std::vector<ProblemGroup> groups;
    for (const auto* r : results) {
        std::string status, reason;
        if (r->status != Status::ok) {
            status = to_string(r->status);
            reason = r->reason.empty() ? "(no reason recorded)" : r->reason;
        } else if (r->metrics.empty() || !usable(r->metrics[0])) {
            status = "ok, no figure";
            reason = "the primary metric has no finite median (NaN or left out): not plotted";
        } else {
            continue;
        }
        const auto g = std::find_if(groups.begin(), groups.end(), [&](const ProblemGroup& x) {
            return x.status == status && x.reason == reason && x.results[0]->scenario == r->scenario;
        });
        if (g == groups.end()) groups.push_back({status, reason, {r}});
        else g->results.push_back(r);
    }
    return groups;
}

} // namespace

std::string render_report_page(const Report& report) {
    const auto& results = report.results;
    std::vector<std::string> families;
    std::map<std::string, std::vector<std::string>> fam_scen;
    std::map<std::string, std::vector<const Result*>> by;
    for (const auto& r : results) {
        const std::string& family = family_of(r);
        if (!fam_scen.count(family)) families.push_back(family);
        if (!by.count(r.scenario)) fam_scen[family].push_back(r.scenario);
        by[r.scenario].push_back(&r);
    }
    const ReportHeader& header = report.header;
    std::string out = page_open("interopbench report " + header.host.hostname);
    out += header_html(header);
    // The verdict first: the same lines as the terminal's summary.
    out += "<section class=\"summary\"><h2 id=\"summary\">Summary</h2>\n<ul class=\"summary\">";
    for (const auto& l : summary_lines(results))
        out += l.rfind("! ", 0) == 0 ? "<li class=\"bad\">" + escape(l.substr(2)) + "</li>" : "<li>" + escape(l) + "</li>";
    out += "</ul>\n";
    // Scenarios of which every configuration was skipped get no section of their own (a
    // machine without a GPU would show one empty section per GPU scenario): one block per
    // reason says how many there are. The list at the end has every configuration.
    std::set<std::string> all_skipped;
    for (const auto& g : skip_groups(results, true)) {
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
        if (std::any_of(results.begin(), results.end(), [&](const Result& r) { return family_of(r) == f && r.status == Status::ok; }))
            measured.push_back(f);
    out += "<p>Contents:";
    for (const auto& f : measured) out += fmt::format(" <a href=\"#{}\">{}</a>", escape(anchor(f)), escape(f));
    out += " <a href=\"#not-measured\">not measured</a></p></section>\n";
    for (const auto& fam : measured) {
        out += fmt::format("<section class=\"family\"><h2 id=\"{}\">{}</h2>\n", escape(anchor(fam)), escape(fam));
        const auto& scs = fam_scen[fam];
        std::string charts = family_matrix(scs, by);
        for (const auto& sc : scs) {
            if (all_skipped.count(sc)) continue; // said once, above
            const auto& rs = by[sc];
            std::string counting;
            for (const auto* r : rs)
                if (!r->counting.empty()) counting = r->counting;
            std::size_t ok = 0;
            for (const auto* r : rs) ok += r->status == Status::ok;
            // What was not measured, one line per reason: a pair measured under another is 24
            // skips of one cause, not 24 lines.
            std::string unmeasured;
            for (const auto& g : problem_groups(rs))
                unmeasured += fmt::format("; {} {}: {}", g.results.size(), g.status, g.reason);
            std::string c = scenario_charts(rs);
            charts += fmt::format("<h3>{}</h3>\n<p class=\"note\">{} of {} configuration(s) measured{}{}{}</p>\n", escape(sc), ok,
                                  rs.size(), escape(unmeasured), counting.empty() ? "" : "; bytes: ", escape(counting));
            if (c.empty()) charts += "<p class=\"note\">nothing to plot: no configuration of this scenario was measured</p>\n";
            charts += c;
            // The scenario's own explanations (details.diagnosis), one per configuration.
            std::string said;
            for (const auto* r : rs)
                if (const auto d = r->details.find("diagnosis"); d != r->details.end() && d->is_string())
                    said += "<li><b>" + escape(r->key.substr(r->key.find('/') + 1)) + "</b>: " +
                            escape(d->get<std::string>()) + "</li>";
            if (!said.empty()) charts += "<ul class=\"diagnosis\">" + said + "</ul>\n";
            // Matrices the results carry (details.matrix), as tables.
            std::vector<const nlohmann::json*> details;
            for (const auto* r : rs) details.push_back(&r->details);
            for (const auto& t : matrix_tables(details)) charts += table_html(t);
        }
        out += charts + "</section>\n";
    }
    // Skipped and failed results, with their reasons: one line per scenario, status and reason.
    std::vector<const Result*> all;
    for (const auto& r : results) all.push_back(&r);
    const auto groups = problem_groups(all);
    std::size_t configurations = 0;
    std::vector<std::vector<std::string>> problems{{"status", "scenario", "configurations", "reason"}};
    for (const auto& g : groups) {
        configurations += g.results.size();
        std::string which = g.results[0]->key.substr(g.results[0]->key.find('/') + 1);
        if (g.results.size() > 1) {
            const std::string fixed = constant_params(g.results), varying = fmt::format("{}", fmt::join(varying_params(g.results), ", "));
            which = fmt::format("{}{}{} ({})", fixed, varying.empty() ? "" : fixed.empty() ? "over " : "; over ", varying,
                                g.results.size());
        }
        problems.push_back({g.status, g.results[0]->scenario, which, g.reason});
    }
    out += "<section><h2 id=\"not-measured\">Skipped, failed and without figures</h2>\n";
    out += groups.empty() ? "<p>every configuration was measured</p>\n"
                          : fmt::format("<details><summary>{} configuration(s), {} reason(s)</summary>\n{}</details>\n",
                                        configurations, groups.size(), table_html(problems));
    out += "</section>\n";
    out += fmt::format("<script type=\"application/json\" id=\"{}\">{}</script>\n</body>\n</html>\n", k_report_block_id,
                       embed_json(report_document(report)));
    return out;
}

} // namespace interopbench::html
