#pragma once
/// Storage as the topology sees it: block devices and their PCIe path class to each GPU, the
/// file system and block device behind a directory (with its queue settings and direct-I/O
/// alignment), and the host side of cuFile (the nvidia-fs kernel module, the cufile.json in
/// force). Read from sysfs, /proc and statfs/statx only: no CUDA call, no cuFile call.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topology/topology.hpp"

namespace interopbench {

/// Classifies the PCIe path between two devices from their resolved sysfs paths
/// ("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"): the same PCI function: self (X);
/// under one bridge or switch: PIX (one level of bridges each) or PXB (more); under the same
/// root complex only: PHB; different roots on one NUMA node: NODE; else SYS. `numa_a/b` are
/// the devices' NUMA nodes (-1 unknown: different roots then give NODE when both are unknown).
PathClass classify_sysfs_pci_path(const std::string& a, const std::string& b, int numa_a, int numa_b);

/// The block devices of this machine (live sysfs), with their path class to each GPU of
/// `topology` (GPUs are found by PCI bus id under /sys/bus/pci/devices). Never throws.
std::vector<BlockDeviceTopo> discover_block_devices(const Topology& topology);

/// Queue settings of block device `disk` (a whole-disk name).
BlockQueue read_block_queue(const std::string& disk);

/// {"block_devices": [...]}-style array for the topology JSON.
nlohmann::json block_devices_json(const std::vector<BlockDeviceTopo>& devices);

/// What is behind a directory: its file system and block device.
struct StorageDirFacts {
    std::string dir;
    bool exists = false, is_directory = false, writable = false;
    std::string fs_type;      ///< "ext4", "xfs", "tmpfs", "0x..." for unknown magic numbers
    bool memory_backed = false; ///< tmpfs/ramfs: no device, the page cache is the storage
    std::uint64_t free_bytes = 0;  ///< statvfs f_bavail * f_frsize
    std::string device;       ///< whole-disk block device ("vda"), empty when none
    std::string partition;    ///< the partition ("vda1") when the file system sits on one
    std::string device_number; ///< the whole disk's "MAJ:MIN" (what cgroup I/O limits name), empty when none
    BlockQueue queue;
    int device_numa_node = -1;
    std::string device_pci_bus_id;
    /// statx STATX_DIOALIGN: memory and offset alignment for O_DIRECT; 0 when unknown.
    std::uint32_t dio_mem_align = 0, dio_offset_align = 0;
    std::optional<bool> odirect; ///< O_DIRECT open of a probe file succeeded; nothing: not probed
    std::string odirect_note;    ///< why not
};

/// Facts about `dir`. With `probe`, a small probe file is created (and removed) in `dir` to
/// test O_DIRECT; nothing is written without it. Never throws.
StorageDirFacts storage_dir_facts(const std::string& dir, bool probe);

/// The file system name of a statfs f_type magic number ("ext4", "tmpfs"...).
std::string fs_type_name(std::uint64_t magic);

/// The host side of cuFile: read without loading the library.
struct CufileHostFacts {
    bool nvidia_fs = false;         ///< /proc/driver/nvidia-fs exists
    std::string nvidia_fs_version;  ///< its version file, e.g. "2.20"
    std::string config_path;        ///< CUFILE_ENV_PATH_JSON or /etc/cufile.json
    bool config_from_env = false;
    bool config_found = false;
    std::string config_error;       ///< unreadable or not JSON
    std::optional<bool> allow_compat_mode, force_compat_mode, use_pci_p2pdma;
};
CufileHostFacts cufile_host_facts();
/// The configuration file cuFile's settings come from: the one the user named in
/// CUFILE_ENV_PATH_JSON (also once the tool pointed that variable at its private copy:
/// gpu::private_cufile_config keeps the user's name in INTEROPBENCH_CUFILE_USER_CONFIG), else
/// /etc/cufile.json; `from_env` says which.
std::string cufile_config_source(bool* from_env = nullptr);
/// Where the tool keeps the user's CUFILE_ENV_PATH_JSON once it pointed that at its own copy.
inline constexpr const char* k_cufile_user_config_env = "INTEROPBENCH_CUFILE_USER_CONFIG";
/// The same as JSON (for details and the library note).
nlohmann::json cufile_host_facts_json(const CufileHostFacts& f);

/// The default storage directory: $TMPDIR (else /tmp) + "/interopbench-storage-<uid>", one per
/// user (the tool refuses it when it is not this user's alone).
std::string default_storage_dir();

} // namespace interopbench
