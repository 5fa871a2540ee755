// Device-local copy: d2d_copy.
//
// What: copying one buffer to another in the same GPU's memory, by the copy engine
// (cudaMemcpyAsync device to device) or by the SM copy kernel (16-byte vector loads and
// stores over a grid sized to the SM count): the roofline of every conversion that reads
// and writes device memory once. The layout scenarios measure their copy_bandwidth with the
// same code (gpu/device_copy).
// How: CUDA events on a non-blocking stream held by a spin kernel while the sample's copies
// are enqueued; each sample repeats the copy until it lasts about the sample time.
// Reports bandwidth counted once per copy (as copy-engine benchmarks report device-local
// copies), bandwidth_rw counting bytes read + written (twice that), and time per copy.
// Verified: the destination is poisoned, copied once more and checked against the pattern.
// Caveats: when source and destination together fit in L2 (60 MB on an H200: 16 MiB copies
// do), the figure is partly an L2 figure; details.fits_in_l2 says so.
#include <fmt/format.h>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "families/copy/copy_family.hpp"
#include "gpu/cuda_util.hpp"
#include "gpu/device_copy.hpp"
#include "topology/topology.hpp"

namespace interopbench {
namespace {

constexpr int k_max_reps = 400;

class DeviceLocalCase final : public Case {
public:
    DeviceLocalCase(const CaseContext& ctx, int device, std::size_t bytes, gpu::DeviceCopyMethod method)
        : m_device(device), m_copy(device, bytes, method) {
        gpu::set_device(device);
        IB_CUDA_CHECK(cudaDeviceGetAttribute(&m_l2, cudaDevAttrL2CacheSize, device));
        m_reps = gpu::reps_for(m_copy.copy_seconds(1), ctx.sample_time_s, k_max_reps);
    }

    Sample measure() override {
        const double t = m_copy.copy_seconds(m_reps) / m_reps;
        const double b = static_cast<double>(m_copy.bytes());
        return {b / t, 2 * b / t, t};
    }

    void check() override {
        if (const auto bad = m_copy.mismatches())
            throw CheckFailed(fmt::format("{} of {} words wrong after copying", bad, (m_copy.bytes() + 7) / 8));
    }

    nlohmann::json details() const override {
        return {{"bytes_per_op", m_copy.bytes()},
                {"ops_per_sample", m_reps},
                {"device", m_device},
                {"method", gpu::describe(m_copy.method())},
                {"l2_bytes", m_l2},
                {"fits_in_l2", 2 * static_cast<std::uint64_t>(m_copy.bytes()) <= static_cast<std::uint64_t>(m_l2)},
                {"timer", "CUDA events; the stream is held while a run is enqueued"},
                {"verification", "destination poisoned, copied once more, checked against the source pattern"}};
    }

private:
    int m_device;
    gpu::DeviceCopy m_copy;
    int m_l2 = 0;
    int m_reps = 1;
};

class DeviceLocalCopy final : public Scenario {
public:
    DeviceLocalCopy() {
        m_info.id = "d2d_copy";
        m_info.family = "copy";
        m_info.summary = "device-local copy within one GPU's memory, copy engine or SM kernel";
        m_info.counting = "bandwidth: bytes counted once per copy (as device_local_copy in copy-engine benchmarks); "
                          "bandwidth_rw: bytes read + bytes written, twice that";
        m_info.axes = {{"size", "bytes per copy", AxisKind::size, {"16M", "64M", "256M", "512M", "1G"}, {}},
                       choice_axis("method", "ce: copy engine (cudaMemcpyAsync device to device); sm: SM copy kernel",
                                   {"ce", "sm"}),
                       device_axis()};
        m_info.metrics = {{"bandwidth", "B/s", Better::higher, "bytes per copy over time per copy (counted once)"},
                          {"bandwidth_rw", "B/s", Better::higher, "bytes read + written per copy over its time"},
                          {"time", "s", Better::lower, "time per copy"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params& p) const override {
        // Each counted byte is read and written once: twice the counted bytes cross GPU memory.
        return {{PathKind::gpu_memory, static_cast<int>(p.get_uint("device")), -1, "", 2}};
    }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        if (auto why = gpu_unavailable_reason(m)) return why;
        const int d = static_cast<int>(p.get_uint("device"));
        const DeviceInfo* info = m.device(d);
        if (!info) return fmt::format("GPU {} does not exist", d);
        const std::uint64_t size = p.get_uint("size");
        if (size == 0) return std::string("size 0 copies nothing");
        if (size > info->free_memory / 2)
            return fmt::format("two buffers of {} do not fit in GPU {}'s free memory ({})", format_size(size), d,
                               format_size(info->free_memory));
        return std::nullopt;
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        return std::make_unique<DeviceLocalCase>(ctx, static_cast<int>(p.get_uint("device")), p.get_uint("size"),
                                                 gpu::parse_device_copy_method(p.get("method")));
    }

private:
    ScenarioInfo m_info;
};

} // namespace

void register_device_local_copy(Registry& r) { r.add(std::make_unique<DeviceLocalCopy>()); }

} // namespace interopbench
