// The topology for people: the matrix, the legend, the NICs, the paths, the block devices.
#include "presentation/topology_text.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "interopbench/text.hpp"
#include "presentation/formats.hpp"
#include "presentation/output.hpp"

namespace interopbench {
namespace {

std::string yes_no(bool b) { return b ? "yes" : "no"; }

// "18/18 up, 26.56 GB/s each", or the rate alone where only hwloc's matrix told it.
std::string nvlink_label(const GpuTopo& g) {
    const std::string rate = g.nvlink_rate > 0 ? format_value(g.nvlink_rate, "B/s") + " each" : "rate unknown";
    if (g.nvlink_known && !g.nvlinks.empty())
        return fmt::format("{}/{} up, {}", g.nvlinks_active(), g.nvlinks.size(), rate);
    if (!g.nvlink_known && g.nvlink_rate > 0)
        return rate;
    return g.nvlink_known ? "none" : "?";
}

// "port 1: ACTIVE, 200 Gb/sec (4X HDR), InfiniBand; port 2: DOWN", or "-" when none is known.
std::string ports_text(const NicTopo& n) {
    std::vector<std::string> ports;
    for (const NicPort& p : n.ports) {
        std::string s = fmt::format("port {}: {}", p.port, p.state.empty() ? "state unknown" : p.state);
        for (const std::string* extra : {&p.rate, &p.link_layer})
            if (!extra->empty())
                s += ", " + *extra;
        ports.push_back(s);
    }
    std::string out;
    for (const std::string& p : ports)
        out += (out.empty() ? "" : "; ") + p;
    return out.empty() ? "-" : out;
}

// The NICs: which device each label of the matrix is, its ports and its nearest GPU.
std::string render_nics(const Topology& topo, bool markdown, std::size_t width) {
    if (topo.nics.empty())
        return "\nNICs: none on the PCI bus\n";
    std::vector<std::vector<std::string>> rows{
        {"NIC", "device", "kind", "interfaces", "bus id", "ports", "NUMA", "nearest GPU"}};
    for (std::size_t i = 0; i < topo.nics.size(); ++i) {
        const NicTopo& n = topo.nics[i];
        std::string interfaces;
        for (const std::string& f : n.interfaces)
            interfaces += (interfaces.empty() ? "" : ",") + f;
        std::string nearest = "-";
        if (n.nearest_gpu >= 0) {
            const auto g = static_cast<std::size_t>(n.nearest_gpu);
            nearest = fmt::format("{} ({})", topo.gpus[g].label(g), to_string(n.nearest_class()));
        }
        rows.push_back({n.label(i), n.name, n.kind, interfaces.empty() ? "-" : interfaces, n.pci_bus_id, ports_text(n),
                        n.numa_nodes.empty() ? "?" : format_cpu_list(n.numa_nodes), nearest});
    }
    return "\nNICs:\n" + render_table(rows, markdown, width);
}

std::string render_block_devices(const std::vector<BlockDeviceTopo>& devices, const Topology& topology, bool markdown,
                                 std::size_t width) {
    if (devices.empty()) return {};
    std::vector<std::string> header = {"Block device", "Kind", "PCI bus id", "NUMA", "Size", "Read-ahead", "Scheduler"};
    for (std::size_t i = 0; i < topology.gpus.size(); ++i) header.push_back(topology.gpus[i].label(i));
    std::vector<std::vector<std::string>> rows = {header};
    for (const BlockDeviceTopo& d : devices) {
        std::vector<std::string> row = {d.name,
                                        d.kind,
                                        d.pci_bus_id.empty() ? "-" : d.pci_bus_id,
                                        d.numa_node >= 0 ? std::to_string(d.numa_node) : "-",
                                        fmt::format("{:.1f} GB", static_cast<double>(d.size) / 1e9),
                                        d.queue.read_ahead_kb >= 0 ? fmt::format("{} KiB", d.queue.read_ahead_kb) : "-",
                                        d.queue.scheduler.empty() ? "-" : d.queue.scheduler};
        for (const std::string& p : d.gpu_paths) row.push_back(p);
        rows.push_back(row);
    }
    return (markdown ? "\n### Block devices (path class to each GPU)\n\n" : "\nBlock devices (path class to each GPU):\n") +
           render_table(rows, markdown, width);
}

} // namespace

std::string render_topology(const Format& format, const TopologyView& view) {
    const Topology& topo = view.topology;
    const bool markdown = format.markdown;
    const std::size_t width = markdown ? 0 : view.width;
    std::string out = wrap(fmt::format("Topology of {} (hwloc {})", display_text(topo.source), topo.hwloc_version), width, "", "  ");
    out += fmt::format("Host: {} package(s), {} cores, {} hardware threads\n", topo.packages, topo.cores, topo.pus);
    for (const NumaNode& n : topo.numa)
        out += wrap(fmt::format("NUMA node {}: CPUs {}, {}", n.os_index, format_cpu_list(n.cpus),
                                n.memory ? fmt::format("{:.1f} GiB", static_cast<double>(n.memory) / (1ull << 30))
                                         : "memory unknown"),
                    width, "", "  ");
    out += "\n";
    if (topo.gpus.empty()) {
        out += "No NVIDIA GPU found.\n";
        out += render_nics(topo, markdown, width);
    } else {
        // Beyond k_max_pair_gpus there are no pairs: the matrix keeps its affinity columns.
        const bool with_pairs = topo.gpus.size() <= k_max_pair_gpus;
        // NIC rows and columns where every NIC pair is classified (as many NICs as GPUs allowed).
        const std::size_t nics = with_pairs && topo.nics.size() <= k_max_pair_gpus ? topo.nics.size() : 0;
        std::vector<std::vector<std::string>> matrix;
        std::vector<std::string> header{""};
        for (std::size_t i = 0; with_pairs && i < topo.gpus.size(); ++i)
            header.push_back(topo.gpus[i].label(i));
        for (std::size_t i = 0; i < nics; ++i)
            header.push_back(topo.nics[i].label(i));
        for (const char* h : {"CPU Affinity", "NUMA Affinity", "PCIe", "NVLink", "Bus id"})
            header.emplace_back(h);
        matrix.push_back(header);
        const auto affinity = [](std::vector<std::string>& row, const std::vector<unsigned>& cpus,
                                 const std::vector<unsigned>& numa) {
            row.push_back(cpus.empty() ? "?" : format_cpu_list(cpus));
            row.push_back(numa.empty() ? "?" : format_cpu_list(numa));
        };
        for (std::size_t a = 0; a < topo.gpus.size(); ++a) {
            const GpuTopo& g = topo.gpus[a];
            std::vector<std::string> row{g.label(a)};
            for (std::size_t b = 0; with_pairs && b < topo.gpus.size(); ++b) {
                const PairTopo* p = a == b ? nullptr : topo.pair(a, b);
                row.push_back(a == b ? "X" : p ? p->label() : "?");
            }
            for (std::size_t k = 0; k < nics; ++k)
                row.push_back(a < topo.nics[k].gpu_paths.size() ? to_string(topo.nics[k].gpu_paths[a]) : "?");
            affinity(row, g.cpus, g.numa_nodes);
            row.push_back(g.pcie.label());
            row.push_back(nvlink_label(g));
            row.push_back(g.pci_bus_id);
            matrix.push_back(row);
        }
        for (std::size_t k = 0; k < nics; ++k) {
            const NicTopo& n = topo.nics[k];
            std::vector<std::string> row{n.label(k)};
            for (std::size_t b = 0; b < topo.gpus.size(); ++b)
                row.push_back(b < n.gpu_paths.size() ? to_string(n.gpu_paths[b]) : "?");
            for (std::size_t m = 0; m < nics; ++m)
                row.push_back(m < n.nic_paths.size() ? to_string(n.nic_paths[m]) : "?");
            affinity(row, n.cpus, n.numa_nodes);
            row.push_back(n.link_speed > 0 ? format_value(n.link_speed, "B/s") : "?");
            row.push_back("-");
            row.push_back(n.pci_bus_id);
            matrix.push_back(row);
        }
        out += render_table(matrix, markdown, width);
        out += "\nLegend:\n";
        for (const auto& [label, meaning] : path_legend())
            out += markdown ? fmt::format("- {:<5} {}\n", label, meaning)
                            : wrap(fmt::format("{:<5} {}", label, meaning), width, "  ", "        ");
        out += render_nics(topo, markdown, width);

        out += "\nPaths (theoretical bandwidth per direction):\n";
        std::vector<std::vector<std::string>> paths{
            {"path", "class", "bandwidth", "peer access", "P2P rank", "native atomics"}};
        for (std::size_t i = 0; i < topo.gpus.size(); ++i) {
            const GpuTopo& g = topo.gpus[i];
            const double bw = g.host_bandwidth();
            paths.push_back({"host>" + g.label(i), g.nvlinks_to_cpu ? g.host_path() : fmt::format("{} {}", g.host_path(), g.pcie.label()),
                             bw > 0 ? format_value(bw, "B/s") : "?", "", "", ""});
        }
        for (const PairTopo& p : topo.pairs) {
            const double bw = p.bandwidth(topo.gpus);
            paths.push_back({topo.gpus[p.from].label(p.from) + ">" + topo.gpus[p.to].label(p.to),
                             p.label() + (p.via_nvswitch ? " (NVSwitch)" : ""),
                             bw > 0 ? format_value(bw, "B/s") : "?",
                             p.has_cuda ? yes_no(p.cuda.can_access_peer) : "?",
                             p.has_cuda && p.cuda.performance_rank >= 0 ? std::to_string(p.cuda.performance_rank) : "?",
                             p.has_cuda ? yes_no(p.cuda.native_atomics) : "?"});
        }
        out += render_table(paths, markdown, width);
    }
    out += render_block_devices(topo.block_devices, topo, markdown, width);
    if (!topo.notes.empty()) {
        out += "\nNotes:\n";
        for (const std::string& n : topo.notes)
            out += markdown ? fmt::format("- {}\n", display_text(n)) : wrap(display_text(n), width, "  ");
    }
    return out;
}

std::string render_topology_json(const Format&, const TopologyView& view) { return topology_json(view.topology).dump(2) + "\n"; }

} // namespace interopbench
