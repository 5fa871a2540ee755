// `interopbench show FILE`: render a saved report.
#include <fmt/format.h>

#include "cli/cli.hpp"
#include "families/builtin.hpp"
#include "interopbench/compare.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/report.hpp"

namespace interopbench::cli {

void add_show(CLI::App& app, Outcome& out) {
    struct Options {
        std::string file, format = "table", out_file;
        std::string metrics = "primary"; // tables and CI formats: which metrics of each result
        bool anonymize = false, wide = false, quiet = false;
    };
    auto o = std::make_shared<Options>();
    auto* cmd = app.add_subcommand("show", "render a saved JSON report as tables");
    cmd->add_option("file", o->file, "report written by 'interopbench run --out' (or an HTML page of one)")->required();
    add_format_option(cmd, o->format, Command::show, "output format (html: one self-contained page)");
    cmd->add_option("--out", o->out_file, "write what show prints to FILE (atomically) instead of stdout");
    add_table_options(cmd, o->wide, o->metrics);
    cmd->add_flag("--anonymize", o->anonymize, "leave out host name, UUIDs, serial numbers and absolute paths (home as ~, others as <path>/NAME)");
    cmd->add_flag("-q,--quiet", o->quiet, "no notes on stderr (errors still go there); the output and exit code are unchanged");
    cmd->callback([o, &out] {
        const CiMetrics metrics = parse_ci_metrics(o->metrics);
        const Format& format = find_format(o->format, Command::show);
        if (!o->out_file.empty()) {
            check_output_path(o->out_file);
            // The same file by device and inode, whatever the spelling (links, ./, hard links).
            if (same_file(o->out_file, o->file))
                throw UsageError(fmt::format("--out '{}' is the input report '{}': it would be overwritten", o->out_file, o->file),
                                 "write the output to another file");
        }
        Report report = read_report(o->file);
        limit_report(report); // today's declared paths and limits, also for an older report
        if (format.ci()) check_unique_keys(report, o->file); // a key names one figure in every CI format
        if (o->anonymize) anonymize_report(report);
        TableStyle style = table_style(o->wide, o->metrics);
        if (!o->out_file.empty()) style.color = false; // a file, never a terminal
        const std::string text = format.render(ReportView{report, report.results, style, metrics, true});
        if (o->out_file.empty()) fmt::print("{}", text);
        else write_file_atomic(o->out_file, text);
        out.code = 0;
    });
}

} // namespace interopbench::cli
