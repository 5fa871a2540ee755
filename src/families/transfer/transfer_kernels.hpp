#pragma once
// Kernels of the transfer family: the null endpoints' (GPU memory read into nothing, its 8-byte
// words XOR-folded into one word so that every load is needed and the result can be checked; GPU
// memory written from nothing, one 8-byte word repeated) and the broadcast's (GPU memory read once
// and written to several destinations). Each returns the launch's cudaError_t and enqueues on
// `stream` of the current device.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace interopbench::kernels {

/// XORs every 8-byte word of `src` (`bytes` a multiple of 8, `src` 16-byte aligned) into *fold
/// (device memory) with at most `max_blocks` blocks of 512 threads, 16-byte loads.
cudaError_t launch_read_fold(const void* src, std::size_t bytes, unsigned max_blocks, unsigned long long* fold,
                             cudaStream_t stream);

/// Writes `word` to every 8-byte word of `dst` (`bytes` a multiple of 8, `dst` 16-byte aligned)
/// with at most `max_blocks` blocks of 512 threads, 16-byte stores.
cudaError_t launch_write_words(void* dst, std::size_t bytes, unsigned max_blocks, unsigned long long word,
                               cudaStream_t stream);

/// Most destinations one broadcast kernel writes (spec.hpp's k_max_destinations).
inline constexpr unsigned k_max_broadcast = 8;

/// The destinations of a broadcast, passed to the kernel by value: `count` pointers (device
/// memory of the current GPU, a peer's with peer access on, or mapped host memory), each with
/// room for the bytes broadcast.
struct BroadcastTargets {
    void* dst[k_max_broadcast] = {};
    unsigned count = 0;
};

/// One kernel reads `bytes` at `src` once and stores each piece to every destination of `to`,
/// on at most `max_blocks` blocks of 512 threads (grid-stride): 16-byte accesses when `src` and
/// every destination are 16-byte aligned (the last bytes % 16 by the first block), else 1-byte
/// accesses. cudaErrorInvalidValue for no destination, more than k_max_broadcast or a null
/// pointer.
cudaError_t launch_broadcast(const void* src, const BroadcastTargets& to, std::size_t bytes, unsigned max_blocks,
                             cudaStream_t stream);

} // namespace interopbench::kernels
