// The plugin family's descriptor (include/interopbench/family.hpp): external scenarios found at
// run time (docs/PLUGINS.md), the options that say where to look, and no profile entries.
// families/builtin.cpp names it, last, in the one list of families.
#include "families/plugin/plugin.hpp"
#include "interopbench/family.hpp"

namespace interopbench {

Family plugin_family() {
    return {
        .name = "plugin",
        .summary = "External scenarios: a manifest and a program that speaks the plugin protocol (docs/PLUGINS.md)",
        .add_scenarios =
            [](Registry& r, const FamilyOptions& o, std::vector<std::string>& warnings) {
                PluginOptions plugins;
                plugins.paths = o.texts("plugin-path");
                plugins.timeout_s = o.number("plugin-timeout");
                plugins.defaults = !o.flag("no-default-plugins");
                register_plugins(r, plugins, warnings);
            },
        .options =
            {
                {"plugin-path", OptionKind::texts,
                 "also look for plugin manifests (NAME.json) in DIR (repeatable; searched before "
                 "INTEROPBENCH_PLUGIN_PATH and the shipped plugins folder)",
                 true},
                {"plugin-timeout", OptionKind::number,
                 "seconds a plugin may take to answer one request (replaces each manifest's timeout_s)", true},
                {"no-default-plugins", OptionKind::flag, "do not look in the shipped plugins folder", true},
            },
        // Before measuring: what a manifest declares is what its plugin says.
        .preflight = [](const RunSettings&, const std::vector<Config>& configs) { plugin::check_described(configs); },
        .no_profiles = "plugins are found at run time; a profile file names their scenario ids like any other",
    };
}

} // namespace interopbench
