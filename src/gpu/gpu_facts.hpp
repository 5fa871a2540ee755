#pragma once
/// Machine facts that need the CUDA runtime: CUDA peer facts for the topology, the topology
/// document embedded in every report, and the doctor's facts. The topology library is
/// host-only (hwloc, NVML); this is where CUDA's view is added to it.
#include <vector>

#include <nlohmann/json.hpp>

#include "topology/doctor.hpp"
#include "topology/topology.hpp"

namespace interopbench {

/// CUDA pair facts of every ordered pair of `machine.devices` (GPU library). Empty when CUDA
/// is not usable.
std::vector<CudaPeerFacts> cuda_peer_facts(const Machine& machine);

/// discover_topology with the CUDA pair facts, as JSON; embedded in every run report (GPU
/// library). Quick (well under a second) and never throws.
nlohmann::json discover_topology_json(const Machine& machine);


/// Gathers the facts of this machine (GPU library): the topology, NVML, CUDA (versions,
/// peers, default pools), process limits and environment, and for each GPU a short
/// host-to-device copy (about 0.2 s) during which the PCIe link and clock reasons are read.
/// Never throws; what cannot be read stays unknown.
DoctorFacts gather_doctor_facts(const Machine& machine);

} // namespace interopbench
