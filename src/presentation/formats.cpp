#include "presentation/formats.hpp"
#include "presentation/fleet_view.hpp"

#include <fmt/format.h>

#include "interopbench/errors.hpp"
#include "interopbench/params.hpp"
#include "presentation/comparison.hpp"
#include "presentation/doctor_text.hpp"
#include "presentation/html.hpp"
#include "presentation/topology_text.hpp"

namespace interopbench {
namespace {

// The pages: html.hpp's renderers take their input only.
std::string report_page(const Format&, const ReportView& view) { return html::render_report_page(view.report); }
std::string comparison_page(const Format&, const ComparisonView& view) {
    return html::render_comparison_page(view.outcome);
}
std::string fleet_page(const Format&, const FleetView& view) { return html::render_fleet_page(view.outcome); }

// ---- the table ---------------------------------------------------------------------------

constexpr unsigned bits(std::initializer_list<Command> commands) {
    unsigned b = 0;
    for (Command c : commands) b |= static_cast<unsigned>(c);
    return b;
}
using enum Command;

const Format k_formats[] = {
    {.name = "table", .help = "aligned columns for a terminal (the default)",
     .commands = bits({run, show, compare, list, topo, doctor, fleet}), .human = true,
     .report = render_report, .comparison = render_comparison, .listing = render_listing, .topology = render_topology,
     .checks = render_checks, .fleet = fleet::render_text},
    {.name = "json", .help = "the whole document as JSON", .commands = bits({run, show, compare, list, topo, doctor, fleet}),
     .report = render_report_json, .comparison = render_comparison_json, .listing = render_listing_json,
     .topology = render_topology_json, .checks = render_checks_json, .fleet = fleet::render_json},
    {.name = "csv", .help = "one row per result and metric (list: per scenario)", .commands = bits({run, show, list}),
     .report = render_report_csv, .listing = render_listing_csv},
    {.name = "markdown", .alias = "md", .help = "GitHub markdown tables",
     .commands = bits({run, show, compare, list, topo, doctor, fleet}), .human = true, .markdown = true,
     .report = render_report, .comparison = render_comparison, .listing = render_listing, .topology = render_topology,
     .checks = render_checks, .fleet = fleet::render_text},
    {.name = "html", .help = "one self-contained page with charts", .commands = bits({show, compare, fleet}),
     .report = report_page, .comparison = comparison_page, .fleet = fleet_page},
    {.name = "junit", .help = "JUnit XML: a test case per result, regressions as failures", .commands = bits({compare}),
     .comparison = render_junit},
    {.name = "benchmark-action-bigger",
     .help = "github-action-benchmark, customBiggerIsBetter: metrics where higher is better",
     .commands = bits({show, compare, export_file}), .ci_system = CiSystem::benchmark_action_bigger,
     .report = render_ci, .comparison = render_ci},
    {.name = "benchmark-action-smaller",
     .help = "github-action-benchmark, customSmallerIsBetter: metrics where lower is better",
     .commands = bits({show, compare, export_file}), .ci_system = CiSystem::benchmark_action_smaller,
     .report = render_ci, .comparison = render_ci},
    {.name = "bmf", .help = "Bencher Metric Format JSON (bencher run --adapter json)",
     .commands = bits({show, compare, export_file}), .ci_system = CiSystem::bmf, .report = render_ci,
     .comparison = render_ci},
    {.name = "openmetrics", .help = "OpenMetrics text (GitLab metrics reports)",
     .commands = bits({show, compare, export_file}), .ci_system = CiSystem::openmetrics, .report = render_ci,
     .comparison = render_ci},
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
