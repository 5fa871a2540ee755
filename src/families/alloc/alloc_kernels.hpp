#pragma once
/// Kernels of the allocation scenarios: the work that runs on allocated temporaries.
/// Each launch function returns the launch's cudaError_t. The per-element functions are
/// shared with the host so that checks recompute exactly what the device computed.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "interopbench/splitmix.hpp" // INTEROPBENCH_HOST_DEVICE

namespace interopbench::kernels {

/// Fused multiply-adds per element in work_value.
inline constexpr int k_work_iterations = 8;

/// The alloc_concurrent work kernel's function of one element: k_work_iterations fused
/// multiply-adds. Bit-identical on host and device (fmaf is correctly rounded on both).
INTEROPBENCH_HOST_DEVICE inline float work_value(float x) {
    for (int i = 0; i < k_work_iterations; ++i) x = fmaf(x, 0.75f, 0.25f);
    return x;
}

/// One elementwise operation of the alloc_pipeline step: 0.5 * (src * a + b), fused.
/// Stays near 1 for inputs in [0.5, 1.5), however many times it is chained.
INTEROPBENCH_HOST_DEVICE inline float pipeline_value(float src, float a, float b) {
    return 0.5f * fmaf(src, a, b);
}

/// Writes `n` floats in [lo, lo + span) from a hash of (seed, index); never zero when lo > 0.
cudaError_t launch_fill_uniform(float* dst, std::size_t n, std::uint64_t seed, float lo, float span,
                                cudaStream_t stream);

/// dst[i] = work_value(src[i]) on `blocks` blocks (grid-stride), so that kernels on
/// several streams can share the GPU.
cudaError_t launch_work(float* dst, const float* src, std::size_t n, int blocks, cudaStream_t stream);

/// acc[i] = acc[i] + src[i] on `blocks` blocks (grid-stride).
cudaError_t launch_accumulate(float* acc, const float* src, std::size_t n, int blocks,
                              cudaStream_t stream);

/// dst[i] = pipeline_value(src[i], a[i], b[i]) over the whole GPU (`sm_count` sizes the grid).
/// `dst` may not alias `a` or `b`; it may alias `src`.
cudaError_t launch_pipeline_step(float* dst, const float* src, const float* a, const float* b,
                                 std::size_t n, int sm_count, cudaStream_t stream);

/// *sum += the sum of src[0..n), accumulated in double, one atomic add per block.
cudaError_t launch_sum(const float* src, std::size_t n, double* sum, int sm_count, cudaStream_t stream);

} // namespace interopbench::kernels
