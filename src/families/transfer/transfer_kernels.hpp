#pragma once
// Kernels of the transfer family's null endpoints: GPU memory read into nothing (its 8-byte words
// XOR-folded into one word, so that every load is needed and the result can be checked) and GPU
// memory written from nothing (one 8-byte word repeated). Each returns the launch's cudaError_t
// and enqueues on `stream` of the current device.
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

} // namespace interopbench::kernels
