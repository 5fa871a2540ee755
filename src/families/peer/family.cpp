// The peer family's descriptor (include/interopbench/family.hpp): its scenarios and what it adds
// to the built-in profiles. families/builtin.cpp names it in the one list of families.
#include "interopbench/family.hpp"

namespace interopbench {

void register_peer(Registry& r); // peer.cpp

Family peer_family() {
    return {
        .name = "peer",
        .summary = "Between GPUs of one process: peer copies (copy engine and SM), both directions, staged through the host, and access latency",
        .add_scenarios = [](Registry& r, const FamilyOptions&, std::vector<std::string>&) { register_peer(r); },
        .profiles =
            {
                {"quick", R"([
                    {"pattern": "peer_copy,peer_bidir", "axes": {"engine": ["ce"], "mode": ["write"], "size": ["256M"]}},
                    {"pattern": "latency", "axes": {"footprint": ["1M"]}}
                ])"},
                {"ci", R"([
                    {"pattern": "peer_copy", "axes": {"mode": ["write"], "size": ["1G"]}},
                    {"pattern": "peer_bidir", "axes": {"engine": ["ce"], "mode": ["write"], "size": ["1G"]}},
                    {"pattern": "peer_staged", "axes": {"size": ["1G"]}},
                    {"pattern": "latency", "axes": {"footprint": ["1G"]}}
                ])"},
                {"full", R"([
                    {"pattern": "peer_*"},
                    {"pattern": "latency"}
                ])"},
            },
    };
}

} // namespace interopbench
