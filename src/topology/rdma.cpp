// RDMA facts from sysfs and /proc: port states and rates, the peer-memory path, ACS on the
// bridges between a NIC and its nearest GPU, the IOMMU mode. hwloc places the NICs
// (topology.cpp); this file only reads the kernel's files.
#include "topology/rdma.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <fmt/format.h>

namespace interopbench {
namespace {

namespace fs = std::filesystem;

// PCIe extended configuration space: capabilities from byte 0x100, 4096 bytes in all.
constexpr std::size_t k_ext_config_start = 0x100, k_config_size = 4096;
constexpr unsigned k_ext_cap_acs = 0x000d;
// ACS control register bits: P2P request redirect, P2P completion redirect.
constexpr unsigned k_acs_request_redirect = 1u << 2, k_acs_completion_redirect = 1u << 3;

std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
        ++i;
    return s.substr(i);
}

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string s;
    if (in)
        std::getline(in, s);
    return trim(s);
}

std::optional<std::string> whole_file(const std::string& path, std::size_t limit) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::string s(limit, '\0');
    in.read(s.data(), static_cast<std::streamsize>(limit));
    s.resize(static_cast<std::size_t>(in.gcount()));
    return s;
}

bool exists(const std::string& path) {
    std::error_code ec;
    return fs::exists(path, ec);
}

// Names of the entries of `dir`, sorted; empty when it cannot be listed.
std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        out.push_back(it->path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

bool all_digits(const std::string& s) {
    return !s.empty() && s.size() <= 6 &&
           std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

unsigned le16(const std::string& b, std::size_t at) {
    return static_cast<unsigned char>(b[at]) | static_cast<unsigned>(static_cast<unsigned char>(b[at + 1])) << 8;
}

std::uint32_t le32(const std::string& b, std::size_t at) {
    return le16(b, at) | static_cast<std::uint32_t>(le16(b, at + 2)) << 16;
}

const char* on_off(bool b) { return b ? "on" : "off"; }

} // namespace

double rdma_rate_bandwidth(const std::string& rate) {
    const char* s = rate.c_str();
    char* end = nullptr;
    const double v = std::strtod(s, &end);
    if (end == s || v <= 0)
        return 0;
    const std::string unit = trim(std::string(end)).substr(0, 6);
    return unit == "Gb/sec" ? v * 1e9 / 8 : 0;
}

std::optional<std::vector<NicPort>> read_rdma_ports(const std::string& sysfs_root, const std::string& device) {
    const std::string dir = sysfs_root + "/class/infiniband/" + device + "/ports";
    if (!exists(dir))
        return std::nullopt;
    std::vector<NicPort> ports;
    for (const std::string& name : entries(dir)) {
        if (!all_digits(name))
            continue;
        NicPort p;
        p.port = static_cast<unsigned>(std::stoul(name));
        const std::string base = dir + "/" + name + "/";
        // "4: ACTIVE": the name after the number.
        const std::string state = first_line(base + "state");
        const std::size_t colon = state.find(':');
        p.state = colon == std::string::npos ? state : trim(state.substr(colon + 1));
        p.rate = first_line(base + "rate");
        p.bandwidth = rdma_rate_bandwidth(p.rate);
        p.link_layer = first_line(base + "link_layer");
        ports.push_back(p);
    }
    std::sort(ports.begin(), ports.end(), [](const NicPort& a, const NicPort& b) { return a.port < b.port; });
    return ports;
}

void read_nic_sysfs(Topology& topology, const std::string& sysfs_root) {
    for (NicTopo& n : topology.nics)
        if (n.kind == "rdma")
            if (auto ports = read_rdma_ports(sysfs_root, n.name))
                n.ports = std::move(*ports);
}

AcsBridge read_acs(const std::string& sysfs_root, const std::string& bus_id) {
    AcsBridge a;
    a.bus_id = bus_id;
    const std::string path = sysfs_root + "/bus/pci/devices/" + bus_id + "/config";
    const auto config = whole_file(path, k_config_size);
    if (!config) {
        a.evidence = fmt::format("{}: its config space is not readable in sysfs", bus_id);
        return a;
    }
    if (config->size() < k_ext_config_start + 8) {
        a.evidence = fmt::format("{}: sysfs shows {} bytes of its config space; ACS sits past byte 256, which the "
                                 "kernel shows to root only",
                                 bus_id, config->size());
        return a;
    }
    // Walk the extended capability list: a 32-bit header (ID, version, next offset) each.
    std::set<std::size_t> seen;
    for (std::size_t at = k_ext_config_start; at + 8 <= config->size() && seen.insert(at).second;) {
        const std::uint32_t header = le32(*config, at);
        if (header == 0 || header == 0xffffffffu)
            break;
        if ((header & 0xffffu) == k_ext_cap_acs) {
            const unsigned control = le16(*config, at + 6);
            const bool request = control & k_acs_request_redirect, completion = control & k_acs_completion_redirect;
            a.redirect = request || completion;
            a.evidence = fmt::format("{}: ACS control 0x{:04x}, P2P request redirect {}, completion redirect {}", bus_id,
                                     control, on_off(request), on_off(completion));
            return a;
        }
        const std::size_t next = (header >> 20) & 0xffcu;
        if (next < k_ext_config_start)
            break;
        at = next;
    }
    a.redirect = false;
    a.evidence = fmt::format("{}: no ACS capability, nothing is redirected", bus_id);
    return a;
}

bool kernel_at_least(const std::string& release, int major, int minor) {
    char* end = nullptr;
    const long ma = std::strtol(release.c_str(), &end, 10);
    if (end == release.c_str() || *end != '.')
        return false;
    const long mi = std::strtol(end + 1, nullptr, 10);
    return ma > major || (ma == major && mi >= minor);
}

RdmaFacts rdma_facts(const Topology& topology, const std::string& sysfs_root, const std::string& proc_root) {
    RdmaFacts f;
    f.infiniband_class = exists(sysfs_root + "/class/infiniband");
    for (const NicTopo& n : topology.nics) {
        if (n.kind != "rdma")
            continue;
        RdmaNic r;
        r.name = n.name;
        r.pci_bus_id = n.pci_bus_id;
        r.ports = n.ports;
        for (std::size_t i = 0; i < n.gpu_paths.size() && i < topology.gpus.size(); ++i)
            r.gpu_paths += fmt::format("{}{} {}", r.gpu_paths.empty() ? "" : ", ", topology.gpus[i].label(i),
                                       to_string(n.gpu_paths[i]));
        if (n.nearest_gpu >= 0 && static_cast<std::size_t>(n.nearest_gpu) < topology.gpus.size()) {
            const auto g = static_cast<std::size_t>(n.nearest_gpu);
            r.nearest_gpu = topology.gpus[g].label(g);
            r.nearest_class = n.nearest_class();
            for (const std::string& bridge : n.bridges)
                r.bridges.push_back(read_acs(sysfs_root, bridge));
        }
        f.nics.push_back(r);
    }
    f.nvidia_peermem = exists(sysfs_root + "/module/nvidia_peermem");
    const std::string version = proc_root + "/driver/nvidia/version";
    f.nvidia_driver = exists(version);
    f.nvidia_open_module = first_line(version).find("Open Kernel Module") != std::string::npos;
    f.dmabuf_sysfs = exists(sysfs_root + "/kernel/dmabuf");
    f.kernel_release = first_line(proc_root + "/sys/kernel/osrelease");
    std::set<std::string> types;
    for (const std::string& group : entries(sysfs_root + "/kernel/iommu_groups")) {
        f.iommu_groups = true;
        if (std::string type = first_line(sysfs_root + "/kernel/iommu_groups/" + group + "/type"); !type.empty())
            types.insert(type);
    }
    f.iommu_group_types.assign(types.begin(), types.end());
    f.iommu_units = !entries(sysfs_root + "/class/iommu").empty();
    if (auto cmdline = whole_file(proc_root + "/cmdline", 64 * 1024))
        f.cmdline = trim(*cmdline);
    return f;
}

} // namespace interopbench
