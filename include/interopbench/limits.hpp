#pragma once
/// The paths a result's bytes cross, declared by its scenario for each configuration
/// (Scenario::paths), and the limit of each: what "of limit" divides by. A limit comes from
/// the machine (the topology's PCIe and NVLink links, a GPU's memory clock and bus width) or
/// from a ceiling measured in the same run (a family's annotate hook writes it into the
/// result's details as "measured_limits"). A result whose paths do not all have a known limit
/// shows no efficiency: nothing is guessed from axis names.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace interopbench {

class Registry;
struct Result;

enum class PathKind { host_link, gpu_memory, peer_link, nccl_bus, host_memory, page_cache, storage, nic };
const char* to_string(PathKind kind);
std::optional<PathKind> path_kind_from_string(std::string_view text);

/// `gpu` or `peer` meaning every selected GPU (the counted bytes spread over them).
inline constexpr int k_every_gpu = -2;
/// `gpu` meaning the first selected GPU (scenarios that run there without a device axis).
inline constexpr int k_first_gpu = -3;

/// One path a configuration's counted bytes cross.
struct PathUse {
    PathKind kind = PathKind::host_link;
    /// The GPU of a host link, of GPU memory or of an NCCL bus (k_every_gpu: all selected),
    /// the source of a peer link; -1 where no GPU is meant.
    int gpu = -1;
    /// A peer link's destination (k_every_gpu: every other selected GPU); -1 otherwise.
    int peer = -1;
    /// A host link's direction: "h2d", "d2h", or "both" (counted bytes go both ways at once).
    std::string direction;
    /// Bytes that cross the path per counted byte: 2 for a device-local copy, which reads and
    /// writes each byte it counts (as nvbandwidth counts device_local_copy); 0.5 for a
    /// transfer whose counted bytes are split over both directions of a link.
    double traffic = 1;

    /// "host link of GPU 0 (h2d)", "memory of GPU 0", "peer link GPU 0 -> GPU 1", ...
    std::string label() const;
    /// What a measured limit names to apply to this path: "page_cache", "host_link:0:h2d".
    std::string id() const;
};

void to_json(nlohmann::json& j, const PathUse& p);
/// Reads a declaration; throws std::invalid_argument naming the bad field.
void from_json(const nlohmann::json& j, PathUse& p);

/// The paths `result` declares, in order: its details "paths" as declare_paths and apply_limits
/// write them (each a PathUse, apply_limits adding its limit). None when it declares none (no
/// "paths", or not an array). Throws std::invalid_argument naming the first entry that is not
/// a path (a damaged or hand-made report). The one reader of a declaration: apply_limits,
/// fleet's causes and the families' annotations use it.
std::vector<PathUse> declared_paths(const Result& result);

/// A path's limit in bytes per second (per direction for a link) and where it comes from
/// ("PCIe Gen5 x16, from the topology").
struct PathLimit {
    double bandwidth = 0;
    std::string source;
};

/// The limits the machine declares (topology, devices), by path; nothing when it does not.
using LimitLookup = std::function<std::optional<PathLimit>(const PathUse&)>;

/// Gives every result without declared paths (details "paths") those its scenario declares
/// in `registry` for its params: results of a report written before paths were declared, and
/// of a run (the session calls it before apply_limits). Scenarios `registry` lacks (a plugin
/// not loaded now) are left as they are.
void declare_paths(std::vector<Result>& results, const Registry& registry);

/// For every result with declared paths: each path's limit (a measured one from details
/// "measured_limits" first, else `machine`) into details "paths"; and where the primary
/// metric is a bandwidth and every path's limit is known, "path" (the narrowest's label),
/// "path_bandwidth" (its limit per counted byte) and "efficiency" = median / that. A figure
/// above its limit by more than its uncertainty (and by at most 5%) is a defect of the limit,
/// named in "limit_wrong" instead of an efficiency; a missing limit is named in "limit_note".
/// Recomputes what an earlier call (or an older report) left.
void apply_limits(std::vector<Result>& results, const LimitLookup& machine);

/// Bandwidth of a PCIe link of `gen` and `width` lanes, per direction, B/s (after encoding);
/// 0 when unknown.
double pcie_bandwidth(int gen, int width);

/// GPU memory bandwidth from its clock (kHz, as CUDA reports it) and bus width (bits),
/// reads and writes together: double data rate. 0 when unknown.
double memory_bandwidth(double memory_clock_khz, double bus_width_bits);

/// The machine's limits from a report's (or run's) topology and devices documents.
LimitLookup machine_limits(const nlohmann::json& topology, const nlohmann::json& devices);

} // namespace interopbench
