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
namespace {

// A field of the report for the header lines, whatever its JSON type (the loader checks
// results only: a crafted header must not end the command with a library message).
std::string text_of(const nlohmann::json& obj, const char* key, const char* fallback) {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
    const auto& v = obj[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
}

} // namespace

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
    cmd->add_flag("--anonymize", o->anonymize, "leave out host name, UUIDs, serial numbers and home directories");
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
            const auto inv = doc.value("invocation", nlohmann::json::object());
            const auto host = doc.value("host", nlohmann::json::object());
            // Report text reaches the terminal through display_text only (one line each).
            const auto line = [](const std::string& text) { fmt::print("{}\n", display_text(text)); };
            line(fmt::format("interopbench {} report, profile {}, {} ({})", text_of(doc["schema"], "version", "?"),
                             text_of(inv, "profile", "-").empty() ? "-" : text_of(inv, "profile", "-"),
                             text_of(inv, "started", "?"), text_of(inv, "status", "?")));
            line(fmt::format("host {} ({}, {} CPUs)", text_of(host, "hostname", "?"), text_of(host, "cpu", "?"),
                             text_of(host, "logical_cpus", "0")));
            for (const auto& d : doc.value("devices", nlohmann::json::array()))
                line(fmt::format("GPU {}: {} {} ({} SMs, {})", text_of(d, "ordinal", "0"), text_of(d, "name", "?"),
                                 text_of(d, "pci_bus_id", "?"), text_of(d, "sm_count", "0"),
                                 d.is_object() && d.contains("memory_bytes") && d["memory_bytes"].is_number()
                                     ? format_value(d["memory_bytes"].get<double>(), "B")
                                     : std::string("?")));
            for (const auto& w : doc.value("warnings", nlohmann::json::array()))
                if (w.is_string()) line("warning: " + w.get<std::string>());
        }
        const TableStyle style = table_style(o->wide, o->metrics);
        fmt::print("{}", render_summary(results, format, style.width));
        fmt::print("{}", render_results(results, format, style));
        out.code = 0;
    });
}

} // namespace interopbench::cli
