// Topology discovery and path classification.
//
// hwloc gives the PCIe tree (bridges and devices kept) and each GPU's non-I/O ancestor, whose
// CPU set and NUMA nodes are the GPU's locality. The path class of a GPU pair follows the
// PCIe tree (nearest common ancestor) unless NVLinks bond them. NVLinks come from NVML on a
// live machine, from hwloc's NVLinkBandwidth distance matrix in a recorded XML, or from the
// sidecar JSON this tool writes next to its XML exports.
#include "topology/topology.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "interopbench/errors.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/text.hpp"
#include "interopbench/report.hpp"
#include "topology/nvml.hpp"
#include "topology/storage_devices.hpp"

namespace interopbench {
namespace {

constexpr unsigned k_vendor_nvidia = 0x10de;
constexpr unsigned k_class_vga = 0x0300, k_class_3d = 0x0302;
constexpr const char* k_sidecar_schema = "interopbench.nvlink";
constexpr int k_sidecar_version = 1;
constexpr const char* k_this_machine = "this machine";
// hwloc's NVML backend records NVLink bandwidth in MB/s: links x 20000 for NVLink 1 and
// links x 25000 for NVLink 2 to 4.
constexpr std::uint64_t k_hwloc_nvlink1_mbps = 20000, k_hwloc_nvlink_mbps = 25000;

struct HwlocDeleter {
    void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using HwlocPtr = std::unique_ptr<hwloc_topology, HwlocDeleter>;

HwlocPtr new_hwloc() {
    // Keep the machine's hwloc plugins out: they are built for its shared libhwloc (maybe another
    // version than the one linked here), and the OpenCL/GL ones open GPU drivers, which is slow
    // and intrusive. Nothing here needs them (PCI comes from sysfs, NVLink from NVML). hwloc
    // takes this only from the environment, read when the process's first topology starts.
    const bool user_path = std::getenv("HWLOC_PLUGINS_PATH") != nullptr;
    if (!user_path)
        setenv("HWLOC_PLUGINS_PATH", "", 1);
    hwloc_topology_t t = nullptr;
    const int err = hwloc_topology_init(&t);
    if (!user_path)
        unsetenv("HWLOC_PLUGINS_PATH");
    if (err != 0)
        return nullptr;
    HwlocPtr p(t);
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
    return p;
}

// This machine, loaded once and only read afterwards (discovery and placement share it).
// Disallowed CPUs are kept so a GPU's locality is complete even when a cgroup hides it.
hwloc_topology_t live_hwloc() {
    static const HwlocPtr topo = [] {
        HwlocPtr p = new_hwloc();
        if (!p)
            return p;
        hwloc_topology_set_flags(p.get(), HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
        if (hwloc_topology_load(p.get()) != 0)
            p.reset();
        return p;
    }();
    return topo.get();
}

// From the text read by read_input_file: hwloc never opens the file itself.
HwlocPtr load_hwloc_xml_text(const std::string& xml) {
    HwlocPtr p = new_hwloc();
    // hwloc takes the length with the terminating NUL, as its exporter gives it.
    if (!p || xml.size() >= static_cast<std::size_t>(INT32_MAX) ||
        hwloc_topology_set_xmlbuffer(p.get(), xml.c_str(), static_cast<int>(xml.size() + 1)) != 0 ||
        hwloc_topology_load(p.get()) != 0)
        return nullptr;
    return p;
}

struct BusId {
    unsigned domain = 0, bus = 0, dev = 0, func = 0;
};

std::optional<unsigned> parse_hex(std::string_view s, std::size_t max_digits) {
    if (s.empty() || s.size() > max_digits)
        return std::nullopt;
    unsigned v = 0;
    for (char c : s) {
        if (!std::isxdigit(static_cast<unsigned char>(c)))
            return std::nullopt;
        v = v * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10);
    }
    return v;
}

// "dddd:bb:dd.f" (domain of up to 8 digits) or "bb:dd.f".
std::optional<BusId> parse_bus_id(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
        text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    const std::size_t dot = text.rfind('.');
    const std::size_t c2 = text.rfind(':');
    if (dot == std::string_view::npos || c2 == std::string_view::npos || dot < c2)
        return std::nullopt;
    const std::size_t c1 = c2 == 0 ? std::string_view::npos : text.rfind(':', c2 - 1);
    auto domain = c1 == std::string_view::npos ? std::optional<unsigned>(0) : parse_hex(text.substr(0, c1), 8);
    const std::size_t bus_start = c1 == std::string_view::npos ? 0 : c1 + 1;
    auto bus = parse_hex(text.substr(bus_start, c2 - bus_start), 2);
    auto dev = parse_hex(text.substr(c2 + 1, dot - c2 - 1), 2);
    auto func = parse_hex(text.substr(dot + 1), 1);
    if (!domain || !bus || !dev || !func || *dev > 0x1f || *func > 7)
        return std::nullopt;
    return BusId{*domain, *bus, *dev, *func};
}

std::string format_bus_id(unsigned domain, unsigned bus, unsigned dev, unsigned func) {
    return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, dev, func);
}

// Bus ids of one device's functions compare equal ("0000:1b:00.0" and "0000:1b:00.1").
std::string device_part(const std::string& bus_id) {
    return bus_id.substr(0, bus_id.rfind('.'));
}

std::vector<unsigned> bitmap_list(hwloc_const_bitmap_t b) {
    std::vector<unsigned> out;
    if (!b || hwloc_bitmap_weight(b) < 0)
        return out;
    for (int i = hwloc_bitmap_first(b); i >= 0; i = hwloc_bitmap_next(b, i))
        out.push_back(static_cast<unsigned>(i));
    return out;
}

bool is_nvidia_gpu(hwloc_obj_t o) {
    return o->type == HWLOC_OBJ_PCI_DEVICE && o->attr->pcidev.vendor_id == k_vendor_nvidia &&
           (o->attr->pcidev.class_id == k_class_vga || o->attr->pcidev.class_id == k_class_3d);
}

std::string pci_bus_id_of(hwloc_obj_t o) {
    const auto& p = o->attr->pcidev;
    return format_bus_id(p.domain, p.bus, p.dev, p.func);
}

hwloc_obj_t find_pci(hwloc_topology_t t, const std::string& bus_id) {
    auto id = parse_bus_id(bus_id);
    if (!t || !id)
        return nullptr;
    return hwloc_get_pcidev_by_busid(t, id->domain, id->bus, id->dev, id->func);
}

bool is_host_bridge(hwloc_obj_t o) {
    return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

std::string bridge_label(hwloc_obj_t o) {
    const auto& b = o->attr->bridge;
    if (is_host_bridge(o))
        return fmt::format("host bridge {:04x}:[{:02x}-{:02x}]", b.downstream.pci.domain,
                           b.downstream.pci.secondary_bus, b.downstream.pci.subordinate_bus);
    return fmt::format("bridge {}", format_bus_id(b.upstream.pci.domain, b.upstream.pci.bus,
                                                  b.upstream.pci.dev, b.upstream.pci.func));
}

// One GPU's place in the tree, computed once: its ancestors from itself up to the root, how
// many of them (below each) are bridges, and its non-I/O ancestor. Pairs are then classified
// in O(depth) each: the common ancestor by depth, no per-pair walks over sets.
struct TreePlace {
    std::vector<hwloc_obj_t> chain; ///< chain[0] is the object itself, chain.back() the root
    std::vector<int> bridges;       ///< bridges[k]: bridges among chain[1..k-1] (strictly between)
    hwloc_obj_t non_io = nullptr;
};

TreePlace place_of(hwloc_topology_t t, hwloc_obj_t o) {
    TreePlace p;
    for (hwloc_obj_t q = o; q; q = q->parent)
        p.chain.push_back(q);
    p.bridges.assign(p.chain.size(), 0);
    for (std::size_t k = 2; k < p.chain.size(); ++k)
        p.bridges[k] = p.bridges[k - 1] + (p.chain[k - 1]->type == HWLOC_OBJ_BRIDGE);
    p.non_io = hwloc_get_non_io_ancestor_obj(t, o);
    return p;
}

// A PCIe switch shows in hwloc as an upstream-port bridge with one downstream-port bridge per
// port: two GPUs on one switch have the upstream port as common ancestor and one bridge each
// below it (PIX); more bridges on either side mean several switches (PXB).
PathClass classify_pcie(const TreePlace& a, const TreePlace& b) {
    if (a.chain.front() == b.chain.front())
        return PathClass::self;
    // Walk both chains from the root down while they agree: the last shared object is the
    // nearest common ancestor. Index from the root: depth d is chain[size - 1 - d].
    const std::size_t na = a.chain.size(), nb = b.chain.size();
    std::size_t d = 0;
    while (d < na && d < nb && a.chain[na - 1 - d] == b.chain[nb - 1 - d])
        ++d;
    if (d == 0)
        return PathClass::unknown;
    const std::size_t ka = na - d, kb = nb - d; // index of the common ancestor in each chain
    hwloc_obj_t c = a.chain[ka];
    if (c->type == HWLOC_OBJ_PCI_DEVICE)
        return PathClass::pix;
    if (c->type == HWLOC_OBJ_BRIDGE) {
        if (is_host_bridge(c))
            return PathClass::phb;
        return a.bridges[ka] <= 1 && b.bridges[kb] <= 1 ? PathClass::pix : PathClass::pxb;
    }
    if (!a.non_io || !b.non_io || !a.non_io->nodeset || !b.non_io->nodeset)
        return PathClass::unknown;
    return hwloc_bitmap_intersects(a.non_io->nodeset, b.non_io->nodeset) ? PathClass::node : PathClass::sys;
}

// The bus id of a PCI-to-PCI bridge (a root or switch port); empty for a host bridge.
std::string bridge_bus_id(hwloc_obj_t o) {
    const auto& b = o->attr->bridge;
    if (o->type != HWLOC_OBJ_BRIDGE || b.upstream_type != HWLOC_OBJ_BRIDGE_PCI)
        return {};
    return format_bus_id(b.upstream.pci.domain, b.upstream.pci.bus, b.upstream.pci.dev, b.upstream.pci.func);
}

// The PCI bridges between two devices: from `a` up to their common ancestor (itself when it
// is a switch or root port) and down to `b`. Host bridges are left out: they have no bus id.
std::vector<std::string> bridges_between(const TreePlace& a, const TreePlace& b) {
    const std::size_t na = a.chain.size(), nb = b.chain.size();
    std::size_t d = 0;
    while (d < na && d < nb && a.chain[na - 1 - d] == b.chain[nb - 1 - d])
        ++d;
    std::vector<std::string> out;
    if (d == 0 || a.chain.front() == b.chain.front())
        return out;
    const std::size_t ka = na - d, kb = nb - d;
    for (std::size_t k = 1; k <= ka; ++k)
        if (std::string id = bridge_bus_id(a.chain[k]); !id.empty())
            out.push_back(id);
    for (std::size_t k = kb; k-- > 1;)
        if (std::string id = bridge_bus_id(b.chain[k]); !id.empty())
            out.push_back(id);
    return out;
}

std::string read_text(const std::string& path) {
    std::ifstream f(path);
    std::string s;
    std::getline(f, s);
    return s;
}

int gen_of_transfer_rate(double gts) {
    static const std::pair<double, int> k_rates[] = {{2.5, 1}, {5, 2},   {8, 3},  {16, 4},
                                                     {32, 5},  {64, 6}, {128, 7}};
    for (auto [rate, gen] : k_rates)
        if (std::fabs(gts - rate) < 0.1)
            return gen;
    return 0;
}

// PCIe generation and width from sysfs, for machines without NVML.
void read_sysfs_pcie(const std::string& bus_id, PcieLink& link) {
    const std::string dir = "/sys/bus/pci/devices/" + bus_id + "/";
    auto gen = [&](const char* file) {
        std::string s = read_text(dir + file);
        return s.empty() ? 0 : gen_of_transfer_rate(std::atof(s.c_str()));
    };
    auto width = [&](const char* file) { return std::atoi(read_text(dir + file).c_str()); };
    link.gen_current = gen("current_link_speed");
    link.gen_max = gen("max_link_speed");
    link.width_current = width("current_link_width");
    link.width_max = width("max_link_width");
}

std::string info(hwloc_obj_t o, const char* name) {
    const char* v = hwloc_obj_get_info_by_name(o, name);
    return v ? v : "";
}

void fill_from_hwloc(hwloc_topology_t t, hwloc_obj_t pci, GpuTopo& g) {
    if (hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, pci)) {
        g.cpus = bitmap_list(anc->cpuset);
        g.numa_nodes = bitmap_list(anc->nodeset);
    }
    g.pcie.link_speed = static_cast<double>(pci->attr->pcidev.linkspeed) * 1e9;
    for (hwloc_obj_t p = pci->parent; p && p->type == HWLOC_OBJ_BRIDGE; p = p->parent)
        g.pci_path.insert(g.pci_path.begin(), bridge_label(p));
    std::string model;
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name)
            continue;
        g.os_devices.emplace_back(c->name);
        if (model.empty())
            model = info(c, "GPUModel");
    }
    if (g.name.empty())
        g.name = !model.empty() ? model : info(pci, "PCIDevice");
    if (g.name.empty())
        g.name = fmt::format("NVIDIA [10de:{:04x}]", pci->attr->pcidev.device_id);
}

std::vector<GpuTopo> nvidia_gpus(hwloc_topology_t t) {
    std::vector<GpuTopo> gpus;
    for (hwloc_obj_t o = hwloc_get_next_pcidev(t, nullptr); o; o = hwloc_get_next_pcidev(t, o)) {
        if (!is_nvidia_gpu(o))
            continue;
        GpuTopo g;
        g.pci_bus_id = pci_bus_id_of(o);
        gpus.push_back(g);
    }
    std::sort(gpus.begin(), gpus.end(),
              [](const GpuTopo& a, const GpuTopo& b) { return a.pci_bus_id < b.pci_bus_id; });
    return gpus;
}

// hwloc's OpenFabrics port state (the number before the kernel's "4: ACTIVE") as its name.
std::string ib_port_state(const std::string& number) {
    static const char* const k_states[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
    const int v = std::atoi(number.c_str());
    return v >= 0 && v <= 5 && !number.empty() && std::isdigit(static_cast<unsigned char>(number[0]))
               ? k_states[v]
               : number;
}

// The port states hwloc recorded on an OpenFabrics OS device: info attributes "Port<N>State".
std::vector<NicPort> hwloc_ports(hwloc_obj_t osdev) {
    std::map<unsigned, NicPort> ports;
    for (unsigned i = 0; i < osdev->infos_count; ++i) {
        const std::string name = osdev->infos[i].name ? osdev->infos[i].name : "";
        const std::string value = osdev->infos[i].value ? osdev->infos[i].value : "";
        if (name.size() <= 9 || name.rfind("Port", 0) != 0 || name.compare(name.size() - 5, 5, "State") != 0)
            continue;
        const std::string number = name.substr(4, name.size() - 9);
        if (number.size() > 4 || !std::all_of(number.begin(), number.end(),
                                              [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
            continue;
        NicPort& p = ports[static_cast<unsigned>(std::stoul(number))];
        p.port = static_cast<unsigned>(std::stoul(number));
        p.state = ib_port_state(value);
    }
    std::vector<NicPort> out;
    for (auto& [n, p] : ports)
        out.push_back(p);
    return out;
}

// The NICs from hwloc's I/O objects, each with its path class to every GPU (`gpu_objs`, by
// GPU index; nullptr where a GPU is not in the tree) by the same rule as GPU pairs.
void build_nics(Topology& topo, hwloc_topology_t t, const std::vector<hwloc_obj_t>& gpu_objs) {
    std::vector<std::pair<NicTopo, hwloc_obj_t>> found; // with its PCI function
    std::map<hwloc_obj_t, std::vector<std::string>> interfaces;
    for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(t, o));) {
        const auto type = o->attr->osdev.type;
        if ((type != HWLOC_OBJ_OSDEV_OPENFABRICS && type != HWLOC_OBJ_OSDEV_NETWORK) || !o->name)
            continue;
        hwloc_obj_t pci = o->parent;
        while (pci && pci->type == HWLOC_OBJ_OS_DEVICE)
            pci = pci->parent;
        if (!pci || pci->type != HWLOC_OBJ_PCI_DEVICE)
            continue; // not on the PCI bus (a virtual interface): no path to a GPU
        if (type == HWLOC_OBJ_OSDEV_NETWORK) {
            interfaces[pci].emplace_back(o->name);
            continue;
        }
        NicTopo n;
        n.name = o->name;
        n.kind = "rdma";
        n.ports = hwloc_ports(o);
        found.emplace_back(n, pci);
    }
    std::set<hwloc_obj_t> with_rdma;
    for (auto& [n, pci] : found) {
        with_rdma.insert(pci);
        n.interfaces = interfaces[pci];
    }
    for (const auto& [pci, names] : interfaces)
        if (!with_rdma.count(pci))
            for (const std::string& name : names) {
                NicTopo n;
                n.name = name;
                n.kind = "net";
                found.emplace_back(n, pci);
            }
    for (auto& [n, pci] : found) {
        n.pci_bus_id = pci_bus_id_of(pci);
        std::sort(n.interfaces.begin(), n.interfaces.end());
    }
    std::sort(found.begin(), found.end(), [](const auto& x, const auto& y) {
        const NicTopo& a = x.first;
        const NicTopo& b = y.first;
        if (a.kind != b.kind)
            return a.kind == "rdma";
        return std::tie(a.pci_bus_id, a.name) < std::tie(b.pci_bus_id, b.name);
    });

    std::vector<TreePlace> gpu_places(gpu_objs.size());
    for (std::size_t i = 0; i < gpu_objs.size(); ++i)
        if (gpu_objs[i])
            gpu_places[i] = place_of(t, gpu_objs[i]);
    std::vector<TreePlace> nic_places;
    for (auto& [n, pci] : found) {
        if (hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, pci)) {
            n.cpus = bitmap_list(anc->cpuset);
            n.numa_nodes = bitmap_list(anc->nodeset);
        }
        n.link_speed = static_cast<double>(pci->attr->pcidev.linkspeed) * 1e9;
        nic_places.push_back(place_of(t, pci));
        const TreePlace& here = nic_places.back();
        for (std::size_t i = 0; i < gpu_objs.size(); ++i) {
            n.gpu_paths.push_back(gpu_objs[i] ? classify_pcie(here, gpu_places[i]) : PathClass::unknown);
            const PathClass c = n.gpu_paths.back();
            if (c != PathClass::unknown && (n.nearest_gpu < 0 || c < n.gpu_paths[static_cast<std::size_t>(n.nearest_gpu)]))
                n.nearest_gpu = static_cast<int>(i);
        }
        if (n.nearest_gpu >= 0)
            n.bridges = bridges_between(here, gpu_places[static_cast<std::size_t>(n.nearest_gpu)]);
        topo.nics.push_back(n);
    }
    if (topo.nics.size() <= k_max_pair_gpus)
        for (std::size_t a = 0; a < topo.nics.size(); ++a)
            for (std::size_t b = 0; b < topo.nics.size(); ++b)
                topo.nics[a].nic_paths.push_back(a == b ? PathClass::self : classify_pcie(nic_places[a], nic_places[b]));
}

// Host summary, GPU locality and PCIe class of every pair (up to k_max_pair_gpus GPUs).
void build_base(Topology& topo, hwloc_topology_t t) {
    std::vector<hwloc_obj_t> objs(topo.gpus.size(), nullptr);
    if (t) {
        topo.packages = static_cast<unsigned>(std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE)));
        topo.cores = static_cast<unsigned>(std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE)));
        topo.pus = static_cast<unsigned>(std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU)));
        for (hwloc_obj_t n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, nullptr); n;
             n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) {
            NumaNode node;
            node.os_index = n->os_index;
            node.cpus = bitmap_list(n->cpuset);
            node.memory = n->attr->numanode.local_memory;
            topo.numa.push_back(node);
        }
        for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(t, o));)
            topo.has_infiniband |= o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
        // One pass over the PCI devices (hwloc's lookup by bus id is a linear search each).
        std::map<std::string, hwloc_obj_t> by_bus;
        for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_pcidev(t, o));) {
            topo.nvidia_pci_gpus += is_nvidia_gpu(o);
            by_bus.emplace(pci_bus_id_of(o), o);
        }
        for (std::size_t i = 0; i < topo.gpus.size(); ++i) {
            const auto id = normalize_pci_bus_id(topo.gpus[i].pci_bus_id);
            const auto it = id ? by_bus.find(*id) : by_bus.end();
            objs[i] = it != by_bus.end() ? it->second : nullptr;
            if (objs[i])
                fill_from_hwloc(t, objs[i], topo.gpus[i]);
            else
                topo.notes.push_back(fmt::format("{} ({}) is not in hwloc's PCI tree: locality unknown",
                                                 topo.gpus[i].label(i), topo.gpus[i].pci_bus_id));
        }
        build_nics(topo, t, objs);
    }
    const std::size_t n = topo.gpus.size();
    if (n > k_max_pair_gpus) {
        topo.notes.push_back(fmt::format("{} GPUs: GPU pairs are classified for at most {} GPUs ({} would be {} ordered "
                                         "pairs); GPUs and their host paths are listed, pairs are not",
                                         n, k_max_pair_gpus, n, n * (n - 1)));
        return;
    }
    std::vector<TreePlace> places(n);
    for (std::size_t i = 0; i < n; ++i)
        if (objs[i])
            places[i] = place_of(t, objs[i]);
    topo.pairs.reserve(n * (n > 0 ? n - 1 : 0));
    for (std::size_t a = 0; a < n; ++a)
        for (std::size_t b = 0; b < n; ++b) {
            if (a == b)
                continue;
            PairTopo p;
            p.from = a;
            p.to = b;
            if (objs[a] && objs[b])
                p.pcie_class = classify_pcie(places[a], places[b]);
            topo.pairs.push_back(p);
        }
}

// GPU index by the device part of its bus id ("0000:1b:00"), built once per lookup batch.
std::map<std::string, std::size_t> gpu_index(const Topology& topo) {
    std::map<std::string, std::size_t> out;
    for (std::size_t i = 0; i < topo.gpus.size(); ++i)
        out[device_part(topo.gpus[i].pci_bus_id)] = i;
    return out;
}

PairTopo* pair_of(Topology& topo, std::size_t from, std::size_t to) {
    return const_cast<PairTopo*>(std::as_const(topo).pair(from, to));
}

std::uint64_t hwloc_link_mbps(std::uint64_t bw) {
    return bw % k_hwloc_nvlink1_mbps == 0 && bw % k_hwloc_nvlink_mbps != 0 ? k_hwloc_nvlink1_mbps
                                                                           : k_hwloc_nvlink_mbps;
}

int hwloc_links(std::uint64_t bw) {
    if (bw == 0)
        return 0;
    return std::max(1, static_cast<int>(std::lround(static_cast<double>(bw) / hwloc_link_mbps(bw))));
}

// NVLink from hwloc's NVLinkBandwidth matrix: GPUs appear as their OS devices ("nvml0"),
// NVSwitches as PCI devices, CPUs as packages; values are MB/s per direction.
void apply_nvlink_matrix(Topology& topo, hwloc_topology_t t) {
    hwloc_distances_s* d = nullptr;
    unsigned nr = 1;
    if (!t || hwloc_distances_get_by_name(t, "NVLinkBandwidth", &nr, &d, 0) != 0 || nr == 0)
        return;
    const unsigned n = d->nbobjs;
    const auto index = gpu_index(topo);
    std::vector<int> gpu_of(n, -1);
    std::vector<bool> cpu_side(n, false);
    for (unsigned k = 0; k < n; ++k) {
        hwloc_obj_t o = d->objs[k];
        hwloc_obj_t pci = o;
        while (pci && pci->type == HWLOC_OBJ_OS_DEVICE)
            pci = pci->parent;
        if (pci && pci->type == HWLOC_OBJ_PCI_DEVICE)
            if (const auto it = index.find(device_part(pci_bus_id_of(pci))); it != index.end())
                gpu_of[k] = static_cast<int>(it->second);
        cpu_side[k] = gpu_of[k] < 0 && o->cpuset != nullptr;
    }
    const std::size_t g = topo.gpus.size();
    std::vector<std::uint64_t> switch_bw(g, 0), cpu_bw(g, 0);
    std::vector<std::vector<std::uint64_t>> direct(g, std::vector<std::uint64_t>(g, 0));
    for (unsigned i = 0; i < n; ++i) {
        if (gpu_of[i] < 0)
            continue;
        for (unsigned k = 0; k < n; ++k) {
            const std::uint64_t v = d->values[i * n + k];
            if (k == i || v == 0)
                continue;
            if (gpu_of[k] >= 0)
                direct[gpu_of[i]][gpu_of[k]] = v;
            else if (cpu_side[k])
                cpu_bw[gpu_of[i]] += v;
            else
                switch_bw[gpu_of[i]] += v;
        }
    }
    hwloc_distances_release(t, d);

    bool any = false;
    for (std::size_t i = 0; i < g; ++i) {
        GpuTopo& gpu = topo.gpus[i];
        std::uint64_t sample = switch_bw[i] ? switch_bw[i] : cpu_bw[i];
        for (std::size_t j = 0; j < g && !sample; ++j)
            sample = direct[i][j];
        if (!sample)
            continue;
        any = true;
        gpu.nvlink_rate = static_cast<double>(hwloc_link_mbps(sample)) * 1e6;
        gpu.nvlinks_to_cpu = hwloc_links(cpu_bw[i]);
        gpu.nvlink_cpu_bandwidth = static_cast<double>(cpu_bw[i]) * 1e6;
        topo.has_nvswitch |= switch_bw[i] > 0;
    }
    for (PairTopo& p : topo.pairs) {
        const std::uint64_t via_switch = std::min(switch_bw[p.from], switch_bw[p.to]);
        const std::uint64_t dir = direct[p.from][p.to];
        p.nvlinks = hwloc_links(dir) + hwloc_links(via_switch);
        p.via_nvswitch = via_switch > 0;
        p.nvlink_bandwidth = static_cast<double>(dir + via_switch) * 1e6;
    }
    if (any)
        topo.notes.push_back("NVLink from the XML's NVLinkBandwidth matrix (links = bandwidth / "
                             "20 GB/s for NVLink 1, / 25 GB/s for NVLink 2-4)");
}

// NVLink from per-link facts (NVML, or a sidecar): links straight to a GPU bond the pair;
// links to NVSwitches bond every pair of switch-attached GPUs (one fabric), as many as the
// GPU with fewer switch links has.
void apply_nvlink_links(Topology& topo) {
    const std::size_t g = topo.gpus.size();
    std::vector<int> switch_links(g, 0);
    std::map<std::pair<std::size_t, std::size_t>, int> direct; // sparse: a GPU has a few dozen links at most
    const auto index = gpu_index(topo);
    for (std::size_t i = 0; i < g; ++i) {
        GpuTopo& gpu = topo.gpus[i];
        if (!gpu.nvlink_known)
            continue;
        int cpu_links = 0;
        for (const NvLink& l : gpu.nvlinks) {
            if (!l.active)
                continue;
            int peer_gpu = -1;
            if (!l.peer_bus_id.empty())
                if (const auto it = index.find(device_part(l.peer_bus_id)); it != index.end() && it->second != i)
                    peer_gpu = static_cast<int>(it->second);
            if (peer_gpu >= 0)
                ++direct[{i, static_cast<std::size_t>(peer_gpu)}];
            else if (l.peer == LinkPeer::nvswitch)
                ++switch_links[i];
            else if (l.peer == LinkPeer::cpu)
                ++cpu_links;
        }
        gpu.nvlinks_to_cpu = cpu_links;
        gpu.nvlink_cpu_bandwidth = cpu_links * gpu.nvlink_rate;
        topo.has_nvswitch |= switch_links[i] > 0;
    }
    for (PairTopo& p : topo.pairs) {
        const GpuTopo& a = topo.gpus[p.from];
        const GpuTopo& b = topo.gpus[p.to];
        if (!a.nvlink_known || !b.nvlink_known)
            continue;
        const int via_switch = std::min(switch_links[p.from], switch_links[p.to]);
        const auto d = direct.find({p.from, p.to});
        p.nvlinks = (d == direct.end() ? 0 : d->second) + via_switch;
        p.via_nvswitch = via_switch > 0;
        const double rate = a.nvlink_rate > 0 && b.nvlink_rate > 0 ? std::min(a.nvlink_rate, b.nvlink_rate)
                                                                   : std::max(a.nvlink_rate, b.nvlink_rate);
        p.nvlink_bandwidth = p.nvlinks * rate;
    }
}

void apply_cuda_peers(Topology& topo, const std::vector<CudaPeerFacts>& peers) {
    for (const CudaPeerFacts& f : peers) {
        const int a = topo.index_of_cuda(f.from), b = topo.index_of_cuda(f.to);
        if (a < 0 || b < 0 || a == b)
            continue;
        if (PairTopo* p = pair_of(topo, static_cast<std::size_t>(a), static_cast<std::size_t>(b))) {
            p->has_cuda = true;
            p->cuda = f;
        }
    }
}

LinkPeer peer_from_name(const std::string& s) {
    for (LinkPeer p : {LinkPeer::gpu, LinkPeer::nvswitch, LinkPeer::cpu})
        if (s == to_string(p))
            return p;
    return LinkPeer::unknown;
}

LinkPeer peer_from_nvml(nvml::Peer p) {
    switch (p) {
    case nvml::Peer::gpu: return LinkPeer::gpu;
    case nvml::Peer::nvswitch: return LinkPeer::nvswitch;
    case nvml::Peer::cpu: return LinkPeer::cpu;
    case nvml::Peer::unknown: break;
    }
    return LinkPeer::unknown;
}

nlohmann::json optional_int(int v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json sidecar_json(const Topology& topo) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const GpuTopo& g : topo.gpus) {
        nlohmann::json links = nlohmann::json::array();
        for (const NvLink& l : g.nvlinks)
            links.push_back({{"link", l.link}, {"active", l.active}, {"peer", to_string(l.peer)},
                             {"peer_pci_bus_id", l.peer_bus_id}});
        nlohmann::json j = {{"pci_bus_id", g.pci_bus_id},
                            {"name", g.name},
                            {"cuda_ordinal", g.cuda_ordinal >= 0 ? nlohmann::json(g.cuda_ordinal) : nlohmann::json(nullptr)},
                            {"pcie", {{"gen_current", g.pcie.gen_current}, {"width_current", g.pcie.width_current},
                                      {"gen_max", g.pcie.gen_max}, {"width_max", g.pcie.width_max}}}};
        if (g.nvlink_known)
            j["nvlink"] = {{"rate", g.nvlink_rate}, {"links", links}};
        gpus.push_back(j);
    }
    nlohmann::json peers = nlohmann::json::array();
    for (const PairTopo& p : topo.pairs)
        if (p.has_cuda)
            peers.push_back({{"from", topo.gpus[p.from].pci_bus_id}, {"to", topo.gpus[p.to].pci_bus_id},
                             {"can_access_peer", p.cuda.can_access_peer},
                             {"performance_rank", p.cuda.performance_rank},
                             {"native_atomics", p.cuda.native_atomics}});
    return {{"schema", k_sidecar_schema}, {"version", k_sidecar_version}, {"source", topo.source},
            {"gpus", gpus}, {"peers", peers}};
}

int find_gpu(const std::map<std::string, std::size_t>& index, const std::string& bus_id) {
    auto id = normalize_pci_bus_id(bus_id);
    const auto it = id ? index.find(device_part(*id)) : index.end();
    return it == index.end() ? -1 : static_cast<int>(it->second);
}

void apply_sidecar(Topology& topo, const std::string& path) {
    const std::string hint = "remove it, or write it again with `interopbench topo --export-xml`";
    const std::string text = read_input_file(path, "NVLink sidecar", k_max_sidecar_bytes);
    nlohmann::json j;
    try {
        j = parse_json(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw UsageError(fmt::format("{}: not valid JSON (at byte {})", path, e.byte), hint);
    } catch (const nlohmann::json::exception& e) {
        throw UsageError(fmt::format("{}: not valid JSON ({})", path, json_error_text(e)), hint);
    }
    if (!j.is_object() || j.value("schema", "") != k_sidecar_schema)
        throw UsageError(fmt::format("{}: not an NVLink sidecar (schema is not \"{}\")", path, k_sidecar_schema), hint);
    const auto index = gpu_index(topo);
    try {
        if (j.at("version").get<int>() > k_sidecar_version)
            throw UsageError(fmt::format("{}: sidecar version {} is newer than this tool reads ({})", path,
                                         j.at("version").get<int>(), k_sidecar_version),
                             "use a newer interopbench");
        std::vector<CudaPeerFacts> peers;
        for (const auto& gj : j.at("gpus")) {
            const std::string bus = gj.at("pci_bus_id").get<std::string>();
            const int i = find_gpu(index, bus);
            if (i < 0) {
                topo.notes.push_back(fmt::format("sidecar GPU {} is not in the XML; ignored", bus));
                continue;
            }
            GpuTopo& g = topo.gpus[i];
            if (gj.contains("cuda_ordinal") && !gj["cuda_ordinal"].is_null())
                g.cuda_ordinal = gj["cuda_ordinal"].get<int>();
            if (!gj.value("name", "").empty())
                g.name = gj["name"].get<std::string>();
            if (gj.contains("pcie")) {
                const auto& p = gj["pcie"];
                g.pcie.gen_current = p.value("gen_current", 0);
                g.pcie.width_current = p.value("width_current", 0);
                g.pcie.gen_max = p.value("gen_max", 0);
                g.pcie.width_max = p.value("width_max", 0);
            }
            if (gj.contains("nvlink")) {
                const auto& n = gj["nvlink"];
                g.nvlink_known = true;
                g.nvlink_rate = n.value("rate", 0.0);
                g.nvlinks.clear();
                for (const auto& lj : n.at("links")) {
                    NvLink l;
                    l.link = lj.at("link").get<unsigned>();
                    l.active = lj.at("active").get<bool>();
                    l.peer = peer_from_name(lj.value("peer", ""));
                    l.peer_bus_id = normalize_pci_bus_id(lj.value("peer_pci_bus_id", "")).value_or("");
                    g.nvlinks.push_back(l);
                }
            }
        }
        for (const auto& pj : j.value("peers", nlohmann::json::array())) {
            const int a = find_gpu(index, pj.at("from").get<std::string>());
            const int b = find_gpu(index, pj.at("to").get<std::string>());
            if (a < 0 || b < 0 || a == b)
                continue;
            if (PairTopo* p = pair_of(topo, static_cast<std::size_t>(a), static_cast<std::size_t>(b))) {
                p->has_cuda = true;
                p->cuda.from = topo.gpus[a].cuda_ordinal;
                p->cuda.to = topo.gpus[b].cuda_ordinal;
                p->cuda.can_access_peer = pj.at("can_access_peer").get<bool>();
                p->cuda.performance_rank = pj.value("performance_rank", -1);
                p->cuda.native_atomics = pj.value("native_atomics", false);
            }
        }
    } catch (const nlohmann::json::exception& e) {
        throw UsageError(fmt::format("{}: malformed NVLink sidecar: {}", path, json_error_text(e)), hint);
    }
    apply_nvlink_links(topo);
    topo.notes.push_back(fmt::format("NVLink, PCIe generation/width and CUDA peer facts from {}", path));
}

// What makes `xml` other than well-formed XML as hwloc writes it, or empty. hwloc 2.9's own
// reader follows null pointers on some damage (an unclosed tag, a cpuset or nodeset without
// its complete_ twin) and stores enum attributes unchecked, so the text is checked before
// hwloc sees it: declarations, comments, balanced elements with unique name="value"
// attributes, each object's sets, and its bridge and OS device types.
std::string xml_damage(const std::string& xml) {
    const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    const auto name_char = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == ':' || c == '.';
    };
    std::vector<std::string> open;
    std::size_t i = 0;
    while ((i = xml.find('<', i)) != std::string::npos) {
        const char* end_mark = nullptr; // of a comment, a declaration or the DOCTYPE
        if (xml.compare(i, 4, "<!--") == 0)
            end_mark = "-->";
        else if (xml.compare(i, 2, "<?") == 0)
            end_mark = "?>";
        else if (xml.compare(i, 2, "<!") == 0)
            end_mark = ">";
        if (end_mark) {
            const std::size_t e = xml.find(end_mark, i + 2);
            if (e == std::string::npos)
                return "an unclosed comment or declaration";
            i = e + std::strlen(end_mark);
            continue;
        }
        const bool closing = xml.compare(i, 2, "</") == 0;
        std::size_t j = i + (closing ? 2 : 1);
        const std::size_t name_at = j;
        while (j < xml.size() && name_char(xml[j]))
            ++j;
        const std::string name = xml.substr(name_at, j - name_at);
        if (name.empty())
            return fmt::format("a malformed tag at byte {}", i);
        if (closing) {
            while (j < xml.size() && space(xml[j]))
                ++j;
            if (j >= xml.size() || xml[j] != '>' || open.empty() || open.back() != name)
                return fmt::format("a misplaced </{}> at byte {}", name, i);
            open.pop_back();
            i = j + 1;
            continue;
        }
        std::map<std::string, std::string> attrs;
        while (true) {
            while (j < xml.size() && space(xml[j]))
                ++j;
            if (j >= xml.size())
                return fmt::format("an unclosed <{}> tag at byte {}", name, i);
            if (xml[j] == '>') {
                open.push_back(name);
                break;
            }
            if (xml.compare(j, 2, "/>") == 0) {
                ++j;
                break;
            }
            const std::size_t attr_at = j;
            while (j < xml.size() && name_char(xml[j]))
                ++j;
            const std::size_t close =
                j == attr_at || xml.compare(j, 2, "=\"") != 0 ? std::string::npos : xml.find('"', j + 2);
            const bool clean =
                close != std::string::npos &&
                std::none_of(xml.begin() + static_cast<std::ptrdiff_t>(j + 2), xml.begin() + static_cast<std::ptrdiff_t>(close),
                             [&](char c) { return c == '<' || (static_cast<unsigned char>(c) < 0x20 && !space(c)); }) &&
                (close + 1 >= xml.size() || space(xml[close + 1]) || xml[close + 1] == '>' || xml[close + 1] == '/');
            if (!clean || !attrs.emplace(xml.substr(attr_at, j - attr_at), xml.substr(j + 2, close - j - 2)).second)
                return fmt::format("a malformed attribute in a <{}> tag at byte {}", name, i);
            j = close + 1;
        }
        if (name == "object") {
            for (const std::string set : {"cpuset", "nodeset"})
                if (attrs.count(set) && !attrs.count("complete_" + set))
                    return fmt::format("an object at byte {} has a {} but no complete_{}", i, set, set);
            const auto bridge = attrs.find("bridge_type"); // upstream-downstream: 0 host, 1 PCI
            if (bridge != attrs.end() && (bridge->second.size() != 3 || bridge->second[1] != '-' ||
                                          (bridge->second[0] != '0' && bridge->second[0] != '1') ||
                                          (bridge->second[2] != '0' && bridge->second[2] != '1')))
                return fmt::format("an object at byte {} has an unknown bridge_type '{}'", i, bridge->second);
            const auto osdev = attrs.find("osdev_type"); // 0 block to 5 coprocessor
            if (osdev != attrs.end() && (osdev->second.size() != 1 || osdev->second[0] < '0' || osdev->second[0] > '5'))
                return fmt::format("an object at byte {} has an unknown osdev_type '{}'", i, osdev->second);
        }
        i = j + 1;
    }
    if (!open.empty())
        return fmt::format("<{}> is never closed", open.back());
    return {};
}

// Checks what hwloc would only answer with a bare failure, so the user learns what is wrong.
void check_xml_text(const std::string& path, const std::string& all) {
    const std::string hint = "give an hwloc XML export: `lstopo --of xml FILE` or "
                             "`interopbench topo --export-xml FILE` on the machine to analyse";
    const std::string head = all.substr(0, 64 * 1024);
    std::size_t pos = head.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
    while (pos < head.size() && std::isspace(static_cast<unsigned char>(head[pos])))
        ++pos;
    if (head.empty())
        throw UsageError(fmt::format("--from {}: the file is empty", path), hint);
    if (pos >= head.size() || head[pos] != '<')
        throw UsageError(fmt::format("--from {}: not an XML file", path), hint);
    const std::size_t tag = head.find("<topology");
    if (tag == std::string::npos)
        throw UsageError(fmt::format("--from {}: XML, but not an hwloc topology (no <topology> element)", path), hint);
    const std::size_t end = head.find('>', tag);
    const std::size_t ver = head.find("version=\"", tag);
    if (ver != std::string::npos && (end == std::string::npos || ver < end)) {
        const int major = std::atoi(head.c_str() + ver + 9);
        if (major > HWLOC_API_VERSION >> 16) {
            const std::string version = head.substr(ver + 9, head.find('"', ver + 9) - ver - 9);
            throw UsageError(fmt::format("--from {}: hwloc XML version {} is newer than this hwloc ({}) reads",
                                         path, version, HWLOC_VERSION),
                             "export it with an hwloc 2.x lstopo (`lstopo --of xml`), or use an "
                             "interopbench built with a newer hwloc");
        }
    }
    if (const std::string why = xml_damage(all); !why.empty())
        throw UsageError(fmt::format("--from {}: damaged XML: {}", path, why), hint);
}

} // namespace

const char* to_string(PathClass c) {
    switch (c) {
    case PathClass::self: return "X";
    case PathClass::nvlink: return "NV";
    case PathClass::pix: return "PIX";
    case PathClass::pxb: return "PXB";
    case PathClass::phb: return "PHB";
    case PathClass::node: return "NODE";
    case PathClass::sys: return "SYS";
    case PathClass::unknown: break;
    }
    return "?";
}

const char* to_string(LinkPeer p) {
    switch (p) {
    case LinkPeer::gpu: return "gpu";
    case LinkPeer::nvswitch: return "nvswitch";
    case LinkPeer::cpu: return "cpu";
    case LinkPeer::unknown: break;
    }
    return "unknown";
}

const std::vector<std::pair<std::string, std::string>>& path_legend() {
    static const std::vector<std::pair<std::string, std::string>> k_legend = {
        {"X", "the same device (GPU or NIC)"},
        {"NV#", "# bonded NVLinks, direct or through NVSwitches"},
        {"PIX", "PCIe through at most one PCIe switch, no host bridge"},
        {"PXB", "PCIe through several PCIe switches, no host bridge"},
        {"PHB", "PCIe through a host bridge (the CPU's root complex)"},
        {"NODE", "PCIe across host bridges within one NUMA node"},
        {"SYS", "PCIe and the link between NUMA nodes (QPI/UPI/Infinity Fabric)"},
    };
    return k_legend;
}

std::optional<std::string> normalize_pci_bus_id(std::string_view text) {
    auto id = parse_bus_id(text);
    if (!id)
        return std::nullopt;
    return format_bus_id(id->domain, id->bus, id->dev, id->func);
}

std::string format_cpu_list(const std::vector<unsigned>& cpus) {
    std::string out;
    for (std::size_t i = 0; i < cpus.size();) {
        std::size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
            ++j;
        if (!out.empty())
            out += ',';
        out += j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
        i = j + 1;
    }
    return out;
}

double PcieLink::bandwidth() const {
    const double b = pcie_bandwidth(gen_max, width_max);
    return b > 0 ? b : link_speed;
}

std::string PcieLink::label() const {
    if (gen_max > 0 && width_max > 0)
        return fmt::format("Gen{} x{}", gen_max, width_max);
    if (link_speed > 0)
        return format_value(link_speed, "B/s");
    return "?";
}

int GpuTopo::nvlinks_active() const {
    return static_cast<int>(std::count_if(nvlinks.begin(), nvlinks.end(), [](const NvLink& l) { return l.active; }));
}

std::string GpuTopo::label(std::size_t index) const {
    return fmt::format("GPU{}", cuda_ordinal >= 0 ? static_cast<std::size_t>(cuda_ordinal) : index);
}

std::string GpuTopo::host_path() const {
    return nvlinks_to_cpu > 0 ? fmt::format("NV{}", nvlinks_to_cpu) : "PCIe";
}

double GpuTopo::host_bandwidth() const {
    return nvlinks_to_cpu > 0 ? nvlink_cpu_bandwidth : pcie.bandwidth();
}

std::string NicTopo::label(std::size_t index) const { return fmt::format("NIC{}", index); }

PathClass NicTopo::nearest_class() const {
    return nearest_gpu >= 0 && static_cast<std::size_t>(nearest_gpu) < gpu_paths.size()
               ? gpu_paths[static_cast<std::size_t>(nearest_gpu)]
               : PathClass::unknown;
}

PathClass PairTopo::path_class() const { return nvlinks > 0 ? PathClass::nvlink : pcie_class; }

std::string PairTopo::label() const {
    const PathClass c = path_class();
    return c == PathClass::nvlink ? fmt::format("NV{}", nvlinks) : to_string(c);
}

double PairTopo::bandwidth(const std::vector<GpuTopo>& gpus) const {
    if (nvlinks > 0)
        return nvlink_bandwidth;
    const double a = gpus[from].pcie.bandwidth(), b = gpus[to].pcie.bandwidth();
    return a > 0 && b > 0 ? std::min(a, b) : 0;
}

const PairTopo* Topology::pair(std::size_t from, std::size_t to) const {
    // Pairs are built in (from, to) order, from != to: the index is computed, and checked.
    const std::size_t n = gpus.size();
    if (from < n && to < n && from != to && pairs.size() == n * (n - 1)) {
        const PairTopo& p = pairs[from * (n - 1) + (to < from ? to : to - 1)];
        if (p.from == from && p.to == to)
            return &p;
    }
    for (const PairTopo& p : pairs)
        if (p.from == from && p.to == to)
            return &p;
    return nullptr;
}

int Topology::index_of_cuda(int ordinal) const {
    for (std::size_t i = 0; i < gpus.size(); ++i)
        if (gpus[i].cuda_ordinal == ordinal)
            return static_cast<int>(i);
    return -1;
}

Topology discover_topology(const Machine& machine, const std::vector<CudaPeerFacts>& peers) {
    Topology topo;
    topo.source = k_this_machine;
    topo.hwloc_version = HWLOC_VERSION;
    hwloc_topology_t t = live_hwloc();
    if (!t)
        topo.notes.push_back("hwloc could not load this machine's topology: locality unknown");
    if (machine.cuda_available) {
        for (const DeviceInfo& d : machine.devices) {
            GpuTopo g;
            g.cuda_ordinal = d.ordinal;
            g.name = d.name;
            g.pci_bus_id = normalize_pci_bus_id(d.pci_bus_id).value_or(d.pci_bus_id);
            topo.gpus.push_back(g);
        }
    } else if (t) {
        topo.gpus = nvidia_gpus(t);
        topo.notes.push_back(fmt::format("CUDA is not usable ({}): GPUs listed from the PCI bus",
                                         machine.cuda_note.empty() ? "no device" : machine.cuda_note));
    }
    build_base(topo, t);
    apply_nvlink_matrix(topo, t);

    if (!nvml::available() && !topo.gpus.empty())
        topo.notes.push_back(nvml::note() + ": NVLink unknown, PCIe generation and width from sysfs");
    for (std::size_t i = 0; i < topo.gpus.size(); ++i) {
        GpuTopo& g = topo.gpus[i];
        auto d = nvml::available() ? nvml::device(g.pci_bus_id) : std::nullopt;
        if (!d) {
            read_sysfs_pcie(g.pci_bus_id, g.pcie);
            continue;
        }
        if (g.name.empty())
            g.name = d->name;
        g.pcie.gen_current = d->pcie.gen_current;
        g.pcie.width_current = d->pcie.width_current;
        g.pcie.gen_max = d->pcie.gen_max;
        g.pcie.width_max = d->pcie.width_max;
        g.nvlink_known = true;
        g.nvlink_rate = d->link_rate;
        for (const nvml::Link& l : d->links)
            g.nvlinks.push_back({l.link, l.active, peer_from_nvml(l.peer), l.peer_bus_id});
        if (g.nvlinks_active() > 0 && g.nvlink_rate == 0)
            topo.notes.push_back(fmt::format("{}: NVML gives no NVLink speed: NVLink bandwidth unknown", g.label(i)));
    }
    apply_nvlink_links(topo);
    apply_cuda_peers(topo, peers);
    read_nic_sysfs(topo);
    topo.block_devices = discover_block_devices(topo);
    return topo;
}

Topology load_topology_xml(const std::string& path) {
    const std::string xml = read_input_file(path, "--from", k_max_topology_bytes);
    check_xml_text(path, xml);
    HwlocPtr t = load_hwloc_xml_text(xml);
    if (!t)
        throw UsageError(fmt::format("--from {}: hwloc {} could not read this topology (damaged or unsupported XML)",
                                     path, HWLOC_VERSION),
                         "export it again with `lstopo --of xml FILE` or `interopbench topo --export-xml FILE`");
    Topology topo;
    topo.source = path;
    topo.recorded = true;
    topo.hwloc_version = HWLOC_VERSION;
    topo.gpus = nvidia_gpus(t.get());
    build_base(topo, t.get());
    apply_nvlink_matrix(topo, t.get());
    // Anything at the sidecar's path (a dangling link, a directory, a FIFO too) is read by
    // the one reader, which explains what is wrong with it.
    std::error_code ec;
    if (std::filesystem::symlink_status(sidecar_path(path), ec).type() != std::filesystem::file_type::not_found)
        apply_sidecar(topo, sidecar_path(path));
    return topo;
}

std::string sidecar_path(const std::string& xml_path) { return xml_path + ".nvlink.json"; }

void export_topology(const Topology& topology, const std::string& path) {
    check_output_path(path);
    HwlocPtr loaded;
    hwloc_topology_t t = nullptr;
    if (topology.recorded) {
        loaded = load_hwloc_xml_text(read_input_file(topology.source, "--from", k_max_topology_bytes));
        t = loaded.get();
    } else {
        t = live_hwloc();
    }
    char* buffer = nullptr;
    int length = 0;
    if (!t || hwloc_topology_export_xmlbuffer(t, &buffer, &length, 0) != 0)
        throw UsageError(fmt::format("--export-xml {}: hwloc could not export the topology", path));
    // The length hwloc gives counts the terminating NUL.
    std::string xml(buffer, static_cast<std::size_t>(std::max(0, length - 1)));
    hwloc_free_xmlbuffer(t, buffer);
    write_file_atomic(path, xml);
    write_file_atomic(sidecar_path(path), sidecar_json(topology).dump(2) + "\n");
}

nlohmann::json topology_json(const Topology& topo) {
    nlohmann::json numa = nlohmann::json::array();
    for (const NumaNode& n : topo.numa)
        numa.push_back({{"os_index", n.os_index}, {"cpus", format_cpu_list(n.cpus)}, {"memory", n.memory}});
    nlohmann::json gpus = nlohmann::json::array();
    for (std::size_t i = 0; i < topo.gpus.size(); ++i) {
        const GpuTopo& g = topo.gpus[i];
        nlohmann::json links = nlohmann::json::array();
        for (const NvLink& l : g.nvlinks)
            links.push_back({{"link", l.link}, {"active", l.active}, {"peer", to_string(l.peer)},
                             {"peer_pci_bus_id", l.peer_bus_id}});
        gpus.push_back({
            {"index", i},
            {"label", g.label(i)},
            {"cuda_ordinal", g.cuda_ordinal >= 0 ? nlohmann::json(g.cuda_ordinal) : nlohmann::json(nullptr)},
            {"name", g.name},
            {"pci_bus_id", g.pci_bus_id},
            {"os_devices", g.os_devices},
            {"cpus", format_cpu_list(g.cpus)},
            {"numa_nodes", g.numa_nodes},
            {"pci_path", g.pci_path},
            {"pcie",
             {{"gen_current", optional_int(g.pcie.gen_current)},
              {"width_current", optional_int(g.pcie.width_current)},
              {"gen_max", optional_int(g.pcie.gen_max)},
              {"width_max", optional_int(g.pcie.width_max)},
              {"link_speed", g.pcie.link_speed},
              {"bandwidth", g.pcie.bandwidth()},
              {"label", g.pcie.label()}}},
            {"nvlink",
             {{"known", g.nvlink_known},
              {"active", g.nvlinks_active()},
              {"rate", g.nvlink_rate},
              {"to_cpu", g.nvlinks_to_cpu},
              {"links", links}}},
            {"host_path", {{"class", g.host_path()}, {"bandwidth", g.host_bandwidth()}}},
        });
    }
    nlohmann::json pairs = nlohmann::json::array();
    for (const PairTopo& p : topo.pairs) {
        nlohmann::json cuda = nullptr;
        if (p.has_cuda)
            cuda = {{"can_access_peer", p.cuda.can_access_peer},
                    {"performance_rank", p.cuda.performance_rank},
                    {"native_atomics", p.cuda.native_atomics}};
        pairs.push_back({{"from", p.from},
                         {"to", p.to},
                         {"label", topo.gpus[p.from].label(p.from) + ">" + topo.gpus[p.to].label(p.to)},
                         {"class", p.label()},
                         {"pcie_class", to_string(p.pcie_class)},
                         {"nvlinks", p.nvlinks},
                         {"via_nvswitch", p.via_nvswitch},
                         {"bandwidth", p.bandwidth(topo.gpus)},
                         {"cuda", cuda}});
    }
    nlohmann::json legend = nlohmann::json::object();
    for (const auto& [label, meaning] : path_legend())
        legend[label] = meaning;
    const auto text_or_null = [](const std::string& v) { return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v); };
    nlohmann::json nics = nlohmann::json::array();
    for (std::size_t i = 0; i < topo.nics.size(); ++i) {
        const NicTopo& n = topo.nics[i];
        nlohmann::json ports = nlohmann::json::array();
        for (const NicPort& p : n.ports)
            ports.push_back({{"port", p.port},
                             {"state", text_or_null(p.state)},
                             {"rate", text_or_null(p.rate)},
                             {"bandwidth", p.bandwidth > 0 ? nlohmann::json(p.bandwidth) : nlohmann::json(nullptr)},
                             {"link_layer", text_or_null(p.link_layer)}});
        nlohmann::json gpu_paths = nlohmann::json::array(), nic_paths = nlohmann::json::array();
        for (PathClass c : n.gpu_paths)
            gpu_paths.push_back(to_string(c));
        for (PathClass c : n.nic_paths)
            nic_paths.push_back(to_string(c));
        nlohmann::json nearest = nullptr;
        if (n.nearest_gpu >= 0) {
            const auto g = static_cast<std::size_t>(n.nearest_gpu);
            nearest = {{"index", g}, {"label", topo.gpus[g].label(g)}, {"class", to_string(n.nearest_class())}};
        }
        nics.push_back({{"index", i},
                        {"label", n.label(i)},
                        {"name", n.name},
                        {"kind", n.kind},
                        {"pci_bus_id", n.pci_bus_id},
                        {"interfaces", n.interfaces},
                        {"cpus", format_cpu_list(n.cpus)},
                        {"numa_node", n.numa_nodes.size() == 1 ? nlohmann::json(n.numa_nodes[0]) : nlohmann::json(nullptr)},
                        {"link_speed", n.link_speed},
                        {"ports", ports},
                        {"nearest_gpu", nearest},
                        {"gpu_paths", gpu_paths},
                        {"nic_paths", nic_paths},
                        {"bridges_to_nearest_gpu", n.bridges}});
    }
    return {{"source", topo.source},
            {"recorded", topo.recorded},
            {"hwloc_version", topo.hwloc_version},
            {"host", {{"packages", topo.packages}, {"cores", topo.cores}, {"pus", topo.pus},
                      {"nvidia_pci_gpus", topo.nvidia_pci_gpus}}},
            {"numa_nodes", numa},
            {"gpus", gpus},
            {"pairs", pairs},
            {"has_nvswitch", topo.has_nvswitch},
            {"has_infiniband", topo.has_infiniband},
            {"nics", nics},
            {"legend", legend},
            {"block_devices", block_devices_json(topo.block_devices)},
            {"notes", topo.notes}};
}

unsigned numa_node_count() {
    hwloc_topology_t t = live_hwloc();
    const int n = t ? hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE) : 0;
    return n > 0 ? static_cast<unsigned>(n) : 1;
}

namespace {

struct Bitmap {
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    Bitmap() = default;
    Bitmap(const Bitmap&) = delete;
    Bitmap& operator=(const Bitmap&) = delete;
    ~Bitmap() { hwloc_bitmap_free(b); }
};

hwloc_obj_t gpu_locality(hwloc_topology_t t, const std::string& pci_bus_id) {
    hwloc_obj_t pci = find_pci(t, pci_bus_id);
    return pci ? hwloc_get_non_io_ancestor_obj(t, pci) : nullptr;
}

bool bind_to_nodes(hwloc_topology_t t, hwloc_const_nodeset_t nodes) {
    Bitmap nodeset, cpus;
    hwloc_bitmap_and(nodeset.b, nodes, hwloc_topology_get_allowed_nodeset(t));
    hwloc_cpuset_from_nodeset(t, cpus.b, nodeset.b);
    hwloc_bitmap_and(cpus.b, cpus.b, hwloc_topology_get_allowed_cpuset(t));
    if (hwloc_bitmap_iszero(nodeset.b) || hwloc_bitmap_iszero(cpus.b))
        return false;
    if (hwloc_set_cpubind(t, cpus.b, HWLOC_CPUBIND_THREAD) != 0)
        return false;
    if (hwloc_set_membind(t, nodeset.b, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) != 0) {
        reset_placement();
        return false;
    }
    return true;
}

} // namespace

bool place_near_device(const std::string& pci_bus_id) {
    hwloc_topology_t t = live_hwloc();
    if (!t || numa_node_count() < 2)
        return false;
    hwloc_obj_t local = gpu_locality(t, pci_bus_id);
    return local && local->nodeset && bind_to_nodes(t, local->nodeset);
}

bool numa_node_exists(unsigned node) {
    hwloc_topology_t t = live_hwloc();
    if (!t) return node == 0;
    return hwloc_get_numanode_obj_by_os_index(t, node) != nullptr || (node == 0 && numa_node_count() == 1);
}

bool place_on_numa_node(unsigned node) {
    hwloc_topology_t t = live_hwloc();
    if (!t || numa_node_count() < 2)
        return false;
    Bitmap one;
    hwloc_bitmap_only(one.b, node);
    return bind_to_nodes(t, one.b);
}

bool place_host_side(const CaseContext& ctx, int device) {
    if (!ctx.bind_numa || !ctx.machine) return false;
    const DeviceInfo* d = ctx.machine->device(device);
    return d && place_near_device(d->pci_bus_id);
}

bool place_away_from_device(const std::string& pci_bus_id) {
    hwloc_topology_t t = live_hwloc();
    if (!t || numa_node_count() < 2)
        return false;
    hwloc_obj_t local = gpu_locality(t, pci_bus_id);
    if (!local || !local->nodeset)
        return false;
    Bitmap remote;
    hwloc_bitmap_andnot(remote.b, hwloc_topology_get_allowed_nodeset(t), local->nodeset);
    const int node = hwloc_bitmap_first(remote.b);
    if (node < 0)
        return false;
    hwloc_bitmap_only(remote.b, static_cast<unsigned>(node));
    return bind_to_nodes(t, remote.b);
}

void reset_placement() {
    hwloc_topology_t t = live_hwloc();
    if (!t)
        return;
    hwloc_set_cpubind(t, hwloc_topology_get_allowed_cpuset(t), HWLOC_CPUBIND_THREAD);
    hwloc_set_membind(t, hwloc_topology_get_allowed_nodeset(t), HWLOC_MEMBIND_DEFAULT,
                      HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET);
}

} // namespace interopbench
