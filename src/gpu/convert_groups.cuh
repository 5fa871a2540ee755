// The host entry points of the kernel groups (private to the convert_*.cu files). Each group
// file picks its kernel by element size or row width and launches it; convert_dispatch.cu, the
// launch functions of convert_kernels.hpp, checks the arguments and calls these. Each returns
// the launch's cudaError_t, cudaErrorInvalidValue for what its kernels do not take (element
// sizes other than 1, 2, 4, 8; records the AoS/SoA kernels do not take; grids too large).
//
// They are ordinary functions with external linkage on purpose: nvcc names a file's unnamed
// namespace, and so its kernels, after such a function where the file has one; a file whose
// only external functions are template instantiations gets a name with the compiler's process
// id in it, different in every build.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "gpu/convert_kernels.hpp"

namespace interopbench::kernels::detail {

// convert_transpose.cu
cudaError_t transpose(void* dst, const void* src, Dims2 dims, std::size_t elem, cudaStream_t stream);

// convert_aos_soa.cu
cudaError_t aos_to_soa(void* soa, const void* aos, const RecordLayout& rec, std::uint64_t n, cudaStream_t stream);
cudaError_t soa_to_aos(void* aos, const void* soa, const RecordLayout& rec, std::uint64_t n, cudaStream_t stream);

// convert_arrow_fixed.cu
cudaError_t arrow_fixed_to_dense(void* dense, const void* values, const std::uint8_t* validity, std::uint64_t n,
                                 std::size_t width, std::uint64_t fill, cudaStream_t stream);
cudaError_t dense_to_arrow_fixed(void* values, std::uint8_t* validity, const void* dense, std::uint64_t n,
                                 std::size_t width, std::uint64_t null_value, cudaStream_t stream);

// convert_arrow_binary.cu
cudaError_t arrow_binary_to_dense(std::uint8_t* dense, const std::int32_t* offsets, const std::uint8_t* data,
                                  const std::uint8_t* validity, std::uint64_t n, std::uint64_t width,
                                  std::uint8_t pad, cudaStream_t stream);
cudaError_t dense_to_arrow_binary(std::int32_t* offsets, std::uint8_t* data, const std::uint8_t* dense,
                                  std::uint64_t n, std::uint64_t width, std::uint8_t pad, void* scratch,
                                  cudaStream_t stream);

// convert_strided.cu
cudaError_t strided_to_contiguous(void* dst, const void* parent, const StridedView& view, std::size_t elem,
                                  cudaStream_t stream);

} // namespace interopbench::kernels::detail
