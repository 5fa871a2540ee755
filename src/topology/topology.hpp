#pragma once
/// Machine topology: where each GPU sits on the PCIe tree and which CPUs and NUMA nodes are
/// local to it (hwloc), its NVLinks (NVML), the CUDA peer facts per GPU pair, the path class
/// of every pair with the `nvidia-smi topo -m` legend, and the theoretical bandwidth of each
/// path. Also places the calling thread and its memory near a GPU.
///
/// GPUs are always matched by PCI bus id, never by index: CUDA, NVML and hwloc orders differ.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/runner.hpp"
#include "interopbench/scenario.hpp"

#include "interopbench/limits.hpp"

namespace interopbench {

/// How two GPUs are connected, best first. A pair with NVLink is `nvlink` whatever PCIe path
/// it also has; the others follow the PCIe path.
enum class PathClass {
    self,   ///< X: the same device
    nvlink, ///< NV#: a bonded set of # NVLinks, direct or through NVSwitches
    pix,    ///< PIX: PCIe through at most one switch, no host bridge
    pxb,    ///< PXB: PCIe through several switches, no host bridge
    phb,    ///< PHB: PCIe through a host bridge (the CPU's root complex)
    node,   ///< NODE: PCIe across host bridges within one NUMA node
    sys,    ///< SYS: PCIe and the inter-socket link between NUMA nodes
    unknown,
};

/// "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "?".
const char* to_string(PathClass c);
/// The legend of the matrix: (label, meaning) in PathClass order, "NV#" for nvlink.
const std::vector<std::pair<std::string, std::string>>& path_legend();

// pcie_bandwidth(gen, width): interopbench/limits.hpp.

/// Lower-case "dddd:bb:dd.f" with a 4-digit domain (longer domains kept as they are); accepts
/// upper case, NVML's 8-digit domains, and a missing domain (taken as 0). Nothing for text
/// that is not a PCI bus id.
std::optional<std::string> normalize_pci_bus_id(std::string_view text);

/// List text of sorted CPU (or NUMA node) numbers: {0,1,2,3,8} -> "0-3,8"; empty -> "".
std::string format_cpu_list(const std::vector<unsigned>& cpus);

/// A GPU's PCIe link to its parent.
struct PcieLink {
    int gen_current = 0, width_current = 0; ///< 0 when unknown
    int gen_max = 0, width_max = 0;         ///< 0 when unknown
    double link_speed = 0; ///< hwloc's link speed attribute in B/s (current speed), 0 unknown

    /// Theoretical B/s per direction: gen_max x width_max when known, else link_speed.
    double bandwidth() const;
    /// "Gen5 x16" from the maximum, or "63.0 GB/s" from hwloc's speed alone, or "?".
    std::string label() const;
};

enum class LinkPeer { gpu, nvswitch, cpu, unknown };
const char* to_string(LinkPeer p);

/// One NVLink of a GPU.
struct NvLink {
    unsigned link = 0;
    bool active = false;
    LinkPeer peer = LinkPeer::unknown;
    std::string peer_bus_id; ///< far end, normalised; empty when unknown
};

struct NumaNode {
    unsigned os_index = 0;
    std::vector<unsigned> cpus;
    std::uint64_t memory = 0; ///< bytes local to the node, 0 when unknown
};

/// One NVIDIA GPU.
struct GpuTopo {
    int cuda_ordinal = -1; ///< -1 when CUDA does not see it (offline analysis, no driver)
    std::string name;
    std::string pci_bus_id;              ///< normalised
    std::vector<std::string> os_devices; ///< hwloc OS devices on it: "cuda0", "nvml0"
    std::vector<unsigned> cpus;          ///< CPUs of its non-I/O ancestor (local CPUs)
    std::vector<unsigned> numa_nodes;    ///< NUMA nodes of that ancestor
    std::vector<std::string> pci_path;   ///< bridges from the host bridge down to the GPU
    PcieLink pcie;
    std::vector<NvLink> nvlinks; ///< links that exist (active or not); empty when unknown
    bool nvlink_known = false;   ///< NVML (or a recorded sidecar) was read for this GPU
    double nvlink_rate = 0;      ///< B/s per link and direction; 0 when unknown
    int nvlinks_to_cpu = 0;      ///< NVLinks to the CPU (POWER hosts)
    double nvlink_cpu_bandwidth = 0; ///< B/s per direction over those links

    /// Active links.
    int nvlinks_active() const;
    /// "GPU<cuda ordinal>", or "GPU<index>" when CUDA does not see it.
    std::string label(std::size_t index) const;
    /// Path class to host memory: "NV#" over NVLink to the CPU, else "PCIe".
    std::string host_path() const;
    /// Theoretical B/s per direction of that path; 0 when unknown.
    double host_bandwidth() const;
};

/// Facts CUDA gives for an ordered device pair (filled by the GPU library).
struct CudaPeerFacts {
    int from = 0, to = 0; ///< CUDA ordinals
    bool can_access_peer = false;
    int performance_rank = -1; ///< cudaDevP2PAttrPerformanceRank, lower is better; -1 unknown
    bool native_atomics = false;
};

/// An ordered GPU pair (indexes into Topology::gpus).
struct PairTopo {
    std::size_t from = 0, to = 0;
    PathClass pcie_class = PathClass::unknown; ///< the PCIe path alone
    int nvlinks = 0;           ///< bonded NVLinks between them (direct + through NVSwitch)
    bool via_nvswitch = false; ///< some of them go through NVSwitches
    double nvlink_bandwidth = 0; ///< B/s per direction over those links; 0 when none
    bool has_cuda = false;     ///< `cuda` was filled
    CudaPeerFacts cuda;

    /// nvlink when nvlinks > 0, else pcie_class.
    PathClass path_class() const;
    /// "NV18", "PIX", ...
    std::string label() const;
    /// Theoretical B/s per direction of the path: the NVLink bond, or the slower of the two
    /// GPUs' PCIe links (the inter-socket link of SYS paths is not known and not counted).
    double bandwidth(const std::vector<GpuTopo>& gpus) const;
};

/// Most GPUs whose pairs are classified: every ordered pair is listed (n x (n - 1) of them),
/// so a recorded rack of thousands of GPUs would need gigabytes. Beyond it the GPUs and their
/// host paths are listed and `pairs` stays empty, with a note saying so.
inline constexpr std::size_t k_max_pair_gpus = 512;

/// Queue settings of a block device (/sys/block/NAME/queue); -1 or empty where unreadable.
struct BlockQueue {
    int logical_block_size = -1;
    int max_sectors_kb = -1;
    int read_ahead_kb = -1;
    int rotational = -1;
    std::string scheduler; ///< the selected one ("mq-deadline"), from "[mq-deadline] none"
};

/// A whole-disk block device (no partitions, loop, ram or zram devices).
struct BlockDeviceTopo {
    std::string name;       ///< "nvme0n1", "vda"
    std::string kind;       ///< "nvme", "virtio", "scsi", "other"
    std::string pci_bus_id; ///< the PCI function it sits behind; empty when none is found
    std::string sysfs_path; ///< resolved /sys/devices/... path of the device
    int numa_node = -1;
    std::uint64_t size = 0; ///< bytes
    BlockQueue queue;
    /// Path class to each GPU of the topology, by GPU index ("PHB", "SYS", "?").
    std::vector<std::string> gpu_paths;
};

/// One port of an RDMA device: /sys/class/infiniband/DEV/ports/N on a live machine, or the
/// port state hwloc recorded (its `PortNState` attribute) in an XML.
struct NicPort {
    unsigned port = 0;
    std::string state;      ///< "ACTIVE", "DOWN", "INIT"...; empty when unknown
    std::string rate;       ///< as the kernel gives it: "200 Gb/sec (4X HDR)"; empty when unknown
    double bandwidth = 0;   ///< B/s per direction from the rate; 0 when unknown
    std::string link_layer; ///< "InfiniBand" or "Ethernet" (RoCE); empty when unknown
};

/// A network device on the PCI bus, from hwloc's I/O objects: an RDMA device (hwloc's
/// OpenFabrics OS device, "mlx5_0": InfiniBand or RoCE) with the network interfaces of its
/// PCI function, or a plain network interface ("eth0") of a function without an RDMA device.
struct NicTopo {
    std::string name;                    ///< "mlx5_0", "eth0"
    std::string kind;                    ///< "rdma" or "net"
    std::string pci_bus_id;              ///< normalised
    std::vector<std::string> interfaces; ///< network interfaces of the same function ("ib0")
    std::vector<unsigned> cpus;          ///< CPUs of its non-I/O ancestor (local CPUs)
    std::vector<unsigned> numa_nodes;    ///< NUMA nodes of that ancestor
    double link_speed = 0;               ///< hwloc's PCIe link speed in B/s; 0 when unknown
    std::vector<NicPort> ports;          ///< RDMA ports; empty when unknown or kind "net"
    std::vector<PathClass> gpu_paths;    ///< PCIe path class to each GPU, by GPU index
    std::vector<PathClass> nic_paths;    ///< to each NIC, by NIC index (X for itself); empty
                                         ///< beyond k_max_pair_gpus NICs
    int nearest_gpu = -1;                ///< GPU index of the best path class; -1 when none is known
    /// PCI bridges (bus ids) on the path to the nearest GPU: from the NIC up to the two
    /// devices' common ancestor and down to the GPU; host bridges are not listed.
    std::vector<std::string> bridges;

    /// "NIC<index>".
    std::string label(std::size_t index) const;
    /// The path class to the nearest GPU; unknown when there is none.
    PathClass nearest_class() const;
};

/// The topology of one machine.
struct Topology {
    std::string source;        ///< "this machine" or the XML file analysed
    bool recorded = false;     ///< read from a recorded XML file, not discovered live
    std::string hwloc_version; ///< of the library that read it
    unsigned packages = 0, cores = 0, pus = 0;
    unsigned nvidia_pci_gpus = 0; ///< NVIDIA GPUs on the PCI bus, whether CUDA sees them or not
    std::vector<NumaNode> numa;
    std::vector<GpuTopo> gpus;
    std::vector<PairTopo> pairs; ///< every ordered pair (from != to) in (from, to) order; empty
                                 ///< beyond k_max_pair_gpus GPUs
    bool has_nvswitch = false;   ///< some GPU links to an NVSwitch
    bool has_infiniband = false; ///< hwloc sees an InfiniBand/RoCE (OpenFabrics) device
    /// Network devices on the PCI bus (RDMA devices first, then plain interfaces, each in bus
    /// id order) with their path class to each GPU.
    std::vector<NicTopo> nics;
    std::vector<std::string> notes; ///< what could not be discovered, and why
    /// Block devices and their path class to each GPU (live discovery only; storage_devices.hpp).
    std::vector<BlockDeviceTopo> block_devices;

    /// The pair (from, to) by GPU index, or nullptr (also beyond k_max_pair_gpus GPUs).
    const PairTopo* pair(std::size_t from, std::size_t to) const;
    /// The index of the GPU with this CUDA ordinal, or -1.
    int index_of_cuda(int ordinal) const;
};

/// Discovers this machine: hwloc with I/O objects, the GPUs CUDA sees (`machine.devices`, by
/// bus id; the NVIDIA 3D/VGA PCI devices hwloc finds when CUDA is not usable), NVML for
/// NVLink and PCIe generation/width (sysfs when NVML is absent), `peers` for the CUDA pair
/// facts, and the NICs' ports (read_nic_sysfs on /sys). Never throws: what cannot be found is
/// left unknown with a note.
Topology discover_topology(const Machine& machine, const std::vector<CudaPeerFacts>& peers = {});

/// Adds the kernel's facts about each RDMA device's ports from
/// `sysfs_root`/class/infiniband/DEV/ports/N/{state,rate,link_layer}, where that directory
/// exists (it replaces the port states hwloc recorded). discover_topology calls it with
/// "/sys"; tests give a recorded tree. Never throws.
void read_nic_sysfs(Topology& topology, const std::string& sysfs_root = "/sys");

/// Analyses a recorded hwloc XML topology of any machine. GPUs are the NVIDIA (vendor 0x10de)
/// PCI devices of class 0x0300 or 0x0302, in bus id order. NVLink comes from an
/// `NVLinkBandwidth` distance matrix in the XML (hwloc's NVML backend writes one) or from the
/// sidecar `sidecar_path(path)` written by export_topology, when present.
/// Throws UsageError for a missing or unreadable file, a file that is not XML, XML that is
/// not an hwloc topology, an hwloc XML version newer than this hwloc reads, and a sidecar
/// that is not valid.
Topology load_topology_xml(const std::string& path);

/// The sidecar of an XML export: `xml_path` + ".nvlink.json".
std::string sidecar_path(const std::string& xml_path);

/// Writes the topology as hwloc XML to `path` and the facts hwloc cannot hold (NVLinks, PCIe
/// generation/width, CUDA peer facts) to sidecar_path(path), each atomically. Throws
/// UsageError when the directory is not writable or hwloc cannot export.
void export_topology(const Topology& topology, const std::string& path);

/// The topology as JSON (the report's "topology" block): host summary, NUMA nodes, GPUs with
/// affinity, PCIe, NVLink and host path, every ordered pair with class and bandwidth, the
/// NICs with their ports and path class to each GPU, the legend and the notes. Bandwidths
/// in B/s.
nlohmann::json topology_json(const Topology& topology);


/// Bytes of host memory this process can still allocate and touch: MemAvailable, bounded by
/// the cgroup's memory limit (host_memory.cpp).
std::uint64_t available_host_memory();

/// Why `bytes` of host memory cannot be allocated here ("needs 64GiB of host memory, 21GiB
/// available"), or nothing when they can (with a margin for everything else).
std::optional<std::string> host_memory_shortfall(std::uint64_t bytes);

/// Number of NUMA nodes of this machine (1 when hwloc cannot tell).
unsigned numa_node_count();

/// Binds the calling thread (CPU) and its future memory allocations (membind, bind policy) to
/// the NUMA node(s) local to the GPU at `pci_bus_id`. Returns false and changes nothing where
/// there is a single NUMA node, the GPU or its locality is unknown, or binding fails.
bool place_near_device(const std::string& pci_bus_id);

/// Where a case puts its host side (buffers, threads) in prepare(): near GPU `device`
/// (place_near_device) when `ctx.bind_numa` is set and the machine knows the GPU; otherwise
/// nothing. Returns whether it bound.
bool place_host_side(const CaseContext& ctx, int device);

/// Like place_near_device, but binds to a NUMA node that is not local to the GPU (for
/// numa=remote measurements). Returns false and changes nothing where there is none.
bool place_away_from_device(const std::string& pci_bus_id);

/// Whether NUMA node `node` (its OS index, as numactl names it) exists here; node 0 always does.
bool numa_node_exists(unsigned node);

/// Binds the calling thread (CPU) and its future memory allocations to NUMA node `node` (OS
/// index). Returns false and changes nothing where there is a single NUMA node or binding fails.
bool place_on_numa_node(unsigned node);

/// Undoes the placement: the calling thread may run on every allowed CPU and allocates with
/// the default memory policy.
void reset_placement();

} // namespace interopbench
