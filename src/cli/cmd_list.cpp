// `interopbench list`: scenarios with their axes and metrics, or the built-in profiles.
#include <fmt/format.h>

#include "families/builtin.hpp"
#include "interopbench/file_io.hpp"
#include "cli/cli.hpp"
#include "interopbench/output.hpp"
#include "interopbench/profile.hpp"
#include "interopbench/registry.hpp"

namespace interopbench::cli {

void add_list(CLI::App& app, Outcome& out) {
    struct Options {
        std::string format = "table", scenarios;
        bool profiles = false, families = false;
        FamilyOptions family; ///< where plugins are looked for
    };
    auto o = std::make_shared<Options>();
    auto* cmd = app.add_subcommand("list", "list scenarios (axes, defaults, metrics) or profiles");
    cmd->add_option("-f,--format", o->format, "table, json, csv or markdown");
    cmd->add_option("-s,--scenario", o->scenarios, "only scenarios matching these globs");
    cmd->add_flag("--profiles", o->profiles, "list the built-in profiles instead");
    cmd->add_flag("--families", o->families, "list the scenario families (what each measures, its run options) instead");
    add_family_options(cmd, o->family, true);
    cmd->callback([o, &out] {
        const OutputFormat format = parse_format(o->format);
        if (o->families) {
            std::vector<std::vector<std::string>> rows{{"family", "summary", "options"}};
            nlohmann::json js = nlohmann::json::array();
            for (const Family& f : builtin_families().all()) {
                std::vector<std::string> options;
                for (const auto& opt : f.options) options.push_back("--" + opt.name);
                rows.push_back({f.name, f.summary, fmt::format("{}", fmt::join(options, " "))});
                js.push_back({{"name", f.name}, {"summary", f.summary}, {"options", options}});
            }
            fmt::print("{}", format == OutputFormat::json ? js.dump(2) + "\n"
                                                          : render_table(rows, format == OutputFormat::markdown));
            out.code = 0;
            return;
        }
        if (o->profiles) {
            std::vector<std::vector<std::string>> rows{{"profile", "description"}};
            nlohmann::json js = nlohmann::json::array();
            for (const auto& name : builtin_profile_names()) {
                const auto doc = resolve_profile(name, Registry{}); // the description only
                const std::string desc = doc.value("description", std::string{});
                rows.push_back({name + (name == default_profile_name() ? " (default)" : ""), desc});
                js.push_back({{"name", name}, {"description", desc}, {"default", name == default_profile_name()}});
            }
            fmt::print("{}", format == OutputFormat::json ? js.dump(2) + "\n"
                                                          : render_table(rows, format == OutputFormat::markdown));
            out.code = 0;
            return;
        }
        std::vector<std::string> warnings;
        const Registry registry = scenario_registry(o->family, warnings);
        for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", display_text(w));
        std::vector<const Scenario*> selected;
        if (o->scenarios.empty())
            for (const auto& s : registry.all()) selected.push_back(s.get());
        else
            selected = registry.select(o->scenarios);
        std::vector<const ScenarioInfo*> infos;
        std::vector<std::vector<std::string>> plugins{{"plugin scenario", "manifest"}};
        for (const auto* s : selected) {
            infos.push_back(&s->info());
            if (auto origin = s->origin(); !origin.empty()) plugins.push_back({s->info().id, origin});
        }
        // One line per scenario; the details when scenarios are named.
        std::string text = render_scenarios(infos, format, !o->scenarios.empty());
        // Where each plugin scenario comes from: an "origin" field in JSON, a table of their
        // manifests after the scenarios in text (CSV keeps its one table).
        if (format == OutputFormat::json) {
            auto doc = parse_json(text);
            for (std::size_t i = 0; i < selected.size(); ++i)
                if (auto origin = selected[i]->origin(); !origin.empty()) doc[i]["origin"] = origin;
            text = doc.dump(2) + "\n";
        } else if (format != OutputFormat::csv && plugins.size() > 1) {
            text += "\n" + render_table(plugins, format == OutputFormat::markdown);
        }
        fmt::print("{}", text);
        out.code = 0;
    });
}

} // namespace interopbench::cli
