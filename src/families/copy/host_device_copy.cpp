// Host<->device copies: h2d_copy, d2h_copy, bidir_copy, host_all_gpus (d2d_copy, the
// device-local copy, is in device_local_copy.cpp and registered here after them).
//
// What: copy bandwidth and time per copy between host memory of four kinds (pageable
// malloc, pinned cudaHostAlloc, registered cudaHostRegister, write-combined pinned) and
// one GPU, by the copy engine (cudaMemcpyAsync) or an SM copy kernel reading or writing
// mapped host memory; both directions at once; every selected GPU at once.
// How: CUDA events on non-blocking streams. For pinned kinds a spin kernel holds the
// stream while the sample's copies are enqueued, so enqueue cost stays out of the
// window; pageable copies are not held (the driver stages them through its own pinned
// buffers from the calling thread, so holding the stream would stall the enqueue), and
// their time includes that staging, which is the real cost of the pageable path.
// Bidirectional: each direction is timed by its own events while the other direction
// runs longer, so neither figure includes time spent alone on the link.
// Each sample repeats the copy until it lasts about the sample time.
// Reports bandwidth (bytes counted once per copy; bidirectional reports each direction
// and their sum) and time per copy. Data is verified against a pattern after sampling.
// Caveats: the SM kernel cannot read pageable memory (skipped); small copies measure
// latency more than bandwidth, which is why time per copy is reported too.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "gpu/cuda_util.hpp"
#include "hostio/pattern.hpp"
#include "topology/topology.hpp"
#include "gpu/kernels.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "families/copy/copy_family.hpp"

namespace interopbench {
namespace {

using gpu::HostMem;

enum class Dir { h2d, d2h };

constexpr std::uint64_t k_seed_h2d = 0x4844;
constexpr std::uint64_t k_seed_d2h = 0x4448;

/// One direction of copying between a host buffer and a device buffer on `stream`.
struct Lane {
    Dir dir;
    std::size_t bytes;
    gpu::HostBuffer host;
    gpu::DeviceBuffer dev;
    const gpu::Stream* stream;
    bool sm;
    int sm_count;

    void* mapped; ///< the host buffer's device address (pinned kinds), looked up once

    Lane(Dir d, HostMem kind, int device, std::size_t n, const gpu::Stream* s, bool use_sm, int sms)
        : dir(d), bytes(n), host(kind, n), dev(device, n), stream(s), sm(use_sm), sm_count(sms),
          mapped(host.device_ptr()) {
        if (dir == Dir::h2d) {
            hostio::fill_pattern(host.get(), n, k_seed_h2d);
            IB_CUDA_CHECK(cudaMemsetAsync(dev.get(), 0, n, s->get())); // poison the destination
        } else {
            gpu::fill_pattern_device(dev.get(), n, k_seed_d2h, s->get());
            std::memset(host.get(), 0, n);
        }
        IB_CUDA_CHECK(cudaStreamSynchronize(s->get()));
    }

    void enqueue(int reps) {
        for (int r = 0; r < reps; ++r) {
            if (sm) {
                IB_CUDA_CHECK(dir == Dir::h2d ? kernels::launch_sm_copy(dev.get(), mapped, bytes, sm_count, stream->get())
                                              : kernels::launch_sm_copy(mapped, dev.get(), bytes, sm_count, stream->get()));
            } else if (dir == Dir::h2d) {
                IB_CUDA_CHECK(cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, stream->get()));
            } else {
                IB_CUDA_CHECK(cudaMemcpyAsync(host.get(), dev.get(), bytes, cudaMemcpyDeviceToHost, stream->get()));
            }
        }
    }

    std::uint64_t mismatches() const {
        gpu::set_device(dev.device());
        if (dir == Dir::h2d) return gpu::count_pattern_mismatches_device(dev.get(), bytes, k_seed_h2d, stream->get());
        // Mapped host memory is checked by the GPU (reading write-combined memory from the
        // CPU is very slow); pageable memory by the CPU.
        if (host.kind() != HostMem::pageable)
            return gpu::count_pattern_mismatches_device(mapped, bytes, k_seed_d2h, stream->get());
        return hostio::count_pattern_mismatches(host.get(), bytes, k_seed_d2h);
    }
};

/// Copies on one or more lanes (several streams, possibly several GPUs) at once.
class CopyCase final : public Case {
public:
    enum class Kind { one_way, bidir, all_gpus };

    CopyCase(const CaseContext& ctx, Kind kind, std::vector<std::unique_ptr<gpu::Stream>> streams,
             std::vector<std::unique_ptr<Lane>> lanes)
        : m_kind(kind), m_streams(std::move(streams)), m_lanes(std::move(lanes)) {
        std::vector<const gpu::Stream*> ss;
        for (const auto& s : m_streams) ss.push_back(s.get());
        m_hold = m_lanes[0]->host.kind() != HostMem::pageable;
        m_region = std::make_unique<gpu::TimedRegion>(ss, m_hold);
        // One untimed round sets the repetition count for the sample time.
        const double t = run(std::vector<int>(m_lanes.size(), 1), nullptr);
        m_reps = gpu::reps_for(t, ctx.sample_time_s, m_hold ? 200 : 50);
    }

    Sample measure() override {
        std::vector<double> per;
        const double b = static_cast<double>(m_lanes[0]->bytes) * m_reps;
        switch (m_kind) {
        case Kind::one_way: {
            const double span = run({m_reps}, &per);
            return {b / span, span / m_reps};
        }
        case Kind::bidir: {
            // Each direction is timed while the other runs for longer (half as many more
            // copies), so every measured byte crossed the link under interference.
            const int more = m_reps + std::max(1, m_reps / 2);
            run({m_reps, more}, &per);
            const double h = b / per[0];
            run({more, m_reps}, &per);
            const double d = b / per[1];
            return {h + d, h, d};
        }
        case Kind::all_gpus: {
            const double span = run(std::vector<int>(m_lanes.size(), m_reps), &per);
            double slowest = 0;
            for (double t : per) slowest = std::max(slowest, t);
            return {b * static_cast<double>(m_lanes.size()) / span, b / slowest};
        }
        }
        return {};
    }

    void check() override {
        for (const auto& l : m_lanes)
            if (const auto bad = l->mismatches())
                throw CheckFailed(fmt::format("{} of {} words wrong after copying", bad, (l->bytes + 7) / 8));
    }

    nlohmann::json details() const override {
        nlohmann::json j{{"bytes_per_op", m_lanes[0]->bytes},
                         {"ops_per_sample", m_reps},
                         {"lanes", m_lanes.size()},
                         {"stream_held_while_enqueueing", m_hold},
                         {"timer", "CUDA events"},
                         {"verification", "pattern checked on every destination after sampling"}};
        return j;
    }

private:
    double run(const std::vector<int>& reps, std::vector<double>* per) {
        m_region->begin();
        for (std::size_t i = 0; i < m_lanes.size(); ++i) m_lanes[i]->enqueue(reps[i]);
        return m_region->end(per);
    }

    Kind m_kind;
    std::vector<std::unique_ptr<gpu::Stream>> m_streams;
    std::vector<std::unique_ptr<Lane>> m_lanes;
    std::unique_ptr<gpu::TimedRegion> m_region;
    bool m_hold = true;
    int m_reps = 1;
};

Axis size_axis() { return {"size", "bytes per copy", AxisKind::size, {"4K:1G:x4"}, {}}; }
Axis host_mem_axis(std::vector<std::string> defaults) {
    return {"host_mem", "host memory kind: pageable (malloc), pinned (cudaHostAlloc), registered (cudaHostRegister), "
                        "write_combined (pinned, write-combined)",
            AxisKind::choice, std::move(defaults), {"pageable", "pinned", "registered", "write_combined"}};
}
Axis engine_axis() {
    return {"engine", "ce: copy engine (cudaMemcpyAsync); sm: SM copy kernel over mapped host memory", AxisKind::choice,
            {"ce"}, {"ce", "sm"}};
}

std::optional<std::string> common_unsupported(const Machine& m, const Params& p, const std::vector<int>& devices) {
    if (auto why = gpu_unavailable_reason(m)) return why;
    const std::uint64_t size = p.get_uint("size");
    for (int d : devices) {
        const DeviceInfo* info = m.device(d);
        if (!info) return fmt::format("GPU {} does not exist", d);
        if (size > info->free_memory)
            return fmt::format("{} does not fit in GPU {}'s free memory ({})", format_size(size), d,
                               format_size(info->free_memory));
    }
    if (p.get("engine") == "sm" && p.get("host_mem") == "pageable")
        return std::string("an SM copy kernel cannot address pageable host memory; use pinned, registered or write_combined");
    return std::nullopt;
}

class OneWayCopy final : public Scenario {
public:
    explicit OneWayCopy(Dir dir) : m_dir(dir) {
        const bool h2d = dir == Dir::h2d;
        m_info.id = h2d ? "h2d_copy" : "d2h_copy";
        m_info.family = "copy";
        m_info.summary = h2d ? "host-to-device copy bandwidth by host memory kind and engine"
                             : "device-to-host copy bandwidth by host memory kind and engine";
        m_info.counting = "bytes counted once per copy";
        m_info.axes = {size_axis(), host_mem_axis({"pageable", "pinned"}), engine_axis(),
                       device_axis()};
        m_info.metrics = {{"bandwidth", "B/s", Better::higher, "bytes per copy over time per copy"},
                          {"time", "s", Better::lower, "time per copy (latency for small sizes)"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params& p) const override {
        return {{PathKind::host_link, static_cast<int>(p.get_uint("device")), -1, m_dir == Dir::h2d ? "h2d" : "d2h"}};
    }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        return common_unsupported(m, p, {static_cast<int>(p.get_uint("device"))});
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        const int dev = static_cast<int>(p.get_uint("device"));
        place_host_side(ctx, dev);
        std::vector<std::unique_ptr<gpu::Stream>> streams;
        streams.push_back(std::make_unique<gpu::Stream>(dev));
        std::vector<std::unique_ptr<Lane>> lanes;
        lanes.push_back(std::make_unique<Lane>(m_dir, gpu::parse_host_mem(p.get("host_mem")), dev, p.get_uint("size"),
                                               streams[0].get(), p.get("engine") == "sm",
                                               ctx.machine->device(dev)->sm_count));
        return std::make_unique<CopyCase>(ctx, CopyCase::Kind::one_way, std::move(streams), std::move(lanes));
    }

private:
    Dir m_dir;
    ScenarioInfo m_info;
};

class BidirCopy final : public Scenario {
public:
    BidirCopy() {
        m_info.id = "bidir_copy";
        m_info.family = "copy";
        m_info.summary = "host-to-device and device-to-host at once on one GPU, per direction and summed";
        m_info.counting = "bytes counted once per copy in each direction, each direction timed while the other "
                          "runs throughout; bandwidth_sum adds the two directions";
        m_info.axes = {size_axis(), host_mem_axis({"pinned"}), engine_axis(),
                       device_axis()};
        m_info.metrics = {{"bandwidth_sum", "B/s", Better::higher, "both directions added"},
                          {"bandwidth_h2d", "B/s", Better::higher, "host-to-device direction"},
                          {"bandwidth_d2h", "B/s", Better::higher, "device-to-host direction"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params& p) const override {
        // bandwidth_sum counts both directions: the link's two directions together.
        return {{PathKind::host_link, static_cast<int>(p.get_uint("device")), -1, "both"}};
    }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        const auto d = static_cast<int>(p.get_uint("device"));
        if (auto why = common_unsupported(m, p, {d})) return why;
        if (const DeviceInfo* info = m.device(d); info && 2 * p.get_uint("size") > info->free_memory)
            return fmt::format("two buffers of {} do not fit in GPU {}'s free memory", format_size(p.get_uint("size")), d);
        return std::nullopt;
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        const int dev = static_cast<int>(p.get_uint("device"));
        place_host_side(ctx, dev);
        const auto kind = gpu::parse_host_mem(p.get("host_mem"));
        const bool sm = p.get("engine") == "sm";
        const int sms = ctx.machine->device(dev)->sm_count;
        std::vector<std::unique_ptr<gpu::Stream>> streams;
        streams.push_back(std::make_unique<gpu::Stream>(dev));
        streams.push_back(std::make_unique<gpu::Stream>(dev));
        std::vector<std::unique_ptr<Lane>> lanes;
        // With SM kernels both directions share the SMs: give each half of them.
        lanes.push_back(std::make_unique<Lane>(Dir::h2d, kind, dev, p.get_uint("size"), streams[0].get(), sm, sm ? sms / 2 : sms));
        lanes.push_back(std::make_unique<Lane>(Dir::d2h, kind, dev, p.get_uint("size"), streams[1].get(), sm, sm ? sms / 2 : sms));
        return std::make_unique<CopyCase>(ctx, CopyCase::Kind::bidir, std::move(streams), std::move(lanes));
    }

private:
    ScenarioInfo m_info;
};

class HostAllGpus final : public Scenario {
public:
    HostAllGpus() {
        m_info.id = "host_all_gpus";
        m_info.family = "copy";
        m_info.summary = "every selected GPU copying from or to the host at once: total and slowest GPU";
        m_info.counting = "bytes counted once per copy, summed over GPUs for bandwidth_total";
        m_info.axes = {choice_axis("direction", "h2d or d2h", {"h2d", "d2h"}),
                       {"size", "bytes per copy per GPU", AxisKind::size, {"256M"}, {}},
                       host_mem_axis({"pinned"}), engine_axis()};
        m_info.metrics = {{"bandwidth_total", "B/s", Better::higher, "all GPUs' bytes over the span of the sample"},
                          {"bandwidth_slowest", "B/s", Better::higher, "the slowest GPU's own bandwidth"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params& p) const override {
        return {{PathKind::host_link, k_every_gpu, -1, p.get("direction")}};
    }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        if (auto why = common_unsupported(m, p, m.selected)) return why;
        if (m.selected.size() < 2)
            return fmt::format("needs at least 2 GPUs; {} selected", m.selected.size());
        return std::nullopt;
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        const auto kind = gpu::parse_host_mem(p.get("host_mem"));
        const Dir dir = p.get("direction") == "h2d" ? Dir::h2d : Dir::d2h;
        std::vector<std::unique_ptr<gpu::Stream>> streams;
        std::vector<std::unique_ptr<Lane>> lanes;
        for (int dev : ctx.machine->selected) {
            place_host_side(ctx, dev); // each GPU's host buffer on its own NUMA node
            streams.push_back(std::make_unique<gpu::Stream>(dev));
            lanes.push_back(std::make_unique<Lane>(dir, kind, dev, p.get_uint("size"), streams.back().get(),
                                                   p.get("engine") == "sm", ctx.machine->device(dev)->sm_count));
        }
        return std::make_unique<CopyCase>(ctx, CopyCase::Kind::all_gpus, std::move(streams), std::move(lanes));
    }

private:
    ScenarioInfo m_info;
};

} // namespace

void register_host_device_copy(Registry& r) {
    r.add(std::make_unique<OneWayCopy>(Dir::h2d));
    r.add(std::make_unique<OneWayCopy>(Dir::d2h));
    r.add(std::make_unique<BidirCopy>());
    r.add(std::make_unique<HostAllGpus>());
    register_device_local_copy(r);
}

} // namespace interopbench
