#pragma once
/// Host launch functions of the peer-copy and pointer-chase kernels. Each returns the
/// launch's cudaError_t (or the argument error) and enqueues on `stream` of the current
/// device.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace interopbench::kernels {

/// Threads per block of the peer copy kernel.
inline constexpr int k_peer_copy_threads = 512;
/// 16-byte loads each thread keeps in flight before its stores.
inline constexpr int k_peer_copy_unroll = 8;
/// Resident blocks per SM the grid is sized for.
inline constexpr int k_peer_copy_blocks_per_sm = 2;

/// Blocks the peer copy kernel uses for `bytes` on a GPU with `sm_count` SMs: enough to
/// fill every SM, never more than there are tiles of work (at least 1).
int peer_copy_blocks(std::size_t bytes, int sm_count);

/// Copies `bytes` from `src` to `dst` with 16-byte accesses, each thread holding
/// k_peer_copy_unroll loads in flight; the last bytes % 16 go byte by byte. `dst` and
/// `src` may be local, peer or mapped host pointers but must be 16-byte aligned
/// (cudaErrorInvalidValue otherwise).
cudaError_t launch_peer_copy(void* dst, const void* src, std::size_t bytes, int sm_count,
                             cudaStream_t stream);

/// Writes a pointer-chase chain: for node i, the 8-byte word at base + i * stride holds
/// the address base + next[i] * stride. `base` is the address the chasing GPU will
/// dereference (unified addressing makes it the same on every GPU); `next` is device
/// memory with `nodes` entries. `stride` is a multiple of 8.
cudaError_t launch_chain_build(void* base, const std::uint32_t* next, std::uint64_t nodes,
                               std::uint64_t stride, cudaStream_t stream);

/// One thread follows the chain `hops` times starting at the address stored in *state
/// (device memory) and stores the address it ends on back into *state. Loads bypass L1
/// (ld.global.cg) so every hop leaves the SM.
cudaError_t launch_pointer_chase(std::uint64_t* state, std::uint64_t hops, cudaStream_t stream);

} // namespace interopbench::kernels
