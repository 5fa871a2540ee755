#pragma once
/// The one table of output formats: every format's name, one line of help, the commands that
/// print in it, and its renderers. `run`, `show`, `compare`, `list`, `topo`, `doctor` and `fleet` read
/// -f/--format through it (and `--export` of run and compare, the CI formats), list its
/// names in their --help, and name them when a format is unknown or not theirs.
///
/// A renderer takes its row and what one kind of command prints (a view: the input and the
/// width its tables fit): a report's results (run, show, --export), a comparison (compare,
/// --export), a listing (list), a topology (topo), the doctor's checks (doctor), a fleet
/// verdict (fleet). What kind of text a format is (for people or not, markdown, which CI
/// system) is a field of its row, which commands and renderers read instead of comparing
/// names. Adding a format is a file with its
/// renderer(s) and one row.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/compare.hpp"
#include "interopbench/fleet.hpp"
#include "interopbench/report.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/scenario.hpp"
#include "presentation/ci_formats.hpp"
#include "presentation/output.hpp"
#include "topology/doctor.hpp"
#include "topology/topology.hpp"

namespace interopbench {

/// Where a format is given: a command's -f/--format, or `--export FORMAT=PATH` (run and
/// compare: the files CI systems read).
enum class Command : unsigned {
    run = 1u << 0,
    show = 1u << 1,
    compare = 1u << 2,
    list = 1u << 3,
    topo = 1u << 4,
    doctor = 1u << 5,
    export_file = 1u << 6,
    fleet = 1u << 7,
};
/// "run", "show", "compare", "list", "topo", "doctor", "--export", "fleet".
const char* to_string(Command command);
/// Every Command, in the order above.
inline constexpr Command k_commands[] = {Command::run,  Command::show,   Command::compare,     Command::list,
                                         Command::topo, Command::doctor, Command::export_file, Command::fleet};

/// A report's results, as `run` and `show` print them.
struct ReportView {
    const Report& report;                ///< the report
    const std::vector<Result>& results;  ///< its results (run: as measured, before anonymizing)
    TableStyle style;                    ///< tables
    CiMetrics metrics = CiMetrics::primary; ///< CI formats
    bool header = false;                 ///< tables open with the report's header (show)
};

/// A comparison, as `compare` prints it.
struct ComparisonView {
    const CompareOutcome& outcome;
    const std::vector<Result>& fresh;    ///< the new report's results (CI formats)
    CiMetrics metrics = CiMetrics::primary;
    bool color = false;                  ///< the verdict painted for a terminal (table only; see paint)
    std::size_t width = k_plain_width;   ///< columns the tables fit (0: no limit, --wide)
};

/// What `list` prints: a plain listing (profiles, families: `rows`, header first, and `doc`),
/// or, when `rows` is empty, the scenario catalogue.
struct ListView {
    std::vector<std::vector<std::string>> rows;
    nlohmann::json doc;
    std::vector<const ScenarioInfo*> scenarios;
    std::vector<std::string> origins; ///< per scenario: the plugin manifest it comes from, or ""
    bool details = false;             ///< each scenario's axes, metrics and counting
    std::size_t width = k_plain_width; ///< columns the tables fit (0: no limit, --wide)
};

/// A topology, as `topo` prints it.
struct TopologyView {
    const Topology& topology;
    std::size_t width = k_plain_width; ///< columns the tables fit (0: no limit, --wide)
};

/// The doctor's checks, as `doctor` prints them.
struct ChecksView {
    const std::vector<CheckResult>& checks;
    std::size_t width = k_plain_width; ///< columns the table fits (0: no limit, --wide)
};

/// A fleet verdict, as `fleet` prints it.
struct FleetView {
    const fleet::Outcome& outcome;
    std::size_t width = k_plain_width; ///< columns the tables fit (0: no limit, --wide)
    bool color = false;                ///< outliers painted for a terminal (table only; see paint)
};

/// One row of the table: a format's name, help and commands, what kind of text it is, and
/// its renderers. A renderer is null where the format does not render that input; each
/// takes its row, so one renderer serves the rows that differ only in a field (table and
/// markdown: `markdown`; the CI formats: `ci_system`).
struct Format {
    std::string_view name;
    std::string_view alias; ///< another name that selects it ("md"), or ""
    std::string_view help;  ///< one line
    unsigned commands = 0;  ///< bits of Command
    /// Text for people (tables, markdown): headers, plans and gates are printed with it.
    bool human = false;
    /// GitHub markdown rather than aligned columns (a human format).
    bool markdown = false;
    /// The CI system that reads it (the formats --export writes), or none.
    CiSystem ci_system = CiSystem::none;
    std::string (*report)(const Format&, const ReportView&) = nullptr;
    std::string (*comparison)(const Format&, const ComparisonView&) = nullptr;
    std::string (*listing)(const Format&, const ListView&) = nullptr;
    std::string (*topology)(const Format&, const TopologyView&) = nullptr;
    std::string (*checks)(const Format&, const ChecksView&) = nullptr;
    std::string (*fleet)(const Format&, const FleetView&) = nullptr;

    bool accepts(Command command) const { return (commands & static_cast<unsigned>(command)) != 0; }
    /// A format CI systems read: results go out by key.
    bool ci() const { return ci_system != CiSystem::none; }

    /// The input in this format, by its renderer (not null for the commands the row accepts).
    std::string render(const ReportView& input) const { return report(*this, input); }
    std::string render(const ComparisonView& input) const { return comparison(*this, input); }
    std::string render(const ListView& input) const { return listing(*this, input); }
    std::string render(const TopologyView& input) const { return topology(*this, input); }
    std::string render(const ChecksView& input) const { return checks(*this, input); }
    std::string render(const FleetView& input) const { return fleet(*this, input); }
};

/// Every format, in the order help and messages list them.
std::span<const Format> formats();

/// The format `name` (or its alias) of `command`. Throws UsageError, one line without a hint,
/// naming the command's formats: "unknown format 'x' for compare; formats: table, json, ...
/// (did you mean 'y'?)", or "topo has no format 'csv'; formats: table, json, markdown".
const Format& find_format(std::string_view name, Command command);

/// The names of `command`'s formats: "table, json, csv, markdown".
std::string format_names(Command command);

/// `command`'s formats, one a line with its help, under "formats:" (the commands' --help).
std::string format_help(Command command);

} // namespace interopbench
