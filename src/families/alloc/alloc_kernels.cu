// Kernels of the allocation scenarios: plain grid-stride loops over float data. They are
// the real work that allocated temporaries feed, not tuned kernels: what the allocation
// scenarios measure is how allocation changes their timeline, not their peak speed.
#include "families/alloc/alloc_kernels.hpp"
#include "interopbench/splitmix.hpp"

#include <algorithm>

namespace interopbench::kernels {
namespace {

constexpr int k_threads = 256;

__device__ std::uint64_t mix64(std::uint64_t x) { return splitmix64(x); }

__device__ std::size_t first_index() { return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ std::size_t grid_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

__global__ void fill_uniform_kernel(float* dst, std::size_t n, std::uint64_t seed, float lo, float span) {
    for (std::size_t i = first_index(); i < n; i += grid_stride()) {
        // The top 24 bits give a uniform float in [0, 1) without rounding up to 1.
        const float u = static_cast<float>(mix64(seed ^ (i * 0xD1B54A32D192ED03ull)) >> 40) * (1.0f / 16777216.0f);
        dst[i] = lo + span * u;
    }
}

__global__ void work_kernel(float* dst, const float* src, std::size_t n) {
    for (std::size_t i = first_index(); i < n; i += grid_stride()) dst[i] = work_value(src[i]);
}

__global__ void accumulate_kernel(float* acc, const float* src, std::size_t n) {
    for (std::size_t i = first_index(); i < n; i += grid_stride()) acc[i] = acc[i] + src[i];
}

__global__ void pipeline_step_kernel(float* dst, const float* src, const float* a, const float* b,
                                     std::size_t n) {
    for (std::size_t i = first_index(); i < n; i += grid_stride()) dst[i] = pipeline_value(src[i], a[i], b[i]);
}

__global__ void sum_kernel(const float* src, std::size_t n, double* sum) {
    double acc = 0;
    for (std::size_t i = first_index(); i < n; i += grid_stride()) acc += src[i];
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    __shared__ double warp_sums[k_threads / 32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (warp != 0) return;
    acc = lane < k_threads / 32 ? warp_sums[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if (lane == 0) atomicAdd(sum, acc);
}

// Enough blocks to cover n once, at most `limit`.
unsigned grid_for(std::size_t n, std::size_t limit) {
    const std::size_t need = (n + k_threads - 1) / k_threads;
    return static_cast<unsigned>(std::max<std::size_t>(1, std::min(need, limit)));
}

} // namespace

cudaError_t launch_fill_uniform(float* dst, std::size_t n, std::uint64_t seed, float lo, float span,
                                cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    fill_uniform_kernel<<<grid_for(n, 4096), k_threads, 0, stream>>>(dst, n, seed, lo, span);
    return cudaGetLastError();
}

cudaError_t launch_work(float* dst, const float* src, std::size_t n, int blocks, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    work_kernel<<<grid_for(n, static_cast<std::size_t>(std::max(blocks, 1))), k_threads, 0, stream>>>(dst, src, n);
    return cudaGetLastError();
}

cudaError_t launch_accumulate(float* acc, const float* src, std::size_t n, int blocks, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    accumulate_kernel<<<grid_for(n, static_cast<std::size_t>(std::max(blocks, 1))), k_threads, 0, stream>>>(acc, src, n);
    return cudaGetLastError();
}

cudaError_t launch_pipeline_step(float* dst, const float* src, const float* a, const float* b,
                                 std::size_t n, int sm_count, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    const auto limit = static_cast<std::size_t>(std::max(sm_count, 1)) * 8;
    pipeline_step_kernel<<<grid_for(n, limit), k_threads, 0, stream>>>(dst, src, a, b, n);
    return cudaGetLastError();
}

cudaError_t launch_sum(const float* src, std::size_t n, double* sum, int sm_count, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    const auto limit = static_cast<std::size_t>(std::max(sm_count, 1)) * 4;
    sum_kernel<<<grid_for(n, limit), k_threads, 0, stream>>>(src, n, sum);
    return cudaGetLastError();
}

} // namespace interopbench::kernels
