// `interopbench topo`: the GPU topology of this machine, or of a recorded one.
#include <iostream>
#include <memory>

#include "cli/cli.hpp"
#include "gpu/gpu_facts.hpp"
#include "topology/topology.hpp"

namespace interopbench::cli {
namespace {

struct TopoOptions {
    std::string format = "table";
    std::string from;
    std::string export_xml;
    bool wide = false;
};

} // namespace

void add_topo(CLI::App& app, Outcome& out) {
    auto opts = std::make_shared<TopoOptions>();
    CLI::App* cmd = app.add_subcommand(
        "topo", "GPU topology: path class of every GPU pair and of each NIC to every GPU (nvidia-smi topo -m "
                "legend), CPU and NUMA affinity, RDMA ports, theoretical bandwidth of each path");
    add_format_option(cmd, opts->format, Command::topo, "output format");
    cmd->add_option("--from", opts->from,
                    "analyse a recorded hwloc XML topology instead of this machine (from `lstopo --of xml` or "
                    "--export-xml); FILE.nvlink.json beside it is read when present")
        ->option_text("FILE");
    cmd->add_option("--export-xml", opts->export_xml,
                    "also write the topology as hwloc XML to FILE, and what hwloc XML cannot hold (NVLinks, "
                    "PCIe generation and width, CUDA peer facts) to FILE.nvlink.json")
        ->option_text("FILE");
    add_wide_option(cmd, opts->wide);
    cmd->callback([opts, &out] {
        const Format& format = find_format(opts->format, Command::topo);
        Topology topology;
        if (opts->from.empty()) {
            const Machine machine = probe_machine("");
            topology = discover_topology(machine, cuda_peer_facts(machine));
        } else {
            topology = load_topology_xml(opts->from);
        }
        if (!opts->export_xml.empty()) {
            export_topology(topology, opts->export_xml);
            std::cerr << "wrote " << display_text(opts->export_xml) << " and " << display_text(sidecar_path(opts->export_xml)) << "\n";
        }
        std::cout << format.render(TopologyView{topology, output_width(opts->wide)});
        out.code = static_cast<int>(ExitCode::ok);
    });
}

} // namespace interopbench::cli
