// The handoff family's descriptor (include/interopbench/family.hpp): its scenarios and what it adds
// to the built-in profiles. families/builtin.cpp names it in the one list of families.
#include "interopbench/family.hpp"

namespace interopbench {

void register_handoff(Registry& r); // handoff.cpp

Family handoff_family() {
    return {
        .name = "handoff",
        .summary = "Handoffs between frameworks (DLPack, CUDA array interface) against the copies users fear",
        .add_scenarios = [](Registry& r, const FamilyOptions&, std::vector<std::string>&) { register_handoff(r); },
        .profiles =
            {
                {"quick", R"([
                    {"pattern": "handoff", "axes": {"path": ["dlpack", "deep_copy", "cpu_roundtrip_pinned"], "consumer": ["same"], "size": ["64M"]}}
                ])"},
                {"ci", R"([
                    {"pattern": "handoff", "axes": {"path": ["dlpack", "deep_copy", "cpu_roundtrip_pinned"], "consumer": ["same"], "size": ["256M"]}}
                ])"},
                {"full", R"([
                    {"pattern": "handoff"}
                ])"},
            },
    };
}

} // namespace interopbench
