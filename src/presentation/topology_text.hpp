#pragma once
/// Renderings of a machine's topology (topology/topology.hpp discovers it; its JSON is the
/// report's topology block, topology_json).
#include <string>

#include "topology/topology.hpp"

namespace interopbench {

struct Format;
struct TopologyView;

/// For people: a matrix like `nvidia-smi topo -m` (GPU and NIC rows and columns) with CPU
/// affinity, NUMA affinity, PCIe link and bus id columns, the legend, the NICs (device,
/// interfaces, ports, nearest GPU), then the host and pair paths with their theoretical
/// bandwidth and CUDA peer facts, then the notes; GitHub tables where `format.markdown`.
std::string render_topology(const Format& format, const TopologyView& view);
/// topology_json as text.
std::string render_topology_json(const Format& format, const TopologyView& view);

} // namespace interopbench
