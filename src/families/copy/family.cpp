// The copy family's descriptor (include/interopbench/family.hpp): its scenarios and what it adds
// to the built-in profiles. families/builtin.cpp names it in the one list of families.
#include "interopbench/family.hpp"

namespace interopbench {

void register_host_memcpy(Registry& r);      // host_memcpy.cpp
void register_host_device_copy(Registry& r); // host_device_copy.cpp (d2d_copy after it)

Family copy_family() {
    return {
        .name = "copy",
        .summary = "Host and device copies: host memcpy, host<->device over every host memory kind, device-local, both directions and all GPUs at once",
        .add_scenarios = [](Registry& r, const FamilyOptions&, std::vector<std::string>&) { register_host_memcpy(r); register_host_device_copy(r); },
        .profiles =
            {
                {"quick", R"([
                    {"pattern": "host_memcpy", "axes": {"size": ["64M"]}},
                    {"pattern": "h2d_copy,d2h_copy", "axes": {"size": ["64M"], "host_mem": ["pinned", "pageable"]}},
                    {"pattern": "d2d_copy", "axes": {"size": ["256M"], "method": ["ce"], "device": ["0"]}},
                    {"pattern": "bidir_copy,host_all_gpus", "axes": {"size": ["256M"]}}
                ])"},
                {"ci", R"([
                    {"pattern": "h2d_copy,d2h_copy", "axes": {"size": ["256M", "1G"], "host_mem": ["pinned"]}},
                    {"pattern": "d2d_copy", "axes": {"size": ["256M", "1G"], "method": ["ce", "sm"], "device": ["0"]}},
                    {"pattern": "bidir_copy", "axes": {"size": ["256M"]}},
                    {"pattern": "host_all_gpus", "axes": {"size": ["1G"]}}
                ])"},
                {"full", R"([
                    {"pattern": "host_memcpy"},
                    {"pattern": "h2d_copy,d2h_copy,bidir_copy", "axes": {"host_mem": ["all"], "engine": ["all"]}},
                    {"pattern": "d2d_copy", "axes": {"method": ["all"]}},
                    {"pattern": "host_all_gpus", "axes": {"host_mem": ["all"], "engine": ["all"]}}
                ])"},
            },
    };
}

} // namespace interopbench
