#include "presentation/formats.hpp"
#include "presentation/fleet_view.hpp"

#include <fmt/format.h>

#include "interopbench/conditions.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/params.hpp"
#include "interopbench/report.hpp"
#include "interopbench/text.hpp"
#include "presentation/comparison.hpp"
#include "presentation/doctor_text.hpp"
#include "presentation/html.hpp"
#include "presentation/topology_text.hpp"

namespace interopbench {
namespace {

// ---- the renderers of each row, by what they render -------------------------------------

// The report's header in a few lines, as `show` opens its tables.
std::string header_lines(const ReportHeader& h) {
    std::string out;
    // Report text reaches the terminal through display_text only (one line each).
    const auto line = [&out](const std::string& text) { out += display_text(text) + "\n"; };
    const auto known = [](const std::string& text, const char* missing) { return text.empty() ? missing : text; };
    line(fmt::format("interopbench {} report, profile {}, {} ({})", known(h.schema_version, "?"),
                     known(h.invocation.profile, "-"), known(h.invocation.started, "?"), known(h.invocation.status, "?")));
    line(fmt::format("host {} ({}, {} CPUs)", known(h.host.hostname, "?"), known(h.host.cpu, "?"), h.host.logical_cpus));
    for (const auto& d : h.devices)
        line(fmt::format("GPU {}: {} {} ({} SMs, {})", d.ordinal, known(d.name, "?"), known(d.pci_bus_id, "?"), d.sm_count,
                         d.memory_bytes ? format_value(static_cast<double>(d.memory_bytes), "B") : std::string("?")));
    // A multi-process report: every rank's host and GPU (the lines above are rank 0's).
    if (h.hosts.size() > 1) {
        std::vector<std::string> ranks;
        for (const auto& r : h.hosts)
            ranks.push_back(fmt::format("{} {}{}", r.rank, known(r.host.hostname, "?"), r.device.empty() ? "" : " " + r.device));
        const std::size_t shown = std::min<std::size_t>(ranks.size(), 8);
        line(fmt::format("{} ranks: {}{}", ranks.size(), fmt::join(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                         ranks.size() > shown ? fmt::format(" and {} more (-f json has them all)", ranks.size() - shown) : ""));
    }
    // What the run ran under, when something limited it (cgroup limits, other processes on a GPU, ...).
    if (h.conditions)
        if (const std::string note = conditions_note(*h.conditions); !note.empty()) line("conditions: " + note);
    for (const auto& w : h.warnings) line("warning: " + w);
    return out;
}

std::string report_as(const ReportView& v, OutputFormat format) {
    const bool human = format == OutputFormat::table || format == OutputFormat::markdown;
    return (v.header && human ? header_lines(v.report.header) : std::string{}) + render_summary(v.results, format, v.style.width) +
           render_results(v.results, format, v.style);
}
std::string report_table(const ReportView& v) { return report_as(v, OutputFormat::table); }
std::string report_markdown(const ReportView& v) { return report_as(v, OutputFormat::markdown); }
std::string report_csv(const ReportView& v) { return report_as(v, OutputFormat::csv); }
std::string report_json(const ReportView& v) { return report_document(v.report).dump(2) + "\n"; }
std::string report_html(const ReportView& v) { return html::render_report_page(v.report); }

std::string comparison_table(const ComparisonView& v) { return render_comparison(v.outcome, CompareFormat::table); }
std::string comparison_markdown(const ComparisonView& v) { return render_comparison(v.outcome, CompareFormat::markdown); }
std::string comparison_json_text(const ComparisonView& v) { return render_comparison(v.outcome, CompareFormat::json); }
std::string comparison_junit(const ComparisonView& v) { return render_comparison(v.outcome, CompareFormat::junit); }
std::string comparison_html(const ComparisonView& v) { return render_comparison(v.outcome, CompareFormat::html); }

std::string listing_as(const ListView& v, OutputFormat format) {
    const bool md = format == OutputFormat::markdown;
    if (!v.rows.empty()) return format == OutputFormat::json ? v.doc.dump(2) + "\n" : render_table(v.rows, md);
    // One line per scenario, the details when scenarios are named.
    std::string text = render_scenarios(v.scenarios, format, v.details);
    // Where each plugin scenario comes from: an "origin" field in JSON, a table of their
    // manifests after the scenarios in text (CSV keeps its one table).
    std::vector<std::vector<std::string>> plugins{{"plugin scenario", "manifest"}};
    for (std::size_t i = 0; i < v.scenarios.size() && i < v.origins.size(); ++i)
        if (!v.origins[i].empty()) plugins.push_back({v.scenarios[i]->id, v.origins[i]});
    if (format == OutputFormat::json) {
        auto doc = parse_json(text);
        for (std::size_t i = 0; i < v.scenarios.size() && i < v.origins.size(); ++i)
            if (!v.origins[i].empty()) doc[i]["origin"] = v.origins[i];
        return doc.dump(2) + "\n";
    }
    if (format != OutputFormat::csv && plugins.size() > 1) {
        text += '\n'; // appended apart: GCC 12 warns falsely (-Wrestrict) on "\n" + string here
        text += render_table(plugins, md);
    }
    return text;
}
std::string listing_table(const ListView& v) { return listing_as(v, OutputFormat::table); }
std::string listing_markdown(const ListView& v) { return listing_as(v, OutputFormat::markdown); }
std::string listing_csv(const ListView& v) { return listing_as(v, OutputFormat::csv); }
std::string listing_json(const ListView& v) { return listing_as(v, OutputFormat::json); }

std::string topology_table(const Topology& t) { return render_topology(t, false); }
std::string topology_markdown(const Topology& t) { return render_topology(t, true); }
std::string topology_json_text(const Topology& t) { return topology_json(t).dump(2) + "\n"; }

std::string checks_table(const std::vector<CheckResult>& r) { return render_checks(r, false); }
std::string checks_markdown(const std::vector<CheckResult>& r) { return render_checks(r, true); }
std::string checks_json_text(const std::vector<CheckResult>& r) { return checks_json(r).dump(2) + "\n"; }

std::string fleet_table(const fleet::Outcome& o) { return fleet::render_text(o, false); }
std::string fleet_markdown(const fleet::Outcome& o) { return fleet::render_text(o, true); }
std::string fleet_json_text(const fleet::Outcome& o) { return fleet::render_json(o).dump(2) + "\n"; }

std::string bigger_report(const ReportView& v) { return render_ci(v.results, CiFormat::benchmark_action_bigger, v.metrics); }
std::string bigger_comparison(const ComparisonView& v) {
    return render_ci(v.outcome, v.fresh, CiFormat::benchmark_action_bigger, v.metrics);
}
std::string smaller_report(const ReportView& v) { return render_ci(v.results, CiFormat::benchmark_action_smaller, v.metrics); }
std::string smaller_comparison(const ComparisonView& v) {
    return render_ci(v.outcome, v.fresh, CiFormat::benchmark_action_smaller, v.metrics);
}
std::string bmf_report(const ReportView& v) { return render_ci(v.results, CiFormat::bmf, v.metrics); }
std::string bmf_comparison(const ComparisonView& v) { return render_ci(v.outcome, v.fresh, CiFormat::bmf, v.metrics); }
std::string openmetrics_report(const ReportView& v) { return render_ci(v.results, CiFormat::openmetrics, v.metrics); }
std::string openmetrics_comparison(const ComparisonView& v) {
    return render_ci(v.outcome, v.fresh, CiFormat::openmetrics, v.metrics);
}

// ---- the table ---------------------------------------------------------------------------

constexpr unsigned bits(std::initializer_list<Command> commands) {
    unsigned b = 0;
    for (Command c : commands) b |= static_cast<unsigned>(c);
    return b;
}
using enum Command;

const Format k_formats[] = {
    {"table", "", "aligned columns for a terminal (the default)", bits({run, show, compare, list, topo, doctor, fleet}),
     report_table, comparison_table, listing_table, topology_table, checks_table, fleet_table, true},
    {"json", "", "the whole document as JSON", bits({run, show, compare, list, topo, doctor, fleet}), report_json,
     comparison_json_text, listing_json, topology_json_text, checks_json_text, fleet_json_text},
    {"csv", "", "one row per result and metric (list: per scenario)", bits({run, show, list}), report_csv, nullptr,
     listing_csv},
    {"markdown", "md", "GitHub markdown tables", bits({run, show, compare, list, topo, doctor, fleet}), report_markdown,
     comparison_markdown, listing_markdown, topology_markdown, checks_markdown, fleet_markdown, true},
    {"html", "", "one self-contained page with charts", bits({show, compare, fleet}), report_html, comparison_html,
     nullptr, nullptr, nullptr, fleet::render_page},
    {"junit", "", "JUnit XML: a test case per result, regressions as failures", bits({compare}), nullptr,
     comparison_junit},
    {"benchmark-action-bigger", "", "github-action-benchmark, customBiggerIsBetter: metrics where higher is better",
     bits({show, compare, export_file}), bigger_report, bigger_comparison},
    {"benchmark-action-smaller", "", "github-action-benchmark, customSmallerIsBetter: metrics where lower is better",
     bits({show, compare, export_file}), smaller_report, smaller_comparison},
    {"bmf", "", "Bencher Metric Format JSON (bencher run --adapter json)", bits({show, compare, export_file}), bmf_report,
     bmf_comparison},
    {"openmetrics", "", "OpenMetrics text (GitLab metrics reports)", bits({show, compare, export_file}),
     openmetrics_report, openmetrics_comparison},
};

} // namespace

const char* to_string(Command command) {
    switch (command) {
    case Command::run: return "run";
    case Command::show: return "show";
    case Command::compare: return "compare";
    case Command::list: return "list";
    case Command::topo: return "topo";
    case Command::doctor: return "doctor";
    case Command::export_file: return "--export";
    case Command::fleet: return "fleet";
    }
    return "?";
}

std::span<const Format> formats() { return k_formats; }

std::string format_names(Command command) {
    std::string out;
    for (const Format& f : k_formats)
        if (f.accepts(command)) out += fmt::format("{}{}", out.empty() ? "" : ", ", f.name);
    return out;
}

std::string format_help(Command command) {
    std::size_t width = 0;
    for (const Format& f : k_formats)
        if (f.accepts(command)) width = std::max(width, f.name.size());
    std::string out = "formats:";
    for (const Format& f : k_formats)
        if (f.accepts(command)) out += fmt::format("\n  {:<{}}  {}", f.name, width, f.help);
    return out;
}

const Format& find_format(std::string_view name, Command command) {
    std::vector<std::string> names;
    for (const Format& f : k_formats) {
        if (name == f.name || (!f.alias.empty() && name == f.alias)) {
            if (f.accepts(command)) return f;
            throw UsageError(fmt::format("{} has no format '{}'; formats: {}", to_string(command), name,
                                         format_names(command)));
        }
        if (f.accepts(command)) names.emplace_back(f.name);
    }
    const auto close = closest_match(name, names);
    throw UsageError(fmt::format("unknown format '{}' for {}; formats: {}{}", name, to_string(command),
                                 format_names(command), close ? fmt::format(" (did you mean '{}'?)", *close) : ""));
}

} // namespace interopbench
