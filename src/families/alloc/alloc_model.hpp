#pragma once
/// Host-only parts of the allocation scenarios: allocator names, the memory each
/// configuration needs, and the arithmetic that turns measured times into the reported
/// overhead, speedup and break-even figures. No CUDA here, so the tests cover it anywhere.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "interopbench/errors.hpp"

namespace interopbench {

/// How device memory is obtained and returned.
enum class AllocatorKind {
    sync,              ///< cudaMalloc / cudaFree
    default_pool,      ///< cudaMallocAsync / cudaFreeAsync, device default pool, release threshold 0
    default_pool_keep, ///< the same pool with the release threshold raised to UINT64_MAX
    own_pool,          ///< cudaMallocFromPoolAsync from a cudaMemPoolCreate pool, threshold UINT64_MAX
};

/// The axis value naming `kind`: "sync", "default_pool", "default_pool_keep", "own_pool".
inline const char* to_string(AllocatorKind kind) {
    switch (kind) {
    case AllocatorKind::sync: return "sync";
    case AllocatorKind::default_pool: return "default_pool";
    case AllocatorKind::default_pool_keep: return "default_pool_keep";
    case AllocatorKind::own_pool: return "own_pool";
    }
    return "?";
}

/// Parses an allocator name as written by to_string; throws UsageError listing the names.
inline AllocatorKind parse_allocator(std::string_view name) {
    for (auto k : {AllocatorKind::sync, AllocatorKind::default_pool, AllocatorKind::default_pool_keep,
                   AllocatorKind::own_pool})
        if (name == to_string(k)) return k;
    throw UsageError("unknown allocator '" + std::string(name) + "'",
                     "choose from sync, default_pool, default_pool_keep, own_pool");
}

/// True for the stream-ordered (pool) allocators.
inline bool uses_pool(AllocatorKind kind) { return kind != AllocatorKind::sync; }

/// Pipeline wall times of one sample, each for the same N-step pipeline.
struct PipelineTimes {
    double total_sync = 0;     ///< temporaries from cudaMalloc / cudaFree
    double total_pool = 0;     ///< temporaries from a stream-ordered pool
    double total_prealloc = 0; ///< temporaries allocated once beforehand: no allocator in the loop
};

/// What allocation costs the pipeline.
struct PipelineOverhead {
    /// Share of the synchronous pipeline's time that a free allocator would save:
    /// (total_sync - total_prealloc) / total_sync. Not clamped: a value slightly below
    /// zero means no measurable overhead.
    double fraction_sync = 0;
    /// The same for the pool pipeline.
    double fraction_pool = 0;
    /// total_sync / total_pool.
    double speedup = 0;
};

/// Overhead arithmetic on measured times; NaN where a total is not positive.
inline PipelineOverhead pipeline_overhead(const PipelineTimes& t) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    auto fraction = [&](double total) { return total > 0 ? (total - t.total_prealloc) / total : nan; };
    return {fraction(t.total_sync), fraction(t.total_pool),
            t.total_pool > 0 ? t.total_sync / t.total_pool : nan};
}

/// Bytes that must be copied host to device through a pinned buffer before pinning it pays
/// for itself: the pin+unpin time divided by the time saved per byte,
/// pin_pair_s / (1 / pageable_bw - 1 / pinned_bw). NaN when pinned copies are not faster
/// (pinning never pays off) or an input is not positive.
inline double pinning_break_even_bytes(double pin_pair_s, double pageable_bw, double pinned_bw) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (!(pin_pair_s >= 0) || !(pageable_bw > 0) || !(pinned_bw > 0)) return nan;
    const double saved_per_byte = 1.0 / pageable_bw - 1.0 / pinned_bw;
    return saved_per_byte > 0 ? pin_pair_s / saved_per_byte : nan;
}

/// Scales a time for `bytes` to the time for one GiB (2^30 bytes).
inline double per_gib(double seconds, std::uint64_t bytes) {
    return bytes ? seconds * static_cast<double>(std::uint64_t{1} << 30) / static_cast<double>(bytes)
                 : std::numeric_limits<double>::quiet_NaN();
}

/// a * b, or UINT64_MAX when that overflows (a size far beyond any device then stays
/// beyond it instead of wrapping around to a small number).
inline std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    return a != 0 && b > max / a ? max : a * b;
}

/// Device bytes alloc_pipeline needs for temporaries of `size` bytes: two inputs, two
/// preallocated temporaries, and at most two live temporaries during a step.
inline std::uint64_t pipeline_device_bytes(std::uint64_t size) { return saturating_mul(6, size); }

/// Device bytes alloc_concurrent needs: per stream an input, an accumulator, a
/// preallocated temporary and one live allocated temporary.
inline std::uint64_t concurrent_device_bytes(std::uint64_t size, std::uint64_t streams) {
    return saturating_mul(saturating_mul(4, streams), size);
}

} // namespace interopbench
