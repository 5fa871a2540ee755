#pragma once
/// Device kernels of the pipeline: the layout conversion (struct of arrays of mixed types ->
/// row-major float32 matrix) and the consumer (per-row normalisation and a sum).
#include <cstdint>

#include <cuda_runtime.h>

namespace interopbench::pipeline {

inline constexpr int k_max_cols = 8;

/// The columns of one batch on the device: column c holds `rows` values at data[c] of
/// type[c] (0 f32, 1 i64, 2 f16, 3 i8, ColType's order).
struct DeviceColumns {
    const void* data[k_max_cols];
    int type[k_max_cols];
    int cols;
};

/// rows x cols float32, row-major, at `out` from `in`, one thread per row (each column read
/// coalesced across a warp, each row written as whole 16-byte stores when cols is 4 or 8).
cudaError_t launch_convert(float* out, const DeviceColumns& in, std::uint64_t rows, cudaStream_t stream);

/// Adds to *result (a device double) the sum over rows of sum_j x_j / (max_j |x_j| + 1),
/// each row in float, as consume_host does.
cudaError_t launch_consume(double* result, const float* matrix, std::uint64_t rows, int cols, cudaStream_t stream);

} // namespace interopbench::pipeline
