// Allocation scenarios: alloc_device, alloc_concurrent, alloc_host_pinned, alloc_pipeline.
//
// What: the cost of getting and returning memory, and what that cost does to real work.
//  - alloc_device: one allocate+free pair of device memory with cudaMalloc/cudaFree, and
//    with cudaMallocAsync/cudaFreeAsync on the device's default pool as shipped (release
//    threshold 0), on the default pool with the threshold raised to UINT64_MAX, and on a
//    pool from cudaMemPoolCreate (threshold UINT64_MAX). `cold`: every pair starts with an
//    empty pool, so the allocation maps memory from the driver, and the pool's free includes
//    the stream synchronisation and cudaMemPoolTrimTo that hand it back (the counterpart
//    of cudaFree). `warm`: the pool already holds a block of the size.
//  - alloc_concurrent: rounds of two kernels on each of several streams, each round's
//    temporary either preallocated or allocated and freed around its kernels. cudaFree
//    waits for the whole device, so the streams stop overlapping; pool frees do not.
//  - alloc_host_pinned: the cost of making host memory pinned (cudaHostAlloc/cudaFreeHost,
//    cudaHostRegister/cudaHostUnregister), set against host-to-device copies from pageable
//    memory and from a pinned buffer that is reused, to say when pinning pays off.
//  - alloc_pipeline: N steps, each allocating its float temporaries, running elementwise
//    kernels and a reduction over them and freeing them, then reading the result back, as
//    a data-frame operation does. Run with cudaMalloc/cudaFree, with a pool, and with the
//    temporaries allocated once beforehand (no allocator in the loop), which gives the
//    share of the runtime lost to allocation.
// How: allocator calls are host-side API costs, so they are timed with steady_clock around
// each call, with synchronisation fences outside the timed part; kernel timelines with
// CUDA events (alloc_concurrent) or, for whole pipelines that end in a synchronisation,
// the host clock. Each sample repeats its operation to last about the sample time.
// Caveats: pools are trimmed, and the default pool's threshold restored, when a
// configuration ends, so one cannot warm the next; cudaMalloc has no pool to trim, so its
// cold and warm figures measure the same calls. The shipped default pool returns its memory
// at every synchronisation, which is why its warm samples re-fill it untimed first and why
// it behaves like a cold pool in a pipeline that synchronises every step.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "gpu/cuda_util.hpp"
#include "hostio/pattern.hpp"
#include "topology/topology.hpp"
#include "families/alloc/alloc_kernels.hpp"
#include "families/alloc/alloc_model.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

constexpr std::uint64_t k_seed = 0xA110C;
constexpr std::uint64_t k_keep_all = std::numeric_limits<std::uint64_t>::max();

const std::vector<std::string> k_allocators = {"sync", "default_pool", "default_pool_keep", "own_pool"};

// ---- allocators ------------------------------------------------------------------------

/// Device memory from one allocator kind. For the default pool it sets the release
/// threshold the kind asks for and restores the previous value on destruction; an own
/// pool is created here and destroyed with it. Pools start and end trimmed.
class DeviceAllocator {
public:
    DeviceAllocator(AllocatorKind kind, int device) : m_kind(kind), m_device(device) {
        gpu::set_device(device);
        if (!uses_pool(kind)) return;
        int supported = 0;
        IB_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
        if (!supported) throw ConfigError(fmt::format("GPU {} does not support stream-ordered memory pools", device));
        if (kind == AllocatorKind::own_pool) {
            cudaMemPoolProps props{};
            props.allocType = cudaMemAllocationTypePinned;
            props.handleTypes = cudaMemHandleTypeNone;
            props.location.type = cudaMemLocationTypeDevice;
            props.location.id = device;
            IB_CUDA_CHECK(cudaMemPoolCreate(&m_pool, &props));
            m_owned = true;
        } else {
            cudaMemPool_t pool = nullptr, current = nullptr;
            IB_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
            IB_CUDA_CHECK(cudaDeviceGetMemPool(&current, device));
            if (current != pool)
                throw ConfigError(fmt::format("GPU {}'s current memory pool is not its default pool, so "
                                              "cudaMallocAsync would not use the pool under test", device));
            IB_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &m_saved_threshold));
            m_pool = pool;
        }
        try {
            std::uint64_t threshold = kind == AllocatorKind::default_pool ? 0 : k_keep_all;
            IB_CUDA_CHECK(cudaMemPoolSetAttribute(m_pool, cudaMemPoolAttrReleaseThreshold, &threshold));
            IB_CUDA_CHECK(cudaDeviceSynchronize());
            trim();
        } catch (...) {
            release_pool();
            throw;
        }
    }
    ~DeviceAllocator() { release_pool(); }
    DeviceAllocator(const DeviceAllocator&) = delete;
    DeviceAllocator& operator=(const DeviceAllocator&) = delete;

    AllocatorKind kind() const { return m_kind; }

    void* allocate(std::size_t bytes, cudaStream_t stream) {
        void* p = nullptr;
        switch (m_kind) {
        case AllocatorKind::sync: IB_CUDA_CHECK(cudaMalloc(&p, bytes)); break;
        case AllocatorKind::default_pool:
        case AllocatorKind::default_pool_keep: IB_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream)); break;
        case AllocatorKind::own_pool: IB_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, m_pool, stream)); break;
        }
        return p;
    }

    void release(void* p, cudaStream_t stream) {
        if (m_kind == AllocatorKind::sync) IB_CUDA_CHECK(cudaFree(p));
        else IB_CUDA_CHECK(cudaFreeAsync(p, stream));
    }

    /// Hands every unused byte of the pool back to the driver. Frees must have been
    /// observed complete by the host (a synchronisation) to count as unused.
    void trim() {
        if (m_pool) IB_CUDA_CHECK(cudaMemPoolTrimTo(m_pool, 0));
    }

    /// Bytes the pool holds from the driver (0 for cudaMalloc, which has no pool).
    std::uint64_t reserved_bytes() const {
        std::uint64_t v = 0;
        if (m_pool) IB_CUDA_CHECK(cudaMemPoolGetAttribute(m_pool, cudaMemPoolAttrReservedMemCurrent, &v));
        return v;
    }

    /// The calls used, for the report.
    const char* api() const {
        switch (m_kind) {
        case AllocatorKind::sync: return "cudaMalloc / cudaFree";
        case AllocatorKind::default_pool: return "cudaMallocAsync / cudaFreeAsync, default pool, release threshold 0";
        case AllocatorKind::default_pool_keep:
            return "cudaMallocAsync / cudaFreeAsync, default pool, release threshold UINT64_MAX";
        case AllocatorKind::own_pool:
            return "cudaMallocFromPoolAsync / cudaFreeAsync, pool from cudaMemPoolCreate, release threshold UINT64_MAX";
        }
        return "";
    }

private:
    void release_pool() noexcept {
        if (!m_pool) return;
        // Teardown is best effort: nothing can be reported from here, and a broken
        // context shows up at the next checked call.
        cudaSetDevice(m_device);
        cudaDeviceSynchronize();
        if (m_owned) {
            cudaMemPoolDestroy(m_pool);
        } else {
            cudaMemPoolSetAttribute(m_pool, cudaMemPoolAttrReleaseThreshold, &m_saved_threshold);
            cudaMemPoolTrimTo(m_pool, 0);
        }
        m_pool = nullptr;
    }

    AllocatorKind m_kind;
    int m_device;
    cudaMemPool_t m_pool = nullptr;
    bool m_owned = false;
    std::uint64_t m_saved_threshold = 0;
};

// ---- shared scenario pieces ----------------------------------------------------------

Axis allocator_axis(const std::string& help, std::vector<std::string> defaults) {
    return {"allocator", help, AxisKind::choice, std::move(defaults), k_allocators};
}

std::string gib_text(std::uint64_t bytes) {
    return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / static_cast<double>(std::uint64_t{1} << 30));
}

/// No GPU, no such GPU, or not enough free device memory for `need` bytes.
std::optional<std::string> device_unsupported(const Machine& m, const Params& p, std::uint64_t need,
                                              const std::string& what) {
    if (auto why = gpu_unavailable_reason(m)) return why;
    const auto ordinal = static_cast<int>(p.get_uint("device"));
    const DeviceInfo* d = m.device(ordinal);
    if (!d) return fmt::format("GPU {} does not exist", ordinal);
    if (need > d->free_memory)
        return fmt::format("{} needs {} of device memory; GPU {} has {} free", what, gib_text(need), ordinal,
                           gib_text(d->free_memory));
    return std::nullopt;
}

int sm_count(int device) {
    int n = 0;
    IB_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    return n;
}

float* as_floats(void* p) { return static_cast<float*>(p); }

// ---- alloc_device ----------------------------------------------------------------------

class DeviceAllocCase final : public Case {
public:
    DeviceAllocCase(const CaseContext& ctx, int device, std::size_t bytes, AllocatorKind kind, bool cold)
        : m_device(device), m_bytes(bytes), m_cold(cold), m_stream(device), m_alloc(kind, device) {
        run_pairs(1); // first use of the size: lazy set-up stays out of the estimate
        const Pairs t = run_pairs(1);
        m_reps = gpu::reps_for(t.alloc_s + t.free_s, ctx.sample_time_s, 10000);
        if (cold_pool()) m_reserved_after_trim = m_alloc.reserved_bytes();
    }

    Sample measure() override {
        gpu::set_device(m_device);
        const Pairs t = run_pairs(m_reps);
        const double n = m_reps;
        return {(t.alloc_s + t.free_s) / n, t.alloc_s / n, t.free_s / n};
    }

    void check() override {
        gpu::set_device(m_device);
        const cudaStream_t s = m_stream.get();
        if (cold_pool()) {
            IB_CUDA_CHECK(cudaStreamSynchronize(s));
            m_alloc.trim();
            m_reserved_after_trim = m_alloc.reserved_bytes();
        }
        void* p = m_alloc.allocate(m_bytes, s);
        gpu::fill_pattern_device(p, m_bytes, k_seed, s);
        const auto bad = gpu::count_pattern_mismatches_device(p, m_bytes, k_seed, s);
        m_alloc.release(p, s);
        IB_CUDA_CHECK(cudaStreamSynchronize(s));
        if (bad) throw CheckFailed(fmt::format("{} of {} words of an allocated block did not hold a written pattern",
                                               bad, (m_bytes + 7) / 8));
    }

    nlohmann::json details() const override {
        nlohmann::json j{
            {"api", m_alloc.api()},
            {"bytes_per_op", m_bytes},
            {"ops_per_sample", m_reps},
            {"op", cold_pool() ? "allocate from an empty pool; free, synchronise the stream, trim the pool to 0"
                               : "allocate; free; pairs back to back"},
            {"timer", "steady_clock around each call; metrics are per pair"},
            {"verification", "after sampling, an allocated block is filled with a pattern on the device and checked"}};
        if (uses_pool(m_alloc.kind())) {
            if (m_cold) j["pool_reserved_bytes_after_trim"] = m_reserved_after_trim;
            else j["warm_up"] = "one untimed pair at the start of each sample puts a block of the size in the pool";
        } else if (m_cold) {
            j["note"] = "cudaMalloc keeps no pool that could be emptied: cold and warm measure the same calls";
        }
        return j;
    }

private:
    struct Pairs {
        double alloc_s = 0, free_s = 0;
    };

    bool cold_pool() const { return m_cold && uses_pool(m_alloc.kind()); }

    Pairs run_pairs(int reps) {
        const cudaStream_t s = m_stream.get();
        // The shipped default pool gave its memory back at the last synchronisation.
        if (!m_cold && uses_pool(m_alloc.kind())) m_alloc.release(m_alloc.allocate(m_bytes, s), s);
        Pairs t;
        for (int i = 0; i < reps; ++i) {
            const auto t0 = Clock::now();
            void* p = m_alloc.allocate(m_bytes, s);
            const auto t1 = Clock::now();
            m_alloc.release(p, s);
            if (cold_pool()) {
                IB_CUDA_CHECK(cudaStreamSynchronize(s));
                m_alloc.trim();
            }
            const auto t2 = Clock::now();
            t.alloc_s += seconds_between(t0, t1);
            t.free_s += seconds_between(t1, t2);
        }
        IB_CUDA_CHECK(cudaStreamSynchronize(s));
        return t;
    }

    int m_device;
    std::size_t m_bytes;
    bool m_cold;
    gpu::Stream m_stream;
    DeviceAllocator m_alloc; // after the stream: destroyed first, while the stream exists
    int m_reps = 1;
    std::uint64_t m_reserved_after_trim = 0;
};

class DeviceAllocScenario final : public Scenario {
public:
    DeviceAllocScenario() {
        m_info.id = "alloc_device";
        m_info.family = "alloc";
        m_info.summary = "device allocate+free pair: cudaMalloc vs stream-ordered pools, cold and warm";
        m_info.counting = "one operation = one allocation and its free of `size` bytes; times are per pair";
        m_info.axes = {
            allocator_axis("sync: cudaMalloc/cudaFree; default_pool: cudaMallocAsync on the default pool, release "
                           "threshold 0; default_pool_keep: the same, threshold UINT64_MAX; own_pool: a "
                           "cudaMemPoolCreate pool, threshold UINT64_MAX",
                           k_allocators),
            choice_axis("state", "cold: every pair starts with an empty pool; warm: the pool already holds a block",
                        {"cold", "warm"}),
            {"size", "bytes per allocation", AxisKind::size, {"256,64K,1M,64M,1G"}, {}},
            device_axis()};
        m_info.metrics = {
            {"pair_time", "s", Better::lower, "allocation plus free"},
            {"alloc_time", "s", Better::lower, "the allocation call"},
            {"free_time", "s", Better::lower, "the free call (cold pools: with the synchronisation and trim)"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params& p) const override {
        return {{PathKind::gpu_memory, static_cast<int>(p.get_uint("device"))}};
    }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        return device_unsupported(m, p, p.get_uint("size"), "the allocation");
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        return std::make_unique<DeviceAllocCase>(ctx, static_cast<int>(p.get_uint("device")), p.get_uint("size"),
                                                 parse_allocator(p.get("allocator")), p.get("state") == "cold");
    }

private:
    ScenarioInfo m_info;
};

// ---- alloc_concurrent ------------------------------------------------------------------

class ConcurrentCase final : public Case {
public:
    ConcurrentCase(const CaseContext& ctx, int device, std::size_t bytes, AllocatorKind kind, int streams)
        : m_device(device), m_bytes(bytes), m_n(bytes / sizeof(float)), m_alloc(kind, device) {
        // Each stream's kernels get an equal share of the SMs, so the streams can overlap.
        m_blocks = std::max(1, sm_count(device) / streams);
        for (int i = 0; i < streams; ++i) {
            m_streams.push_back(std::make_unique<gpu::Stream>(device));
            m_in.emplace_back(device, bytes);
            m_tmp.emplace_back(device, bytes);
            m_acc.emplace_back(device, bytes);
            const cudaStream_t s = m_streams.back()->get();
            IB_CUDA_CHECK(kernels::launch_fill_uniform(as_floats(m_in.back().get()), m_n, k_seed + i, 0.5f, 1.0f, s));
            IB_CUDA_CHECK(cudaMemsetAsync(m_acc.back().get(), 0, bytes, s));
            IB_CUDA_CHECK(cudaStreamSynchronize(s));
        }
        std::vector<const gpu::Stream*> ss;
        for (const auto& s : m_streams) ss.push_back(s.get());
        // Not held: cudaFree waits for the device, and a held stream would never drain.
        m_region = std::make_unique<gpu::TimedRegion>(ss, false);
        run(false);
        run(true);
        const double round_s = run(false) + run(true);
        m_rounds = gpu::reps_for(round_s, ctx.sample_time_s, 1000);
    }

    Sample measure() override {
        gpu::set_device(m_device);
        const double without = run(false) / m_rounds;
        const double with = run(true) / m_rounds;
        return {with, without, with / without};
    }

    void check() override {
        gpu::set_device(m_device);
        // Every round added work_value(in) to each accumulator; any temporary handed out
        // while another stream still used it would show here.
        const std::size_t samples = std::min<std::size_t>(m_n, 256);
        std::vector<float> in(m_n), acc(m_n);
        for (std::size_t s = 0; s < m_streams.size(); ++s) {
            IB_CUDA_CHECK(cudaMemcpy(in.data(), m_in[s].get(), m_n * sizeof(float), cudaMemcpyDeviceToHost));
            IB_CUDA_CHECK(cudaMemcpy(acc.data(), m_acc[s].get(), m_n * sizeof(float), cudaMemcpyDeviceToHost));
            for (std::size_t k = 0; k < samples; ++k) {
                const std::size_t i = samples > 1 ? k * (m_n - 1) / (samples - 1) : 0;
                const float w = kernels::work_value(in[i]);
                float want = 0;
                for (std::uint64_t r = 0; r < m_rounds_done; ++r) want = want + w;
                if (acc[i] != want)
                    throw CheckFailed(fmt::format("stream {} element {}: accumulated {} after {} rounds, expected {}",
                                                  s, i, acc[i], m_rounds_done, want));
            }
        }
    }

    nlohmann::json details() const override {
        return {{"api", m_alloc.api()},
                {"streams", m_streams.size()},
                {"bytes_per_op", m_bytes},
                {"ops_per_sample", m_rounds},
                {"round", "on every stream: [allocate a temporary], work kernel into it (8 FMA per float), "
                          "accumulate it into the stream's result, [free it]; bracketed steps only with allocation"},
                {"blocks_per_kernel", m_blocks},
                {"timer", "CUDA events from the first stream's start to the last stream's end, not held; per round"},
                {"verification", "accumulators recomputed on the host at 256 points per stream after sampling"}};
    }

private:
    double run(bool allocate) {
        m_region->begin();
        for (int r = 0; r < m_rounds; ++r) {
            for (std::size_t s = 0; s < m_streams.size(); ++s) {
                const cudaStream_t st = m_streams[s]->get();
                float* tmp = allocate ? as_floats(m_alloc.allocate(m_bytes, st)) : as_floats(m_tmp[s].get());
                IB_CUDA_CHECK(kernels::launch_work(tmp, as_floats(m_in[s].get()), m_n, m_blocks, st));
                IB_CUDA_CHECK(kernels::launch_accumulate(as_floats(m_acc[s].get()), tmp, m_n, m_blocks, st));
                if (allocate) m_alloc.release(tmp, st);
            }
        }
        const double t = m_region->end();
        m_rounds_done += static_cast<std::uint64_t>(m_rounds);
        return t;
    }

    int m_device;
    std::size_t m_bytes, m_n;
    std::vector<std::unique_ptr<gpu::Stream>> m_streams;
    DeviceAllocator m_alloc;
    std::vector<gpu::DeviceBuffer> m_in, m_tmp, m_acc;
    std::unique_ptr<gpu::TimedRegion> m_region;
    int m_blocks = 1;
    int m_rounds = 1;
    std::uint64_t m_rounds_done = 0;
};

class ConcurrentScenario final : public Scenario {
public:
    ConcurrentScenario() {
        m_info.id = "alloc_concurrent";
        m_info.family = "alloc";
        m_info.summary = "kernels on several streams with and without allocator traffic: cudaFree stalls the device";
        m_info.counting = "one round = two kernels over `size` bytes on every stream (plus, with allocation, one "
                          "allocate+free per stream); times are per round";
        m_info.axes = {allocator_axis("allocator of the temporaries (see alloc_device)", k_allocators),
                       {"streams", "streams running kernels at once", AxisKind::integer, {"4"}, {}, 1, 64},
                       {"size", "bytes per temporary (and per kernel's data)", AxisKind::size, {"1M,64M"}, {}},
                       device_axis()};
        m_info.metrics = {
            {"kernel_time_with_alloc", "s", Better::lower, "round with a temporary allocated and freed per stream"},
            {"kernel_time_without_alloc", "s", Better::lower, "the same round on preallocated temporaries"},
            {"slowdown", "1", Better::lower, "with / without allocation"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params& p) const override {
        return {{PathKind::gpu_memory, static_cast<int>(p.get_uint("device"))}};
    }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        if (p.get_uint("size") < sizeof(float)) return std::string("a temporary must hold at least one float (4 bytes)");
        return device_unsupported(m, p, concurrent_device_bytes(p.get_uint("size"), p.get_uint("streams")),
                                  "inputs, accumulators and temporaries");
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        return std::make_unique<ConcurrentCase>(ctx, static_cast<int>(p.get_uint("device")), p.get_uint("size"),
                                                parse_allocator(p.get("allocator")),
                                                static_cast<int>(p.get_uint("streams")));
    }

private:
    ScenarioInfo m_info;
};

// ---- alloc_host_pinned -----------------------------------------------------------------

class HostPinnedCase final : public Case {
public:
    HostPinnedCase(const CaseContext& ctx, int device, std::size_t bytes, bool host_alloc)
        : m_device(device), m_bytes(bytes), m_host_alloc(host_alloc), m_stream(device),
          m_pageable(gpu::HostMem::pageable, bytes), m_pinned(gpu::HostMem::pinned, bytes), m_dev(device, bytes),
          m_held({&m_stream}, true), m_unheld({&m_stream}, false) {
        hostio::fill_pattern(m_pageable.get(), bytes, k_seed);
        hostio::fill_pattern(m_pinned.get(), bytes, k_seed + 1);
        pin_pairs(1); // first use: lazy set-up stays out of the estimate
        const Pins p = pin_pairs(1);
        m_pin_reps = gpu::reps_for(p.pin_s + p.unpin_s, ctx.sample_time_s, 1000);
        m_pageable_reps = gpu::reps_for(copies(m_pageable.get(), 1, m_unheld), ctx.sample_time_s, 1000);
        // Held copies stay below the stream's queue depth, or enqueueing would block.
        m_pinned_reps = gpu::reps_for(copies(m_pinned.get(), 1, m_held), ctx.sample_time_s, 200);
    }

    Sample measure() override {
        gpu::set_device(m_device);
        const Pins p = pin_pairs(m_pin_reps);
        const double pair = (p.pin_s + p.unpin_s) / m_pin_reps;
        const double b = static_cast<double>(m_bytes);
        const double pageable_bw = b * m_pageable_reps / copies(m_pageable.get(), m_pageable_reps, m_unheld);
        const double pinned_bw = b * m_pinned_reps / copies(m_pinned.get(), m_pinned_reps, m_held);
        const double break_even = pinning_break_even_bytes(pair, pageable_bw, pinned_bw);
        return {pair, p.pin_s / m_pin_reps, p.unpin_s / m_pin_reps, per_gib(pair, m_bytes),
                pageable_bw, pinned_bw, break_even, break_even / b};
    }

    void check() override {
        gpu::set_device(m_device);
        // The pageable buffer was pinned and unpinned many times (host_register): it must
        // still hold its pattern, and both copies must deliver their source.
        verify_copy(m_pageable.get(), k_seed, "pageable");
        verify_copy(m_pinned.get(), k_seed + 1, "pinned");
    }

    nlohmann::json details() const override {
        return {{"api", m_host_alloc ? "cudaHostAlloc (default flags) / cudaFreeHost"
                                     : "cudaHostRegister (default flags) / cudaHostUnregister of a touched malloc buffer"},
                {"bytes_per_op", m_bytes},
                {"ops_per_sample", m_pin_reps},
                {"pageable_copies_per_sample", m_pageable_reps},
                {"pinned_copies_per_sample", m_pinned_reps},
                {"pin_timer", "steady_clock around each call"},
                {"copy_timer", "CUDA events; pinned copies enqueued behind a held stream, pageable copies not held "
                               "(the driver stages them from the calling thread)"},
                {"pinned_copy_source", "one cudaHostAlloc buffer allocated once and reused"},
                {"break_even", "pair_time / (1/h2d_pageable_bandwidth - 1/h2d_pinned_bandwidth); absent when "
                               "pinned copies are not faster"},
                {"verification", "device destination poisoned, each source copied once more and checked against "
                                 "its pattern after sampling"}};
    }

private:
    struct Pins {
        double pin_s = 0, unpin_s = 0;
    };

    Pins pin_pairs(int reps) {
        Pins t;
        for (int i = 0; i < reps; ++i) {
            void* p = m_host_alloc ? nullptr : m_pageable.get();
            const auto t0 = Clock::now();
            if (m_host_alloc) IB_CUDA_CHECK(cudaHostAlloc(&p, m_bytes, cudaHostAllocDefault));
            else IB_CUDA_CHECK(cudaHostRegister(p, m_bytes, cudaHostRegisterDefault));
            const auto t1 = Clock::now();
            if (m_host_alloc) IB_CUDA_CHECK(cudaFreeHost(p));
            else IB_CUDA_CHECK(cudaHostUnregister(p));
            const auto t2 = Clock::now();
            t.pin_s += seconds_between(t0, t1);
            t.unpin_s += seconds_between(t1, t2);
        }
        return t;
    }

    double copies(const void* src, int reps, gpu::TimedRegion& region) {
        region.begin();
        for (int i = 0; i < reps; ++i)
            IB_CUDA_CHECK(cudaMemcpyAsync(m_dev.get(), src, m_bytes, cudaMemcpyHostToDevice, m_stream.get()));
        return region.end();
    }

    void verify_copy(const void* src, std::uint64_t seed, const char* what) {
        const cudaStream_t s = m_stream.get();
        IB_CUDA_CHECK(cudaMemsetAsync(m_dev.get(), 0, m_bytes, s));
        IB_CUDA_CHECK(cudaMemcpyAsync(m_dev.get(), src, m_bytes, cudaMemcpyHostToDevice, s));
        if (const auto bad = gpu::count_pattern_mismatches_device(m_dev.get(), m_bytes, seed, s))
            throw CheckFailed(fmt::format("{} of {} words wrong after copying from the {} buffer", bad,
                                          (m_bytes + 7) / 8, what));
    }

    int m_device;
    std::size_t m_bytes;
    bool m_host_alloc;
    gpu::Stream m_stream;
    gpu::HostBuffer m_pageable, m_pinned;
    gpu::DeviceBuffer m_dev;
    gpu::TimedRegion m_held, m_unheld;
    int m_pin_reps = 1, m_pageable_reps = 1, m_pinned_reps = 1;
};

class HostPinnedScenario final : public Scenario {
public:
    HostPinnedScenario() {
        m_info.id = "alloc_host_pinned";
        m_info.family = "alloc";
        m_info.summary = "cost of making host memory pinned, and how many copied bytes it takes to pay off";
        m_info.counting = "one operation = making `size` bytes pinned and releasing them; bandwidths count each "
                          "host-to-device copy's bytes once";
        m_info.axes = {choice_axis("method",
                                   "host_alloc: cudaHostAlloc/cudaFreeHost (includes getting the memory); "
                                   "host_register: cudaHostRegister/cudaHostUnregister of existing memory",
                                   {"host_alloc", "host_register"}),
                       {"size", "bytes made pinned", AxisKind::size, {"64K,1M,64M,1G"}, {}},
                       device_axis()};
        m_info.metrics = {
            {"pair_time", "s", Better::lower, "pin plus unpin (the cost of making the memory pinned)"},
            {"pin_time", "s", Better::lower, "cudaHostAlloc or cudaHostRegister"},
            {"unpin_time", "s", Better::lower, "cudaFreeHost or cudaHostUnregister"},
            {"time_per_gib", "s", Better::lower, "pair_time scaled to 1 GiB"},
            {"h2d_pageable_bandwidth", "B/s", Better::higher, "copy from the pageable buffer"},
            {"h2d_pinned_bandwidth", "B/s", Better::higher, "copy from a reused pinned buffer"},
            {"break_even_bytes", "B", Better::lower, "bytes to copy through pinned memory before pinning pays off"},
            {"break_even_copies", "1", Better::lower, "break_even_bytes in copies of `size` bytes"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params&) const override { return {{PathKind::host_memory}}; }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        return device_unsupported(m, p, p.get_uint("size"), "the copy destination");
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        const int device = static_cast<int>(p.get_uint("device"));
        // Host memory near the GPU, as the copy scenarios place it.
        place_host_side(ctx, device);
        return std::make_unique<HostPinnedCase>(ctx, device, p.get_uint("size"),
                                                p.get("method") == "host_alloc");
    }

private:
    ScenarioInfo m_info;
};

// ---- alloc_pipeline --------------------------------------------------------------------

class PipelineCase final : public Case {
public:
    enum Variant { prealloc, sync, pool, k_variants };

    PipelineCase(const CaseContext& ctx, int device, std::size_t bytes, int temporaries, int steps,
                 AllocatorKind pool_kind)
        : m_device(device), m_bytes(bytes), m_n(bytes / sizeof(float)), m_temporaries(temporaries), m_steps(steps),
          m_sm_count(sm_count(device)), m_stream(device), m_sync(AllocatorKind::sync, device),
          m_pool(pool_kind, device), m_a(device, bytes), m_b(device, bytes), m_ping(device, bytes),
          m_pong(device, bytes), m_sum(device, sizeof(double)), m_result(gpu::HostMem::pinned, sizeof(double)) {
        const cudaStream_t s = m_stream.get();
        IB_CUDA_CHECK(kernels::launch_fill_uniform(as_floats(m_a.get()), m_n, k_seed, 0.5f, 1.0f, s));
        IB_CUDA_CHECK(kernels::launch_fill_uniform(as_floats(m_b.get()), m_n, k_seed + 1, 0.5f, 1.0f, s));
        IB_CUDA_CHECK(cudaStreamSynchronize(s));
        double alloc_s = 0, est = 0;
        for (int v = 0; v < k_variants; ++v) run(static_cast<Variant>(v), alloc_s); // first use, untimed
        for (int v = 0; v < k_variants; ++v) est += run(static_cast<Variant>(v), alloc_s);
        m_reps = gpu::reps_for(est, ctx.sample_time_s, 100);
    }

    Sample measure() override {
        gpu::set_device(m_device);
        PipelineTimes t;
        double alloc_sync = 0, alloc_pool = 0, unused = 0;
        for (int r = 0; r < m_reps; ++r) {
            t.total_prealloc += run(prealloc, unused);
            t.total_sync += run(sync, alloc_sync);
            t.total_pool += run(pool, alloc_pool);
        }
        const double n = m_reps;
        t = {t.total_sync / n, t.total_pool / n, t.total_prealloc / n};
        const PipelineOverhead o = pipeline_overhead(t);
        return {t.total_sync, t.total_pool, t.total_prealloc, alloc_sync / n, alloc_pool / n,
                o.fraction_sync, o.fraction_pool, o.speedup};
    }

    void check() override {
        std::vector<float> a(m_n), b(m_n);
        IB_CUDA_CHECK(cudaMemcpy(a.data(), m_a.get(), m_n * sizeof(float), cudaMemcpyDeviceToHost));
        IB_CUDA_CHECK(cudaMemcpy(b.data(), m_b.get(), m_n * sizeof(float), cudaMemcpyDeviceToHost));
        // Summed in blocks so that the host's rounding error stays far below the tolerance.
        double want = 0;
        for (std::size_t begin = 0; begin < m_n; begin += 4096) {
            double block = 0;
            for (std::size_t i = begin; i < std::min(m_n, begin + 4096); ++i) {
                float v = a[i];
                for (int k = 0; k < m_temporaries; ++k) v = kernels::pipeline_value(v, a[i], b[i]);
                block += v;
            }
            want += block;
        }
        // Elementwise results are bit-identical on host and device; only the order of the
        // double sum differs, which moves it by far less than one wrong element would.
        static const char* k_names[] = {"preallocated", "cudaMalloc", "pool"};
        for (int v = 0; v < k_variants; ++v)
            if (!(std::fabs(m_last[v] - want) <= 1e-10 * std::fabs(want)))
                throw CheckFailed(fmt::format("{} pipeline's reduction gave {}, host reference {}", k_names[v],
                                              m_last[v], want));
    }

    nlohmann::json details() const override {
        return {{"pool_api", m_pool.api()},
                {"bytes_per_temporary", m_bytes},
                {"floats_per_temporary", m_n},
                {"temporaries_per_step", m_temporaries},
                {"steps", m_steps},
                {"ops_per_sample", m_reps},
                {"step", "for each temporary: allocate it, write 0.5*(prev*a+b) into it, free the previous one; "
                         "sum the last in double; free it; copy the sum to the host and synchronise"},
                {"variants", "prealloc (two buffers allocated once), sync (cudaMalloc/cudaFree), pool; each "
                             "pool pipeline starts from an empty pool"},
                {"timer", "steady_clock over the whole pipeline, a device synchronisation before it; allocation "
                          "time is steady_clock around each allocate and free call (cudaFree's wait for the "
                          "device included)"},
                {"verification", "each variant's last reduction against a host reference over the same inputs"}};
    }

private:
    // One pipeline of m_steps steps; returns its wall time and adds the time spent inside
    // allocate and free calls to `alloc_s`.
    double run(Variant v, double& alloc_s) {
        DeviceAllocator* alloc = v == sync ? &m_sync : v == pool ? &m_pool : nullptr;
        const cudaStream_t s = m_stream.get();
        IB_CUDA_CHECK(cudaDeviceSynchronize());
        if (v == pool) m_pool.trim();
        auto allocate = [&](int k) {
            if (!alloc) return as_floats(k % 2 ? m_pong.get() : m_ping.get());
            const auto t0 = Clock::now();
            float* p = as_floats(alloc->allocate(m_bytes, s));
            alloc_s += seconds_between(t0, Clock::now());
            return p;
        };
        auto release = [&](float* p) {
            if (!alloc) return;
            const auto t0 = Clock::now();
            alloc->release(p, s);
            alloc_s += seconds_between(t0, Clock::now());
        };
        const float* a = as_floats(m_a.get());
        const float* b = as_floats(m_b.get());
        const auto start = Clock::now();
        for (int step = 0; step < m_steps; ++step) {
            float* prev = nullptr;
            for (int k = 0; k < m_temporaries; ++k) {
                float* t = allocate(k);
                IB_CUDA_CHECK(kernels::launch_pipeline_step(t, prev ? prev : a, a, b, m_n, m_sm_count, s));
                if (prev) release(prev); // its last reader is enqueued
                prev = t;
            }
            IB_CUDA_CHECK(cudaMemsetAsync(m_sum.get(), 0, sizeof(double), s));
            IB_CUDA_CHECK(kernels::launch_sum(prev, m_n, static_cast<double*>(m_sum.get()), m_sm_count, s));
            release(prev);
            IB_CUDA_CHECK(cudaMemcpyAsync(m_result.get(), m_sum.get(), sizeof(double), cudaMemcpyDeviceToHost, s));
            IB_CUDA_CHECK(cudaStreamSynchronize(s));
        }
        const double total = seconds_between(start, Clock::now());
        std::memcpy(&m_last[v], m_result.get(), sizeof(double));
        return total;
    }

    int m_device;
    std::size_t m_bytes, m_n;
    int m_temporaries, m_steps, m_sm_count;
    gpu::Stream m_stream;
    DeviceAllocator m_sync, m_pool;
    gpu::DeviceBuffer m_a, m_b, m_ping, m_pong, m_sum;
    gpu::HostBuffer m_result;
    int m_reps = 1;
    double m_last[k_variants] = {};
};

class PipelineScenario final : public Scenario {
public:
    PipelineScenario() {
        m_info.id = "alloc_pipeline";
        m_info.family = "alloc";
        m_info.summary = "N-step kernel pipeline with per-step temporaries: share of runtime lost to cudaMalloc vs a pool";
        m_info.counting = "one operation = one pipeline of `steps` steps, each with `temporaries` float temporaries "
                          "of `size` bytes; times are per pipeline";
        m_info.axes = {
            {"pool", "pool the pipeline is compared on (see alloc_device's allocator axis)", AxisKind::choice,
             {"default_pool", "default_pool_keep"}, {"default_pool", "default_pool_keep", "own_pool"}},
            {"temporaries", "temporaries allocated per step (one elementwise kernel each)", AxisKind::integer, {"4"},
             {}, 1, 64},
            {"size", "bytes per temporary (a float column)", AxisKind::size, {"1M,64M,512M"}, {}},
            {"steps", "steps per pipeline", AxisKind::integer, {"20"}, {}, 1, 100000},
            device_axis()};
        m_info.metrics = {
            {"total_time_sync", "s", Better::lower, "pipeline with cudaMalloc/cudaFree"},
            {"total_time_pool", "s", Better::lower, "pipeline with the pool"},
            {"total_time_prealloc", "s", Better::lower, "pipeline on temporaries allocated beforehand"},
            {"alloc_time_sync", "s", Better::lower, "time inside cudaMalloc/cudaFree calls"},
            {"alloc_time_pool", "s", Better::lower, "time inside the pool's allocate/free calls"},
            {"overhead_fraction_sync", "ratio", Better::lower, "(sync - prealloc) / sync: runtime lost to allocation"},
            {"overhead_fraction_pool", "ratio", Better::lower, "(pool - prealloc) / pool"},
            {"speedup", "1", Better::higher, "sync / pool"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params& p) const override {
        return {{PathKind::gpu_memory, static_cast<int>(p.get_uint("device"))}};
    }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        if (p.get_uint("size") < sizeof(float)) return std::string("a temporary must hold at least one float (4 bytes)");
        return device_unsupported(m, p, pipeline_device_bytes(p.get_uint("size")), "inputs and temporaries");
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        return std::make_unique<PipelineCase>(ctx, static_cast<int>(p.get_uint("device")), p.get_uint("size"),
                                              static_cast<int>(p.get_uint("temporaries")),
                                              static_cast<int>(p.get_uint("steps")), parse_allocator(p.get("pool")));
    }

private:
    ScenarioInfo m_info;
};

} // namespace

void register_alloc(Registry& r) {
    r.add(std::make_unique<DeviceAllocScenario>());
    r.add(std::make_unique<ConcurrentScenario>());
    r.add(std::make_unique<HostPinnedScenario>());
    r.add(std::make_unique<PipelineScenario>());
}

} // namespace interopbench
