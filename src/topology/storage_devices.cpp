// Block devices, the storage directory's file system, and cuFile's host side, from sysfs,
// /proc, statfs and statx. Kept apart from topology.cpp (hwloc): hwloc does not list virtio
// disks everywhere and names block OS devices differently across versions, while sysfs
// paths say where a disk sits on the PCI tree on every kernel.
#include "topology/storage_devices.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/report.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace interopbench {
namespace {

namespace fs = std::filesystem;

std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    if (in) std::getline(in, line);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    return line;
}

int read_int(const std::string& path, int fallback = -1) {
    const std::string s = read_first_line(path);
    if (s.empty()) return fallback;
    try {
        return std::stoi(s);
    } catch (...) {
        return fallback;
    }
}

std::string resolve(const std::string& path) {
    std::error_code ec;
    const fs::path p = fs::canonical(path, ec);
    return ec ? std::string{} : p.string();
}

bool is_pci_bus_id(const std::string& s) {
    // dddd:bb:dd.f
    if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
    for (std::size_t i : {0u, 1u, 2u, 3u, 5u, 6u, 8u, 9u, 11u})
        if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
    return true;
}

std::vector<std::string> split_path(const std::string& p) {
    std::vector<std::string> out;
    std::stringstream ss(p);
    std::string item;
    while (std::getline(ss, item, '/'))
        if (!item.empty()) out.push_back(item);
    return out;
}

/// The "pciDDDD:BB" root and the PCI functions below it, from a resolved sysfs path.
struct PciChain {
    std::string root;
    std::vector<std::string> functions;
};

PciChain pci_chain(const std::string& sysfs_path) {
    PciChain c;
    for (const std::string& part : split_path(sysfs_path)) {
        if (c.root.empty() && part.rfind("pci", 0) == 0 && part.size() > 3 && part.find(':') != std::string::npos) {
            c.root = part;
        } else if (!c.root.empty() && is_pci_bus_id(part)) {
            c.functions.push_back(part);
        }
    }
    return c;
}

std::string classify_kind(const std::string& name, const std::string& sysfs) {
    if (name.rfind("nvme", 0) == 0) return "nvme";
    if (name.rfind("vd", 0) == 0 || sysfs.find("/virtio") != std::string::npos) return "virtio";
    if (name.rfind("sd", 0) == 0) return "scsi";
    return "other";
}

/// The whole disk and partition behind a device number, from /sys/dev/block.
void device_of(dev_t dev, std::string& disk, std::string& partition) {
    const std::string link = fmt::format("/sys/dev/block/{}:{}", major(dev), minor(dev));
    const std::string real = resolve(link);
    if (real.empty()) return;
    const fs::path p(real);
    if (fs::exists(p / "partition")) {
        partition = p.filename().string();
        disk = p.parent_path().filename().string();
    } else {
        disk = p.filename().string();
    }
}

} // namespace

PathClass classify_sysfs_pci_path(const std::string& a, const std::string& b, int numa_a, int numa_b) {
    const PciChain ca = pci_chain(a), cb = pci_chain(b);
    if (ca.root.empty() || cb.root.empty() || ca.functions.empty() || cb.functions.empty()) return PathClass::unknown;
    if (ca.root != cb.root) {
        if (numa_a >= 0 && numa_b >= 0 && numa_a != numa_b) return PathClass::sys;
        return PathClass::node;
    }
    if (ca.functions == cb.functions) return PathClass::self;
    std::size_t common = 0;
    while (common < ca.functions.size() && common < cb.functions.size() && ca.functions[common] == cb.functions[common])
        ++common;
    if (common == 0) return PathClass::phb;
    // Bridges strictly between each device and the common ancestor.
    const std::size_t ba = ca.functions.size() - common - 1, bb = cb.functions.size() - common - 1;
    if (common == ca.functions.size() || common == cb.functions.size()) return PathClass::pix; // one below the other
    return ba <= 1 && bb <= 1 ? PathClass::pix : PathClass::pxb;
}

BlockQueue read_block_queue(const std::string& disk) {
    BlockQueue q;
    if (disk.empty()) return q;
    const std::string base = "/sys/block/" + disk + "/queue/";
    q.logical_block_size = read_int(base + "logical_block_size");
    q.max_sectors_kb = read_int(base + "max_sectors_kb");
    q.read_ahead_kb = read_int(base + "read_ahead_kb");
    q.rotational = read_int(base + "rotational");
    const std::string sched = read_first_line(base + "scheduler");
    const auto lb = sched.find('['), rb = sched.find(']');
    q.scheduler = lb != std::string::npos && rb != std::string::npos && rb > lb ? sched.substr(lb + 1, rb - lb - 1) : sched;
    return q;
}

std::vector<BlockDeviceTopo> discover_block_devices(const Topology& topology) {
    std::vector<BlockDeviceTopo> out;
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator("/sys/block", ec)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    std::vector<std::pair<std::string, int>> gpu_paths; // resolved sysfs path, NUMA node
    for (const GpuTopo& g : topology.gpus) {
        const std::string p = resolve("/sys/bus/pci/devices/" + g.pci_bus_id);
        gpu_paths.emplace_back(p, p.empty() ? -1 : read_int(p + "/numa_node"));
    }
    for (const std::string& name : names) {
        if (name.rfind("loop", 0) == 0 || name.rfind("ram", 0) == 0 || name.rfind("zram", 0) == 0) continue;
        BlockDeviceTopo d;
        d.name = name;
        d.sysfs_path = resolve("/sys/block/" + name);
        if (d.sysfs_path.find("/virtual/") != std::string::npos) continue; // dm, md: no device of their own
        d.kind = classify_kind(name, d.sysfs_path);
        const PciChain chain = pci_chain(d.sysfs_path);
        if (!chain.functions.empty()) {
            d.pci_bus_id = chain.functions.back();
            d.numa_node = read_int("/sys/bus/pci/devices/" + d.pci_bus_id + "/numa_node");
        }
        const std::string sectors = read_first_line("/sys/block/" + name + "/size");
        if (!sectors.empty()) d.size = std::strtoull(sectors.c_str(), nullptr, 10) * 512;
        d.queue = read_block_queue(name);
        for (const auto& [gp, gnuma] : gpu_paths)
            d.gpu_paths.push_back(gp.empty() || d.pci_bus_id.empty()
                                      ? std::string("?")
                                      : to_string(classify_sysfs_pci_path(d.sysfs_path, gp, d.numa_node, gnuma)));
        out.push_back(std::move(d));
    }
    return out;
}

nlohmann::json block_devices_json(const std::vector<BlockDeviceTopo>& devices) {
    nlohmann::json out = nlohmann::json::array();
    for (const BlockDeviceTopo& d : devices)
        out.push_back({{"name", d.name},
                       {"kind", d.kind},
                       {"pci_bus_id", d.pci_bus_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.pci_bus_id)},
                       {"numa_node", d.numa_node >= 0 ? nlohmann::json(d.numa_node) : nlohmann::json(nullptr)},
                       {"size", d.size},
                       {"queue",
                        {{"logical_block_size", d.queue.logical_block_size},
                         {"max_sectors_kb", d.queue.max_sectors_kb},
                         {"read_ahead_kb", d.queue.read_ahead_kb},
                         {"rotational", d.queue.rotational},
                         {"scheduler", d.queue.scheduler}}},
                       {"gpu_paths", d.gpu_paths}});
    return out;
}

std::string fs_type_name(std::uint64_t magic) {
    switch (magic) {
    case EXT4_SUPER_MAGIC: return "ext4"; // also ext2/ext3: one magic number
    case 0x58465342: return "xfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    case TMPFS_MAGIC: return "tmpfs";
    case RAMFS_MAGIC: return "ramfs";
    case OVERLAYFS_SUPER_MAGIC: return "overlay";
    case NFS_SUPER_MAGIC: return "nfs";
    case 0x2fc12fc1: return "zfs";
    case 0x65735546: return "fuse";
    case 0xf2f52010: return "f2fs";
    default: return fmt::format("0x{:x}", magic);
    }
}

StorageDirFacts storage_dir_facts(const std::string& dir, bool probe) {
    StorageDirFacts f;
    f.dir = dir;
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return f;
    f.exists = true;
    f.is_directory = S_ISDIR(st.st_mode);
    if (!f.is_directory) return f;
    f.writable = ::access(dir.c_str(), W_OK | X_OK) == 0;
    struct statfs sf {};
    if (::statfs(dir.c_str(), &sf) == 0) {
        f.fs_type = fs_type_name(static_cast<std::uint64_t>(sf.f_type));
        f.memory_backed = sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC;
    }
    struct statvfs sv {};
    if (::statvfs(dir.c_str(), &sv) == 0) f.free_bytes = static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize;
    device_of(st.st_dev, f.device, f.partition);
    if (!f.device.empty()) {
        f.device_number = read_first_line("/sys/block/" + f.device + "/dev");
        f.queue = read_block_queue(f.device);
        const PciChain chain = pci_chain(resolve("/sys/block/" + f.device));
        if (!chain.functions.empty()) {
            f.device_pci_bus_id = chain.functions.back();
            f.device_numa_node = read_int("/sys/bus/pci/devices/" + f.device_pci_bus_id + "/numa_node");
        }
    }
#ifdef STATX_DIOALIGN
    struct statx sx {};
    if (::statx(AT_FDCWD, dir.c_str(), 0, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        f.dio_mem_align = sx.stx_dio_mem_align;
        f.dio_offset_align = sx.stx_dio_offset_align;
    }
#endif
    if (probe && f.writable) {
        const std::string path = fmt::format("{}/.ib-storage-probe-{}.tmp", dir, ::getpid());
        const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
        if (fd >= 0) {
            f.odirect = true;
            ::close(fd);
            ::unlink(path.c_str());
        } else {
            const int err = errno;
            f.odirect = false;
            f.odirect_note = fmt::format("open with O_DIRECT failed: {}", std::strerror(err));
            ::unlink(path.c_str());
        }
        if (*f.odirect && f.dio_offset_align == 0 && f.queue.logical_block_size > 0) {
            // Kernels before 6.1 have no STATX_DIOALIGN: the logical block size is the
            // alignment that block file systems require.
            f.dio_mem_align = f.dio_offset_align = static_cast<std::uint32_t>(f.queue.logical_block_size);
        }
    }
    return f;
}

std::string cufile_config_source(bool* from_env) {
    const char* env = std::getenv("CUFILE_ENV_PATH_JSON");
    // The tool's private copy: its settings are those of the file it was copied from.
    if (env && own_environment("CUFILE_ENV_PATH_JSON")) env = std::getenv(k_cufile_user_config_env);
    const bool chosen = env && *env;
    if (from_env) *from_env = chosen;
    return chosen ? std::string(env) : std::string("/etc/cufile.json");
}

CufileHostFacts cufile_host_facts() {
    CufileHostFacts f;
    std::error_code ec;
    f.nvidia_fs = fs::exists("/proc/driver/nvidia-fs", ec);
    if (f.nvidia_fs) f.nvidia_fs_version = read_first_line("/proc/driver/nvidia-fs/version");
    f.config_path = cufile_config_source(&f.config_from_env);
    std::ifstream in(f.config_path);
    if (!in) return f;
    f.config_found = true;
    std::stringstream ss;
    ss << in.rdbuf();
    // cufile.json carries // comments.
    const nlohmann::json j = parse_json(ss.str(), false, true);
    if (j.is_discarded() || !j.is_object()) {
        f.config_error = "not valid JSON";
        return f;
    }
    if (j.contains("properties") && j["properties"].is_object()) {
        const auto& p = j["properties"];
        auto flag = [&](const char* key, std::optional<bool>& into) {
            if (p.contains(key) && p[key].is_boolean()) into = p[key].get<bool>();
        };
        flag("allow_compat_mode", f.allow_compat_mode);
        flag("force_compat_mode", f.force_compat_mode);
        flag("use_pci_p2pdma", f.use_pci_p2pdma);
    }
    return f;
}

nlohmann::json cufile_host_facts_json(const CufileHostFacts& f) {
    auto opt = [](const std::optional<bool>& b) { return b ? nlohmann::json(*b) : nlohmann::json(nullptr); };
    return {{"nvidia_fs", f.nvidia_fs},
            {"nvidia_fs_version", f.nvidia_fs_version},
            {"config_path", f.config_path},
            {"config_from_env", f.config_from_env},
            {"config_found", f.config_found},
            {"config_error", f.config_error},
            {"allow_compat_mode", opt(f.allow_compat_mode)},
            {"force_compat_mode", opt(f.force_compat_mode)},
            {"use_pci_p2pdma", opt(f.use_pci_p2pdma)}};
}

std::string default_storage_dir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp && *tmp ? tmp : "/tmp";
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    return base + "/interopbench-storage-" + std::to_string(::geteuid());
}

} // namespace interopbench
