// `interopbench list`: scenarios with their axes and metrics, or the built-in profiles.
#include <fmt/format.h>

#include "families/builtin.hpp"
#include "cli/cli.hpp"
#include "interopbench/profile.hpp"
#include "interopbench/registry.hpp"

namespace interopbench::cli {

void add_list(CLI::App& app, Outcome& out) {
    struct Options {
        std::string format = "table", scenarios;
        bool profiles = false, families = false, wide = false;
        FamilyOptions family; ///< where plugins are looked for
    };
    auto o = std::make_shared<Options>();
    auto* cmd = app.add_subcommand("list", "list scenarios (axes, defaults, metrics) or profiles");
    add_format_option(cmd, o->format, Command::list, "output format");
    cmd->add_option("-s,--scenario", o->scenarios, "only scenarios matching these globs");
    cmd->add_flag("--profiles", o->profiles, "list the built-in profiles instead");
    cmd->add_flag("--families", o->families, "list the scenario families (what each measures, its run options) instead");
    add_family_options(cmd, o->family, true);
    add_wide_option(cmd, o->wide);
    cmd->callback([o, &out] {
        const Format& format = find_format(o->format, Command::list);
        ListView view;
        view.width = output_width(o->wide);
        if (o->families) {
            view.rows = {{"family", "summary", "options"}};
            view.doc = nlohmann::json::array();
            for (const Family& f : builtin_families().all()) {
                std::vector<std::string> options;
                for (const auto& opt : f.options) options.push_back("--" + opt.name);
                view.rows.push_back({f.name, f.summary, fmt::format("{}", fmt::join(options, " "))});
                view.doc.push_back({{"name", f.name}, {"summary", f.summary}, {"options", options}});
            }
            fmt::print("{}", format.render(view));
            out.code = 0;
            return;
        }
        if (o->profiles) {
            view.rows = {{"profile", "description"}};
            view.doc = nlohmann::json::array();
            for (const auto& name : builtin_profile_names()) {
                const auto doc = resolve_profile(name, Registry{}); // the description only
                const std::string desc = doc.value("description", std::string{});
                view.rows.push_back({name + (name == default_profile_name() ? " (default)" : ""), desc});
                view.doc.push_back({{"name", name}, {"description", desc}, {"default", name == default_profile_name()}});
            }
            fmt::print("{}", format.render(view));
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
        for (const auto* s : selected) {
            view.scenarios.push_back(&s->info());
            view.origins.push_back(s->origin());
        }
        view.details = !o->scenarios.empty(); // the details when scenarios are named
        fmt::print("{}", format.render(view));
        out.code = 0;
    });
}

} // namespace interopbench::cli
