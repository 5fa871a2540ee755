// `interopbench show FILE`: render a saved report.
#include <fmt/format.h>

#include "cli/cli.hpp"
#include "interopbench/output.hpp"
#include "interopbench/report.hpp"

namespace interopbench::cli {

void add_show(CLI::App& app, Outcome& out) {
    struct Options {
        std::string file, format = "table";
        bool anonymize = false;
    };
    auto o = std::make_shared<Options>();
    auto* cmd = app.add_subcommand("show", "render a saved JSON report as tables");
    cmd->add_option("file", o->file, "report written by 'interopbench run --out'")->required();
    cmd->add_option("-f,--format", o->format, "table, json, csv or markdown");
    cmd->add_flag("--anonymize", o->anonymize, "leave out host name, UUIDs, serial numbers and home directories");
    cmd->callback([o, &out] {
        const OutputFormat format = parse_format(o->format);
        auto doc = load_report(o->file);
        if (o->anonymize) anonymize_report(doc);
        if (format == OutputFormat::json) {
            fmt::print("{}\n", doc.dump(2));
            out.code = 0;
            return;
        }
        const auto results = report_results(doc);
        if (format == OutputFormat::table || format == OutputFormat::markdown) {
            const auto& inv = doc.value("invocation", nlohmann::json::object());
            const auto& host = doc.value("host", nlohmann::json::object());
            fmt::print("interopbench {} report, {} to {} ({}), profile {}\n", doc["schema"].value("version", "?"),
                       inv.value("started", "?"), inv.value("finished", "?"), inv.value("status", "?"),
                       inv.value("profile", std::string("-")).empty() ? "-" : inv.value("profile", "-"));
            fmt::print("host {} ({}, {} CPUs)\n", host.value("hostname", "?"), host.value("cpu", "?"),
                       host.value("logical_cpus", 0));
            for (const auto& d : doc.value("devices", nlohmann::json::array()))
                fmt::print("GPU {}: {} {} ({} SMs, {})\n", d.value("ordinal", 0), d.value("name", "?"),
                           d.value("pci_bus_id", "?"), d.value("sm_count", 0),
                           format_value(d.value("memory_bytes", 0.0), "B"));
            for (const auto& w : doc.value("warnings", nlohmann::json::array()))
                if (w.is_string()) fmt::print("warning: {}\n", w.get<std::string>());
        }
        fmt::print("{}", render_results(results, format));
        out.code = 0;
    });
}

} // namespace interopbench::cli
