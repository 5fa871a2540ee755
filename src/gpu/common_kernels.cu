// Kernels shared by the GPU scenarios: the stream-holding spin kernel, the data pattern
// (fill and check), and the SM copy kernel.
#include "gpu/kernels.hpp"
#include "interopbench/splitmix.hpp"

#include <algorithm>

namespace interopbench::kernels {
namespace {

__host__ __device__ inline unsigned long long mix(unsigned long long x) { return interopbench::splitmix64(x); }

__global__ void spin_wait_kernel(volatile int* flag, unsigned long long timeout_ns, int* timed_out) {
    unsigned long long start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (*flag == 0) {
        unsigned long long now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > timeout_ns) {
            if (timed_out) *timed_out = 1;
            break;
        }
    }
}

__global__ void fill_pattern_kernel(unsigned long long* dst, std::size_t words, unsigned char* tail,
                                    std::size_t tail_bytes, unsigned long long seed) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words; i += stride)
        dst[i] = mix(seed ^ mix(i));
    if (blockIdx.x == 0 && threadIdx.x == 0 && tail_bytes) {
        const unsigned long long w = mix(seed ^ mix(words));
        for (std::size_t b = 0; b < tail_bytes; ++b) tail[b] = static_cast<unsigned char>(w >> (8 * b));
    }
}

__global__ void check_pattern_kernel(const unsigned long long* src, std::size_t words, const unsigned char* tail,
                                     std::size_t tail_bytes, unsigned long long seed, unsigned long long* count) {
    unsigned long long bad = 0;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words; i += stride)
        bad += src[i] != mix(seed ^ mix(i));
    if (blockIdx.x == 0 && threadIdx.x == 0 && tail_bytes) {
        const unsigned long long w = mix(seed ^ mix(words));
        for (std::size_t b = 0; b < tail_bytes; ++b) bad += tail[b] != static_cast<unsigned char>(w >> (8 * b));
    }
    if (bad) atomicAdd(count, bad);
}

// 16-byte vector copy, 4 independent loads in flight per thread per iteration.
__global__ void __launch_bounds__(512) sm_copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                                      std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

__global__ void byte_copy_kernel(unsigned char* dst, const unsigned char* src, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
        dst[i] = src[i];
}

unsigned grid_for(std::size_t items, unsigned block, unsigned cap) {
    return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(cap, (items + block - 1) / block)));
}

} // namespace

cudaError_t launch_spin_wait(volatile int* flag, std::uint64_t timeout_ns, int* timed_out, cudaStream_t stream) {
    spin_wait_kernel<<<1, 1, 0, stream>>>(flag, timeout_ns, timed_out);
    return cudaGetLastError();
}

cudaError_t launch_fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed, cudaStream_t stream) {
    const std::size_t words = bytes / 8;
    auto* base = static_cast<unsigned long long*>(dst);
    fill_pattern_kernel<<<grid_for(words, 256, 4096), 256, 0, stream>>>(
        base, words, reinterpret_cast<unsigned char*>(base + words), bytes % 8, seed);
    return cudaGetLastError();
}

cudaError_t launch_check_pattern(const void* src, std::size_t bytes, std::uint64_t seed, unsigned long long* count,
                                 cudaStream_t stream) {
    const std::size_t words = bytes / 8;
    const auto* base = static_cast<const unsigned long long*>(src);
    check_pattern_kernel<<<grid_for(words, 256, 4096), 256, 0, stream>>>(
        base, words, reinterpret_cast<const unsigned char*>(base + words), bytes % 8, seed, count);
    return cudaGetLastError();
}

cudaError_t launch_sm_copy(void* dst, const void* src, std::size_t bytes, int sm_count, cudaStream_t stream) {
    // Enough resident blocks to keep every SM busy: 4 blocks of 512 threads per SM.
    return launch_sm_copy_blocks(dst, src, bytes, static_cast<unsigned>(std::max(1, sm_count) * 4), stream);
}

cudaError_t launch_sm_copy_blocks(void* dst, const void* src, std::size_t bytes, unsigned max_blocks, cudaStream_t stream) {
    const auto d = reinterpret_cast<std::uintptr_t>(dst), s = reinterpret_cast<std::uintptr_t>(src);
    const unsigned block = 512;
    const unsigned cap = std::max(1u, max_blocks);
    if (d % 16 == 0 && s % 16 == 0) {
        const std::size_t n = bytes / 16;
        if (n) sm_copy_kernel<<<grid_for(n, block, cap), block, 0, stream>>>(static_cast<uint4*>(dst),
                                                                            static_cast<const uint4*>(src), n);
        const std::size_t done = n * 16;
        if (bytes > done)
            byte_copy_kernel<<<1, 32, 0, stream>>>(static_cast<unsigned char*>(dst) + done,
                                                   static_cast<const unsigned char*>(src) + done, bytes - done);
    } else {
        byte_copy_kernel<<<grid_for(bytes, 256, cap * 2), 256, 0, stream>>>(static_cast<unsigned char*>(dst),
                                                                          static_cast<const unsigned char*>(src), bytes);
    }
    return cudaGetLastError();
}

} // namespace interopbench::kernels
