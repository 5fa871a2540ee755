// Topology: path classes and locality from recorded machines, NVLink from hwloc's distance
// matrix and from the sidecar, export round trips, bad --from input, result annotation.
//
// Fixtures in tests/data/topology/ (made for these tests):
// | file | machine | what it exercises |
// | --- | --- | --- |
// | `switch-tree-6gpu.xml` | synthetic 2-socket, 6 A100 on a PCIe switch tree (two cascaded switches), a second host bridge on socket 0, one GPU on socket 1, an NVMe, an NVIDIA audio function, a ConnectX NIC | every PCIe class: PIX, PXB, PHB, NODE, SYS; non-GPU NVIDIA functions ignored; InfiniBand seen |
// | `h200-2gpu-nvlink.xml` + `.nvlink.json` | hand-written model of the 2 x H200 machine: 1 NUMA node, GPUs straight under the host bridge, sidecar with 18 active NVLinks each at 26.562 GB/s | NV18 from the sidecar, PCIe Gen5 x16, CUDA peer facts |
// | `gpu-machine-2xh200.xml` + `.nvlink.json` | the 2 x H200 GPU machine itself, recorded there with `interopbench topo --export-xml` (unedited): KVM guest, 1 NUMA node, GPUs under the host bridge, 18 NVLinks each to NVSwitches the guest cannot see | the tool's own export of a real machine read back: NV18 through NVSwitch, Gen5 x16 |
//
// The RDMA NICs' port facts come from the sysfs trees of tests/data/sysfs/ (its README.md).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "test_support.hpp"

#include "families/builtin.hpp"
#include "gpu/gpu_facts.hpp"
#include "interopbench/limits.hpp"
#include "interopbench/errors.hpp"
#include "topology/rdma.hpp"
#include "topology/topology.hpp"
#include "presentation/formats.hpp"

using namespace interopbench;
namespace fs = std::filesystem;

namespace {

const std::string k_shared = INTEROPBENCH_SOURCE_DIR "/../shared/fixtures/topology/";
const std::string k_data = INTEROPBENCH_SOURCE_DIR "/tests/data/topology/";
// Recorded sysfs and /proc trees, one folder per case (tests/data/sysfs/README.md).
const std::string k_sysfs = INTEROPBENCH_SOURCE_DIR "/tests/data/sysfs/";

std::string label(const Topology& t, std::size_t a, std::size_t b) {
    const PairTopo* p = t.pair(a, b);
    REQUIRE(p != nullptr);
    return p->label();
}

// Every unordered pair has the same class both ways.
void check_symmetric(const Topology& t) {
    for (std::size_t a = 0; a < t.gpus.size(); ++a)
        for (std::size_t b = 0; b < t.gpus.size(); ++b)
            if (a != b)
                CHECK(label(t, a, b) == label(t, b, a));
}

// Unique per process so parallel test runs do not collide.
fs::path temp_dir(const std::string& name) {
    fs::path dir = fs::temp_directory_path() / ("interopbench-topology-" + std::to_string(getpid()) + "-" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

void write(const fs::path& path, const std::string& content) {
    std::ofstream(path, std::ios::binary) << content;
}

std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

TEST_CASE("pcie_bandwidth: encoded rate per direction") {
    CHECK(pcie_bandwidth(5, 16) == doctest::Approx(63.015e9).epsilon(1e-4));
    CHECK(pcie_bandwidth(4, 16) == doctest::Approx(31.508e9).epsilon(1e-4));
    CHECK(pcie_bandwidth(3, 16) == doctest::Approx(15.754e9).epsilon(1e-4));
    CHECK(pcie_bandwidth(1, 1) == doctest::Approx(0.25e9));
    CHECK(pcie_bandwidth(2, 8) == doctest::Approx(4e9));
    CHECK(pcie_bandwidth(6, 16) == doctest::Approx(121e9).epsilon(1e-3));
    CHECK(pcie_bandwidth(0, 16) == 0);
    CHECK(pcie_bandwidth(5, 0) == 0);

    PcieLink link;
    CHECK(link.bandwidth() == 0);
    CHECK(link.label() == "?");
    link.link_speed = 15.75e9;
    CHECK(link.bandwidth() == 15.75e9);
    link.gen_max = 5;
    link.width_max = 16;
    CHECK(link.bandwidth() == doctest::Approx(63.015e9).epsilon(1e-4));
    CHECK(link.label() == "Gen5 x16");
}

TEST_CASE("normalize_pci_bus_id") {
    CHECK(normalize_pci_bus_id("0000:1B:00.0") == "0000:1b:00.0");
    CHECK(normalize_pci_bus_id("00000000:1B:00.0") == "0000:1b:00.0");
    CHECK(normalize_pci_bus_id("1b:00.1") == "0000:1b:00.1");
    CHECK(normalize_pci_bus_id(" 0002:01:00.0 ") == "0002:01:00.0");
    CHECK(normalize_pci_bus_id("10000:01:00.0") == "10000:01:00.0");
    for (const char* bad : {"", "zz", "0000:1b:00", "0000:1b:20.0", "0000:1b:00.8", "0000:1bb:00.0", "0000:1b:00.0x",
                            "-1:00.0", "0000:1b.00:0"})
        CHECK_MESSAGE(!normalize_pci_bus_id(bad), bad);
}

TEST_CASE("CPU lists") {
    CHECK(format_cpu_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
    CHECK(format_cpu_list({7}) == "7");
    CHECK(format_cpu_list({}).empty());
}

TEST_CASE("recorded POWER8 with NVLink: classes, NUMA, NV# from the distance matrix") {
    const std::string path = k_shared + "power8-4gpu-nvlink.xml";
    if (!testing::need_fixture(path)) return;
    const Topology t = load_topology_xml(path);
    REQUIRE(t.gpus.size() == 4);
    CHECK(t.recorded);
    CHECK(t.numa.size() == 2);
    CHECK(t.packages == 2);
    const char* bus[] = {"0002:01:00.0", "0003:01:00.0", "000a:01:00.0", "000b:01:00.0"};
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(t.gpus[i].pci_bus_id == bus[i]);
        CHECK(t.gpus[i].cuda_ordinal == -1);
        CHECK(t.gpus[i].name == "Tesla P100-SXM2-16GB");
        CHECK(t.gpus[i].numa_nodes == std::vector<unsigned>{i < 2 ? 0u : 1u});
        CHECK(t.gpus[i].nvlinks_to_cpu == 2);
        CHECK(t.gpus[i].host_path() == "NV2");
        CHECK(t.gpus[i].host_bandwidth() == doctest::Approx(40e9));
        CHECK(t.gpus[i].pcie.link_speed == doctest::Approx(15.753846e9));
    }
    CHECK(format_cpu_list(t.gpus[0].cpus) == "0-1,8-9,16-17,24-25");
    CHECK(format_cpu_list(t.gpus[3].cpus) == "80-81,88-89,96-97,104-105");
    CHECK(std::find(t.gpus[0].os_devices.begin(), t.gpus[0].os_devices.end(), "nvml0") != t.gpus[0].os_devices.end());

    CHECK(label(t, 0, 1) == "NV2");
    CHECK(label(t, 2, 3) == "NV2");
    CHECK(label(t, 0, 2) == "SYS");
    CHECK(label(t, 0, 3) == "SYS");
    CHECK(label(t, 1, 2) == "SYS");
    CHECK(label(t, 1, 3) == "SYS");
    // The PCIe path under the NVLink: separate host bridges, same socket.
    CHECK(t.pair(0, 1)->pcie_class == PathClass::node);
    CHECK(t.pair(2, 3)->pcie_class == PathClass::node);
    CHECK(t.pair(0, 1)->bandwidth(t.gpus) == doctest::Approx(40e9));
    CHECK(t.pair(0, 2)->bandwidth(t.gpus) == doctest::Approx(15.753846e9));
    CHECK_FALSE(t.pair(0, 1)->via_nvswitch);
    CHECK_FALSE(t.has_nvswitch);
    check_symmetric(t);
}

TEST_CASE("recorded 2-socket machine: PHB and SYS, NUMA affinity, GPUs picked by class and vendor") {
    const std::string path = k_shared + "2socket-pci-wholeio.xml";
    if (!testing::need_fixture(path)) return;
    const Topology t = load_topology_xml(path);
    // The AMD GPU (class 0300, vendor 1002) is not ours.
    REQUIRE(t.gpus.size() == 3);
    CHECK(t.nvidia_pci_gpus == 3);
    CHECK(t.gpus[0].pci_bus_id == "0000:03:00.0");
    CHECK(t.gpus[1].pci_bus_id == "0000:83:00.0");
    CHECK(t.gpus[2].pci_bus_id == "0000:84:00.0");
    CHECK(t.gpus[0].numa_nodes == std::vector<unsigned>{0});
    CHECK(t.gpus[1].numa_nodes == std::vector<unsigned>{1});
    CHECK(t.gpus[2].numa_nodes == std::vector<unsigned>{1});
    CHECK(format_cpu_list(t.gpus[0].cpus) == "0-7,16-23");
    CHECK(format_cpu_list(t.gpus[1].cpus) == "8-15,24-31");
    CHECK(t.gpus[0].name == "Tesla M2075 Dual-Slot Computing Processor Module");
    CHECK(t.gpus[2].name == "Tesla K40m"); // from its CUDA OS device
    CHECK(t.gpus[2].os_devices == std::vector<std::string>{"cuda0", "card0"});
    CHECK(t.gpus[1].pci_path == std::vector<std::string>{"host bridge 0000:[80-84]", "bridge 0000:80:02.0"});
    CHECK(label(t, 0, 1) == "SYS");
    CHECK(label(t, 0, 2) == "SYS");
    CHECK(label(t, 1, 2) == "PHB");
    CHECK(t.has_infiniband);
    check_symmetric(t);
    for (const PairTopo& p : t.pairs) {
        CHECK(p.nvlinks == 0);
        CHECK_FALSE(p.has_cuda);
    }
}

TEST_CASE("synthetic switch tree: PIX, PXB, PHB, NODE, SYS") {
    const Topology t = load_topology_xml(k_data + "switch-tree-6gpu.xml");
    REQUIRE(t.gpus.size() == 6);
    const char* bus[] = {"0000:03:00.0", "0000:04:00.0", "0000:07:00.0", "0000:08:00.0", "0000:11:00.0", "0000:81:00.0"};
    for (std::size_t i = 0; i < 6; ++i)
        CHECK(t.gpus[i].pci_bus_id == bus[i]);
    const char* expected[6][6] = {
        {"X", "PIX", "PXB", "PHB", "NODE", "SYS"},   {"PIX", "X", "PXB", "PHB", "NODE", "SYS"},
        {"PXB", "PXB", "X", "PHB", "NODE", "SYS"},   {"PHB", "PHB", "PHB", "X", "NODE", "SYS"},
        {"NODE", "NODE", "NODE", "NODE", "X", "SYS"}, {"SYS", "SYS", "SYS", "SYS", "SYS", "X"},
    };
    for (std::size_t a = 0; a < 6; ++a)
        for (std::size_t b = 0; b < 6; ++b)
            if (a != b)
                CHECK_MESSAGE(label(t, a, b) == expected[a][b], a << ">" << b);
    for (std::size_t i = 0; i < 5; ++i) {
        CHECK(t.gpus[i].numa_nodes == std::vector<unsigned>{0});
        CHECK(format_cpu_list(t.gpus[i].cpus) == "0-3");
    }
    CHECK(t.gpus[5].numa_nodes == std::vector<unsigned>{1});
    CHECK(format_cpu_list(t.gpus[5].cpus) == "4-7");
    CHECK(t.gpus[2].pci_path.size() == 6); // host bridge, root port, 2 switches of 2 ports each
    CHECK(t.gpus[0].pcie.bandwidth() == doctest::Approx(31.507692e9));
    CHECK(t.pair(0, 5)->bandwidth(t.gpus) == doctest::Approx(31.507692e9));
    CHECK(t.gpus[0].host_path() == "PCIe");
    CHECK(t.has_infiniband);
    CHECK(t.numa.size() == 2);
    CHECK(t.numa[1].memory == 68719476736ull);
}

TEST_CASE("2 x H200 model: NV18 and Gen5 x16 from the sidecar, CUDA peer facts") {
    const Topology t = load_topology_xml(k_data + "h200-2gpu-nvlink.xml");
    REQUIRE(t.gpus.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const GpuTopo& g = t.gpus[i];
        CHECK(g.cuda_ordinal == static_cast<int>(i));
        CHECK(g.label(i) == "GPU" + std::to_string(i));
        CHECK(g.name == "NVIDIA H200");
        CHECK(g.nvlink_known);
        CHECK(g.nvlinks_active() == 18);
        CHECK(g.pcie.label() == "Gen5 x16");
        CHECK(g.host_path() == "PCIe");
        CHECK(g.host_bandwidth() == doctest::Approx(63.015e9).epsilon(1e-4));
        CHECK(g.numa_nodes == std::vector<unsigned>{0});
        CHECK(format_cpu_list(g.cpus) == "0-31");
    }
    const PairTopo* p = t.pair(0, 1);
    REQUIRE(p);
    CHECK(p->label() == "NV18");
    CHECK(p->path_class() == PathClass::nvlink);
    CHECK(p->pcie_class == PathClass::phb);
    CHECK(p->bandwidth(t.gpus) == doctest::Approx(18 * 26.562e9));
    CHECK(p->has_cuda);
    CHECK(p->cuda.can_access_peer);
    CHECK(p->cuda.performance_rank == 0);
    CHECK(p->cuda.native_atomics);
    check_symmetric(t);
}

TEST_CASE("the GPU machine's own export: NV18 through NVSwitch, Gen5 x16, one NUMA node") {
    const Topology t = load_topology_xml(k_data + "gpu-machine-2xh200.xml");
    REQUIRE(t.gpus.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        CHECK(t.gpus[i].cuda_ordinal == static_cast<int>(i));
        CHECK(t.gpus[i].pcie.label() == "Gen5 x16");
        CHECK(t.gpus[i].numa_nodes == std::vector<unsigned>{0});
        CHECK(t.gpus[i].nvlinks_active() == 18);
    }
    CHECK(label(t, 0, 1) == "NV18");
    CHECK(t.pair(0, 1)->via_nvswitch);
    CHECK(t.has_nvswitch);
    CHECK(t.pair(0, 1)->bandwidth(t.gpus) == doctest::Approx(18 * 26.562e9));
    CHECK(t.gpus[0].host_bandwidth() == doctest::Approx(63.015e9).epsilon(1e-4));
    CHECK(t.pair(0, 1)->has_cuda);
    CHECK(t.pair(0, 1)->cuda.can_access_peer);
    check_symmetric(t);
}

TEST_CASE("NVSwitch links bond every pair of switch-attached GPUs") {
    const fs::path dir = temp_dir("nvswitch");
    fs::copy_file(k_data + "h200-2gpu-nvlink.xml", dir / "t.xml");
    nlohmann::json side = nlohmann::json::parse(read(k_data + "h200-2gpu-nvlink.xml.nvlink.json"));
    // GPU0: 18 links to switches; GPU1: 16 to switches and 2 down.
    for (auto& gpu : side["gpus"])
        for (auto& link : gpu["nvlink"]["links"]) {
            link["peer"] = "nvswitch";
            link["peer_pci_bus_id"] = "0000:c0:00.0";
        }
    side["gpus"][1]["nvlink"]["links"][16]["active"] = false;
    side["gpus"][1]["nvlink"]["links"][17]["active"] = false;
    write(dir / "t.xml.nvlink.json", side.dump());
    const Topology t = load_topology_xml((dir / "t.xml").string());
    CHECK(t.has_nvswitch);
    CHECK(label(t, 0, 1) == "NV16");
    CHECK(t.pair(0, 1)->via_nvswitch);
    CHECK(t.pair(0, 1)->bandwidth(t.gpus) == doctest::Approx(16 * 26.562e9));
    CHECK(t.gpus[1].nvlinks_active() == 16);
    fs::remove_all(dir);
}

TEST_CASE("export and read back: the same classes, affinity and NVLinks") {
    const fs::path dir = temp_dir("export");
    for (const std::string& src : {k_data + "switch-tree-6gpu.xml", k_data + "h200-2gpu-nvlink.xml"}) {
        const Topology a = load_topology_xml(src);
        const std::string out = (dir / "export.xml").string();
        export_topology(a, out);
        REQUIRE(fs::exists(out));
        REQUIRE(fs::exists(sidecar_path(out)));
        CHECK(sidecar_path(out) == out + ".nvlink.json");
        const Topology b = load_topology_xml(out);
        nlohmann::json ja = topology_json(a), jb = topology_json(b);
        for (auto* j : {&ja, &jb}) {
            j->erase("source");
            j->erase("notes");
        }
        CHECK(ja == jb);
    }
    fs::remove_all(dir);
}

TEST_CASE("this machine: discovery works without a GPU, and its export reads back") {
    Machine machine; // no CUDA
    const Topology t = discover_topology(machine);
    CHECK_FALSE(t.recorded);
    CHECK(t.pus >= 1);
    CHECK(t.numa.size() >= 1);
    for (const GpuTopo& g : t.gpus)
        CHECK(g.cuda_ordinal == -1);
    const nlohmann::json j = discover_topology_json(machine);
    CHECK(j["gpus"].is_array());
    CHECK(j["host"]["pus"].get<unsigned>() == t.pus);

    const fs::path dir = temp_dir("live");
    const std::string out = (dir / "live.xml").string();
    export_topology(t, out);
    const Topology back = load_topology_xml(out);
    CHECK(back.pus == t.pus);
    CHECK(back.numa.size() == t.numa.size());
    CHECK(back.gpus.size() == t.gpus.size());
    fs::remove_all(dir);
}

TEST_CASE("topology JSON and table") {
    const Topology t = load_topology_xml(k_data + "h200-2gpu-nvlink.xml");
    const nlohmann::json j = topology_json(t);
    CHECK(j["gpus"].size() == 2);
    CHECK(j["gpus"][0]["cuda_ordinal"] == 0);
    CHECK(j["gpus"][0]["cpus"] == "0-31");
    CHECK(j["gpus"][0]["pcie"]["label"] == "Gen5 x16");
    CHECK(j["gpus"][0]["nvlink"]["active"] == 18);
    CHECK(j["gpus"][1]["host_path"]["class"] == "PCIe");
    CHECK(j["pairs"].size() == 2);
    CHECK(j["pairs"][0]["class"] == "NV18");
    CHECK(j["pairs"][0]["pcie_class"] == "PHB");
    CHECK(j["pairs"][0]["cuda"]["can_access_peer"] == true);
    CHECK(j["legend"]["NV#"].is_string());
    CHECK(j["legend"].size() == 7);

    const std::string table = find_format("table", Command::topo).render(TopologyView{t});
    for (const char* s : {"GPU0", "GPU1", "NV18", "CPU Affinity", "NUMA Affinity", "Gen5 x16", "0000:00:06.0",
                          "Legend", "PHB", "478 GB/s", "63.0 GB/s"})
        CHECK_MESSAGE(table.find(s) != std::string::npos, s);
    CHECK(find_format("markdown", Command::topo).render(TopologyView{t}).find("| GPU0") != std::string::npos);
}

Params params(std::initializer_list<std::pair<const char*, const char*>> values) {
    Params p;
    // Typed as the axis expansion types them: GPU ordinals as numbers, pairs as pairs.
    for (auto [name, value] : values) {
        const std::string n = name;
        if (n == "pair") p.set_pair(n, parse_device_pair(value));
        else if (n == "device") p.set_number(n, parse_uint(value, n));
        else p.set(n, value);
    }
    return p;
}

TEST_CASE("declared paths: limits from the topology and the device, never guessed from axes") {
    const nlohmann::json topo = topology_json(load_topology_xml(k_data + "h200-2gpu-nvlink.xml"));
    // Two H200s as CUDA reports them: 3201 MHz x 6016 bit of memory.
    nlohmann::json devices = nlohmann::json::array();
    for (int o : {0, 1})
        devices.push_back({{"ordinal", o}, {"selected", true}, {"memory_clock_khz", 3201000}, {"memory_bus_width_bits", 6016}});
    auto with_bandwidth = [](Params p, double median, std::vector<PathUse> paths) {
        Result r;
        r.params = std::move(p);
        MetricResult m;
        m.info.name = "bandwidth";
        m.info.unit = "B/s";
        m.stats.n = 10;
        m.stats.median = median;
        r.metrics.push_back(m);
        if (!paths.empty()) r.details["paths"] = paths;
        return r;
    };
    std::vector<Result> results;
    results.push_back(with_bandwidth(params({{"device", "0"}}), 55.4e9, {{PathKind::host_link, 0, -1, "h2d"}}));
    results.push_back(with_bandwidth(params({{"pair", "0>1"}}), 394.1e9, {{PathKind::peer_link, 0, 1}}));
    // A device-local copy counts each byte once and reads and writes it: half the memory's bandwidth.
    results.push_back(with_bandwidth(params({{"device", "1"}}), 2.09e12, {{PathKind::gpu_memory, 1, -1, "", 2}}));
    results.push_back(with_bandwidth(params({{"device", "0"}}), 1e9, {})); // nothing declared: no guess
    results.push_back(with_bandwidth(params({{"device", "7"}}), 1e9, {{PathKind::host_link, 7, -1, "h2d"}})); // unknown GPU
    results.push_back(with_bandwidth(params({{"device", "0"}}), 80e9, {{PathKind::host_link, 0, -1, "h2d"}})); // beats it
    // A measured ceiling (in counted bytes) on the page cache, with the host link's limit.
    Result warm = with_bandwidth(params({{"device", "0"}}), 30e9, {{PathKind::page_cache}, {PathKind::host_link, 0, -1, "h2d"}});
    warm.details["measured_limits"] = nlohmann::json::array({{{"path", "page_cache"}, {"bandwidth", 40e9}, {"source", "best read"}}});
    results.push_back(warm);

    apply_limits(results, machine_limits(topo, devices));
    CHECK(results[0].details["path"] == "host link of GPU 0 (h2d)");
    CHECK(results[0].details["path_bandwidth"].get<double>() == doctest::Approx(63.015e9).epsilon(1e-4));
    CHECK(results[0].details["efficiency"].get<double>() == doctest::Approx(55.4 / 63.015).epsilon(1e-3));
    CHECK(results[1].details["efficiency"].get<double>() == doctest::Approx(394.1 / (18 * 26.562)).epsilon(1e-3));
    const double h200_memory = 2 * 3201e6 * 6016 / 8; // 4.81 TB/s
    CHECK(memory_bandwidth(3201000, 6016) == doctest::Approx(h200_memory));
    CHECK(results[2].details["path_bandwidth"].get<double>() == doctest::Approx(h200_memory / 2));
    CHECK(results[2].details["efficiency"].get<double>() == doctest::Approx(2.09e12 / (h200_memory / 2)));
    CHECK_FALSE(results[3].details.contains("efficiency"));
    CHECK_FALSE(results[3].details.contains("path"));
    CHECK_FALSE(results[4].details.contains("efficiency"));
    CHECK(results[4].details["limit_note"].get<std::string>().find("host link of GPU 7") != std::string::npos);
    CHECK_FALSE(results[5].details.contains("efficiency"));
    CHECK(results[5].details["limit_wrong"].get<std::string>().starts_with("limit wrong: "));
    CHECK(results[6].details["path"] == "page cache");
    CHECK(results[6].details["efficiency"].get<double>() == doctest::Approx(0.75));

    // Applying again (a report read back) gives the same; without a topology the host link is unknown.
    auto again = results;
    apply_limits(again, machine_limits(topo, devices));
    CHECK(again[0].details == results[0].details);
    apply_limits(again, machine_limits(nullptr, nlohmann::json()));
    CHECK_FALSE(again[0].details.contains("efficiency"));
    CHECK(again[0].details.contains("limit_note"));
}

TEST_CASE("declared_paths reads what declare_paths and apply_limits write, and says what does not read") {
    Result r;
    CHECK(declared_paths(r).empty()); // nothing declared
    r.details["paths"] = "host_link";
    CHECK(declared_paths(r).empty()); // not a list: nothing declared
    const std::vector<PathUse> paths{{PathKind::page_cache}, {PathKind::host_link, 0, -1, "h2d"},
                                     {PathKind::peer_link, k_every_gpu, 1, "", 0.5}, {PathKind::nccl_bus, k_first_gpu}};
    r.details["paths"] = paths;
    auto back = declared_paths(r);
    REQUIRE(back.size() == paths.size());
    for (std::size_t i = 0; i < paths.size(); ++i) {
        CAPTURE(i);
        CHECK(back[i].id() == paths[i].id());
        CHECK(back[i].label() == paths[i].label());
        CHECK(back[i].traffic == paths[i].traffic);
    }
    // As apply_limits leaves them, each with its limit: the same paths.
    const nlohmann::json topo = topology_json(load_topology_xml(k_data + "h200-2gpu-nvlink.xml"));
    std::vector<Result> limited{r};
    apply_limits(limited, machine_limits(topo, nlohmann::json::array()));
    CHECK(limited[0].details["paths"][1].contains("limit"));
    back = declared_paths(limited[0]);
    REQUIRE(back.size() == paths.size());
    CHECK(back[1].id() == "host_link:0:h2d");
    // An entry that is no path: std::invalid_argument naming it, and apply_limits says so.
    r.details["paths"].push_back({{"kind", "warp_drive"}});
    CHECK_THROWS_WITH_AS(declared_paths(r), "unknown path kind 'warp_drive'", std::invalid_argument);
    std::vector<Result> bad{r};
    apply_limits(bad, machine_limits(topo, nlohmann::json::array()));
    CHECK(bad[0].details["limit_note"] == "no efficiency: unknown path kind 'warp_drive'");
}

TEST_CASE("declared paths: every built-in scenario that needs a GPU declares what its bytes cross") {
    const Registry registry = builtin_registry();
    const Machine machine;
    for (const auto& s : registry.all()) {
        if (!s->info().needs_gpu && s->info().family != "layout") continue;
        CAPTURE(s->id());
        // One configuration from the defaults (GPU axes at 0; pairs 0>1).
        std::vector<std::pair<std::string, std::string>> values;
        for (const Axis& a : s->info().axes)
            if (a.kind == AxisKind::device_pair) values.push_back({a.name, "0>1"});
            else if (a.kind == AxisKind::device) values.push_back({a.name, "0"});
        const Params p = typed_params(s->info(), values, machine);
        CHECK_FALSE(s->paths(p).empty());
    }
}

TEST_CASE("--from bad input: one-line usage errors") {
    const fs::path dir = temp_dir("bad");
    write(dir / "empty.xml", "");
    write(dir / "text.xml", "this is not XML\n");
    write(dir / "other.xml", "<?xml version=\"1.0\"?>\n<project><name>x</name></project>\n");
    write(dir / "damaged.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Machine\" cpuset=\n");
    write(dir / "unreadable.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"NoSuchType\" os_index=\"0\"/>\n</topology>\n");
    std::string newer = read(k_data + "switch-tree-6gpu.xml");
    newer.replace(newer.find("version=\"2.0\""), 13, "version=\"3.0\"");
    write(dir / "newer.xml", newer);
    fs::copy_file(k_data + "h200-2gpu-nvlink.xml", dir / "badjson.xml");
    write(dir / "badjson.xml.nvlink.json", "{ not json");
    fs::copy_file(k_data + "h200-2gpu-nvlink.xml", dir / "badschema.xml");
    write(dir / "badschema.xml.nvlink.json", R"({"schema": "something.else", "version": 1})");
    fs::copy_file(k_data + "h200-2gpu-nvlink.xml", dir / "badlinks.xml");
    write(dir / "badlinks.xml.nvlink.json",
          R"({"schema": "interopbench.nvlink", "version": 1, "gpus": [{"pci_bus_id": "0000:00:06.0", "nvlink": {"links": [{"link": "x"}]}}]})");

    const std::pair<std::string, std::string> cases[] = {
        {(dir / "missing.xml").string(), "no such file"},
        {dir.string(), "is a directory"},
        {(dir / "empty.xml").string(), "empty"},
        {(dir / "text.xml").string(), "not an XML file"},
        {(dir / "other.xml").string(), "not an hwloc topology"},
        {(dir / "damaged.xml").string(), "damaged"},
        {(dir / "unreadable.xml").string(), "could not read"},
        {(dir / "newer.xml").string(), "version 3.0 is newer"},
        {(dir / "badjson.xml").string(), "not valid JSON"},
        {(dir / "badschema.xml").string(), "not an NVLink sidecar"},
        {(dir / "badlinks.xml").string(), "malformed NVLink sidecar"},
    };
    for (const auto& [file, message] : cases) {
        CAPTURE(file);
        try {
            load_topology_xml(file);
            FAIL("no error for " << file);
        } catch (const UsageError& e) {
            const std::string what = e.what();
            CHECK_MESSAGE(what.find(message) != std::string::npos, what);
            CHECK(what.find('\n') == std::string::npos);
            CHECK_FALSE(e.hint().empty());
        }
    }

    // The real binary: exit 2, one error line (and its hint), nothing on stdout.
    for (const char* name : {"missing.xml", "text.xml", "other.xml", "newer.xml", "damaged.xml"}) {
        const auto r = testing::run_cli("topo --from '" + (dir / name).string() + "'");
        CHECK_MESSAGE(r.code == 2, name);
        CHECK(r.out.empty());
        CHECK(r.err.rfind("error: --from ", 0) == 0);
        CHECK(r.err.find(name) != std::string::npos);
    }
    CHECK(testing::run_cli("topo --format csv").code == 2);
    CHECK(testing::run_cli("topo --from '" + k_data + "switch-tree-6gpu.xml' --export-xml /nonexistent-dir/x.xml").code == 2);
    fs::remove_all(dir);
}

TEST_CASE("topo command: table and JSON of a recorded machine") {
    const auto json = testing::run_cli("topo --from '" + k_data + "h200-2gpu-nvlink.xml' --format json");
    REQUIRE(json.code == 0);
    const nlohmann::json j = nlohmann::json::parse(json.out);
    CHECK(j["pairs"][0]["class"] == "NV18");
    const auto table = testing::run_cli("topo --from '" + k_data + "switch-tree-6gpu.xml'");
    REQUIRE(table.code == 0);
    CHECK(table.out.find("PXB") != std::string::npos);
    CHECK(testing::run_cli("topo").code == 0); // this machine, GPU or not
}

// The words of the line of `text` that starts with `first` (a matrix row), or nothing.
std::vector<std::string> row_of(const std::string& text, const std::string& first) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::vector<std::string> row;
        for (std::string w; words >> w;)
            row.push_back(w);
        if (!row.empty() && row[0] == first)
            return row;
    }
    return {};
}

std::vector<std::string> classes(const std::vector<PathClass>& paths) {
    std::vector<std::string> out;
    for (PathClass c : paths)
        out.emplace_back(to_string(c));
    return out;
}

using Words = std::vector<std::string>;

TEST_CASE("topo nics: the recorded 2-socket machine's mlx5 NIC and network interfaces, classed by the XML tree") {
    const std::string path = k_shared + "2socket-pci-wholeio.xml";
    if (!testing::need_fixture(path)) return;
    const Topology t = load_topology_xml(path);
    // In the XML: package 1's host bridge [80-84] has root ports 80:01.0 (the I350 functions
    // 81:00.0 eth0 and 81:00.1 eth1), 80:02.0 (GPU1 83:00.0) and 80:03.0 (GPU2 84:00.0 and the
    // ConnectX-4 04:00.0 with ib0 and mlx5_0, Port1State 4). GPU0 03:00.0 is on package 0.
    REQUIRE(t.nics.size() == 3);
    const NicTopo& ib = t.nics[0];
    CHECK(ib.name == "mlx5_0");
    CHECK(ib.kind == "rdma");
    CHECK(ib.pci_bus_id == "0000:04:00.0");
    CHECK(ib.interfaces == Words{"ib0"});
    CHECK(ib.numa_nodes == std::vector<unsigned>{1});
    CHECK(format_cpu_list(ib.cpus) == "8-15,24-31");
    REQUIRE(ib.ports.size() == 1); // hwloc's recorded port state alone
    CHECK(ib.ports[0].port == 1);
    CHECK(ib.ports[0].state == "ACTIVE");
    CHECK(ib.ports[0].rate.empty());
    // Other socket: SYS; another root port of the same host bridge: PHB; the same root port: PIX.
    CHECK(classes(ib.gpu_paths) == Words{"SYS", "PHB", "PIX"});
    CHECK(ib.nearest_gpu == 2);
    CHECK(ib.nearest_class() == PathClass::pix);
    CHECK(ib.bridges == Words{"0000:80:03.0"});
    CHECK(classes(ib.nic_paths) == Words{"X", "PHB", "PHB"});

    for (std::size_t i : {1u, 2u}) {
        const NicTopo& eth = t.nics[i];
        CHECK(eth.kind == "net");
        CHECK(eth.name == (i == 1 ? "eth0" : "eth1"));
        CHECK(eth.pci_bus_id == (i == 1 ? "0000:81:00.0" : "0000:81:00.1"));
        CHECK(eth.ports.empty());
        CHECK(classes(eth.gpu_paths) == Words{"SYS", "PHB", "PHB"});
        CHECK(eth.nearest_gpu == 1); // a tie goes to the lower index
        CHECK(eth.bridges == Words{"0000:80:01.0", "0000:80:02.0"});
    }
    CHECK(classes(t.nics[1].nic_paths) == Words{"PHB", "X", "PIX"}); // two functions of one root port

    // The kernel's port facts replace hwloc's recorded state where the sysfs tree has them.
    Topology live = t;
    read_nic_sysfs(live, k_sysfs + "rdma-degraded/sys");
    REQUIRE(live.nics[0].ports.size() == 2);
    CHECK(live.nics[0].ports[0].state == "ACTIVE");
    CHECK(live.nics[0].ports[0].rate == "200 Gb/sec (4X HDR)");
    CHECK(live.nics[0].ports[0].bandwidth == doctest::Approx(25e9));
    CHECK(live.nics[0].ports[0].link_layer == "InfiniBand");
    CHECK(live.nics[0].ports[1].port == 2);
    CHECK(live.nics[0].ports[1].state == "DOWN");
    Topology none = t;
    read_nic_sysfs(none, k_sysfs + "no-rdma/sys"); // no class/infiniband: hwloc's state stays
    CHECK(none.nics[0].ports.size() == 1);
    CHECK(none.nics[0].ports[0].state == "ACTIVE");
}

TEST_CASE("topo nics: NIC rows and columns in the matrix, the NIC table, the JSON nics array") {
    const std::string path = k_shared + "2socket-pci-wholeio.xml";
    if (!testing::need_fixture(path)) return;
    Topology t = load_topology_xml(path);
    read_nic_sysfs(t, k_sysfs + "rdma-ready/sys");
    const std::string table = find_format("table", Command::topo).render(TopologyView{t, 0}); // each cell on one line
    CAPTURE(table);
    const Words header = row_of(table, "GPU0"); // the header has no first cell: GPU0 starts it
    REQUIRE(header.size() >= 6);
    CHECK(Words(header.begin(), header.begin() + 6) == Words{"GPU0", "GPU1", "GPU2", "NIC0", "NIC1", "NIC2"});
    const Words gpu2 = row_of(table, "GPU2");
    CHECK(Words(gpu2.begin(), gpu2.begin() + 7) == Words{"GPU2", "SYS", "PHB", "X", "PIX", "PHB", "PHB"});
    const Words nic0 = row_of(table, "NIC0"); // the matrix row comes before the NIC table's
    REQUIRE(nic0.size() >= 7);
    CHECK(Words(nic0.begin(), nic0.begin() + 7) == Words{"NIC0", "SYS", "PHB", "PIX", "X", "PHB", "PHB"});
    CHECK(nic0.back() == "0000:04:00.0");
    for (const char* s : {"NICs:", "mlx5_0", "ib0", "port 1: ACTIVE, 200 Gb/sec (4X HDR), InfiniBand", "GPU2 (PIX)",
                          "eth1", "the same device (GPU or NIC)"})
        CHECK_MESSAGE(table.find(s) != std::string::npos, s);
    CHECK(find_format("markdown", Command::topo).render(TopologyView{t}).find("| NIC0 |") != std::string::npos);

    const nlohmann::json j = topology_json(t);
    REQUIRE(j["nics"].size() == 3);
    const nlohmann::json& n = j["nics"][0];
    CHECK(n["label"] == "NIC0");
    CHECK(n["name"] == "mlx5_0");
    CHECK(n["kind"] == "rdma");
    CHECK(n["pci_bus_id"] == "0000:04:00.0");
    CHECK(n["interfaces"] == nlohmann::json::array({"ib0"}));
    CHECK(n["numa_node"] == 1);
    CHECK(n["cpus"] == "8-15,24-31");
    CHECK(n["ports"][0]["port"] == 1);
    CHECK(n["ports"][0]["state"] == "ACTIVE");
    CHECK(n["ports"][0]["rate"] == "200 Gb/sec (4X HDR)");
    CHECK(n["ports"][0]["bandwidth"].get<double>() == doctest::Approx(25e9));
    CHECK(n["ports"][0]["link_layer"] == "InfiniBand");
    CHECK(n["nearest_gpu"]["label"] == "GPU2");
    CHECK(n["nearest_gpu"]["index"] == 2);
    CHECK(n["nearest_gpu"]["class"] == "PIX");
    CHECK(n["gpu_paths"] == nlohmann::json::array({"SYS", "PHB", "PIX"}));
    CHECK(n["nic_paths"] == nlohmann::json::array({"X", "PHB", "PHB"}));
    CHECK(n["bridges_to_nearest_gpu"] == nlohmann::json::array({"0000:80:03.0"}));
    CHECK(j["nics"][1]["kind"] == "net");
    CHECK(j["nics"][1]["ports"].empty());
}

TEST_CASE("topo nics: the switch tree's NIC, and machines without an RDMA NIC") {
    const Topology t = load_topology_xml(k_data + "switch-tree-6gpu.xml");
    REQUIRE(t.nics.size() == 1);
    CHECK(t.nics[0].name == "mlx5_0");
    CHECK(t.nics[0].pci_bus_id == "0000:82:00.0");
    CHECK(classes(t.nics[0].gpu_paths) == Words{"SYS", "SYS", "SYS", "SYS", "SYS", "PHB"});
    CHECK(t.nics[0].nearest_gpu == 5);
    CHECK(t.nics[0].bridges == Words{"0000:80:02.0", "0000:80:01.0"}); // up to the host bridge, down to GPU5
    CHECK(t.nics[0].ports.empty()); // the XML records no port

    const Topology model = load_topology_xml(k_data + "h200-2gpu-nvlink.xml");
    CHECK(model.nics.empty());
    CHECK(topology_json(model)["nics"] == nlohmann::json::array());
    CHECK(find_format("table", Command::topo).render(TopologyView{model}).find("NICs: none on the PCI bus") != std::string::npos);
    CHECK(row_of(find_format("table", Command::topo).render(TopologyView{model}), "NIC0").empty());

    // The GPU machine's guest: a virtio network interface beside the GPUs, no RDMA device.
    const Topology guest = load_topology_xml(k_data + "gpu-machine-2xh200.xml");
    REQUIRE(guest.nics.size() == 1);
    CHECK(guest.nics[0].name == "eth0");
    CHECK(guest.nics[0].kind == "net");
    CHECK(classes(guest.nics[0].gpu_paths) == Words{"PHB", "PHB"});
    CHECK(guest.nics[0].bridges.empty());
}

TEST_CASE("topo nics: rate text and kernel release parsing") {
    CHECK(rdma_rate_bandwidth("200 Gb/sec (4X HDR)") == doctest::Approx(25e9));
    CHECK(rdma_rate_bandwidth("2.5 Gb/sec (1X SDR)") == doctest::Approx(0.3125e9));
    CHECK(rdma_rate_bandwidth("") == 0);
    CHECK(rdma_rate_bandwidth("fast") == 0);
    CHECK(rdma_rate_bandwidth("100 Mb/sec") == 0);
    CHECK(kernel_at_least("6.8.0-45-generic", 5, 12));
    CHECK(kernel_at_least("5.12.0", 5, 12));
    CHECK_FALSE(kernel_at_least("5.4.0-200-generic", 5, 12));
    CHECK_FALSE(kernel_at_least("", 5, 12));
    CHECK_FALSE(kernel_at_least("linux", 5, 12));
}

TEST_CASE("topo nics: the topo command shows NICs, and this machine's JSON has a nics array") {
    const std::string path = k_shared + "2socket-pci-wholeio.xml";
    const auto here = testing::run_cli("topo --format json");
    REQUIRE(here.code == 0);
    const nlohmann::json live = nlohmann::json::parse(here.out);
    CHECK(live["nics"].is_array());
    for (const auto& n : live["nics"]) {
        CHECK(n["name"].is_string());
        CHECK((n["kind"] == "rdma" || n["kind"] == "net"));
    }
    if (!testing::need_fixture(path)) return;
    const auto json = testing::run_cli("topo --from '" + path + "' --format json");
    REQUIRE(json.code == 0);
    CHECK(nlohmann::json::parse(json.out)["nics"][0]["name"] == "mlx5_0");
    const auto table = testing::run_cli("topo --from '" + path + "'");
    REQUIRE(table.code == 0);
    CHECK(row_of(table.out, "NIC0").size() >= 7);
}

TEST_CASE("placement is a no-op where it cannot apply") {
    CHECK(numa_node_count() >= 1);
    CHECK_FALSE(place_near_device("0000:ff:1f.7"));
    CHECK_FALSE(place_away_from_device("0000:ff:1f.7"));
    CHECK_FALSE(place_near_device("not a bus id"));
    reset_placement();
}
