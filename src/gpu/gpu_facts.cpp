// CUDA-side facts for `topo`, `doctor` and the run report: peer access per device pair, the
// default memory pool's release threshold, and the PCIe link read while a copy loads it
// (idle GPUs train their link down, so an idle reading says nothing about the slot).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "gpu/gpu_facts.hpp"
#include "topology/nvml.hpp"

namespace interopbench {
namespace {

constexpr std::size_t k_load_bytes = 64ull << 20;
constexpr auto k_load_settle = std::chrono::milliseconds(40);
constexpr int k_load_readings = 8;
constexpr auto k_load_interval = std::chrono::milliseconds(15);

struct LinkUnderLoad {
    std::optional<int> gen, width;
    std::optional<std::uint64_t> clock_reasons;
    std::string note; ///< why there is no reading
};

// Keeps host-to-device copies running in a second thread while NVML is read, and keeps the
// highest generation and width seen.
LinkUnderLoad read_link_under_load(int ordinal, const std::string& bus_id) {
    LinkUnderLoad out;
    if (!nvml::available()) {
        out.note = "no NVML";
        return out;
    }
    void* host = nullptr;
    void* device = nullptr;
    cudaStream_t stream = nullptr;
    cudaError_t err = cudaSetDevice(ordinal);
    if (err == cudaSuccess)
        err = cudaMallocHost(&host, k_load_bytes);
    if (err == cudaSuccess)
        err = cudaMalloc(&device, k_load_bytes);
    if (err == cudaSuccess)
        err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (err == cudaSuccess) {
        std::memset(host, 0x5a, k_load_bytes);
        std::atomic<bool> stop{false};
        std::atomic<int> copy_error{cudaSuccess};
        std::thread copier([&] {
            cudaSetDevice(ordinal);
            while (!stop) {
                cudaError_t e = cudaMemcpyAsync(device, host, k_load_bytes, cudaMemcpyHostToDevice, stream);
                if (e == cudaSuccess)
                    e = cudaStreamSynchronize(stream);
                if (e != cudaSuccess) {
                    copy_error = e;
                    return;
                }
            }
        });
        std::this_thread::sleep_for(k_load_settle);
        std::uint64_t reasons = 0;
        bool have_reasons = false;
        for (int i = 0; i < k_load_readings; ++i) {
            if (auto p = nvml::pcie(bus_id); p && p->gen_current > 0 && p->width_current > 0) {
                out.gen = std::max(out.gen.value_or(0), p->gen_current);
                out.width = std::max(out.width.value_or(0), p->width_current);
            }
            if (auto r = nvml::clock_reasons(bus_id)) {
                reasons |= *r;
                have_reasons = true;
            }
            std::this_thread::sleep_for(k_load_interval);
        }
        stop = true;
        copier.join();
        if (have_reasons)
            out.clock_reasons = reasons;
        if (copy_error != cudaSuccess) {
            out.gen.reset();
            out.width.reset();
            out.note = fmt::format("the copy failed: {}", cudaGetErrorString(static_cast<cudaError_t>(copy_error.load())));
        } else if (!out.gen) {
            out.note = "NVML gave no current link generation";
        }
    } else {
        out.note = fmt::format("no copy could be set up: {}", cudaGetErrorString(err));
    }
    if (stream)
        cudaStreamDestroy(stream);
    if (device)
        cudaFree(device);
    if (host)
        cudaFreeHost(host);
    cudaGetLastError();
    return out;
}

std::optional<std::uint64_t> release_threshold(int ordinal) {
    int supported = 0;
    cudaMemPool_t pool = nullptr;
    std::uint64_t threshold = 0;
    if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, ordinal) != cudaSuccess || !supported ||
        cudaDeviceGetDefaultMemPool(&pool, ordinal) != cudaSuccess ||
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold) != cudaSuccess) {
        cudaGetLastError();
        return std::nullopt;
    }
    return threshold;
}

} // namespace

std::vector<CudaPeerFacts> cuda_peer_facts(const Machine& machine) {
    std::vector<CudaPeerFacts> out;
    if (!machine.cuda_available)
        return out;
    for (const DeviceInfo& a : machine.devices)
        for (const DeviceInfo& b : machine.devices) {
            if (a.ordinal == b.ordinal)
                continue;
            CudaPeerFacts f;
            f.from = a.ordinal;
            f.to = b.ordinal;
            int can = 0, rank = -1, atomics = 0;
            if (cudaDeviceCanAccessPeer(&can, a.ordinal, b.ordinal) != cudaSuccess) {
                cudaGetLastError();
                continue;
            }
            if (cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, a.ordinal, b.ordinal) != cudaSuccess)
                rank = -1;
            if (cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a.ordinal, b.ordinal) !=
                cudaSuccess)
                atomics = 0;
            cudaGetLastError();
            f.can_access_peer = can != 0;
            f.performance_rank = rank;
            f.native_atomics = atomics != 0;
            out.push_back(f);
        }
    return out;
}

nlohmann::json discover_topology_json(const Machine& machine) {
    return topology_json(discover_topology(machine, cuda_peer_facts(machine)));
}

DoctorFacts gather_doctor_facts(const Machine& machine) {
    const Topology topology = discover_topology(machine, cuda_peer_facts(machine));
    DoctorFacts f = host_doctor_facts(machine, topology);
    if (!machine.cuda_available)
        return f;
    for (DoctorGpu& g : f.gpus) {
        if (g.ordinal < 0)
            continue;
        g.mempool_release_threshold = release_threshold(g.ordinal);
        int read_only = 0;
        if (cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, g.ordinal) == cudaSuccess)
            g.register_read_only = read_only != 0;
        else
            cudaGetLastError();
        LinkUnderLoad load = read_link_under_load(g.ordinal, g.pci_bus_id);
        g.pcie_gen_loaded = load.gen;
        g.pcie_width_loaded = load.width;
        g.pcie_note = load.note;
        if (load.clock_reasons) {
            g.clock_reasons = load.clock_reasons;
            g.clock_reasons_loaded = true;
        }
    }
    return f;
}

} // namespace interopbench
