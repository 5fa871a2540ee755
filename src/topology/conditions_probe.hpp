#pragma once
/// Gathers the run conditions (interopbench/conditions.hpp) from /proc, /sys, the process's
/// cgroup files and NVML. Cheap: files are read and NVML asked, nothing is measured. Files are
/// opened read-only, without following a link in their last component and without blocking,
/// and read only when they are regular files (bounded in size); what cannot be read is nothing
/// (null in the report), never an error. The parsers are pure functions of a file's text, and
/// every file is read below a root directory ("" for this machine) so that tests read
/// recorded trees (tests/data/conditions/).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "interopbench/conditions.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench {

/// A kernel list of CPUs or nodes: "0-3,8,10-11" -> {0,1,2,3,8,10,11}, ascending, each once;
/// "" (or a newline) -> {}. Nothing for text that is not such a list.
std::optional<std::vector<unsigned>> parse_cpu_list(std::string_view text);

/// One line of /proc/self/cgroup: "7:blkio:/a/b" (v1: its controllers), "0::/a/b" (v2: none).
struct ProcCgroup {
    std::vector<std::string> controllers; ///< "cpu", "cpuacct", "name=systemd"; empty for v2
    std::string path;                     ///< "/a/b"
};
std::vector<ProcCgroup> parse_proc_cgroup(std::string_view text);

/// A cgroup file system mounted, from /proc/self/mountinfo.
struct CgroupMount {
    std::string root;        ///< the cgroup the mount shows at its mount point ("/" usually)
    std::string mount_point; ///< "/sys/fs/cgroup/blkio"
    bool v2 = false;         ///< cgroup2 (else cgroup v1)
    std::vector<std::string> options; ///< super options: v1 names its controllers there
};
std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo);

/// A v1 throttle file ("254:0 367001600" per line); the kind comes from `file_name`
/// ("blkio.throttle.read_bps_device" -> read_bps). Lines that do not parse are left out.
std::vector<CgroupIoLimit> parse_blkio_throttle(std::string_view text, const std::string& file_name);
/// A v2 io.max ("8:0 rbps=367001600 wbps=max riops=max wiops=max"): every limit that is not
/// "max", as read_bps, write_bps, read_iops, write_iops.
std::vector<CgroupIoLimit> parse_io_max(std::string_view text);
/// CPUs a v1 quota gives: cpu.cfs_quota_us / cpu.cfs_period_us; nothing for -1 (unlimited)
/// or text that does not parse.
std::optional<double> parse_cfs_quota(std::string_view quota, std::string_view period);
/// CPUs a v2 cpu.max gives ("200000 100000" -> 2); nothing for "max ..." or bad text.
std::optional<double> parse_cpu_max(std::string_view text);
/// A memory limit: v2 memory.max ("max": nothing) or v1 memory.limit_in_bytes (2^62 or
/// more: the "unlimited" value v1 writes, nothing).
std::optional<std::uint64_t> parse_memory_limit(std::string_view text);
/// The 1-minute load average of /proc/loadavg ("0.52 0.70 1.11 1/93 18565").
std::optional<double> parse_loadavg(std::string_view text);

/// The limits of this process's cgroups and their ancestors, v1 and v2: the cgroups named in
/// `root`/proc/self/cgroup, found through the mounts of `root`/proc/self/mountinfo, their
/// files read below `root`. Of several limits of one kind (one per device for I/O) the
/// tightest. Never throws.
CgroupLimits read_cgroup_limits(const std::string& root = "");

/// The NUMA nodes (`root`/sys/devices/system/node/nodeN/cpulist) holding one of `cpus`;
/// nothing when the nodes cannot be read.
std::optional<std::vector<unsigned>> numa_nodes_of(const std::vector<unsigned>& cpus, const std::string& root = "");

/// The CPUs local to PCI device `bus_id` (`root`/sys/bus/pci/devices/BUS_ID/local_cpulist).
std::optional<std::vector<unsigned>> pci_local_cpus(const std::string& bus_id, const std::string& root = "");

/// The conditions now: this process's affinity, the files below `root` and NVML for every
/// GPU of `machine`. Never throws.
ConditionsSnapshot take_conditions(const Machine& machine, const std::string& root = "");

} // namespace interopbench
