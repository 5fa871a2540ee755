#pragma once
/// `interopbench doctor`: what on this machine makes data movement slower than it should be.
///
/// Facts are gathered once into a plain DoctorFacts (testable: tests build fake ones); each
/// check is a pure function of the facts returning one result per subject (the machine, a
/// GPU, a GPU pair, a variable), each PASS, WARN, FAIL or SKIP (cannot be evaluated here) with
/// one line of evidence and one line of fix. Only a FAIL fails the command: a machine without
/// a GPU (a build machine) skips the GPU checks, and advice that is no fault of the machine
/// is INFO.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/scenario.hpp"
#include "topology/rdma.hpp"
#include "topology/storage_devices.hpp"
#include "topology/topology.hpp"

namespace interopbench {

enum class CheckStatus { pass, warn, fail, skip, info };
/// "PASS", "WARN", "FAIL", "SKIP", "INFO".
const char* to_string(CheckStatus s);

struct CheckResult {
    std::string id;       ///< check id, e.g. "pcie_link"
    std::string subject;  ///< "GPU0", "GPU0>GPU1", "NCCL_P2P_DISABLE", or "" for the machine
    CheckStatus status = CheckStatus::pass;
    std::string evidence; ///< one line: what was seen
    std::string fix;      ///< one line: what to do (empty when nothing); advice for INFO
};

/// Clock event reason bits (NVML's nvmlClocksEventReason* values).
inline constexpr std::uint64_t k_clock_gpu_idle = 0x1;
inline constexpr std::uint64_t k_clock_app_setting = 0x2;
inline constexpr std::uint64_t k_clock_sw_power_cap = 0x4;
inline constexpr std::uint64_t k_clock_hw_slowdown = 0x8;
inline constexpr std::uint64_t k_clock_sync_boost = 0x10;
inline constexpr std::uint64_t k_clock_sw_thermal = 0x20;
inline constexpr std::uint64_t k_clock_hw_thermal = 0x40;
inline constexpr std::uint64_t k_clock_hw_power_brake = 0x80;
inline constexpr std::uint64_t k_clock_display_setting = 0x100;

/// The ids of the reasons set in `bits` that slow the clocks ("sw_power_cap", "hw_slowdown",
/// "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake"): every known bit but idle,
/// application clocks and display clocks, in bit order.
std::vector<std::string> clock_slowdown_ids(std::uint64_t bits);

/// The CPUs this process may run on (sched_getaffinity), ascending; empty when unknown.
std::vector<unsigned> process_cpus();

/// Smallest memlock limit that passes: the largest pinned buffer of the default sweep.
inline constexpr std::uint64_t k_memlock_min = 1ull << 30;

/// One GPU. std::optional fields are nothing where the fact could not be read.
struct DoctorGpu {
    std::string label; ///< "GPU0"
    int ordinal = -1;  ///< CUDA ordinal; -1 when CUDA does not see it
    std::string name;
    std::string pci_bus_id;
    std::vector<unsigned> local_cpus; ///< CPUs local to the GPU (its NUMA node)
    std::vector<unsigned> numa_nodes;

    int pcie_gen_max = 0, pcie_width_max = 0;   ///< 0 when unknown
    int pcie_gen_idle = 0, pcie_width_idle = 0; ///< before loading the link
    /// Highest generation and width seen while a host-to-device copy ran; nothing when no
    /// copy could run.
    std::optional<int> pcie_gen_loaded, pcie_width_loaded;
    std::string pcie_note; ///< why there is no loaded reading

    bool nvlink_known = false; ///< NVML listed the links
    std::vector<unsigned> nvlinks_up, nvlinks_down;

    std::optional<bool> persistence;
    std::optional<std::uint64_t> clock_reasons; ///< under load where measured, else idle
    bool clock_reasons_loaded = false;
    std::optional<bool> ecc_enabled;
    std::optional<std::uint64_t> ecc_uncorrected_volatile, ecc_uncorrected_aggregate;
    std::optional<unsigned> retired_pages;
    std::optional<bool> retired_pending;
    std::optional<unsigned> remapped_uncorrectable;
    std::optional<bool> remap_pending, remap_failure;
    std::optional<int> compute_mode; ///< 0 default, 2 prohibited, 3 exclusive process
    std::optional<std::vector<unsigned>> other_pids; ///< other processes with a context on it
    std::optional<std::uint64_t> mempool_release_threshold; ///< default pool, bytes
    /// cudaDevAttrHostRegisterReadOnlySupported: the copy engine can read a registered file
    /// mapping (the page cache) straight to this GPU; nothing where not read.
    std::optional<bool> register_read_only;
    std::optional<std::string> iommu_type; ///< the GPU's IOMMU group type ("identity", "DMA"...); nothing without IOMMU
};

/// An ordered GPU pair.
struct DoctorPair {
    std::string from, to;  ///< GPU labels
    std::string path;      ///< class label: "NV18", "PIX", ...
    PathClass pcie_class = PathClass::unknown;
    int nvlinks = 0;       ///< links `from` has to `to`
    std::optional<bool> can_access_peer;
};

struct DoctorFacts {
    bool cuda_available = false;
    std::string cuda_note;
    int driver_version = 0;  ///< CUDA version the driver supports, e.g. 13000; 0 unknown
    int runtime_version = 0; ///< CUDA runtime this tool carries
    std::string driver_release;
    int nvidia_pci_gpus = 0; ///< NVIDIA GPUs on the PCI bus (hwloc), visible to CUDA or not
    bool require_gpu = false; ///< `doctor --require-gpu`: no usable GPU is a FAIL even where none is seen

    bool nvml_available = false;
    int nvml_init_error = -1; ///< NVML's nvmlInit_v2 code; -1 when the library is missing
    std::string nvml_note;

    std::vector<DoctorGpu> gpus;
    std::vector<DoctorPair> pairs;
    bool has_nvswitch = false;
    bool has_infiniband = false;

    std::vector<unsigned> process_cpus;   ///< CPUs this process may run on
    std::optional<std::uint64_t> memlock; ///< RLIMIT_MEMLOCK soft limit; nothing = unlimited
    std::map<std::string, std::string> env; ///< CUDA_* and NCCL_* variables that are set

    // Storage (the storage family): nothing where not gathered.
    std::optional<StorageDirFacts> storage_dir; ///< the default storage directory
    std::optional<CufileHostFacts> cufile;
    std::vector<BlockDeviceTopo> block_devices;
    std::vector<std::string> gpu_labels; ///< by GPU index, for block_devices' gpu_paths

    RdmaFacts rdma; ///< GPUDirect RDMA: the RDMA NICs, peer memory, ACS, IOMMU (rdma.hpp)
};


/// Everything but the CUDA facts and the loaded link readings (topology library): GPUs and
/// pairs from `topology`, NVML health, process affinity, memlock limit, environment, IOMMU,
/// the RDMA facts (rdma_facts on /sys and /proc).
DoctorFacts host_doctor_facts(const Machine& machine, const Topology& topology);

/// No CUDA device: FAIL with CUDA's reason where NVIDIA GPUs sit on the PCI bus or
/// require_gpu is set, else SKIP (a machine without a GPU, e.g. a build machine); WARN when
/// the PCI bus has more NVIDIA GPUs than CUDA sees and CUDA_VISIBLE_DEVICES does not explain it.
std::vector<CheckResult> check_gpu_present(const DoctorFacts& f);
/// Driver older than the runtime needs: FAIL for an older major version, WARN for a minor.
std::vector<CheckResult> check_driver(const DoctorFacts& f);
/// NVML missing (WARN: its checks are skipped) or a driver/library mismatch (FAIL).
std::vector<CheckResult> check_nvml(const DoctorFacts& f);
/// Per GPU: PCIe link below its maximum generation or width while loaded: FAIL.
std::vector<CheckResult> check_pcie_link(const DoctorFacts& f);
/// Per ordered pair: no peer access over NVLink (FAIL) or through PCIe switches (WARN).
std::vector<CheckResult> check_peer_access(const DoctorFacts& f);
/// Per GPU: NVLinks down (FAIL), fewer active links than the best peer (WARN); per pair:
/// the two ends count different links (FAIL).
std::vector<CheckResult> check_nvlink(const DoctorFacts& f);
/// Per GPU: this process may not run on any CPU local to the GPU: WARN.
std::vector<CheckResult> check_cpu_affinity(const DoctorFacts& f);
/// memlock limit below k_memlock_min: WARN.
std::vector<CheckResult> check_memlock(const DoctorFacts& f);
/// Per GPU: the default pool's release threshold is 0 (CUDA's default, memory returned at
/// every sync): INFO, advice for applications rather than a fault of the machine.
std::vector<CheckResult> check_mempool(const DoctorFacts& f);
std::vector<CheckResult> check_registered_cache(const DoctorFacts& f);
/// Per GPU: persistence mode off: WARN.
std::vector<CheckResult> check_persistence(const DoctorFacts& f);
/// Per GPU: hardware slowdown, thermal or power-brake throttling (FAIL); software thermal
/// or power capping (WARN).
std::vector<CheckResult> check_clocks(const DoctorFacts& f);
/// Per GPU: uncorrected ECC errors since boot, retirement or remapping pending or failed
/// (FAIL); ECC off, past uncorrected errors, retired pages (WARN).
std::vector<CheckResult> check_ecc(const DoctorFacts& f);
/// Per GPU: compute mode prohibited (FAIL) or exclusive-process (WARN).
std::vector<CheckResult> check_compute_mode(const DoctorFacts& f);
/// Per GPU: other processes hold a context on it (measurements share the GPU): WARN.
std::vector<CheckResult> check_other_processes(const DoctorFacts& f);
/// NCCL_* variables that disable P2P (FAIL where P2P works), SHM, InfiniBand or force an
/// algorithm (WARN); NCCL_NVLS_ENABLE=0 is WARN at most (intended on shared machines).
std::vector<CheckResult> check_nccl_env(const DoctorFacts& f);
/// CUDA_* variables that distort measurements (launch blocking, one hardware queue): WARN.
std::vector<CheckResult> check_cuda_env(const DoctorFacts& f);
/// Per GPU: IOMMU translating DMA (not passthrough): WARN.
std::vector<CheckResult> check_iommu(const DoctorFacts& f);

/// cuFile: nvidia-fs missing (WARN: compatibility mode only; SKIP without a GPU), force_compat_mode set (WARN),
/// cufile.json unreadable (WARN); the storage directory: no O_DIRECT or memory-backed (WARN),
/// read-ahead under 128 KiB (WARN); per block device and GPU: a SYS path (WARN, with the fix).
std::vector<CheckResult> check_storage(const DoctorFacts& f);

/// GPUDirect RDMA readiness. Each RDMA check SKIPs once, "no RDMA device (no
/// /sys/class/infiniband)", where there is no RDMA NIC; the per-GPU ones SKIP without a GPU.
/// Peer memory: nvidia_peermem loaded, or dma-buf (the NVIDIA open kernel module and a kernel
/// of 5.12 or newer, or one with /sys/kernel/dmabuf): PASS; neither: WARN.
std::vector<CheckResult> check_rdma_peer_memory(const DoctorFacts& f);
/// Per RDMA NIC: the path class to its nearest GPU: PIX or PXB PASS, PHB or NODE WARN, SYS
/// FAIL (traffic crosses the CPU interconnect); no known path: SKIP.
std::vector<CheckResult> check_rdma_path(const DoctorFacts& f);
/// Per RDMA NIC: ACS redirect on a PCI bridge between it and its nearest GPU: WARN; none
/// redirects: PASS; a bridge's ACS not readable (root only): SKIP with that reason.
std::vector<CheckResult> check_rdma_acs(const DoctorFacts& f);
/// The IOMMU: off, or on in passthrough (iommu=pt on the kernel command line, or every group
/// of type identity): PASS; on and translating: WARN.
std::vector<CheckResult> check_rdma_iommu(const DoctorFacts& f);
/// Per RDMA port: ACTIVE PASS, any other state WARN; no port known: SKIP.
std::vector<CheckResult> check_rdma_link(const DoctorFacts& f);

/// Every check above, in that order.
std::vector<CheckResult> run_checks(const DoctorFacts& f);
/// True when a result is FAIL (the doctor then exits 1; WARN, SKIP and INFO exit 0).
bool any_failed(const std::vector<CheckResult>& results);

} // namespace interopbench
