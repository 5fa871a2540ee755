// The alloc family's descriptor (include/interopbench/family.hpp): its scenarios and what it adds
// to the built-in profiles. families/builtin.cpp names it in the one list of families.
#include "interopbench/family.hpp"

namespace interopbench {

void register_alloc(Registry& r); // alloc.cpp

Family alloc_family() {
    return {
        .name = "alloc",
        .summary = "Allocation: cudaMalloc against pools, pinned host allocation, allocation inside a pipeline",
        .add_scenarios = [](Registry& r, const FamilyOptions&, std::vector<std::string>&) { register_alloc(r); },
        .profiles =
            {
                {"quick", R"([
                    {"pattern": "alloc_device", "axes": {"allocator": ["sync", "default_pool"], "state": ["warm"], "size": ["64M"], "device": ["0"]}},
                    {"pattern": "alloc_host_pinned,alloc_pipeline", "axes": {"size": ["64M"], "device": ["0"]}}
                ])"},
                {"ci", R"([
                    {"pattern": "alloc_concurrent", "axes": {"allocator": ["sync", "default_pool_keep"], "streams": ["4"], "size": ["64M"], "device": ["0"]}}
                ])"},
                {"full", R"([
                    {"pattern": "alloc_*"}
                ])"},
            },
    };
}

} // namespace interopbench
