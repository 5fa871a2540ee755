// The transfer family's kernels: the null endpoints' and the broadcast's (transfer_kernels.hpp).
#include "families/transfer/transfer_kernels.hpp"

#include <algorithm>

namespace interopbench::kernels {
namespace {

constexpr unsigned k_threads = 512;

__global__ void __launch_bounds__(512) read_fold_kernel(const ulonglong2* __restrict__ src, std::size_t pairs,
                                                        const unsigned long long* __restrict__ tail, bool has_tail,
                                                        unsigned long long* fold) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    unsigned long long acc = 0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < pairs; i += stride) {
        const ulonglong2 v = src[i];
        acc ^= v.x ^ v.y;
    }
    if (has_tail && blockIdx.x == 0 && threadIdx.x == 0) acc ^= *tail;
    if (acc) atomicXor(fold, acc);
}

__global__ void __launch_bounds__(512) write_words_kernel(ulonglong2* __restrict__ dst, std::size_t pairs,
                                                          unsigned long long* __restrict__ tail, bool has_tail,
                                                          unsigned long long word) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const ulonglong2 v = make_ulonglong2(word, word);
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < pairs; i += stride)
        dst[i] = v;
    if (has_tail && blockIdx.x == 0 && threadIdx.x == 0) *tail = word;
}

// Each 16-byte load of the source stored to every destination; four loads in flight per thread
// per iteration, as the SM copy kernel (gpu/common_kernels.cu) has them. The destination loop is
// unrolled over every slot, so each pointer is read from the parameters at a fixed place.
__global__ void __launch_bounds__(512) broadcast_kernel(const uint4* __restrict__ src, BroadcastTargets to, std::size_t n,
                                                        unsigned tail) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
#pragma unroll
        for (unsigned k = 0; k < k_max_broadcast; ++k)
            if (k < to.count) {
                uint4* out = static_cast<uint4*>(to.dst[k]);
                out[i] = a;
                out[i + stride] = b;
                out[i + 2 * stride] = c;
                out[i + 3 * stride] = d;
            }
    }
    for (; i < n; i += stride) {
        const uint4 a = src[i];
#pragma unroll
        for (unsigned k = 0; k < k_max_broadcast; ++k)
            if (k < to.count) static_cast<uint4*>(to.dst[k])[i] = a;
    }
    // The last bytes % 16, one per thread of the first block.
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const unsigned char v = reinterpret_cast<const unsigned char*>(src + n)[threadIdx.x];
#pragma unroll
        for (unsigned k = 0; k < k_max_broadcast; ++k)
            if (k < to.count) static_cast<unsigned char*>(to.dst[k])[n * 16 + threadIdx.x] = v;
    }
}

// A pointer not 16-byte aligned: every byte loaded once and stored to every destination.
__global__ void __launch_bounds__(512) broadcast_bytes_kernel(const unsigned char* __restrict__ src, BroadcastTargets to,
                                                              std::size_t bytes) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < bytes; i += stride) {
        const unsigned char v = src[i];
#pragma unroll
        for (unsigned k = 0; k < k_max_broadcast; ++k)
            if (k < to.count) static_cast<unsigned char*>(to.dst[k])[i] = v;
    }
}

unsigned grid(std::size_t items, unsigned max_blocks) {
    return static_cast<unsigned>(
        std::max<std::size_t>(1, std::min<std::size_t>(std::max(1u, max_blocks), (items + k_threads - 1) / k_threads)));
}

} // namespace

cudaError_t launch_read_fold(const void* src, std::size_t bytes, unsigned max_blocks, unsigned long long* fold,
                             cudaStream_t stream) {
    if (bytes % 8 != 0 || reinterpret_cast<std::uintptr_t>(src) % 16 != 0) return cudaErrorInvalidValue;
    const std::size_t pairs = bytes / 16;
    const auto* words = static_cast<const unsigned long long*>(src);
    read_fold_kernel<<<grid(pairs, max_blocks), k_threads, 0, stream>>>(static_cast<const ulonglong2*>(src), pairs,
                                                                       words + 2 * pairs, bytes % 16 != 0, fold);
    return cudaGetLastError();
}

cudaError_t launch_write_words(void* dst, std::size_t bytes, unsigned max_blocks, unsigned long long word,
                               cudaStream_t stream) {
    if (bytes % 8 != 0 || reinterpret_cast<std::uintptr_t>(dst) % 16 != 0) return cudaErrorInvalidValue;
    const std::size_t pairs = bytes / 16;
    auto* words = static_cast<unsigned long long*>(dst);
    write_words_kernel<<<grid(pairs, max_blocks), k_threads, 0, stream>>>(static_cast<ulonglong2*>(dst), pairs,
                                                                         words + 2 * pairs, bytes % 16 != 0, word);
    return cudaGetLastError();
}

cudaError_t launch_broadcast(const void* src, const BroadcastTargets& to, std::size_t bytes, unsigned max_blocks,
                             cudaStream_t stream) {
    if (!src || to.count == 0 || to.count > k_max_broadcast) return cudaErrorInvalidValue;
    bool aligned = reinterpret_cast<std::uintptr_t>(src) % 16 == 0;
    for (unsigned k = 0; k < to.count; ++k) {
        if (!to.dst[k]) return cudaErrorInvalidValue;
        aligned = aligned && reinterpret_cast<std::uintptr_t>(to.dst[k]) % 16 == 0;
    }
    if (bytes == 0) return cudaSuccess;
    if (aligned) {
        const std::size_t n = bytes / 16;
        broadcast_kernel<<<grid(n, max_blocks), k_threads, 0, stream>>>(static_cast<const uint4*>(src), to, n,
                                                                       static_cast<unsigned>(bytes % 16));
    } else {
        broadcast_bytes_kernel<<<grid(bytes, max_blocks), k_threads, 0, stream>>>(static_cast<const unsigned char*>(src), to,
                                                                                 bytes);
    }
    return cudaGetLastError();
}

} // namespace interopbench::kernels
