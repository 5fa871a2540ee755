#pragma once
/// Host launch functions of the shared kernels. Each returns the launch's cudaError_t.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace interopbench::kernels {

/// Spins until *flag != 0 or `timeout_ns` passes (then sets *timed_out = 1 if non-null).
cudaError_t launch_spin_wait(volatile int* flag, std::uint64_t timeout_ns, int* timed_out,
                             cudaStream_t stream);

/// Writes the hash pattern of (seed, word index) over `bytes` (a multiple of 8 is used;
/// the tail bytes get the low bytes of the next word).
cudaError_t launch_fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed,
                                cudaStream_t stream);

/// Counts mismatching 8-byte words against the pattern into *count (device memory).
cudaError_t launch_check_pattern(const void* src, std::size_t bytes, std::uint64_t seed,
                                 unsigned long long* count, cudaStream_t stream);

/// SM copy: a grid-stride copy with 16-byte accesses where aligned. `dst` and `src` may be
/// device, peer or mapped host pointers. `sm_count` sizes the grid.
cudaError_t launch_sm_copy(void* dst, const void* src, std::size_t bytes, int sm_count,
                           cudaStream_t stream);

/// The same kernel on at most `max_blocks` blocks of 512 threads (fewer when there are fewer
/// 16-byte pieces to copy): launch_sm_copy is this with 4 blocks per SM.
cudaError_t launch_sm_copy_blocks(void* dst, const void* src, std::size_t bytes, unsigned max_blocks,
                                  cudaStream_t stream);

} // namespace interopbench::kernels
