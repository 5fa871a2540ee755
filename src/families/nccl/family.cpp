// The nccl family's descriptor (include/interopbench/family.hpp): its scenarios and what it adds
// to the built-in profiles. families/builtin.cpp names it in the one list of families.
#include "interopbench/family.hpp"

namespace interopbench {

void register_nccl(Registry& r); // nccl.cpp

Family nccl_family() {
    return {
        .name = "nccl",
        .summary = "NCCL collectives (NCCL loaded at run time), in one process or one rank per GPU under mpirun",
        .add_scenarios = [](Registry& r, const FamilyOptions&, std::vector<std::string>&) { register_nccl(r); },
        .profiles =
            {
                {"quick", R"([
                    {"pattern": "nccl_all_reduce", "axes": {"size": ["8", "64M"]}}
                ])"},
                {"ci", R"([
                    {"pattern": "nccl_all_reduce,nccl_all_gather,nccl_reduce_scatter,nccl_sendrecv", "axes": {"size": ["64M", "1G"]}}
                ])"},
                {"full", R"([
                    {"pattern": "nccl_*", "axes": {"size": ["8:8G:x8"]}}
                ])"},
            },
    };
}

} // namespace interopbench
