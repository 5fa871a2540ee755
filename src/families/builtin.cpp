// The one explicit list of scenario families, in `list` order. Each family folder defines
// its registration function(s); each registers its scenarios in a fixed order, and nothing
// registers itself through static initialisation (which a linker may drop).
// Adding a family: its folder with a CMakeLists.txt, one add_subdirectory, its registration
// function declared in builtin.hpp and named in the list here.
#include "families/builtin.hpp"
#include "families/plugin/plugin.hpp"

namespace interopbench {

Registry builtin_registry() {
    Registry r;
    for (auto* add : {register_host_memcpy, register_host_device_copy, register_alloc, register_peer,
                      register_nccl, register_layout, register_handoff, register_storage_read, register_storage_gpu, register_pipeline})
        add(r);
    return r;
}

Registry scenario_registry(const PluginOptions& plugins, std::vector<std::string>& warnings) {
    Registry r = builtin_registry();
    register_plugins(r, plugins, warnings); // external scenarios (families/plugin), after the built-in ones
    return r;
}

void before_run(const RunSettings& settings, const std::vector<Config>& configs) {
    storage_preflight(settings, configs, pipeline_site_bytes(configs));
}

void after_run(std::vector<Result>& results) {
    annotate_storage_results(results);
    annotate_pipeline_results(results);
}

} // namespace interopbench
