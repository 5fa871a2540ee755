// `interopbench show FILE`: render a saved report.
#include <fmt/format.h>

#include "cli/cli.hpp"
#include "interopbench/ci_formats.hpp"
#include "interopbench/compare.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/html.hpp"
#include "interopbench/output.hpp"
#include "interopbench/report.hpp"

namespace interopbench::cli {

void add_show(CLI::App& app, Outcome& out) {
    struct Options {
        std::string file, format = "table";
        std::string metrics = "primary"; // CI formats: which metrics of each result
        bool anonymize = false, wide = false;
    };
    auto o = std::make_shared<Options>();
    auto* cmd = app.add_subcommand("show", "render a saved JSON report as tables");
    cmd->add_option("file", o->file, "report written by 'interopbench run --out' (or an HTML page of one)")->required();
    cmd->add_option("-f,--format", o->format,
                    "table, json, csv, markdown, html (one self-contained page on stdout), or for CI systems " +
                        ci_format_names());
    cmd->add_option("--metrics", o->metrics,
                    "primary (the default: tables show the metrics that fit, CI formats each result's primary metric) "
                    "or all");
    cmd->add_flag("--wide", o->wide, "tables as wide as their content (default: the terminal's width, 100 when not a terminal)");
    cmd->add_flag("--anonymize", o->anonymize, "leave out host name, UUIDs, serial numbers and absolute paths (home as ~, others as <path>/NAME)");
    cmd->callback([o, &out] {
        // ---- formats CI systems read (see ci_formats.hpp)
        const CiMetrics metrics = parse_ci_metrics(o->metrics);
        if (const auto ci = find_ci_format(o->format)) {
            auto doc = load_report(o->file);
            check_unique_keys(doc, o->file); // a key names one figure in every CI format
            if (o->anonymize) anonymize_report(doc);
            fmt::print("{}", render_ci(report_results(doc), *ci, metrics));
            out.code = 0;
            return;
        }
        const bool page = o->format == "html";
        if (!page && o->format != "table" && o->format != "json" && o->format != "csv" && o->format != "markdown" &&
            o->format != "md")
            throw UsageError(fmt::format("unknown output format '{}'", o->format),
                             "use table, json, csv, markdown, html, " + ci_format_names());
        const OutputFormat format = page ? OutputFormat::table : parse_format(o->format);
        auto doc = load_report(o->file);
        if (o->anonymize) anonymize_report(doc);
        if (page) {
            fmt::print("{}", html::render_report_page(doc));
            out.code = 0;
            return;
        }
        if (format == OutputFormat::json) {
            fmt::print("{}\n", doc.dump(2));
            out.code = 0;
            return;
        }
        const auto results = report_results(doc);
        if (format == OutputFormat::table || format == OutputFormat::markdown) {
            const ReportHeader h = read_header(doc);
            // Report text reaches the terminal through display_text only (one line each).
            const auto line = [](const std::string& text) { fmt::print("{}\n", display_text(text)); };
            const auto known = [](const std::string& text, const char* missing) { return text.empty() ? missing : text; };
            line(fmt::format("interopbench {} report, profile {}, {} ({})", known(h.schema_version, "?"),
                             known(h.invocation.profile, "-"), known(h.invocation.started, "?"), known(h.invocation.status, "?")));
            line(fmt::format("host {} ({}, {} CPUs)", known(h.host.hostname, "?"), known(h.host.cpu, "?"), h.host.logical_cpus));
            for (const auto& d : h.devices)
                line(fmt::format("GPU {}: {} {} ({} SMs, {})", d.ordinal, known(d.name, "?"), known(d.pci_bus_id, "?"), d.sm_count,
                                 d.memory_bytes ? format_value(static_cast<double>(d.memory_bytes), "B") : std::string("?")));
            for (const auto& w : h.warnings) line("warning: " + w);
        }
        const TableStyle style = table_style(o->wide, o->metrics);
        fmt::print("{}", render_summary(results, format, style.width));
        fmt::print("{}", render_results(results, format, style));
        out.code = 0;
    });
}

} // namespace interopbench::cli
