// Doctor checks: pure functions over DoctorFacts, and the host side of gathering them.
#include "topology/doctor.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "interopbench/text.hpp"
#include "topology/nvml.hpp"

extern char** environ;

namespace interopbench {
namespace {

CheckResult result(std::string id, std::string subject, CheckStatus status, std::string evidence,
                   std::string fix = {}) {
    return {std::move(id), std::move(subject), status, std::move(evidence), std::move(fix)};
}

// Why there is no GPU, in a few words: CUDA's note up to its details ("no GPU: no NVIDIA driver").
std::string no_gpu_text(const DoctorFacts& f) {
    const std::string note = f.cuda_note.substr(0, f.cuda_note.find(':'));
    if (note.empty())
        return "no GPU";
    return note.find("GPU") != std::string::npos ? note : "no GPU: " + note;
}

// Per-GPU checks say once that there is nothing to check, and why.
bool no_gpu(const DoctorFacts& f, const char* id, std::vector<CheckResult>& out) {
    if (!f.gpus.empty())
        return false;
    out.push_back(result(id, "", CheckStatus::skip, no_gpu_text(f)));
    return true;
}

std::string version_text(int v) { return fmt::format("{}.{}", v / 1000, v % 1000 / 10); }

std::string bytes_text(std::uint64_t b) { return format_value(static_cast<double>(b), "B"); }

bool truthy(const std::string& v) { return !v.empty() && v != "0"; }

std::string join(const std::vector<std::string>& items, const char* separator) {
    std::string s;
    for (const std::string& x : items) {
        if (!s.empty())
            s += separator;
        s += x;
    }
    return s;
}

std::string list_text(const std::vector<unsigned>& v) {
    std::vector<std::string> items;
    for (unsigned x : v)
        items.push_back(std::to_string(x));
    return join(items, ",");
}

// Each clock event reason bit: its id (reports) and its words (the doctor's evidence).
struct ClockReason {
    std::uint64_t bit;
    const char* id;
    const char* words;
};
constexpr ClockReason k_clock_reasons[] = {
    {k_clock_gpu_idle, "gpu_idle", "idle"},
    {k_clock_app_setting, "app_setting", "application clocks"},
    {k_clock_sw_power_cap, "sw_power_cap", "software power cap"},
    {k_clock_hw_slowdown, "hw_slowdown", "hardware slowdown"},
    {k_clock_sync_boost, "sync_boost", "sync boost"},
    {k_clock_sw_thermal, "sw_thermal", "software thermal"},
    {k_clock_hw_thermal, "hw_thermal", "hardware thermal"},
    {k_clock_hw_power_brake, "hw_power_brake", "hardware power brake"},
    {k_clock_display_setting, "display_setting", "display clocks"},
};

std::string clock_reason_names(std::uint64_t bits) {
    std::vector<std::string> names;
    for (const ClockReason& r : k_clock_reasons)
        if (bits & r.bit)
            names.emplace_back(r.words);
    return names.empty() ? "none" : join(names, ", ");
}

// NCCL_P2P_LEVEL: how far P2P may reach; LOC disables it. Numbers are NCCL's legacy forms.
std::optional<int> p2p_level_rank(const std::string& v) {
    static const std::pair<const char*, int> k_levels[] = {
        {"LOC", 0}, {"NVL", 1}, {"PIX", 2}, {"PXB", 3}, {"PHB", 4}, {"SYS", 5},
        {"0", 0},   {"1", 2},   {"2", 3},   {"3", 4},   {"4", 5},   {"5", 5}};
    for (auto [name, rank] : k_levels)
        if (v == name)
            return rank;
    return std::nullopt;
}

int path_rank(const DoctorPair& p) {
    if (p.nvlinks > 0)
        return 1;
    switch (p.pcie_class) {
    case PathClass::self: return 0;
    case PathClass::nvlink: return 1;
    case PathClass::pix: return 2;
    case PathClass::pxb: return 3;
    case PathClass::phb: return 4;
    case PathClass::node:
    case PathClass::sys:
    case PathClass::unknown: break;
    }
    return 5;
}

std::optional<std::string> env(const DoctorFacts& f, const char* name) {
    auto it = f.env.find(name);
    if (it == f.env.end())
        return std::nullopt;
    return it->second;
}

std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string s;
    std::getline(in, s);
    return s;
}

} // namespace

std::vector<std::string> clock_slowdown_ids(std::uint64_t bits) {
    std::vector<std::string> ids;
    for (const ClockReason& r : k_clock_reasons)
        if ((bits & r.bit) && r.bit != k_clock_gpu_idle && r.bit != k_clock_app_setting &&
            r.bit != k_clock_display_setting)
            ids.emplace_back(r.id);
    return ids;
}

std::vector<unsigned> process_cpus() {
    // Sized for machines far beyond CPU_SETSIZE.
    const int n = 16384;
    cpu_set_t* set = CPU_ALLOC(n);
    const std::size_t size = CPU_ALLOC_SIZE(n);
    std::vector<unsigned> out;
    if (set && sched_getaffinity(0, size, set) == 0)
        for (int c = 0; c < n; ++c)
            if (CPU_ISSET_S(c, size, set))
                out.push_back(static_cast<unsigned>(c));
    CPU_FREE(set);
    return out;
}

const char* to_string(CheckStatus s) {
    switch (s) {
    case CheckStatus::pass: return "PASS";
    case CheckStatus::warn: return "WARN";
    case CheckStatus::fail: return "FAIL";
    case CheckStatus::skip: return "SKIP";
    case CheckStatus::info: return "INFO";
    }
    return "?";
}

DoctorFacts host_doctor_facts(const Machine& machine, const Topology& topology) {
    DoctorFacts f;
    f.cuda_available = machine.cuda_available;
    f.cuda_note = machine.cuda_note;
    f.driver_version = machine.driver_version;
    f.runtime_version = machine.runtime_version;
    f.driver_release = !machine.driver_release.empty() ? machine.driver_release : nvml::driver_release();
    f.nvidia_pci_gpus = static_cast<int>(topology.nvidia_pci_gpus);
    f.nvml_available = nvml::available();
    f.nvml_init_error = nvml::init_error();
    f.nvml_note = nvml::note();
    f.has_nvswitch = topology.has_nvswitch;
    f.has_infiniband = topology.has_infiniband;

    for (std::size_t i = 0; i < topology.gpus.size(); ++i) {
        const GpuTopo& t = topology.gpus[i];
        DoctorGpu g;
        g.label = t.label(i);
        g.ordinal = t.cuda_ordinal;
        g.name = t.name;
        g.pci_bus_id = t.pci_bus_id;
        g.local_cpus = t.cpus;
        g.numa_nodes = t.numa_nodes;
        g.pcie_gen_max = t.pcie.gen_max;
        g.pcie_width_max = t.pcie.width_max;
        g.pcie_gen_idle = t.pcie.gen_current;
        g.pcie_width_idle = t.pcie.width_current;
        g.nvlink_known = t.nvlink_known;
        for (const NvLink& l : t.nvlinks)
            (l.active ? g.nvlinks_up : g.nvlinks_down).push_back(l.link);
        if (auto h = nvml::health(t.pci_bus_id)) {
            g.persistence = h->persistence;
            g.clock_reasons = h->clock_reasons;
            g.ecc_enabled = h->ecc_enabled;
            g.ecc_uncorrected_volatile = h->ecc_uncorrected_volatile;
            g.ecc_uncorrected_aggregate = h->ecc_uncorrected_aggregate;
            g.retired_pages = h->retired_pages;
            g.retired_pending = h->retired_pending;
            g.remapped_uncorrectable = h->remapped_uncorrectable;
            g.remap_pending = h->remap_pending;
            g.remap_failure = h->remap_failure;
            g.compute_mode = h->compute_mode;
            if (h->compute_pids) {
                std::vector<unsigned> others;
                for (unsigned pid : *h->compute_pids)
                    if (pid != static_cast<unsigned>(getpid()))
                        others.push_back(pid);
                g.other_pids = others;
            }
        }
        const std::string group = "/sys/bus/pci/devices/" + t.pci_bus_id + "/iommu_group/type";
        if (std::string type = read_line(group); !type.empty())
            g.iommu_type = type;
        f.gpus.push_back(g);
    }
    for (const PairTopo& p : topology.pairs) {
        DoctorPair d;
        d.from = topology.gpus[p.from].label(p.from);
        d.to = topology.gpus[p.to].label(p.to);
        d.path = p.label();
        d.pcie_class = p.pcie_class;
        d.nvlinks = p.nvlinks;
        if (p.has_cuda)
            d.can_access_peer = p.cuda.can_access_peer;
        f.pairs.push_back(d);
    }

    f.process_cpus = process_cpus();
    rlimit lim{};
    if (getrlimit(RLIMIT_MEMLOCK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
        f.memlock = static_cast<std::uint64_t>(lim.rlim_cur);
    {
        const std::string dir = default_storage_dir();
        StorageDirFacts s = storage_dir_facts(dir, true);
        if (!s.exists) s = storage_dir_facts(dir.substr(0, dir.rfind('/')), true); // TMPDIR itself
        f.storage_dir = s;
    }
    f.cufile = cufile_host_facts();
    f.block_devices = topology.block_devices;
    for (std::size_t i = 0; i < topology.gpus.size(); ++i) f.gpu_labels.push_back(topology.gpus[i].label(i));
    f.rdma = rdma_facts(topology);
    for (char** e = environ; e && *e; ++e) {
        const std::string kv = *e;
        const std::size_t eq = kv.find('=');
        if (eq != std::string::npos && (kv.rfind("NCCL_", 0) == 0 || kv.rfind("CUDA_", 0) == 0))
            f.env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return f;
}

std::vector<CheckResult> check_gpu_present(const DoctorFacts& f) {
    const char* id = "gpu_present";
    if (!f.cuda_available) {
        const std::string why = f.cuda_note.empty() ? "no CUDA device" : f.cuda_note;
        if (f.nvidia_pci_gpus > 0)
            return {result(id, "", CheckStatus::fail,
                           fmt::format("CUDA unusable ({}) although {} NVIDIA GPU(s) sit on the PCI bus", why,
                                       f.nvidia_pci_gpus),
                           "check the driver: `nvidia-smi` must list the GPUs (kernel module loaded, "
                           "driver and library versions matching, device nodes present)")};
        // Nothing on the bus either: a machine without a GPU (a build or CI machine), where the
        // host checks still mean something and the command must not fail for it.
        if (!f.require_gpu)
            return {result(id, "", CheckStatus::skip, fmt::format("no GPU: {}", why),
                           "where a GPU is expected, give --require-gpu to make this a FAIL")};
        return {result(id, "", CheckStatus::fail, fmt::format("no GPU: {}", why),
                       "run on a machine with an NVIDIA GPU and driver (containers: --gpus all)")};
    }
    const auto visible = std::count_if(f.gpus.begin(), f.gpus.end(), [](const DoctorGpu& g) { return g.ordinal >= 0; });
    if (f.nvidia_pci_gpus > visible && !env(f, "CUDA_VISIBLE_DEVICES"))
        return {result(id, "", CheckStatus::warn,
                       fmt::format("CUDA sees {} GPU(s), the PCI bus has {}", visible, f.nvidia_pci_gpus),
                       "a GPU may have failed or fallen off the bus: check `nvidia-smi` and the kernel log "
                       "for Xid errors (expected where a container runtime assigns GPUs)")};
    std::vector<std::string> names;
    for (const DoctorGpu& g : f.gpus)
        if (g.ordinal >= 0)
            names.push_back(g.name);
    return {result(id, "", CheckStatus::pass, fmt::format("CUDA sees {} GPU(s): {}", visible, join(names, ", ")))};
}

std::vector<CheckResult> check_driver(const DoctorFacts& f) {
    const char* id = "driver";
    if (f.driver_version <= 0)
        return {result(id, "", CheckStatus::skip, "CUDA driver version unknown (no driver)")};
    const std::string evidence =
        fmt::format("driver supports CUDA {}{}, this tool's runtime is CUDA {}", version_text(f.driver_version),
                    f.driver_release.empty() ? "" : " (release " + f.driver_release + ")",
                    version_text(f.runtime_version));
    const std::string fix = fmt::format("install an NVIDIA driver that supports CUDA {} or newer",
                                        version_text(f.runtime_version));
    if (f.driver_version / 1000 < f.runtime_version / 1000)
        return {result(id, "", CheckStatus::fail, evidence, fix)};
    if (f.driver_version < f.runtime_version)
        return {result(id, "", CheckStatus::warn,
                       evidence + ": runs under minor-version compatibility, without PTX JIT of newer code", fix)};
    return {result(id, "", CheckStatus::pass, evidence)};
}

std::vector<CheckResult> check_nvml(const DoctorFacts& f) {
    const char* id = "nvml";
    if (f.nvml_available)
        return {result(id, "", CheckStatus::pass,
                       fmt::format("NVML loaded{}", f.driver_release.empty() ? "" : ", driver " + f.driver_release))};
    constexpr int k_lib_rm_version_mismatch = 18;
    if (f.nvml_init_error == k_lib_rm_version_mismatch)
        return {result(id, "", CheckStatus::fail, f.nvml_note + " (driver and library versions differ)",
                       "reboot, or reload the nvidia kernel module after the driver update")};
    if (!f.cuda_available && f.nvidia_pci_gpus == 0)
        return {result(id, "", CheckStatus::skip, "no GPU: " + f.nvml_note)};
    return {result(id, "", CheckStatus::warn,
                   f.nvml_note + ": PCIe, NVLink, clock, ECC and persistence checks are skipped",
                   "install the NVIDIA driver's NVML library (libnvidia-ml.so.1)")};
}

std::vector<CheckResult> check_pcie_link(const DoctorFacts& f) {
    const char* id = "pcie_link";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    for (const DoctorGpu& g : f.gpus) {
        if (g.pcie_gen_max <= 0 || g.pcie_width_max <= 0) {
            out.push_back(result(id, g.label, CheckStatus::skip, "maximum PCIe link unknown (no NVML)"));
        } else if (!g.pcie_gen_loaded || !g.pcie_width_loaded) {
            out.push_back(result(id, g.label, CheckStatus::skip,
                                 fmt::format("not measured under load ({}); idle Gen{} x{} says little: idle "
                                             "links train down",
                                             g.pcie_note.empty() ? "no copy ran" : g.pcie_note, g.pcie_gen_idle,
                                             g.pcie_width_idle)));
        } else if (*g.pcie_gen_loaded < g.pcie_gen_max || *g.pcie_width_loaded < g.pcie_width_max) {
            out.push_back(result(id, g.label, CheckStatus::fail,
                                 fmt::format("under load Gen{} x{}, below its maximum Gen{} x{}", *g.pcie_gen_loaded,
                                             *g.pcie_width_loaded, g.pcie_gen_max, g.pcie_width_max),
                                 "reseat the GPU or move it to a slot wired for the full width and generation; "
                                 "check risers, cables and the BIOS PCIe speed setting"));
        } else {
            out.push_back(result(id, g.label, CheckStatus::pass,
                                 fmt::format("Gen{} x{} under load, its maximum", *g.pcie_gen_loaded,
                                             *g.pcie_width_loaded)));
        }
    }
    return out;
}

std::vector<CheckResult> check_peer_access(const DoctorFacts& f) {
    const char* id = "peer_access";
    if (f.gpus.size() < 2)
        return {result(id, "", CheckStatus::skip, f.gpus.empty() ? no_gpu_text(f) : "fewer than two GPUs")};
    std::vector<CheckResult> out;
    for (const DoctorPair& p : f.pairs) {
        const std::string subject = p.from + ">" + p.to;
        if (!p.can_access_peer) {
            out.push_back(result(id, subject, CheckStatus::skip, "CUDA peer facts unknown"));
        } else if (*p.can_access_peer) {
            out.push_back(result(id, subject, CheckStatus::pass, "peer access over " + p.path));
        } else if (p.nvlinks > 0) {
            out.push_back(result(id, subject, CheckStatus::fail,
                                 fmt::format("no peer access although {} connects them", p.path),
                                 "check `nvidia-smi topo -p2p r`; NVSwitch systems need nvidia-fabricmanager "
                                 "running; virtual machines need P2P exposed by the hypervisor"));
        } else if (p.pcie_class == PathClass::pix || p.pcie_class == PathClass::pxb) {
            out.push_back(result(id, subject, CheckStatus::warn,
                                 fmt::format("no peer access although only PCIe switches ({}) lie between them",
                                             p.path),
                                 "ACS on the switch ports or the IOMMU may block P2P: disable ACS for those "
                                 "ports or boot with iommu=pt"));
        } else {
            out.push_back(result(id, subject, CheckStatus::pass,
                                 fmt::format("no peer access across {}: expected, copies go through host memory",
                                             p.path)));
        }
    }
    return out;
}

std::vector<CheckResult> check_nvlink(const DoctorFacts& f) {
    const char* id = "nvlink";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    std::size_t best = 0;
    for (const DoctorGpu& g : f.gpus)
        best = std::max(best, g.nvlinks_up.size());
    for (const DoctorGpu& g : f.gpus) {
        const std::size_t up = g.nvlinks_up.size(), total = up + g.nvlinks_down.size();
        if (!g.nvlink_known)
            out.push_back(result(id, g.label, CheckStatus::skip, "NVLink state unknown (no NVML)"));
        else if (total == 0)
            out.push_back(result(id, g.label, CheckStatus::pass, "no NVLink on this GPU"));
        else if (up == 0)
            out.push_back(result(id, g.label, CheckStatus::warn, fmt::format("all {} NVLinks inactive", total),
                                 "no NVLink bridge, or the links did not train: check `nvidia-smi nvlink -s`"));
        else if (!g.nvlinks_down.empty())
            out.push_back(result(id, g.label, CheckStatus::fail,
                                 fmt::format("NVLink(s) {} down: {} of {} up", list_text(g.nvlinks_down), up, total),
                                 "check `nvidia-smi nvlink -s` and `-e` for errors; reset the GPU or reseat it; "
                                 "on NVSwitch systems check the fabric manager"));
        else if (up < best)
            out.push_back(result(id, g.label, CheckStatus::warn,
                                 fmt::format("{} NVLinks up, another GPU has {}", up, best),
                                 "compare `nvidia-smi nvlink -s` across GPUs; a link may be missing"));
        else
            out.push_back(result(id, g.label, CheckStatus::pass, fmt::format("{} of {} NVLinks up", up, total)));
    }
    for (const DoctorPair& p : f.pairs) {
        auto back = std::find_if(f.pairs.begin(), f.pairs.end(),
                                 [&](const DoctorPair& q) { return q.from == p.to && q.to == p.from; });
        if (p.from < p.to && back != f.pairs.end() && back->nvlinks != p.nvlinks)
            out.push_back(result(id, p.from + "-" + p.to, CheckStatus::fail,
                                 fmt::format("{} counts {} NVLinks to {}, {} counts {} back", p.from, p.nvlinks,
                                             p.to, p.to, back->nvlinks),
                                 "a link is half up: check `nvidia-smi nvlink -s` on both GPUs and reset them"));
    }
    return out;
}

std::vector<CheckResult> check_cpu_affinity(const DoctorFacts& f) {
    const char* id = "cpu_affinity";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    for (const DoctorGpu& g : f.gpus) {
        if (g.local_cpus.empty() || f.process_cpus.empty()) {
            out.push_back(result(id, g.label, CheckStatus::skip, "GPU locality or process affinity unknown"));
            continue;
        }
        std::vector<unsigned> common;
        std::set_intersection(g.local_cpus.begin(), g.local_cpus.end(), f.process_cpus.begin(),
                              f.process_cpus.end(), std::back_inserter(common));
        const std::string numa = format_cpu_list(g.numa_nodes);
        if (common.empty())
            out.push_back(result(id, g.label, CheckStatus::warn,
                                 fmt::format("this process may run on CPUs {} only; none of the GPU's local CPUs {} "
                                             "(NUMA {})",
                                             format_cpu_list(f.process_cpus), format_cpu_list(g.local_cpus), numa),
                                 fmt::format("run with `numactl --cpunodebind={0} --membind={0}` or widen the "
                                             "cpuset; host copies now cross the socket link",
                                             numa)));
        else
            out.push_back(result(id, g.label, CheckStatus::pass,
                                 fmt::format("{} of its {} local CPUs (NUMA {}) allowed", common.size(),
                                             g.local_cpus.size(), numa)));
    }
    return out;
}

std::vector<CheckResult> check_memlock(const DoctorFacts& f) {
    const char* id = "memlock";
    if (!f.memlock)
        return {result(id, "", CheckStatus::pass, "memlock limit unlimited")};
    if (*f.memlock < k_memlock_min)
        return {result(id, "", CheckStatus::warn,
                       fmt::format("memlock limit {} (RLIMIT_MEMLOCK): locking or RDMA-registering pinned "
                                   "buffers (NCCL over InfiniBand, GPUDirect) fails beyond it",
                                   bytes_text(*f.memlock)),
                       "raise it: `ulimit -l unlimited`, LimitMEMLOCK=infinity (systemd), "
                       "--ulimit memlock=-1 (docker)")};
    return {result(id, "", CheckStatus::pass, fmt::format("memlock limit {}", bytes_text(*f.memlock)))};
}

std::vector<CheckResult> check_mempool(const DoctorFacts& f) {
    const char* id = "mempool";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    for (const DoctorGpu& g : f.gpus) {
        if (!g.mempool_release_threshold)
            out.push_back(result(id, g.label, CheckStatus::skip, "default memory pool not read (unsupported or no CUDA)"));
        else if (*g.mempool_release_threshold == 0)
            // CUDA's default on every machine: advice for applications, not a fault of this one.
            out.push_back(result(id, g.label, CheckStatus::info,
                                 "default pool release threshold 0 B (CUDA's default): freed pool memory goes "
                                 "back to the driver at every synchronization, so cudaMallocAsync then costs "
                                 "like cudaMalloc",
                                 "in applications set cudaMemPoolAttrReleaseThreshold on the pool "
                                 "(cudaMemPoolSetAttribute) to the memory it may keep, UINT64_MAX for all"));
        else
            out.push_back(result(id, g.label, CheckStatus::pass,
                                 fmt::format("default pool keeps up to {}", bytes_text(*g.mempool_release_threshold))));
    }
    return out;
}

std::vector<CheckResult> check_registered_cache(const DoctorFacts& f) {
    const char* id = "registered_cache";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    const bool memlock_low = f.memlock && *f.memlock < k_memlock_min && ::geteuid() != 0;
    for (const DoctorGpu& g : f.gpus) {
        if (!g.register_read_only)
            out.push_back(result(id, g.label, CheckStatus::skip, "read-only host registration not read (no CUDA)"));
        else if (!*g.register_read_only)
            out.push_back(result(id, g.label, CheckStatus::info,
                                 "cannot register read-only host memory (cudaDevAttrHostRegisterReadOnlySupported 0): "
                                 "cached files reach this GPU only through a host copy",
                                 "a newer driver may allow it; loaders keep bounce buffers here"));
        else if (memlock_low)
            out.push_back(result(id, g.label, CheckStatus::warn,
                                 fmt::format("a cached file can be registered read-only and copied straight from the page "
                                             "cache, but registering pins it and the memlock limit is {}",
                                             bytes_text(*f.memlock)),
                                 "raise it (`ulimit -l unlimited`) to register datasets larger than that"));
        else
            out.push_back(result(id, g.label, CheckStatus::pass,
                                 "a cached file mapping can be registered read-only: the copy engine reads the page cache "
                                 "straight to this GPU (storage_to_gpu mmap_resident, pipeline +registered_cache)"));
    }
    return out;
}

std::vector<CheckResult> check_persistence(const DoctorFacts& f) {
    const char* id = "persistence";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    for (const DoctorGpu& g : f.gpus) {
        if (!g.persistence)
            out.push_back(result(id, g.label, CheckStatus::skip, "persistence mode unknown (no NVML)"));
        else if (!*g.persistence)
            out.push_back(result(id, g.label, CheckStatus::warn,
                                 "persistence mode off: the driver tears the GPU down when its last client exits, "
                                 "and the next start pays the initialization",
                                 "enable nvidia-persistenced (or `nvidia-smi -pm 1` as root)"));
        else
            out.push_back(result(id, g.label, CheckStatus::pass, "persistence mode on"));
    }
    return out;
}

std::vector<CheckResult> check_clocks(const DoctorFacts& f) {
    const char* id = "clocks";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    constexpr std::uint64_t k_hard = k_clock_hw_slowdown | k_clock_hw_thermal | k_clock_hw_power_brake;
    constexpr std::uint64_t k_soft = k_clock_sw_thermal | k_clock_sw_power_cap;
    for (const DoctorGpu& g : f.gpus) {
        if (!g.clock_reasons) {
            out.push_back(result(id, g.label, CheckStatus::skip, "clock reasons unknown (no NVML)"));
            continue;
        }
        const std::string when = g.clock_reasons_loaded ? "under load" : "idle";
        const std::uint64_t bits = *g.clock_reasons;
        if (bits & k_hard)
            out.push_back(result(id, g.label, CheckStatus::fail,
                                 fmt::format("clocks held down {}: {}", when, clock_reason_names(bits)),
                                 "check cooling, power delivery and `nvidia-smi -q -d PERFORMANCE`"));
        else if (bits & k_soft)
            out.push_back(result(id, g.label, CheckStatus::warn,
                                 fmt::format("clocks capped {}: {}", when, clock_reason_names(bits)),
                                 "check `nvidia-smi -q -d POWER,TEMPERATURE` (power limit, airflow)"));
        else
            out.push_back(result(id, g.label, CheckStatus::pass,
                                 fmt::format("no throttling {} (reasons: {})", when, clock_reason_names(bits))));
    }
    return out;
}

std::vector<CheckResult> check_ecc(const DoctorFacts& f) {
    const char* id = "ecc";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    for (const DoctorGpu& g : f.gpus) {
        if (!g.ecc_enabled && !g.ecc_uncorrected_volatile && !g.ecc_uncorrected_aggregate && !g.retired_pages &&
            !g.retired_pending && !g.remapped_uncorrectable && !g.remap_pending && !g.remap_failure) {
            out.push_back(result(id, g.label, CheckStatus::skip, "ECC state unknown (no NVML, or not supported)"));
            continue;
        }
        std::vector<std::string> fail, warn;
        if (g.ecc_uncorrected_volatile.value_or(0) > 0)
            fail.push_back(fmt::format("{} uncorrected ECC errors since the driver loaded", *g.ecc_uncorrected_volatile));
        if (g.retired_pending.value_or(false))
            fail.push_back("page retirement pending");
        if (g.remap_pending.value_or(false))
            fail.push_back("row remapping pending");
        if (g.remap_failure.value_or(false))
            fail.push_back("row remapping failed");
        if (g.ecc_enabled && !*g.ecc_enabled)
            warn.push_back("ECC off");
        if (g.ecc_uncorrected_aggregate.value_or(0) > 0)
            warn.push_back(fmt::format("{} uncorrected ECC errors in its lifetime", *g.ecc_uncorrected_aggregate));
        if (g.retired_pages.value_or(0) > 0)
            warn.push_back(fmt::format("{} retired pages", *g.retired_pages));
        if (g.remapped_uncorrectable.value_or(0) > 0)
            warn.push_back(fmt::format("{} rows remapped after uncorrectable errors", *g.remapped_uncorrectable));
        if (!fail.empty()) {
            fail.insert(fail.end(), warn.begin(), warn.end());
            out.push_back(result(id, g.label, CheckStatus::fail, join(fail, "; "),
                                 "drain the GPU and reset it (`nvidia-smi -r`) so pending retirement or remapping "
                                 "takes effect; replace it if errors continue"));
        } else if (!warn.empty()) {
            out.push_back(result(id, g.label, CheckStatus::warn, join(warn, "; "),
                                 "watch `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`; enable ECC with "
                                 "`nvidia-smi -e 1` where it is off"));
        } else {
            out.push_back(result(id, g.label, CheckStatus::pass, "no uncorrected errors, nothing retired or pending"));
        }
    }
    return out;
}

std::vector<CheckResult> check_compute_mode(const DoctorFacts& f) {
    const char* id = "compute_mode";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    constexpr int k_prohibited = 2, k_exclusive_process = 3;
    for (const DoctorGpu& g : f.gpus) {
        if (!g.compute_mode)
            out.push_back(result(id, g.label, CheckStatus::skip, "compute mode unknown (no NVML)"));
        else if (*g.compute_mode == k_prohibited)
            out.push_back(result(id, g.label, CheckStatus::fail, "compute mode Prohibited: no process may use the GPU",
                                 "`nvidia-smi -c DEFAULT` (root)"));
        else if (*g.compute_mode == k_exclusive_process)
            out.push_back(result(id, g.label, CheckStatus::warn,
                                 "compute mode Exclusive_Process: one process at a time; a second one fails",
                                 "`nvidia-smi -c DEFAULT` (root) where GPUs are shared by several processes"));
        else
            out.push_back(result(id, g.label, CheckStatus::pass, "compute mode Default"));
    }
    return out;
}

std::vector<CheckResult> check_other_processes(const DoctorFacts& f) {
    const char* id = "other_processes";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    for (const DoctorGpu& g : f.gpus) {
        if (!g.other_pids)
            out.push_back(result(id, g.label, CheckStatus::skip, "process list unknown (no NVML)"));
        else if (!g.other_pids->empty())
            out.push_back(result(id, g.label, CheckStatus::warn,
                                 fmt::format("{} other process(es) hold a context: pid {}", g.other_pids->size(),
                                             list_text(*g.other_pids)),
                                 "measure on an idle GPU: a shared GPU gives lower and noisier figures "
                                 "(in containers the list may show this process under its host pid)"));
        else
            out.push_back(result(id, g.label, CheckStatus::pass, "no other process holds a context"));
    }
    return out;
}

std::vector<CheckResult> check_nccl_env(const DoctorFacts& f) {
    const char* id = "nccl_env";
    std::vector<CheckResult> out;
    const bool p2p_possible = std::any_of(f.pairs.begin(), f.pairs.end(), [](const DoctorPair& p) {
        return p.nvlinks > 0 || p.can_access_peer.value_or(false);
    });
    auto p2p_off = [&](const std::string& name, const std::string& value) {
        const std::string evidence = fmt::format("{}={} disables P2P: GPU-to-GPU traffic goes through host memory", name, value);
        const std::string fix = fmt::format("unset {}", name);
        out.push_back(p2p_possible
                          ? result(id, name, CheckStatus::fail, evidence + " although GPU pairs here can use P2P", fix)
                          : result(id, name, CheckStatus::warn, evidence + " (no P2P-capable pair here)", fix));
    };
    if (auto v = env(f, "NCCL_P2P_DISABLE"); v && truthy(*v))
        p2p_off("NCCL_P2P_DISABLE", *v);
    if (auto v = env(f, "NCCL_P2P_LEVEL")) {
        auto level = p2p_level_rank(*v);
        std::vector<std::string> beyond;
        for (const DoctorPair& p : f.pairs)
            if (level && path_rank(p) > *level && (p.nvlinks > 0 || p.can_access_peer.value_or(false)) && p.from < p.to)
                beyond.push_back(fmt::format("{}-{} ({})", p.from, p.to, p.path));
        if (!level)
            out.push_back(result(id, "NCCL_P2P_LEVEL", CheckStatus::warn,
                                 fmt::format("NCCL_P2P_LEVEL={} is not a level NCCL knows", *v),
                                 "use LOC, NVL, PIX, PXB, PHB or SYS, or unset it"));
        else if (*level == 0)
            p2p_off("NCCL_P2P_LEVEL", *v);
        else if (!beyond.empty())
            out.push_back(result(id, "NCCL_P2P_LEVEL", CheckStatus::warn,
                                 fmt::format("NCCL_P2P_LEVEL={} keeps P2P off for {}", *v, join(beyond, ", ")),
                                 "unset NCCL_P2P_LEVEL to let NCCL use P2P where it works"));
        else
            out.push_back(result(id, "NCCL_P2P_LEVEL", CheckStatus::pass,
                                 fmt::format("NCCL_P2P_LEVEL={} allows P2P on every P2P-capable pair here", *v)));
    }
    if (auto v = env(f, "NCCL_SHM_DISABLE"); v && truthy(*v))
        out.push_back(result(id, "NCCL_SHM_DISABLE", CheckStatus::warn,
                             "shared-memory transport disabled: GPU pairs without P2P fall back to the network "
                             "transport",
                             "unset NCCL_SHM_DISABLE"));
    if (auto v = env(f, "NCCL_NVLS_ENABLE"); v && *v == "0") {
        if (f.has_nvswitch)
            out.push_back(result(id, "NCCL_NVLS_ENABLE", CheckStatus::warn,
                                 "NVLink SHARP (in-switch reduction) off: intended on shared machines, where NVLink "
                                 "multicast can take GPUs out of service; all_reduce then runs without it",
                                 "keep it off on shared machines; enable it only on a dedicated one"));
        else
            out.push_back(result(id, "NCCL_NVLS_ENABLE", CheckStatus::pass,
                                 "NVLink SHARP off (intended on shared machines); no NVSwitch here, nothing is lost"));
    }
    if (auto v = env(f, "NCCL_IB_DISABLE"); v && truthy(*v))
        out.push_back(f.has_infiniband
                          ? result(id, "NCCL_IB_DISABLE", CheckStatus::warn,
                                   "InfiniBand transport disabled although an InfiniBand/RoCE device is present: "
                                   "inter-node traffic falls back to sockets",
                                   "unset NCCL_IB_DISABLE")
                          : result(id, "NCCL_IB_DISABLE", CheckStatus::pass,
                                   "InfiniBand transport disabled; no InfiniBand device here"));
    if (auto v = env(f, "NCCL_NET_GDR_LEVEL"); v && (*v == "LOC" || *v == "0") && f.has_infiniband)
        out.push_back(result(id, "NCCL_NET_GDR_LEVEL", CheckStatus::warn,
                             "GPUDirect RDMA disabled: network traffic is staged through host memory",
                             "unset NCCL_NET_GDR_LEVEL"));
    for (const char* name : {"NCCL_ALGO", "NCCL_PROTO", "NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS"})
        if (auto v = env(f, name))
            out.push_back(result(id, name, CheckStatus::warn,
                                 fmt::format("{}={} overrides NCCL's tuning: figures show the forced choice", name, *v),
                                 fmt::format("unset {} unless measuring that choice on purpose", name)));
    if (out.empty())
        out.push_back(result(id, "", CheckStatus::pass, "no NCCL_* variable disables a transport or forces a choice"));
    return out;
}

std::vector<CheckResult> check_cuda_env(const DoctorFacts& f) {
    const char* id = "cuda_env";
    std::vector<CheckResult> out;
    if (auto v = env(f, "CUDA_LAUNCH_BLOCKING"); v && truthy(*v))
        out.push_back(result(id, "CUDA_LAUNCH_BLOCKING", CheckStatus::warn,
                             "every launch waits for completion: no overlap, distorted timings",
                             "unset CUDA_LAUNCH_BLOCKING"));
    if (auto v = env(f, "CUDA_DEVICE_MAX_CONNECTIONS"); v && *v == "1")
        out.push_back(result(id, "CUDA_DEVICE_MAX_CONNECTIONS", CheckStatus::warn,
                             "one hardware queue per GPU: concurrent streams serialize (bidirectional copies suffer)",
                             "unset CUDA_DEVICE_MAX_CONNECTIONS"));
    if (auto v = env(f, "CUDA_VISIBLE_DEVICES"))
        out.push_back(result(id, "CUDA_VISIBLE_DEVICES", CheckStatus::pass,
                             fmt::format("CUDA_VISIBLE_DEVICES={} selects the GPUs this process sees", *v)));
    if (out.empty())
        out.push_back(result(id, "", CheckStatus::pass, "no CUDA_* variable distorts measurements"));
    return out;
}

std::vector<CheckResult> check_iommu(const DoctorFacts& f) {
    const char* id = "iommu";
    std::vector<CheckResult> out;
    if (no_gpu(f, id, out))
        return out;
    for (const DoctorGpu& g : f.gpus) {
        if (!g.iommu_type)
            out.push_back(result(id, g.label, CheckStatus::pass, "no IOMMU translation for this GPU"));
        else if (g.iommu_type->rfind("DMA", 0) == 0)
            out.push_back(result(id, g.label, CheckStatus::warn,
                                 fmt::format("the IOMMU translates this GPU's DMA (group type {}): host copies pay "
                                             "translation misses and PCIe P2P may be blocked",
                                             *g.iommu_type),
                                 "boot with iommu=pt where device isolation is not needed"));
        else
            out.push_back(result(id, g.label, CheckStatus::pass, fmt::format("IOMMU group type {}", *g.iommu_type)));
    }
    return out;
}

std::vector<CheckResult> check_storage(const DoctorFacts& f) {
    std::vector<CheckResult> out;
    if (f.cufile) {
        const CufileHostFacts& c = *f.cufile;
        if (f.gpus.empty() && !c.nvidia_fs) // GPUDirect Storage needs a GPU: nothing to miss here
            out.push_back(result("cufile", "nvidia-fs", CheckStatus::skip,
                                 "GPUDirect Storage not checked (" + no_gpu_text(f) + ")", ""));
        else if (c.nvidia_fs)
            out.push_back(result("cufile", "nvidia-fs", CheckStatus::pass,
                                 fmt::format("nvidia-fs {} loaded: cuFile can move data directly (GDS)", c.nvidia_fs_version), ""));
        else
            out.push_back(result("cufile", "nvidia-fs", c.use_pci_p2pdma.value_or(false) ? CheckStatus::pass : CheckStatus::warn,
                                 c.use_pci_p2pdma.value_or(false)
                                     ? "no nvidia-fs; use_pci_p2pdma is set in " + c.config_path + " (P2PDMA)"
                                     : "no /proc/driver/nvidia-fs: cuFile can only run in compatibility mode (POSIX through host memory)",
                                 c.use_pci_p2pdma.value_or(false) ? "" : "install the nvidia-fs module (GPUDirect Storage) or enable PCIe P2PDMA for direct transfers"));
        if (!c.config_found)
            out.push_back(result("cufile", "cufile.json", CheckStatus::skip, c.config_path + " not found: cuFile's defaults apply", ""));
        else if (!c.config_error.empty())
            out.push_back(result("cufile", "cufile.json", CheckStatus::warn, c.config_path + ": " + c.config_error,
                                 "fix the file or point CUFILE_ENV_PATH_JSON at a valid one"));
        else if (c.force_compat_mode.value_or(false))
            out.push_back(result("cufile", "cufile.json", CheckStatus::warn, c.config_path + " sets force_compat_mode: GDS is never used",
                                 "set properties.force_compat_mode to false"));
        else
            out.push_back(result("cufile", "cufile.json", CheckStatus::pass,
                                 fmt::format("{}{}: allow_compat_mode {}", c.config_path, c.config_from_env ? " (CUFILE_ENV_PATH_JSON)" : "",
                                             c.allow_compat_mode ? (*c.allow_compat_mode ? "true" : "false") : "unset"),
                                 ""));
    }
    if (f.storage_dir && f.storage_dir->exists) {
        const StorageDirFacts& s = *f.storage_dir;
        const std::string subject = "storage " + s.dir;
        if (s.memory_backed)
            out.push_back(result("storage_dir", subject, CheckStatus::warn,
                                 fmt::format("{} is {}: memory, not a drive; cold reads cannot be measured", s.dir, s.fs_type),
                                 "run storage scenarios with --storage-dir on a disk file system"));
        else if (s.odirect && !*s.odirect)
            out.push_back(result("storage_dir", subject, CheckStatus::warn, fmt::format("{} ({}): {}", s.dir, s.fs_type, s.odirect_note),
                                 "use --storage-dir on a file system with O_DIRECT (ext4, xfs) for the direct-I/O paths"));
        else
            out.push_back(result("storage_dir", subject, CheckStatus::pass,
                                 fmt::format("{} on {}{}; O_DIRECT {}", s.fs_type, s.device.empty() ? "no block device" : s.device,
                                             s.dio_offset_align ? fmt::format(" (direct-I/O alignment {} B)", s.dio_offset_align) : "",
                                             s.odirect ? (*s.odirect ? "works" : "fails") : "not probed"),
                                 ""));
        if (!s.device.empty() && s.queue.read_ahead_kb >= 0) {
            if (s.queue.read_ahead_kb < 128)
                out.push_back(result("read_ahead", s.device, CheckStatus::warn,
                                     fmt::format("read_ahead_kb {} on {}: buffered sequential reads issue small I/Os", s.queue.read_ahead_kb, s.device),
                                     fmt::format("echo 4096 > /sys/block/{}/queue/read_ahead_kb", s.device)));
            else
                out.push_back(result("read_ahead", s.device, CheckStatus::pass, fmt::format("read_ahead_kb {}", s.queue.read_ahead_kb), ""));
        }
    }
    for (const BlockDeviceTopo& d : f.block_devices)
        for (std::size_t i = 0; i < d.gpu_paths.size() && i < f.gpu_labels.size(); ++i) {
            const std::string subject = d.name + ">" + f.gpu_labels[i];
            if (d.gpu_paths[i] == "SYS")
                out.push_back(result("storage_path", subject, CheckStatus::warn,
                                     fmt::format("{} and {} are on different NUMA nodes (SYS): reads cross the inter-socket link", d.name, f.gpu_labels[i]),
                                     "keep the GPU's data on a drive under the same socket (or bind the job to that socket)"));
            else
                out.push_back(result("storage_path", subject, d.gpu_paths[i] == "?" ? CheckStatus::skip : CheckStatus::pass,
                                     fmt::format("path class {}", d.gpu_paths[i]), ""));
        }
    return out;
}

namespace {

// Every RDMA check says once that there is no RDMA NIC, and how that was seen.
bool no_rdma(const DoctorFacts& f, const char* id, std::vector<CheckResult>& out) {
    if (!f.rdma.nics.empty())
        return false;
    out.push_back(result(id, "", CheckStatus::skip,
                         f.rdma.infiniband_class
                             ? "no RDMA device on the PCI bus (hwloc lists no OpenFabrics device there)"
                             : "no RDMA device (no /sys/class/infiniband)"));
    return true;
}

// Calls `each` for every RDMA NIC whose path to a GPU is known, in order; a NIC whose path is
// not known gets a skip, and with no RDMA NIC or no GPU the check gets the one skip that says so.
template <class Each>
void for_each_nic_near_gpu(const DoctorFacts& f, const char* id, std::vector<CheckResult>& out, Each each) {
    if (no_rdma(f, id, out) || no_gpu(f, id, out))
        return;
    for (const RdmaNic& n : f.rdma.nics) {
        if (n.nearest_gpu.empty())
            out.push_back(result(id, n.name, CheckStatus::skip, "path to the GPUs unknown (not in hwloc's PCI tree)"));
        else
            each(n);
    }
}

bool has_token(const std::string& text, const std::vector<std::string>& tokens) {
    std::istringstream in(text);
    std::string t;
    while (in >> t)
        if (std::find(tokens.begin(), tokens.end(), t) != tokens.end())
            return true;
    return false;
}

} // namespace

std::vector<CheckResult> check_rdma_peer_memory(const DoctorFacts& f) {
    const char* id = "rdma_peermem";
    std::vector<CheckResult> out;
    if (no_rdma(f, id, out) || no_gpu(f, id, out))
        return out;
    const RdmaFacts& r = f.rdma;
    if (r.nvidia_peermem)
        return {result(id, "", CheckStatus::pass,
                       "nvidia_peermem loaded (/sys/module/nvidia_peermem): NICs can register GPU memory")};
    const bool new_kernel = kernel_at_least(r.kernel_release, 5, 12);
    const bool kernel_dmabuf = r.dmabuf_sysfs || new_kernel;
    const std::string kernel =
        r.dmabuf_sysfs ? "the kernel has /sys/kernel/dmabuf"
        : r.kernel_release.empty() ? "kernel release unknown"
                                   : fmt::format("kernel {}{}", r.kernel_release,
                                                 new_kernel ? " (RDMA on dma-buf from 5.12)" : ", older than 5.12");
    if (r.nvidia_open_module && kernel_dmabuf)
        return {result(id, "", CheckStatus::pass,
                       fmt::format("no nvidia_peermem, but dma-buf: the NVIDIA open kernel module "
                                   "(/proc/driver/nvidia/version) exports GPU memory and {}",
                                   kernel))};
    const std::string driver = !r.nvidia_driver       ? "no NVIDIA driver in /proc/driver/nvidia"
                               : !r.nvidia_open_module ? "the NVIDIA kernel module is not the open one"
                                                       : kernel;
    return {result(id, "", CheckStatus::warn,
                   fmt::format("no nvidia_peermem (/sys/module/nvidia_peermem) and no dma-buf path ({}): NIC "
                               "transfers of GPU memory are staged through host memory",
                               driver),
                   "modprobe nvidia_peermem (and load it at boot), or use the NVIDIA open kernel module on a "
                   "kernel 5.12 or newer")};
}

std::vector<CheckResult> check_rdma_path(const DoctorFacts& f) {
    const char* id = "rdma_path";
    std::vector<CheckResult> out;
    for_each_nic_near_gpu(f, id, out, [&](const RdmaNic& n) {
        const std::string evidence = fmt::format("nearest GPU {} over {} ({})", n.nearest_gpu,
                                                 to_string(n.nearest_class), n.gpu_paths);
        switch (n.nearest_class) {
        case PathClass::pix:
        case PathClass::pxb:
            out.push_back(result(id, n.name, CheckStatus::pass, evidence + ": GPU traffic stays below a PCIe switch"));
            break;
        case PathClass::phb:
        case PathClass::node:
            out.push_back(result(id, n.name, CheckStatus::warn,
                                 evidence + ": traffic passes through the CPU's root complex",
                                 "place the NIC and its GPU under one PCIe switch; until then use the GPU nearest "
                                 "the NIC for its traffic"));
            break;
        case PathClass::sys:
            out.push_back(result(id, n.name, CheckStatus::fail,
                                 evidence + ": traffic crosses the CPU interconnect",
                                 "give each socket's GPUs a NIC on that socket, or move the NIC next to a GPU"));
            break;
        default:
            out.push_back(result(id, n.name, CheckStatus::skip, evidence + ": path class unknown"));
        }
    });
    return out;
}

std::vector<CheckResult> check_rdma_acs(const DoctorFacts& f) {
    const char* id = "rdma_acs";
    std::vector<CheckResult> out;
    for_each_nic_near_gpu(f, id, out, [&](const RdmaNic& n) {
        const std::string between = n.name + " and " + n.nearest_gpu;
        if (n.bridges.empty()) {
            out.push_back(result(id, n.name, CheckStatus::pass, "no PCI bridge between " + between));
            return;
        }
        std::vector<std::string> redirecting, unknown, clear;
        for (const AcsBridge& b : n.bridges)
            (!b.redirect ? unknown : *b.redirect ? redirecting : clear).push_back(b.evidence);
        if (!redirecting.empty())
            out.push_back(result(id, n.name, CheckStatus::warn,
                                 fmt::format("ACS redirect between {}: {}: their peer traffic is sent up to the root "
                                             "complex",
                                             between, join(redirecting, "; ")),
                                 "disable ACS redirect on those bridges (BIOS setting, or the kernel parameter "
                                 "pci=disable_acs_redir=BUS_ID) where device isolation is not needed"));
        else if (!unknown.empty())
            out.push_back(result(id, n.name, CheckStatus::skip,
                                 fmt::format("ACS between {} not known: {}", between, unknown.front()),
                                 "run doctor as root to read it"));
        else
            out.push_back(result(id, n.name, CheckStatus::pass,
                                 fmt::format("no ACS redirect between {}: {}", between, join(clear, "; "))));
    });
    return out;
}

std::vector<CheckResult> check_rdma_iommu(const DoctorFacts& f) {
    const char* id = "rdma_iommu";
    std::vector<CheckResult> out;
    if (no_rdma(f, id, out))
        return out;
    const RdmaFacts& r = f.rdma;
    if (!r.iommu_groups || !r.iommu_units)
        return {result(id, "", CheckStatus::pass,
                       fmt::format("IOMMU off ({}): NIC and GPU addresses are not translated",
                                   !r.iommu_units ? "no unit in /sys/class/iommu" : "no group in /sys/kernel/iommu_groups"))};
    const std::string types = r.iommu_group_types.empty() ? "unknown" : join(r.iommu_group_types, ", ");
    if (r.cmdline && has_token(*r.cmdline, {"iommu=pt", "iommu.passthrough=1", "iommu.passthrough=on"}))
        return {result(id, "", CheckStatus::pass, "IOMMU on in passthrough (iommu=pt on the kernel command line)")};
    if (r.iommu_group_types == std::vector<std::string>{"identity"})
        return {result(id, "", CheckStatus::pass, "IOMMU on, every group in passthrough (type identity)")};
    return {result(id, "", CheckStatus::warn,
                   fmt::format("IOMMU on and translating (group types: {}; {}): every RDMA transfer pays address "
                               "translation on the DMA path",
                               types, r.cmdline ? "no iommu=pt on the kernel command line" : "/proc/cmdline unreadable"),
                   "boot with iommu=pt where device isolation is not needed")};
}

std::vector<CheckResult> check_rdma_link(const DoctorFacts& f) {
    const char* id = "rdma_link";
    std::vector<CheckResult> out;
    if (no_rdma(f, id, out))
        return out;
    for (const RdmaNic& n : f.rdma.nics) {
        if (n.ports.empty()) {
            out.push_back(result(id, n.name, CheckStatus::skip,
                                 "port state unknown (no /sys/class/infiniband/" + n.name + "/ports)"));
            continue;
        }
        for (const NicPort& p : n.ports) {
            std::string evidence = fmt::format("port {} {}", p.port, p.state.empty() ? "state unknown" : p.state);
            for (const std::string* extra : {&p.rate, &p.link_layer})
                if (!extra->empty())
                    evidence += ", " + *extra;
            const std::string subject = fmt::format("{} port {}", n.name, p.port);
            if (p.state == "ACTIVE")
                out.push_back(result(id, subject, CheckStatus::pass, evidence));
            else
                out.push_back(result(id, subject, CheckStatus::warn, evidence + ": no RDMA traffic on this port",
                                     "check the cable, the switch port and the subnet manager (InfiniBand), or "
                                     "the interface (RoCE)"));
        }
    }
    return out;
}

std::vector<CheckResult> run_checks(const DoctorFacts& f) {
    using Check = std::vector<CheckResult> (*)(const DoctorFacts&);
    static constexpr Check k_checks[] = {
        check_gpu_present, check_driver,      check_nvml,        check_pcie_link,    check_peer_access,
        check_nvlink,      check_cpu_affinity, check_memlock,    check_mempool,      check_registered_cache,
        check_persistence,
        check_clocks,      check_ecc,         check_compute_mode, check_other_processes, check_nccl_env,
        check_cuda_env,    check_iommu,       check_storage,     check_rdma_peer_memory, check_rdma_path,
        check_rdma_acs,    check_rdma_iommu,  check_rdma_link,
    };
    std::vector<CheckResult> out;
    for (Check c : k_checks) {
        auto r = c(f);
        out.insert(out.end(), r.begin(), r.end());
    }
    return out;
}

bool any_failed(const std::vector<CheckResult>& results) {
    return std::any_of(results.begin(), results.end(),
                       [](const CheckResult& r) { return r.status == CheckStatus::fail; });
}

} // namespace interopbench
