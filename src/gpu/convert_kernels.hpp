#pragma once
/// Host launch functions of the layout conversion kernels. Each enqueues its work on
/// `stream` and returns the first cudaError_t (cudaErrorInvalidValue for arguments the
/// kernel does not take). The host versions in interopbench/layout.hpp define the results.
///
/// Common contract: every buffer is 16-byte aligned (cudaMalloc gives 256); sources are read
/// in whole aligned 16-byte units, so a source allocation must extend to the next multiple
/// of 16 bytes past its last byte (true of every cudaMalloc allocation). Destinations are
/// written exactly: nothing outside the result is touched. Element counts stay below 2^62.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "gpu/convert.hpp"

namespace interopbench::kernels {

/// Row-major `dims` matrix of `elem`-byte elements (1, 2, 4, 8) at `src` -> row-major
/// cols x rows at `dst`. Shared-memory tiles of 256-byte row segments, 16-byte loads and
/// stores, output written in whole 32-byte sectors; rows of any length and alignment.
cudaError_t launch_transpose(void* dst, const void* src, Dims2 dims, std::size_t elem,
                             cudaStream_t stream);

/// `n` records at `aos` -> field arrays at `soa` laid out by soa_layout(rec, n). Records up
/// to 512 bytes.
cudaError_t launch_aos_to_soa(void* soa, const void* aos, const RecordLayout& rec, std::uint64_t n,
                              cudaStream_t stream);
/// Field arrays at `soa` -> `n` records at `aos`; gap bytes become zero.
cudaError_t launch_soa_to_aos(void* aos, const void* soa, const RecordLayout& rec, std::uint64_t n,
                              cudaStream_t stream);

/// Fixed-width column (`n` values of `width` bytes; `validity` may be nullptr) -> dense,
/// nulls set to the low `width` bytes of `fill`.
cudaError_t launch_arrow_fixed_to_dense(void* dense, const void* values, const std::uint8_t* validity,
                                        std::uint64_t n, std::size_t width, std::uint64_t fill,
                                        cudaStream_t stream);
/// Dense -> values plus validity bitmap (bitmap_bytes(n) bytes): an entry equal to the low
/// `width` bytes of `null_value` is null; bits past n are 0. The null count is not computed.
cudaError_t launch_dense_to_arrow_fixed(void* values, std::uint8_t* validity, const void* dense,
                                        std::uint64_t n, std::size_t width,
                                        std::uint64_t null_value, cudaStream_t stream);

/// Binary column (int32 offsets[n + 1], data, validity or nullptr) -> n x `width` bytes
/// padded with `pad`. `width` is a multiple of 16.
cudaError_t launch_arrow_binary_to_dense(std::uint8_t* dense, const std::int32_t* offsets,
                                         const std::uint8_t* data, const std::uint8_t* validity,
                                         std::uint64_t n, std::uint64_t width, std::uint8_t pad,
                                         cudaStream_t stream);
/// Scratch bytes launch_dense_to_arrow_binary needs for `n` rows of `width` bytes.
std::size_t dense_to_binary_scratch_bytes(std::uint64_t n, std::uint64_t width);
/// n x `width` bytes -> binary column without nulls (trailing `pad` bytes dropped), in one
/// pass: each block measures its rows, finds where its values start from its predecessors
/// (decoupled look-back) and writes offsets and values. `width` is a multiple of 16, at
/// most 256; `data` must hold n x width bytes; the total must fit int32 offsets (the caller
/// checks). `scratch` (dense_to_binary_scratch_bytes) must be all zero before its first
/// launch; each launch leaves it ready for the next, so launches that share it must be
/// ordered (one stream). A launch cut short (a device fault) leaves it unusable. Its
/// layout: uint32 tiles handed out, blocks done, the launch epoch (30 bits), status words
/// ever written; then one uint64 status word per tile: kind (bits 62-63, 1 aggregate, 2
/// inclusive prefix), epoch (bits 32-61), value (bits 0-31).
cudaError_t launch_dense_to_arrow_binary(std::int32_t* offsets, std::uint8_t* data,
                                         const std::uint8_t* dense, std::uint64_t n,
                                         std::uint64_t width, std::uint8_t pad, void* scratch,
                                         cudaStream_t stream);

/// The elements of `view` (column stride 1 or 2) over `parent` -> dense rows x cols at
/// `dst`.
cudaError_t launch_strided_to_contiguous(void* dst, const void* parent, const StridedView& view,
                                         std::size_t elem, cudaStream_t stream);

} // namespace interopbench::kernels
