// `interopbench list`: scenarios with their axes and metrics, or the built-in profiles.
#include <fmt/format.h>

#include "families/builtin.hpp"
#include "cli/cli.hpp"
#include "interopbench/output.hpp"
#include "interopbench/profile.hpp"
#include "interopbench/registry.hpp"

namespace interopbench::cli {

void add_list(CLI::App& app, Outcome& out) {
    struct Options {
        std::string format = "table", scenarios;
        bool profiles = false;
    };
    auto o = std::make_shared<Options>();
    auto* cmd = app.add_subcommand("list", "list scenarios (axes, defaults, metrics) or profiles");
    cmd->add_option("-f,--format", o->format, "table, json, csv or markdown");
    cmd->add_option("-s,--scenario", o->scenarios, "only scenarios matching these globs");
    cmd->add_flag("--profiles", o->profiles, "list the built-in profiles instead");
    cmd->callback([o, &out] {
        const OutputFormat format = parse_format(o->format);
        const Registry registry = builtin_registry();
        if (o->profiles) {
            std::vector<std::vector<std::string>> rows{{"profile", "description"}};
            nlohmann::json js = nlohmann::json::array();
            for (const auto& name : builtin_profile_names()) {
                const auto doc = resolve_profile(name);
                const std::string desc = doc.value("description", std::string{});
                rows.push_back({name + (name == default_profile_name() ? " (default)" : ""), desc});
                js.push_back({{"name", name}, {"description", desc}, {"default", name == default_profile_name()}});
            }
            fmt::print("{}", format == OutputFormat::json ? js.dump(2) + "\n"
                                                          : render_table(rows, format == OutputFormat::markdown));
            out.code = 0;
            return;
        }
        std::vector<const ScenarioInfo*> infos;
        if (o->scenarios.empty())
            for (const auto& s : registry.all()) infos.push_back(&s->info());
        else
            for (const auto* s : registry.select(o->scenarios)) infos.push_back(&s->info());
        fmt::print("{}", render_scenarios(infos, format));
        out.code = 0;
    });
}

} // namespace interopbench::cli
