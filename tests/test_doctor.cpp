// Doctor checks against a fake machine model, each in its passing and failing states, and the
// real command on this machine (which may have no GPU at all).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "gpu/gpu_facts.hpp"
#include "topology/doctor.hpp"
#include "topology/rdma.hpp"
#include "test_support.hpp"
#include "presentation/doctor_text.hpp"
#include "presentation/formats.hpp"

using namespace interopbench;

namespace {

// A healthy 2 x H200 machine joined by 18 NVLinks: every check passes.
DoctorFacts healthy() {
    DoctorFacts f;
    f.cuda_available = true;
    f.driver_version = 13000;
    f.runtime_version = 13000;
    f.driver_release = "580.159.04";
    f.nvidia_pci_gpus = 2;
    f.nvml_available = true;
    f.nvml_init_error = 0;
    for (int i = 0; i < 2; ++i) {
        DoctorGpu g;
        g.label = "GPU" + std::to_string(i);
        g.ordinal = i;
        g.name = "NVIDIA H200";
        g.pci_bus_id = i == 0 ? "0000:00:06.0" : "0000:00:07.0";
        for (unsigned c = 0; c < 32; ++c)
            g.local_cpus.push_back(c);
        g.numa_nodes = {0};
        g.pcie_gen_max = 5;
        g.pcie_width_max = 16;
        g.pcie_gen_idle = 1; // idle links train down; only the loaded reading counts
        g.pcie_width_idle = 16;
        g.pcie_gen_loaded = 5;
        g.pcie_width_loaded = 16;
        g.nvlink_known = true;
        for (unsigned l = 0; l < 18; ++l)
            g.nvlinks_up.push_back(l);
        g.persistence = true;
        g.clock_reasons = k_clock_gpu_idle;
        g.clock_reasons_loaded = true;
        g.ecc_enabled = true;
        g.ecc_uncorrected_volatile = 0;
        g.ecc_uncorrected_aggregate = 0;
        g.retired_pages = 0;
        g.retired_pending = false;
        g.remapped_uncorrectable = 0;
        g.remap_pending = false;
        g.remap_failure = false;
        g.compute_mode = 0;
        g.other_pids = std::vector<unsigned>{};
        g.mempool_release_threshold = UINT64_MAX;
        g.register_read_only = true;
        f.gpus.push_back(g);
    }
    for (int a = 0; a < 2; ++a) {
        DoctorPair p;
        p.from = f.gpus[a].label;
        p.to = f.gpus[1 - a].label;
        p.path = "NV18";
        p.pcie_class = PathClass::phb;
        p.nvlinks = 18;
        p.can_access_peer = true;
        f.pairs.push_back(p);
    }
    for (unsigned c = 0; c < 32; ++c)
        f.process_cpus.push_back(c);
    // A ConnectX under the same PCIe switch as GPU0, its port up, nvidia_peermem loaded, ACS
    // off on the switch ports, no IOMMU.
    RdmaNic nic;
    nic.name = "mlx5_0";
    nic.pci_bus_id = "0000:00:08.0";
    nic.ports = {NicPort{1, "ACTIVE", "200 Gb/sec (4X HDR)", 25e9, "InfiniBand"}};
    nic.nearest_gpu = "GPU0";
    nic.nearest_class = PathClass::pix;
    nic.gpu_paths = "GPU0 PIX, GPU1 PHB";
    nic.bridges = {AcsBridge{"0000:00:01.0", false, "0000:00:01.0: ACS control 0x0000"}};
    f.rdma.infiniband_class = true;
    f.rdma.nics = {nic};
    f.rdma.nvidia_peermem = true;
    return f;
}

// The status of the result for `subject` (the only one when subject is empty).
CheckStatus status(const std::vector<CheckResult>& results, const std::string& subject = "") {
    auto it = std::find_if(results.begin(), results.end(),
                           [&](const CheckResult& r) { return subject.empty() || r.subject == subject; });
    REQUIRE_MESSAGE(it != results.end(), "no result for '" << subject << "'");
    INFO(it->evidence);
    return it->status;
}

CheckStatus worst(const std::vector<CheckResult>& results) {
    CheckStatus w = CheckStatus::pass;
    for (const CheckResult& r : results)
        if (r.status == CheckStatus::fail || (r.status == CheckStatus::warn && w != CheckStatus::fail))
            w = r.status;
    return w;
}

std::string read(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

TEST_CASE("healthy machine: every check passes, each result has evidence") {
    const auto results = run_checks(healthy());
    CHECK_FALSE(any_failed(results));
    for (const CheckResult& r : results) {
        CAPTURE(r.id);
        CAPTURE(r.subject);
        CAPTURE(r.evidence);
        CHECK(r.status == CheckStatus::pass);
        CHECK_FALSE(r.evidence.empty());
        CHECK(r.evidence.find('\n') == std::string::npos);
        CHECK(r.fix.find('\n') == std::string::npos);
    }
    // One result per GPU for the per-GPU checks, one per ordered pair for peer access.
    CHECK(std::count_if(results.begin(), results.end(), [](const CheckResult& r) { return r.id == "pcie_link"; }) == 2);
    CHECK(std::count_if(results.begin(), results.end(), [](const CheckResult& r) { return r.id == "peer_access"; }) == 2);
}

TEST_CASE("no GPU at all (a build machine): the GPU checks SKIP with the reason, nothing fails") {
    DoctorFacts f;
    f.cuda_note = "no NVIDIA driver: libcuda.so.1 could not be loaded";
    f.nvml_note = "libnvidia-ml.so.1 not found";
    CufileHostFacts cufile; // no nvidia-fs, as on any machine without GDS
    f.cufile = cufile;
    const auto results = run_checks(f);
    CHECK_FALSE(any_failed(results));
    CHECK(status(check_gpu_present(f)) == CheckStatus::skip);
    CHECK(check_gpu_present(f)[0].evidence.find("libcuda.so.1") != std::string::npos);
    CHECK(check_gpu_present(f)[0].fix.find("--require-gpu") != std::string::npos);
    for (const CheckResult& r : results) {
        CAPTURE(r.id);
        CAPTURE(r.evidence);
        CHECK(r.status != CheckStatus::warn); // nothing about the missing GPU is a machine warning
    }
    CHECK(status(check_pcie_link(f)) == CheckStatus::skip);
    CHECK(check_pcie_link(f)[0].evidence == "no GPU: no NVIDIA driver"); // the reason, in a few words
    CHECK(status(check_peer_access(f)) == CheckStatus::skip);
    CHECK(check_peer_access(f)[0].evidence == "no GPU: no NVIDIA driver");
    CHECK(status(check_driver(f)) == CheckStatus::skip);
    CHECK(status(check_nvml(f)) == CheckStatus::skip);
    CHECK(status(check_storage(f), "nvidia-fs") == CheckStatus::skip);
    CHECK(find_format("table", Command::doctor).render(ChecksView{results}).find("0 FAIL, 0 WARN") != std::string::npos);

    f.require_gpu = true; // `doctor --require-gpu`: a GPU was expected
    CHECK(status(check_gpu_present(f)) == CheckStatus::fail);
    CHECK(any_failed(run_checks(f)));
    f.require_gpu = false;

    f.nvidia_pci_gpus = 2; // GPUs on the bus, but no driver: a broken GPU machine
    CHECK(status(check_gpu_present(f)) == CheckStatus::fail);
    CHECK(check_gpu_present(f)[0].evidence.find("2 NVIDIA GPU(s)") != std::string::npos);

    f = DoctorFacts{}; // the CUDA driver is there but sees no GPU
    f.cuda_note = "the CUDA driver reports no GPU";
    CHECK(status(check_gpu_present(f)) == CheckStatus::skip);
    CHECK(check_iommu(f)[0].evidence == "the CUDA driver reports no GPU");
}

TEST_CASE("gpu_present: a GPU missing from CUDA") {
    DoctorFacts f = healthy();
    f.nvidia_pci_gpus = 3;
    CHECK(status(check_gpu_present(f)) == CheckStatus::warn);
    f.env["CUDA_VISIBLE_DEVICES"] = "0,1";
    CHECK(status(check_gpu_present(f)) == CheckStatus::pass);
}

TEST_CASE("driver older than the runtime") {
    DoctorFacts f = healthy();
    f.driver_version = 12040;
    CHECK(status(check_driver(f)) == CheckStatus::fail);
    f.driver_version = 13000;
    f.runtime_version = 13010;
    CHECK(status(check_driver(f)) == CheckStatus::warn);
    f.driver_version = 13020;
    CHECK(status(check_driver(f)) == CheckStatus::pass);
}

TEST_CASE("NVML missing or mismatched") {
    DoctorFacts f = healthy();
    f.nvml_available = false;
    f.nvml_init_error = -1;
    f.nvml_note = "libnvidia-ml.so.1 not found";
    CHECK(status(check_nvml(f)) == CheckStatus::warn);
    f.nvml_init_error = 18;
    CHECK(status(check_nvml(f)) == CheckStatus::fail);
}

TEST_CASE("PCIe link below its maximum under load") {
    DoctorFacts f = healthy();
    f.gpus[1].pcie_gen_loaded = 4;
    auto r = check_pcie_link(f);
    CHECK(status(r, "GPU0") == CheckStatus::pass);
    CHECK(status(r, "GPU1") == CheckStatus::fail);
    f = healthy();
    f.gpus[0].pcie_width_loaded = 8;
    CHECK(status(check_pcie_link(f), "GPU0") == CheckStatus::fail);
    f = healthy();
    f.gpus[0].pcie_gen_loaded.reset();
    f.gpus[0].pcie_note = "no NVML";
    CHECK(status(check_pcie_link(f), "GPU0") == CheckStatus::skip);
    f.gpus[0].pcie_gen_max = 0;
    CHECK(status(check_pcie_link(f), "GPU0") == CheckStatus::skip);
}

TEST_CASE("peers that cannot access each other") {
    DoctorFacts f = healthy();
    f.pairs[0].can_access_peer = false;
    CHECK(status(check_peer_access(f), "GPU0>GPU1") == CheckStatus::fail);
    CHECK(status(check_peer_access(f), "GPU1>GPU0") == CheckStatus::pass);
    f.pairs[0].nvlinks = 0;
    f.pairs[0].pcie_class = PathClass::pix;
    f.pairs[0].path = "PIX";
    CHECK(status(check_peer_access(f), "GPU0>GPU1") == CheckStatus::warn);
    f.pairs[0].pcie_class = PathClass::sys;
    f.pairs[0].path = "SYS";
    CHECK(status(check_peer_access(f), "GPU0>GPU1") == CheckStatus::pass);
    f.pairs[0].can_access_peer.reset();
    CHECK(status(check_peer_access(f), "GPU0>GPU1") == CheckStatus::skip);
    f.gpus.pop_back();
    CHECK(status(check_peer_access(f)) == CheckStatus::skip);
}

TEST_CASE("NVLinks down, fewer than the peer, or counted differently at both ends") {
    DoctorFacts f = healthy();
    f.gpus[1].nvlinks_up.resize(16);
    f.gpus[1].nvlinks_down = {16, 17};
    auto r = check_nvlink(f);
    CHECK(status(r, "GPU0") == CheckStatus::pass);
    CHECK(status(r, "GPU1") == CheckStatus::fail);
    CHECK(r[1].evidence.find("16,17") != std::string::npos);

    f = healthy();
    f.gpus[1].nvlinks_up.resize(12); // fewer links exist than on its peer
    CHECK(status(check_nvlink(f), "GPU1") == CheckStatus::warn);

    f = healthy();
    f.pairs[1].nvlinks = 17;
    CHECK(status(check_nvlink(f), "GPU0-GPU1") == CheckStatus::fail);

    f = healthy();
    for (auto& g : f.gpus) {
        g.nvlinks_down = g.nvlinks_up;
        g.nvlinks_up.clear();
    }
    CHECK(status(check_nvlink(f), "GPU0") == CheckStatus::warn);
    for (auto& g : f.gpus)
        g.nvlinks_down.clear();
    CHECK(status(check_nvlink(f), "GPU0") == CheckStatus::pass); // a PCIe-only GPU
    f.gpus[0].nvlink_known = false;
    CHECK(status(check_nvlink(f), "GPU0") == CheckStatus::skip);
}

TEST_CASE("process affinity excludes the GPU's local CPUs") {
    DoctorFacts f = healthy();
    f.gpus[1].local_cpus = {32, 33, 34, 35};
    f.gpus[1].numa_nodes = {1};
    auto r = check_cpu_affinity(f);
    CHECK(status(r, "GPU0") == CheckStatus::pass);
    CHECK(status(r, "GPU1") == CheckStatus::warn);
    CHECK(r[1].fix.find("--cpunodebind=1") != std::string::npos);
    f.gpus[1].local_cpus.clear();
    CHECK(status(check_cpu_affinity(f), "GPU1") == CheckStatus::skip);
}

TEST_CASE("memlock limit") {
    DoctorFacts f = healthy();
    CHECK(status(check_memlock(f)) == CheckStatus::pass);
    f.memlock = 64 * 1024;
    CHECK(status(check_memlock(f)) == CheckStatus::warn);
    f.memlock = 2 * k_memlock_min;
    CHECK(status(check_memlock(f)) == CheckStatus::pass);
}

TEST_CASE("default pool release threshold") {
    DoctorFacts f = healthy();
    f.gpus[0].mempool_release_threshold = 0; // CUDA's default: advice, not a machine fault
    CHECK(status(check_mempool(f), "GPU0") == CheckStatus::info);
    CHECK_FALSE(check_mempool(f)[0].fix.empty());
    const std::string table = find_format("table", Command::doctor).render(ChecksView{check_mempool(f)});
    CHECK(table.find("INFO  mempool") != std::string::npos);
    CHECK(table.find("advice: ") != std::string::npos);
    CHECK(table.find("1 INFO") != std::string::npos);
    CHECK(checks_json(check_mempool(f))["summary"]["info"] == 1);
    f.gpus[0].mempool_release_threshold.reset();
    CHECK(status(check_mempool(f), "GPU0") == CheckStatus::skip);
}

TEST_CASE("registering the page cache: allowed, refused by the GPU, or held back by the memlock limit") {
    DoctorFacts f = healthy();
    CHECK(status(check_registered_cache(f), "GPU0") == CheckStatus::pass);
    f.gpus[0].register_read_only = false; // the GPU or driver cannot: advice, not a fault
    CHECK(status(check_registered_cache(f), "GPU0") == CheckStatus::info);
    CHECK(check_registered_cache(f)[0].evidence.find("cudaDevAttrHostRegisterReadOnlySupported 0") != std::string::npos);
    f.gpus[0].register_read_only.reset();
    CHECK(status(check_registered_cache(f), "GPU0") == CheckStatus::skip);
    f = healthy();
    f.memlock = 64 * 1024;
    CHECK(status(check_registered_cache(f), "GPU0") == (::geteuid() == 0 ? CheckStatus::pass : CheckStatus::warn));
}

TEST_CASE("persistence mode") {
    DoctorFacts f = healthy();
    f.gpus[0].persistence = false;
    CHECK(status(check_persistence(f), "GPU0") == CheckStatus::warn);
    f.gpus[0].persistence.reset();
    CHECK(status(check_persistence(f), "GPU0") == CheckStatus::skip);
}

TEST_CASE("clock throttling") {
    DoctorFacts f = healthy();
    f.gpus[0].clock_reasons = k_clock_hw_thermal | k_clock_gpu_idle;
    CHECK(status(check_clocks(f), "GPU0") == CheckStatus::fail);
    CHECK(check_clocks(f)[0].evidence.find("hardware thermal") != std::string::npos);
    f.gpus[0].clock_reasons = k_clock_hw_power_brake;
    CHECK(status(check_clocks(f), "GPU0") == CheckStatus::fail);
    f.gpus[0].clock_reasons = k_clock_sw_power_cap;
    CHECK(status(check_clocks(f), "GPU0") == CheckStatus::warn);
    f.gpus[0].clock_reasons = k_clock_app_setting | k_clock_sync_boost;
    CHECK(status(check_clocks(f), "GPU0") == CheckStatus::pass);
    f.gpus[0].clock_reasons.reset();
    CHECK(status(check_clocks(f), "GPU0") == CheckStatus::skip);
}

TEST_CASE("ECC errors and retired pages") {
    DoctorFacts f = healthy();
    f.gpus[0].ecc_uncorrected_volatile = 3;
    CHECK(status(check_ecc(f), "GPU0") == CheckStatus::fail);
    f = healthy();
    f.gpus[0].remap_pending = true;
    CHECK(status(check_ecc(f), "GPU0") == CheckStatus::fail);
    f = healthy();
    f.gpus[0].remap_failure = true;
    CHECK(status(check_ecc(f), "GPU0") == CheckStatus::fail);
    f = healthy();
    f.gpus[0].retired_pending = true;
    CHECK(status(check_ecc(f), "GPU0") == CheckStatus::fail);
    f = healthy();
    f.gpus[0].retired_pages = 2;
    CHECK(status(check_ecc(f), "GPU0") == CheckStatus::warn);
    f = healthy();
    f.gpus[0].ecc_uncorrected_aggregate = 1;
    CHECK(status(check_ecc(f), "GPU0") == CheckStatus::warn);
    f = healthy();
    f.gpus[0].ecc_enabled = false;
    CHECK(status(check_ecc(f), "GPU0") == CheckStatus::warn);
    DoctorGpu unknown;
    unknown.label = "GPU0";
    f.gpus = {unknown};
    CHECK(status(check_ecc(f), "GPU0") == CheckStatus::skip);
}

TEST_CASE("compute mode and other processes") {
    DoctorFacts f = healthy();
    f.gpus[0].compute_mode = 2;
    CHECK(status(check_compute_mode(f), "GPU0") == CheckStatus::fail);
    f.gpus[0].compute_mode = 3;
    CHECK(status(check_compute_mode(f), "GPU0") == CheckStatus::warn);
    f.gpus[1].other_pids = std::vector<unsigned>{4242};
    CHECK(status(check_other_processes(f), "GPU1") == CheckStatus::warn);
    CHECK(check_other_processes(f)[1].evidence.find("4242") != std::string::npos);
    f.gpus[1].other_pids.reset();
    CHECK(status(check_other_processes(f), "GPU1") == CheckStatus::skip);
}

TEST_CASE("NCCL variables") {
    DoctorFacts f = healthy();
    CHECK(status(check_nccl_env(f)) == CheckStatus::pass);

    f.env["NCCL_P2P_DISABLE"] = "1";
    CHECK(status(check_nccl_env(f), "NCCL_P2P_DISABLE") == CheckStatus::fail);
    f.env["NCCL_P2P_DISABLE"] = "0";
    CHECK(status(check_nccl_env(f)) == CheckStatus::pass);
    f.env.clear();

    f.env["NCCL_P2P_LEVEL"] = "LOC";
    CHECK(status(check_nccl_env(f), "NCCL_P2P_LEVEL") == CheckStatus::fail);
    f.env["NCCL_P2P_LEVEL"] = "NVL"; // the pair is NVLink: allowed
    CHECK(status(check_nccl_env(f), "NCCL_P2P_LEVEL") == CheckStatus::pass);
    f.env["NCCL_P2P_LEVEL"] = "bogus";
    CHECK(status(check_nccl_env(f), "NCCL_P2P_LEVEL") == CheckStatus::warn);
    DoctorFacts pcie = f;
    for (auto& p : pcie.pairs) {
        p.nvlinks = 0;
        p.path = "PHB";
    }
    pcie.env["NCCL_P2P_LEVEL"] = "PIX";
    CHECK(status(check_nccl_env(pcie), "NCCL_P2P_LEVEL") == CheckStatus::warn);
    pcie.env["NCCL_P2P_LEVEL"] = "SYS";
    CHECK(status(check_nccl_env(pcie), "NCCL_P2P_LEVEL") == CheckStatus::pass);
    f.env.clear();

    // No pair that could use P2P: disabling it costs nothing here.
    DoctorFacts single = healthy();
    single.gpus.pop_back();
    single.pairs.clear();
    single.env["NCCL_P2P_DISABLE"] = "1";
    CHECK(status(check_nccl_env(single), "NCCL_P2P_DISABLE") == CheckStatus::warn);

    // NVLS off is intended on shared machines: never a FAIL.
    f.env["NCCL_NVLS_ENABLE"] = "0";
    CHECK(status(check_nccl_env(f), "NCCL_NVLS_ENABLE") == CheckStatus::pass);
    f.has_nvswitch = true;
    CHECK(status(check_nccl_env(f), "NCCL_NVLS_ENABLE") == CheckStatus::warn);
    CHECK(check_nccl_env(f)[0].evidence.find("shared machines") != std::string::npos);
    f.env.clear();

    f.env["NCCL_SHM_DISABLE"] = "1";
    CHECK(status(check_nccl_env(f), "NCCL_SHM_DISABLE") == CheckStatus::warn);
    f.env.clear();
    f.env["NCCL_IB_DISABLE"] = "1";
    CHECK(status(check_nccl_env(f), "NCCL_IB_DISABLE") == CheckStatus::pass);
    f.has_infiniband = true;
    CHECK(status(check_nccl_env(f), "NCCL_IB_DISABLE") == CheckStatus::warn);
    f.env.clear();
    f.env["NCCL_NET_GDR_LEVEL"] = "LOC";
    CHECK(status(check_nccl_env(f), "NCCL_NET_GDR_LEVEL") == CheckStatus::warn);
    f.env.clear();
    f.env["NCCL_ALGO"] = "Tree";
    CHECK(status(check_nccl_env(f), "NCCL_ALGO") == CheckStatus::warn);
    f.env.clear();
    f.env["NCCL_DEBUG"] = "INFO"; // harmless
    CHECK(worst(check_nccl_env(f)) == CheckStatus::pass);
}

TEST_CASE("CUDA variables") {
    DoctorFacts f = healthy();
    CHECK(status(check_cuda_env(f)) == CheckStatus::pass);
    f.env["CUDA_LAUNCH_BLOCKING"] = "1";
    CHECK(status(check_cuda_env(f), "CUDA_LAUNCH_BLOCKING") == CheckStatus::warn);
    f.env.clear();
    f.env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1";
    CHECK(status(check_cuda_env(f), "CUDA_DEVICE_MAX_CONNECTIONS") == CheckStatus::warn);
    f.env["CUDA_DEVICE_MAX_CONNECTIONS"] = "32";
    CHECK(worst(check_cuda_env(f)) == CheckStatus::pass);
}

TEST_CASE("IOMMU translation") {
    DoctorFacts f = healthy();
    f.gpus[0].iommu_type = "DMA-FQ";
    f.gpus[1].iommu_type = "identity";
    auto r = check_iommu(f);
    CHECK(status(r, "GPU0") == CheckStatus::warn);
    CHECK(status(r, "GPU1") == CheckStatus::pass);
}

TEST_CASE("JSON and table renderings") {
    DoctorFacts f = healthy();
    f.gpus[0].ecc_uncorrected_volatile = 1;
    f.gpus[1].persistence = false;
    const auto results = run_checks(f);
    const nlohmann::json j = checks_json(results);
    CHECK(j["failed"] == true);
    CHECK(j["summary"]["fail"] == 1);
    CHECK(j["summary"]["warn"] == 1);
    CHECK(j["checks"].size() == results.size());
    CHECK(j["checks"][0].contains("evidence"));
    CHECK(j["checks"][0].contains("fix"));
    const std::string table = find_format("table", Command::doctor).render(ChecksView{results});
    CHECK(table.find("FAIL  ecc") != std::string::npos);
    CHECK(table.find("fix: ") != std::string::npos);
    CHECK(table.find("1 FAIL, 1 WARN") != std::string::npos);
    CHECK(find_format("markdown", Command::doctor).render(ChecksView{results}).find("| FAIL | ecc | GPU0 |") != std::string::npos);
}

TEST_CASE("facts of this machine: no throw, environment allow-listed") {
    setenv("NCCL_DOCTOR_TEST_VARIABLE", "1", 1);
    setenv("INTEROPBENCH_DOCTOR_TEST_OTHER", "1", 1);
    Machine machine;
    const DoctorFacts f = gather_doctor_facts(machine);
    CHECK(f.env.count("NCCL_DOCTOR_TEST_VARIABLE") == 1);
    CHECK(f.env.count("INTEROPBENCH_DOCTOR_TEST_OTHER") == 0);
    CHECK_FALSE(f.process_cpus.empty());
    const auto results = run_checks(f);
    // CUDA is unusable in this Machine: a FAIL only where NVIDIA GPUs sit on the bus.
    CHECK(status(check_gpu_present(f)) == (f.nvidia_pci_gpus > 0 ? CheckStatus::fail : CheckStatus::skip));
    unsetenv("NCCL_DOCTOR_TEST_VARIABLE");
    unsetenv("INTEROPBENCH_DOCTOR_TEST_OTHER");
}

TEST_CASE("doctor command: exit 1 exactly when a check fails, and no GPU alone never fails it") {
    namespace fs = std::filesystem;
    const fs::path out = fs::temp_directory_path() / ("interopbench-doctor-" + std::to_string(getpid()) + ".json");
    const std::string cmd = std::string("'") + INTEROPBENCH_BINARY + "' doctor --format json >'" + out.string() + "' 2>/dev/null";
    const int status_code = interopbench::testing::run_shell(cmd);
    REQUIRE(WIFEXITED(status_code));
    const nlohmann::json j = nlohmann::json::parse(read(out));
    CHECK(WEXITSTATUS(status_code) == (j["failed"].get<bool>() ? 1 : 0));
    std::string gpu_present;
    for (const auto& c : j["checks"])
        if (c["id"] == "gpu_present") gpu_present = c["status"].get<std::string>();
    if (gpu_present == "SKIP") {
        // A machine without a GPU (a build machine): the GPU checks cannot fail, so exit 0;
        // --require-gpu (with the short -f) turns the missing GPU into a FAIL, exit 1.
        CHECK(WEXITSTATUS(status_code) == 0);
        const std::string req = std::string("'") + INTEROPBENCH_BINARY + "' doctor -f json --require-gpu >'" + out.string() + "' 2>/dev/null";
        const int req_code = interopbench::testing::run_shell(req);
        REQUIRE(WIFEXITED(req_code));
        CHECK(WEXITSTATUS(req_code) == 1);
        CHECK(nlohmann::json::parse(read(out))["failed"] == true);
    }
    fs::remove(out);
}

// ---- GPUDirect RDMA: recorded machines (hwloc XML) with recorded sysfs and /proc trees ----

namespace {

const std::string k_topology_shared = INTEROPBENCH_SOURCE_DIR "/../shared/fixtures/topology/";
const std::string k_topology_data = INTEROPBENCH_SOURCE_DIR "/tests/data/topology/";
const std::string k_sysfs_cases = INTEROPBENCH_SOURCE_DIR "/tests/data/sysfs/";
const std::string k_two_socket = k_topology_shared + "2socket-pci-wholeio.xml";

// The doctor's facts for a recorded machine as if its sysfs and /proc were the case's trees:
// the GPUs (labels only) and the RDMA facts.
DoctorFacts rdma_case(const std::string& xml, const std::string& name) {
    Topology t = load_topology_xml(xml);
    const std::string root = k_sysfs_cases + name;
    read_nic_sysfs(t, root + "/sys");
    DoctorFacts f;
    for (std::size_t i = 0; i < t.gpus.size(); ++i) {
        DoctorGpu g;
        g.label = t.gpus[i].label(i);
        g.pci_bus_id = t.gpus[i].pci_bus_id;
        f.gpus.push_back(g);
    }
    f.rdma = rdma_facts(t, root + "/sys", root + "/proc");
    return f;
}

// The one result of a check (a copy: the results are a temporary).
CheckResult only(const std::vector<CheckResult>& results) {
    REQUIRE(results.size() == 1);
    return results[0];
}

bool mentions(const CheckResult& r, const std::string& text) { return r.evidence.find(text) != std::string::npos; }

} // namespace

TEST_CASE("doctor rdma: the 2-socket machine ready for GPUDirect RDMA: every check passes") {
    if (!testing::need_fixture(k_two_socket)) return;
    const DoctorFacts f = rdma_case(k_two_socket, "rdma-ready");
    const CheckResult peer = only(check_rdma_peer_memory(f));
    CHECK(peer.status == CheckStatus::pass);
    CHECK(mentions(peer, "nvidia_peermem loaded"));
    const CheckResult path = only(check_rdma_path(f));
    CHECK(path.subject == "mlx5_0");
    CHECK(path.status == CheckStatus::pass);
    CHECK(mentions(path, "nearest GPU GPU2 over PIX (GPU0 SYS, GPU1 PHB, GPU2 PIX)"));
    const CheckResult acs = only(check_rdma_acs(f));
    CHECK(acs.status == CheckStatus::pass);
    CHECK(mentions(acs, "0000:80:03.0: ACS control 0x0000"));
    const CheckResult iommu = only(check_rdma_iommu(f));
    CHECK(iommu.status == CheckStatus::pass);
    CHECK(mentions(iommu, "passthrough (iommu=pt"));
    const CheckResult link = only(check_rdma_link(f));
    CHECK(link.subject == "mlx5_0 port 1");
    CHECK(link.status == CheckStatus::pass);
    CHECK(link.evidence == "port 1 ACTIVE, 200 Gb/sec (4X HDR), InfiniBand");
}

TEST_CASE("doctor rdma: the 2-socket machine degraded: no peer memory, ACS redirect, IOMMU translating, a port down") {
    if (!testing::need_fixture(k_two_socket)) return;
    const DoctorFacts f = rdma_case(k_two_socket, "rdma-degraded");
    const CheckResult peer = only(check_rdma_peer_memory(f));
    CHECK(peer.status == CheckStatus::warn);
    CHECK(mentions(peer, "not the open one"));
    CHECK(peer.fix.find("nvidia_peermem") != std::string::npos);
    CHECK(only(check_rdma_path(f)).status == CheckStatus::pass);
    const CheckResult acs = only(check_rdma_acs(f));
    CHECK(acs.status == CheckStatus::warn);
    CHECK(mentions(acs, "ACS control 0x001d, P2P request redirect on, completion redirect on"));
    const CheckResult iommu = only(check_rdma_iommu(f));
    CHECK(iommu.status == CheckStatus::warn);
    CHECK(mentions(iommu, "DMA-FQ"));
    CHECK(mentions(iommu, "no iommu=pt"));
    const auto link = check_rdma_link(f);
    CHECK(status(link, "mlx5_0 port 1") == CheckStatus::pass);
    CHECK(status(link, "mlx5_0 port 2") == CheckStatus::warn);
    CHECK(link[1].evidence.find("port 2 DOWN") == 0);
    CHECK_FALSE(any_failed(link));
}

TEST_CASE("doctor rdma: dma-buf without nvidia_peermem, ACS unreadable without root, IOMMU off") {
    if (!testing::need_fixture(k_two_socket)) return;
    const DoctorFacts f = rdma_case(k_two_socket, "rdma-dmabuf-user");
    const CheckResult peer = only(check_rdma_peer_memory(f));
    CHECK(peer.status == CheckStatus::pass);
    CHECK(mentions(peer, "dma-buf"));
    CHECK(mentions(peer, "open kernel module"));
    CHECK(mentions(peer, "kernel 6.8.0-45-generic"));
    const CheckResult acs = only(check_rdma_acs(f));
    CHECK(acs.status == CheckStatus::skip);
    CHECK(mentions(acs, "64 bytes"));
    CHECK(mentions(acs, "root only"));
    const CheckResult iommu = only(check_rdma_iommu(f));
    CHECK(iommu.status == CheckStatus::pass);
    CHECK(mentions(iommu, "IOMMU off"));
    const CheckResult link = only(check_rdma_link(f));
    CHECK(link.status == CheckStatus::pass);
    CHECK(mentions(link, "400 Gb/sec (4X NDR), Ethernet"));

    // The same open module on a kernel before RDMA took dma-buf: nothing to register GPU memory.
    DoctorFacts old = f;
    old.rdma.kernel_release = "5.4.0-200-generic";
    CHECK(only(check_rdma_peer_memory(old)).status == CheckStatus::warn);
    old.rdma.dmabuf_sysfs = true; // a kernel that shows /sys/kernel/dmabuf has it
    CHECK(only(check_rdma_peer_memory(old)).status == CheckStatus::pass);
}

TEST_CASE("doctor rdma: a NIC on a root port of its own warns, one across the sockets fails") {
    // The switch tree's mlx5_0 shares a host bridge with GPU5 only: PHB. Its root ports have
    // no config space in the recorded tree: ACS unknown.
    const DoctorFacts f = rdma_case(k_topology_data + "switch-tree-6gpu.xml", "rdma-ready");
    const CheckResult path = only(check_rdma_path(f));
    CHECK(path.status == CheckStatus::warn);
    CHECK(mentions(path, "nearest GPU GPU5 over PHB"));
    const CheckResult acs = only(check_rdma_acs(f));
    CHECK(acs.status == CheckStatus::skip);
    CHECK(mentions(acs, "0000:80:02.0: its config space is not readable"));
    CHECK(only(check_rdma_link(f)).status == CheckStatus::pass);

    DoctorFacts far = healthy();
    far.rdma.nics[0].nearest_class = PathClass::sys;
    far.rdma.nics[0].gpu_paths = "GPU0 SYS, GPU1 SYS";
    const CheckResult sys = only(check_rdma_path(far));
    CHECK(sys.status == CheckStatus::fail);
    CHECK(mentions(sys, "crosses the CPU interconnect"));
    CHECK(any_failed(run_checks(far)));
    far.rdma.nics[0].nearest_class = PathClass::node;
    CHECK(only(check_rdma_path(far)).status == CheckStatus::warn);
    far.rdma.nics[0].nearest_class = PathClass::pxb;
    CHECK(only(check_rdma_path(far)).status == CheckStatus::pass);
    far.rdma.nics[0].nearest_gpu.clear(); // the NIC is not in hwloc's tree
    CHECK(only(check_rdma_path(far)).status == CheckStatus::skip);
    CHECK(only(check_rdma_acs(far)).status == CheckStatus::skip);

    DoctorFacts identity = healthy(); // IOMMU on, every group identity: passthrough by default
    identity.rdma.iommu_groups = identity.rdma.iommu_units = true;
    identity.rdma.iommu_group_types = {"identity"};
    identity.rdma.cmdline = "ro quiet";
    CHECK(only(check_rdma_iommu(identity)).status == CheckStatus::pass);
    identity.rdma.iommu_group_types = {"DMA", "identity"};
    CHECK(only(check_rdma_iommu(identity)).status == CheckStatus::warn);
}

TEST_CASE("doctor rdma: no RDMA NIC: every RDMA check SKIP with the reason") {
    const char* ids[] = {"rdma_peermem", "rdma_path", "rdma_acs", "rdma_iommu", "rdma_link"};
    for (const char* xml : {"h200-2gpu-nvlink.xml", "gpu-machine-2xh200.xml"}) {
        CAPTURE(xml);
        const DoctorFacts f = rdma_case(k_topology_data + xml, "no-rdma");
        CHECK(f.rdma.nics.empty());
        const auto results = run_checks(f);
        for (const char* id : ids) {
            CAPTURE(id);
            const auto it = std::find_if(results.begin(), results.end(), [&](const CheckResult& r) { return r.id == id; });
            REQUIRE(it != results.end());
            CHECK(it->status == CheckStatus::skip);
            CHECK(it->evidence == "no RDMA device (no /sys/class/infiniband)");
            CHECK(std::count_if(results.begin(), results.end(), [&](const CheckResult& r) { return r.id == id; }) == 1);
        }
    }
    // The kernel has RDMA devices, but none on the PCI bus of this topology.
    const DoctorFacts other = rdma_case(k_topology_data + "h200-2gpu-nvlink.xml", "rdma-ready");
    CHECK(only(check_rdma_link(other)).status == CheckStatus::skip);
    CHECK(mentions(only(check_rdma_link(other)), "no RDMA device on the PCI bus"));
}

TEST_CASE("doctor rdma: an RDMA NIC without a GPU: the GPU checks SKIP, the link and IOMMU still count") {
    DoctorFacts f = healthy();
    f.gpus.clear();
    f.pairs.clear();
    f.cuda_available = false;
    f.cuda_note = "no NVIDIA driver: libcuda.so.1 could not be loaded";
    for (auto check : {check_rdma_peer_memory, check_rdma_path, check_rdma_acs}) {
        const CheckResult r = only(check(f));
        CHECK(r.status == CheckStatus::skip);
        CHECK(r.evidence == "no GPU: no NVIDIA driver");
    }
    CHECK(only(check_rdma_link(f)).status == CheckStatus::pass);
    CHECK(only(check_rdma_iommu(f)).status == CheckStatus::pass);
}

TEST_CASE("doctor rdma on this machine: facts read, RDMA checks SKIP where the kernel has no RDMA device") {
    Machine machine;
    const DoctorFacts f = gather_doctor_facts(machine);
    CHECK(f.rdma.infiniband_class == std::filesystem::exists("/sys/class/infiniband"));
    if (f.rdma.nics.empty()) {
        for (auto check : {check_rdma_peer_memory, check_rdma_path, check_rdma_acs, check_rdma_iommu, check_rdma_link}) {
            const CheckResult r = only(check(f));
            CHECK(r.status == CheckStatus::skip);
            CHECK(r.evidence.find("no RDMA device") == 0);
        }
    }
}
