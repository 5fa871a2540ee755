// Kernels of the peer family: a copy kernel that keeps enough 16-byte loads in flight to
// fill a GPU-to-GPU link, and a single-thread pointer chase for latency.
#include "families/peer/peer_kernels.hpp"

#include <algorithm>

namespace interopbench::kernels {
namespace {

constexpr std::size_t k_tile_vectors =
    static_cast<std::size_t>(k_peer_copy_threads) * k_peer_copy_unroll;

// A block copies whole tiles of k_tile_vectors 16-byte vectors. Each thread issues all
// its loads before any store: over a link the load latency is close to a microsecond, so
// the bandwidth depends on how many loads each SM has outstanding, not on the ALUs.
__global__ void __launch_bounds__(k_peer_copy_threads)
    peer_copy_kernel(uint4* dst, const uint4* src, std::size_t vectors,
                     unsigned char* dst_tail, const unsigned char* src_tail, unsigned tail_bytes) {
    const std::size_t tiles = vectors / k_tile_vectors;
    for (std::size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const std::size_t base = t * k_tile_vectors + threadIdx.x;
        uint4 v[k_peer_copy_unroll];
#pragma unroll
        for (int u = 0; u < k_peer_copy_unroll; ++u)
            v[u] = src[base + static_cast<std::size_t>(u) * k_peer_copy_threads];
#pragma unroll
        for (int u = 0; u < k_peer_copy_unroll; ++u)
            dst[base + static_cast<std::size_t>(u) * k_peer_copy_threads] = v[u];
    }
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = tiles * k_tile_vectors + blockIdx.x * blockDim.x + threadIdx.x;
         i < vectors; i += stride)
        dst[i] = src[i];
    if (blockIdx.x == 0 && threadIdx.x < tail_bytes)
        dst_tail[threadIdx.x] = src_tail[threadIdx.x];
}

__global__ void chain_build_kernel(unsigned char* base, const std::uint32_t* next,
                                   std::uint64_t nodes, std::uint64_t stride) {
    const std::uint64_t step = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < nodes; i += step) {
        *reinterpret_cast<unsigned long long*>(base + i * stride) =
            reinterpret_cast<unsigned long long>(base + next[i] * stride);
    }
}

__global__ void pointer_chase_kernel(std::uint64_t* state, std::uint64_t hops) {
    auto p = reinterpret_cast<const unsigned long long*>(*state);
    for (std::uint64_t i = 0; i < hops; ++i)
        p = reinterpret_cast<const unsigned long long*>(__ldcg(p));
    *state = reinterpret_cast<std::uint64_t>(p);
}

} // namespace

int peer_copy_blocks(std::size_t bytes, int sm_count) {
    const std::size_t vectors = bytes / sizeof(uint4);
    const std::size_t tiles = (vectors + k_tile_vectors - 1) / k_tile_vectors;
    const std::size_t fill = static_cast<std::size_t>(std::max(sm_count, 1)) *
                             k_peer_copy_blocks_per_sm;
    return static_cast<int>(std::max<std::size_t>(1, std::min(tiles, fill)));
}

cudaError_t launch_peer_copy(void* dst, const void* src, std::size_t bytes, int sm_count,
                             cudaStream_t stream) {
    if ((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) % 16)
        return cudaErrorInvalidValue;
    const std::size_t vectors = bytes / sizeof(uint4);
    const std::size_t body = vectors * sizeof(uint4);
    peer_copy_kernel<<<peer_copy_blocks(bytes, sm_count), k_peer_copy_threads, 0, stream>>>(
        static_cast<uint4*>(dst), static_cast<const uint4*>(src), vectors,
        static_cast<unsigned char*>(dst) + body, static_cast<const unsigned char*>(src) + body,
        static_cast<unsigned>(bytes - body));
    return cudaGetLastError();
}

cudaError_t launch_chain_build(void* base, const std::uint32_t* next, std::uint64_t nodes,
                               std::uint64_t stride, cudaStream_t stream) {
    if (stride % 8 || nodes == 0) return cudaErrorInvalidValue;
    const int threads = 256;
    const auto blocks =
        static_cast<unsigned>(std::min<std::uint64_t>((nodes + threads - 1) / threads, 4096));
    chain_build_kernel<<<blocks, threads, 0, stream>>>(static_cast<unsigned char*>(base), next,
                                                       nodes, stride);
    return cudaGetLastError();
}

cudaError_t launch_pointer_chase(std::uint64_t* state, std::uint64_t hops, cudaStream_t stream) {
    pointer_chase_kernel<<<1, 1, 0, stream>>>(state, hops);
    return cudaGetLastError();
}

} // namespace interopbench::kernels
