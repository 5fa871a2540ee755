// The one explicit list of scenario families, in `list` order. A family is its folder under
// src/families/: sources, a CMakeLists.txt calling interopbench_family(), and a descriptor
// `Family NAME_family()` (family.cpp there). Adding a family is its folder and one line here
// (docs/ARCHITECTURE.md). Nothing registers itself through static initialisation, which a
// linker may drop.
#include "families/builtin.hpp"

#include "interopbench/limits.hpp"
#include "interopbench/report.hpp"

#define INTEROPBENCH_BUILTIN_FAMILIES(X)                                                        \
    X(copy)                                                                                     \
    X(alloc)                                                                                    \
    X(peer)                                                                                     \
    X(nccl)                                                                                     \
    X(layout)                                                                                   \
    X(handoff)                                                                                  \
    X(storage)                                                                                  \
    X(pipeline)                                                                                 \
    X(transfer)                                                                                 \
    X(plugin) /* external scenarios, after the built-in ones */

namespace interopbench {

#define INTEROPBENCH_DECLARE(name) Family name##_family();
INTEROPBENCH_BUILTIN_FAMILIES(INTEROPBENCH_DECLARE)
#undef INTEROPBENCH_DECLARE

const Families& builtin_families() {
#define INTEROPBENCH_ENTRY(name) name##_family(),
    static const Families families(std::vector<Family>{INTEROPBENCH_BUILTIN_FAMILIES(INTEROPBENCH_ENTRY)});
#undef INTEROPBENCH_ENTRY
    return families;
}

Registry scenario_registry(const FamilyOptions& options, std::vector<std::string>& warnings) {
    return builtin_families().registry(options, warnings);
}

Registry builtin_registry(const std::vector<std::string>& families, const FamilyOptions& options) {
    std::vector<std::string> only = families, warnings;
    if (only.empty())
        for (const Family& f : builtin_families().all())
            if (f.name != "plugin") only.push_back(f.name);
    return builtin_families().registry(options, warnings, only);
}

void limit_results(std::vector<Result>& results, const nlohmann::json& topology, const nlohmann::json& devices,
                   const Registry& registry) {
    declare_paths(results, registry);
    // The machine's limits first, so that an annotation may read them off the results (the
    // transfer family's shares of a path's limit); then the ceilings the families measured,
    // and the limits again with them.
    const LimitLookup machine = machine_limits(topology, devices);
    apply_limits(results, machine);
    builtin_families().annotate(results);
    apply_limits(results, machine);
}

void limit_report(Report& report) {
    static const Registry registry = builtin_registry();
    const auto devices = report.document.find("devices");
    limit_results(report.results, report.header.topology.document,
                  devices == report.document.end() ? nlohmann::json() : *devices, registry);
}

} // namespace interopbench
