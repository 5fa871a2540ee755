#pragma once
/// GPUDirect RDMA readiness as sysfs and /proc show it: the RDMA devices' ports, the way a NIC
/// reaches GPU memory (the nvidia_peermem module, or dma-buf), ACS on the PCI bridges between
/// each RDMA NIC and its nearest GPU, and the IOMMU mode. Files are only read: no program is
/// run and nothing needs root (what only root may read is reported as unknown). Every root
/// directory is a parameter, so tests read recorded trees.
#include <optional>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace interopbench {

/// The ports of RDMA device `device` from `sysfs_root`/class/infiniband/DEVICE/ports/N/{state,
/// rate,link_layer}, in port order; nothing when that ports directory does not exist.
std::optional<std::vector<NicPort>> read_rdma_ports(const std::string& sysfs_root, const std::string& device);

/// B/s per direction of a port rate as the kernel writes it: "200 Gb/sec (4X HDR)" -> 25e9;
/// 0 when it is not of that form.
double rdma_rate_bandwidth(const std::string& rate);

/// ACS (PCIe Access Control Services) on one PCI bridge. With P2P request or completion
/// redirect on, a transfer between two devices below the bridge is sent up to the root
/// complex instead of across the switch.
struct AcsBridge {
    std::string bus_id;
    std::optional<bool> redirect; ///< request or completion redirect enabled; nothing: not readable
    std::string evidence;         ///< what was read, or why nothing could be
};

/// ACS of bridge `bus_id` from `sysfs_root`/bus/pci/devices/BUS_ID/config. The ACS
/// capability lives in PCIe extended config space (past byte 256), which the kernel shows to
/// root only: other users read 64 bytes, and the result is then unknown.
AcsBridge read_acs(const std::string& sysfs_root, const std::string& bus_id);

/// One RDMA NIC as the doctor sees it.
struct RdmaNic {
    std::string name;       ///< "mlx5_0"
    std::string pci_bus_id;
    std::vector<NicPort> ports;
    std::string nearest_gpu; ///< its label; empty when no GPU's path is known
    PathClass nearest_class = PathClass::unknown;
    std::string gpu_paths;   ///< "GPU0 SYS, GPU1 PHB, GPU2 PIX"
    std::vector<AcsBridge> bridges; ///< on the path to the nearest GPU
};

/// What the RDMA checks read.
struct RdmaFacts {
    bool infiniband_class = false;  ///< `sysfs`/class/infiniband exists
    std::vector<RdmaNic> nics;      ///< the topology's RDMA devices (kind "rdma")
    bool nvidia_peermem = false;    ///< `sysfs`/module/nvidia_peermem exists (module loaded)
    bool nvidia_driver = false;     ///< `proc`/driver/nvidia/version exists
    bool nvidia_open_module = false; ///< that file names the open kernel module (dma-buf export)
    bool dmabuf_sysfs = false;      ///< `sysfs`/kernel/dmabuf exists
    std::string kernel_release;     ///< `proc`/sys/kernel/osrelease; empty when unreadable
    bool iommu_groups = false;      ///< `sysfs`/kernel/iommu_groups holds a group
    bool iommu_units = false;       ///< `sysfs`/class/iommu holds an IOMMU unit
    std::vector<std::string> iommu_group_types; ///< the distinct group types ("identity", "DMA-FQ")
    std::optional<std::string> cmdline; ///< `proc`/cmdline; nothing when unreadable
};

/// Reads the facts above for the RDMA NICs of `topology`. Never throws.
RdmaFacts rdma_facts(const Topology& topology, const std::string& sysfs_root = "/sys",
                     const std::string& proc_root = "/proc");

/// Whether the kernel `release` ("6.8.0-45-generic") is `major`.`minor` or newer; false when
/// it cannot be read.
bool kernel_at_least(const std::string& release, int major, int minor);

} // namespace interopbench
