// What the layout conversion kernels of several groups share (private to the convert_*.cu
// files): the block size, 16-byte loads and stores, byte shifts in registers, fixed-divisor
// division, shared-memory staging (plain and cp.async), and on the host the grid sizes and the
// choice of a kernel instantiation by element size. The kernels are written for bandwidth:
// every global access is a coalesced 16-byte load or store except at the edges of a row or an
// array, and each thread keeps several loads in flight before it uses any. Rows of any length
// and alignment are handled by loading the aligned 16-byte vectors that cover them and
// shifting bytes in registers (funnel shifts); only the partial vectors at the ends of a row
// segment fall back to element stores. Tiles never assume that a dimension is a multiple of
// anything.
//
// Everything here is in the unnamed namespace of the group file that includes it, like the
// kernels themselves: they keep internal linkage and their names
// (interopbench::kernels::(anonymous namespace)::NAME), and a type of a kernel's parameters
// (FastDiv) names the same namespace as the kernel. The host functions are inline so that a
// group that uses none of them compiles without an unused-function warning.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <vector>

#include <cuda_runtime.h>

namespace interopbench::kernels {

namespace {

constexpr int k_threads = 256;
constexpr unsigned k_full_mask = 0xffffffffu;

template <int E> struct Bits;
template <> struct Bits<1> { using T = std::uint8_t; };
template <> struct Bits<2> { using T = std::uint16_t; };
template <> struct Bits<4> { using T = std::uint32_t; };
template <> struct Bits<8> { using T = unsigned long long; };

__device__ __forceinline__ uint4 load16(const std::uint8_t* p) {
    return __ldg(reinterpret_cast<const uint4*>(p));
}

__device__ __forceinline__ void store16(std::uint8_t* p, uint4 v) {
    *reinterpret_cast<uint4*>(p) = v;
}

// 64-bit division by a divisor fixed at launch: m = floor((2^64 - 1) / d) gives the
// quotient or one less for n < 2^62, fixed by one comparison.
struct FastDiv {
    std::uint64_t d;
    std::uint64_t m;
};

inline FastDiv make_fastdiv(std::uint64_t d) { return FastDiv{d, ~0ull / d}; }

__device__ __forceinline__ std::uint64_t divmod(const FastDiv& f, std::uint64_t n, std::uint64_t& r) {
    std::uint64_t q = __umul64hi(n, f.m);
    r = n - q * f.d;
    if (r >= f.d) {
        ++q;
        r -= f.d;
    }
    return q;
}

__device__ __forceinline__ std::uint32_t pick4(unsigned q, std::uint32_t a, std::uint32_t b,
                                               std::uint32_t c, std::uint32_t d) {
    return q == 0 ? a : q == 1 ? b : q == 2 ? c : d;
}

// out = the NO words that start `sh` bytes (0..15) into the word array `in`.
template <int NO, int NI>
__device__ __forceinline__ void shift_bytes(const std::uint32_t (&in)[NI], unsigned sh,
                                            std::uint32_t (&out)[NO]) {
    static_assert(NI >= NO + 4, "shift_bytes reads up to four words past the output");
    const unsigned q = sh >> 2, r = (sh & 3) * 8;
#pragma unroll
    for (int t = 0; t < NO; ++t)
        out[t] = __funnelshift_r(pick4(q, in[t], in[t + 1], in[t + 2], in[t + 3]),
                                 pick4(q, in[t + 1], in[t + 2], in[t + 3], in[t + 4]), r);
}

// Bytes [lo, hi) of a word, all ones.
__device__ __forceinline__ std::uint32_t byte_mask(int lo, int hi) {
    const std::uint32_t upto = hi >= 4 ? ~0u : (1u << (8 * hi)) - 1;
    return upto & ~((1u << (8 * lo)) - 1);
}

// The first `keep` bytes of w (none below 0, all from 4), the rest from pad4.
__device__ __forceinline__ std::uint32_t keep_bytes(std::uint32_t w, int keep, std::uint32_t pad4) {
    const std::uint32_t mask = byte_mask(0, max(0, min(keep, 4)));
    return (w & mask) | (pad4 & ~mask);
}

__device__ __forceinline__ void put_words(std::uint32_t* w, int at, uint4 v) {
    w[at] = v.x;
    w[at + 1] = v.y;
    w[at + 2] = v.z;
    w[at + 3] = v.w;
}

// Copies `nvec` aligned 16-byte vectors from global to shared memory, block-wide, four in
// flight per thread. With PAD > 0, byte b lands at b + PAD * (b / 128) (word stores).
template <std::uint32_t PAD = 0>
__device__ __forceinline__ void stage_vectors(std::uint8_t* smem, const std::uint8_t* in, std::uint32_t nvec) {
    constexpr int k_batch = 4;
    for (std::uint32_t base = 0; base < nvec; base += k_batch * k_threads) {
        uint4 v[k_batch];
#pragma unroll
        for (int u = 0; u < k_batch; ++u) {
            const std::uint32_t at = base + u * k_threads + threadIdx.x;
            if (at < nvec) v[u] = load16(in + 16ull * at);
        }
#pragma unroll
        for (int u = 0; u < k_batch; ++u) {
            const std::uint32_t at = base + u * k_threads + threadIdx.x;
            if (at >= nvec) continue;
            if constexpr (PAD == 0) {
                *reinterpret_cast<uint4*>(smem + 16 * at) = v[u];
            } else {
                auto* w = reinterpret_cast<std::uint32_t*>(smem + 16 * at + PAD * (at / 8));
                w[0] = v[u].x;
                w[1] = v[u].y;
                w[2] = v[u].z;
                w[3] = v[u].w;
            }
        }
    }
}

// Asynchronous staging (cp.async, sm_80 and later): 16-byte copies from global to shared
// memory that complete in the background, in commit groups.
// L2 is asked to fetch the whole aligned 256-byte block from DRAM: the staged ranges are
// contiguous runs. On an H200 SoA -> AoS at 256 MiB: xyz 92 -> 94%, mixed 89.4 -> 91%, wide
// and packed 0.2-0.9 points lower (93.5-94.7%); 1 GiB within 0.6 points.
__device__ __forceinline__ void copy_async16(void* smem, const void* global) {
    const auto s = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(s), "l"(global) : "memory");
}

__device__ __forceinline__ void async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most N of this thread's commit groups are still in flight.
template <int N> __device__ __forceinline__ void async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ void stage_vectors_async(std::uint8_t* smem, const std::uint8_t* in, std::uint32_t nvec) {
    for (std::uint32_t at = threadIdx.x; at < nvec; at += k_threads) copy_async16(smem + 16 * at, in + 16ull * at);
}

// Blocks that fit on the device at once with `smem` bytes of dynamic shared memory each,
// at most `max_per_sm` per SM and at most `tiles`. The runtime is asked once per kernel,
// shared memory size, block size and device; later launches reuse its answer. A failed
// query counts as one block and is asked again next time.
template <class K>
unsigned resident_grid(K kernel, std::size_t smem, std::uint64_t tiles, int max_per_sm = INT_MAX,
                       int threads = k_threads) {
    struct Known {
        K kernel;
        std::size_t smem;
        int threads, device, sms, per_sm;
    };
    static std::mutex mutex;
    static std::vector<Known> known;
    int device = 0, sms = 1, per_sm = 1;
    if (cudaGetDevice(&device) == cudaSuccess) {
        const std::lock_guard lock(mutex);
        const auto k = std::find_if(known.begin(), known.end(), [&](const Known& x) {
            return x.kernel == kernel && x.smem == smem && x.threads == threads && x.device == device;
        });
        if (k != known.end()) {
            sms = k->sms;
            per_sm = k->per_sm;
        } else if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
                   cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) == cudaSuccess) {
            known.push_back({kernel, smem, threads, device, sms, per_sm});
        } else {
            sms = per_sm = 1;
        }
    }
    per_sm = std::min(per_sm, max_per_sm);
    return static_cast<unsigned>(std::clamp<std::uint64_t>(std::uint64_t(std::max(1, per_sm)) * std::max(1, sms), 1,
                                                           std::max<std::uint64_t>(tiles, 1)));
}

inline unsigned grid_for(std::uint64_t items, std::uint64_t per_block) {
    return static_cast<unsigned>(std::clamp<std::uint64_t>((items + per_block - 1) / per_block, 1, 1u << 20));
}

// fn(std::integral_constant<int, E>{}) for the element sizes E the kernels take: 1, 2, 4, 8.
template <class F>
cudaError_t dispatch_elem(std::size_t elem, F&& fn) {
    switch (elem) {
    case 1: return fn(std::integral_constant<int, 1>{});
    case 2: return fn(std::integral_constant<int, 2>{});
    case 4: return fn(std::integral_constant<int, 4>{});
    case 8: return fn(std::integral_constant<int, 8>{});
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

} // namespace interopbench::kernels
