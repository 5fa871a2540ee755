#pragma once
/// The conditions a run ran under, as pure data: what the process may use (CPUs, NUMA nodes,
/// the limits of its cgroups), the load, and each GPU's state (other processes on it, clock
/// event reasons, link state, ECC, temperature, CPU locality). A snapshot is taken when the
/// run starts and one when it ends; the topology layer gathers them (topology/conditions_probe.hpp,
/// handed to the session as a hook), the report writes them as its "conditions" block
/// (conditions_json) and read_header reads that block back (ReportConditions, the header's
/// `conditions`).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace interopbench {

/// One I/O limit a cgroup puts on a block device.
struct CgroupIoLimit {
    std::string device;      ///< "MAJ:MIN" as the cgroup file names it (a whole disk)
    std::string kind;        ///< read_bps, write_bps, read_iops, write_iops
    std::uint64_t value = 0; ///< bytes or operations per second
    std::string source;      ///< the file: "blkio.throttle.read_bps_device" (v1), "io.max" (v2)
};

/// The limits of the process's cgroups (v1 and v2) and of their ancestors: the tightest of
/// each kind, since that one holds.
struct CgroupLimits {
    std::vector<CgroupIoLimit> io_limits;            ///< one per device and kind
    std::optional<double> cpu_quota_cpus;            ///< quota / period; nothing: unlimited or unknown
    std::optional<std::uint64_t> memory_limit_bytes; ///< nothing: unlimited or unknown
};

/// PCIe generation and width as NVML gives them.
struct PcieState {
    int gen_current = 0, width_current = 0, gen_max = 0, width_max = 0;
};

/// One GPU at one moment. Nothing where the fact could not be read; `reason` says why.
struct GpuConditions {
    int ordinal = 0;
    std::string pci_bus_id;
    std::optional<int> other_processes;         ///< processes but this one with a context on the GPU
    std::optional<std::uint64_t> clock_reasons; ///< NVML clock event reason bits
    std::vector<std::string> clock_reason_names; ///< the bits set that slow the clocks ("sw_thermal")
    std::optional<PcieState> pcie;
    std::optional<int> nvlinks_up, nvlinks_down;
    std::optional<std::uint64_t> ecc_uncorrected_volatile;
    std::optional<int> temperature_c;
    std::optional<bool> local_cpus_allowed; ///< the process may run on a CPU local to the GPU
    std::string reason;                     ///< why facts are missing; empty when none is
};

/// The conditions at one moment.
struct ConditionsSnapshot {
    std::string time; ///< ISO-8601 UTC
    std::optional<std::string> cpus_allowed; ///< the process's affinity as a list ("0-7,16-23"); nothing: unknown
    std::optional<std::size_t> cpus_allowed_count;
    std::optional<std::vector<unsigned>> numa_nodes_allowed; ///< nodes holding an allowed CPU; nothing: unknown
    CgroupLimits cgroup;
    std::optional<double> load_average; ///< 1-minute load average
    int logical_cpus = 0;               ///< online CPUs; 0 unknown
    std::vector<GpuConditions> gpus;
};

/// The report's "conditions" block (docs/REPORT.md) from the snapshot at the start and the
/// one at the end. Without an end (a checkpoint of a run still going) the end's values are
/// null and the facts recorded once (PCIe, NVLinks, ECC, temperature, locality) come from the
/// start. The process block and the GPUs' single facts come from the end snapshot. Holds no
/// name and no path.
nlohmann::json conditions_json(const ConditionsSnapshot& start, const std::optional<ConditionsSnapshot>& end);

/// The "conditions" block as a report holds it (ReportHeader::Conditions): every fact may be
/// missing (nothing) in a report that lacks it or holds another type.
struct ReportConditions {
    std::string start, end; ///< ISO-8601 UTC; empty when absent
    std::optional<std::string> cpus_allowed; ///< "0-7,16-23"
    std::optional<int> cpus_allowed_count;
    std::optional<std::vector<unsigned>> numa_nodes_allowed;
    std::vector<CgroupIoLimit> io_limits;
    std::optional<double> cpu_quota_cpus;
    std::optional<std::uint64_t> memory_limit_bytes;
    std::optional<double> load_average_start, load_average_end;
    std::optional<int> logical_cpus;
    struct Gpu {
        std::optional<int> ordinal;
        std::string pci_bus_id;
        std::optional<int> other_processes_start, other_processes_end;
        std::optional<std::uint64_t> clock_reasons_start, clock_reasons_end;
        std::vector<std::string> clock_reason_names;
        std::optional<PcieState> pcie;
        std::optional<int> nvlinks_up, nvlinks_down;
        std::optional<std::uint64_t> ecc_uncorrected_volatile;
        std::optional<int> temperature_c;
        std::optional<bool> local_cpus_allowed;
        std::string reason;
    };
    std::vector<Gpu> gpus;
};

/// Reads a "conditions" block; nothing when `block` is not an object. Never throws: a field
/// of another type is left out.
std::optional<ReportConditions> read_conditions(const nlohmann::json& block);

/// One line of what in the conditions may have slowed the run ("reads limited to 367 MB/s by
/// a cgroup on 8:0; 1 other process on GPU0"), empty when nothing is set: cgroup I/O, CPU and
/// memory limits, other processes on a GPU, clocks slowed, NVLinks down, uncorrected ECC
/// errors, no allowed CPU local to a GPU.
std::string conditions_note(const ReportConditions& c);

} // namespace interopbench
