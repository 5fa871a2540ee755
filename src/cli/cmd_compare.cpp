// `interopbench compare BASE.json [BASE2.json ...] NEW.json`: the CI gate. Exit 0 without regression, 1 with
// one, 2 for bad input (or different hardware without --cross-machine), 3 for inconclusive
// results when --fail-on-inconclusive is given.
#include <unistd.h>

#include <memory>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "families/builtin.hpp"
#include "interopbench/compare.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/report.hpp"

namespace interopbench::cli {

void add_compare(CLI::App& app, Outcome& out) {
    struct Args {
        std::vector<std::string> reports;
        std::string format = "table", out_file;
        std::vector<std::string> thresholds, floors;
        bool fail_on_inconclusive = false, cross_machine = false, quiet = false, wide = false;
        std::vector<std::string> exports; // --export FORMAT=PATH (CI formats)
        std::string metrics = "primary";  // CI formats: which metrics of each result
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("compare", "compare a new report with one or more baselines and gate on regressions");
    cmd->footer(
        "A result regresses when the whole 95% bootstrap interval of the ratio of medians (new/base) lies beyond "
        "the threshold in the metric's bad direction; an interval straddling the threshold is inconclusive.\n"
        "Several baselines (reports of one build, each run in its own process) are pooled: what moves between them is "
        "noise, and results are gated only beyond it, as for the rounds of 'run --rounds'.\n"
        "Exit codes: 0 no regression, 1 regression, 2 usage or input error, 3 inconclusive (with --fail-on-inconclusive).");
    cmd->add_option("reports", args->reports,
                    "baseline report(s) (JSON from 'interopbench run --out'), then the new report to judge; with several "
                    "baselines their spread is the noise to gate beyond")
        ->required()
        ->expected(2, 1000);
    cmd->add_option("--threshold", args->thresholds,
                    "minimum effect: 5% (all metrics, the default), SCENARIO=3% or SCENARIO.METRIC=3% "
                    "(SCENARIO may be a glob); repeatable, the most specific wins")
        ->allow_extra_args(false);
    cmd->add_option("--floor", args->floors,
                    "absolute tolerance per unit for results without rounds, UNIT=VALUE: differences below it never "
                    "count (default s=500ns, so times under 10 us are not gated on fractions of a microsecond where "
                    "the noise between processes was not measured); UNIT=0 removes it; repeatable")
        ->allow_extra_args(false);
    add_format_option(cmd, args->format, Command::compare,
                      "output format (html: a page with the ratios as charts; CI formats: the new report's values with "
                      "the verdicts)");
    cmd->add_option("--out", args->out_file, "write the chosen format to FILE (the table still goes to stdout)");
    cmd->add_option("--export", args->exports,
                    "also write a CI format to a file, FORMAT=PATH (FORMAT: " + format_names(Command::export_file) + "); repeatable")
        ->allow_extra_args(false);
    cmd->add_option("--metrics", args->metrics,
                    "CI formats: primary (each result's primary and gated metrics, the default) or all");
    cmd->add_flag("--fail-on-inconclusive", args->fail_on_inconclusive, "exit 3 when results are inconclusive");
    add_wide_option(cmd, args->wide);
    cmd->add_flag("-q,--quiet", args->quiet, "no notes on stderr (errors still go there); the output and exit code are unchanged");
    cmd->add_flag("--cross-machine", args->cross_machine,
                  "compare reports from different hardware; efficiency against each machine's path bandwidth is compared too");
    cmd->callback([args, &out] {
        const Format& format = find_format(args->format, Command::compare);
        const CiMetrics ci_metrics = parse_ci_metrics(args->metrics);
        std::vector<CiExport> exports;
        for (const auto& e : args->exports) exports.push_back(parse_ci_export(e));
        CompareOptions options;
        for (const auto& t : args->thresholds) add_threshold(options, t);
        for (const auto& f : args->floors) add_floor(options, f);
        options.cross_machine = args->cross_machine;
        if (args->reports.size() < 2)
            throw UsageError("compare needs a baseline report and a new report", "write: interopbench compare BASE.json NEW.json");
        const std::vector<std::string> bases(args->reports.begin(), args->reports.end() - 1);
        const std::string& fresh_file = args->reports.back();
        options.base_label = bases.size() == 1 ? bases[0] : fmt::format("{} (+{} more)", bases[0], bases.size() - 1);
        options.new_label = fresh_file;
        std::vector<std::pair<std::string, std::string>> taken;
        for (const auto& r : args->reports) taken.push_back({fmt::format("the input report '{}'", r), r});
        taken.push_back({"the --out file", args->out_file});
        check_ci_exports(exports, taken);
        if (!args->out_file.empty()) {
            check_output_path(args->out_file);
            // The same file by device and inode, whatever the spelling (links, ./, hard links).
            for (const std::string& input : args->reports)
                if (same_file(args->out_file, input))
                    throw UsageError(fmt::format("--out '{}' is the input report '{}': it would be overwritten",
                                                 args->out_file, input),
                                     "write the comparison to another file");
        }
        std::vector<Report> loaded;
        for (const auto& b : bases) {
            loaded.push_back(read_report(b));
            limit_report(loaded.back()); // both sides against today's declared limits
        }
        const Report base = pool_baselines(loaded, bases);
        Report fresh = read_report(fresh_file);
        limit_report(fresh);
        // Reports of different hardware are refused by compare_reports, in one line naming
        // the differences; --cross-machine lists them all in the output.
        const auto outcome = compare_reports(base, fresh, options);
        const std::vector<Result>& fresh_results = fresh.results; // the CI formats' values
        const std::size_t width = output_width(args->wide);
        const ComparisonView view{outcome, fresh_results, ci_metrics, false, width};
        // What goes to standard output may be painted for a terminal; files never are.
        const ComparisonView shown{outcome, fresh_results, ci_metrics, color_on(STDOUT_FILENO), width};
        if (args->out_file.empty()) {
            fmt::print("{}", format.render(shown));
        } else {
            write_file_atomic(args->out_file, format.render(view));
            // The file has the chosen format; the terminal the table.
            fmt::print("{}", find_format("table", Command::compare).render(shown));
        }
        for (const auto& e : exports) write_file_atomic(e.path, e.format->render(view));
        out.code = static_cast<int>(compare_exit_code(outcome, args->fail_on_inconclusive));
    });
}

} // namespace interopbench::cli
