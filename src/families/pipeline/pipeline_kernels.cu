// The pipeline's conversion and consumer kernels. See pipeline_kernels.hpp.
#include "families/pipeline/pipeline_kernels.hpp"

#include <cuda_fp16.h>

namespace interopbench::pipeline {
namespace {

constexpr int k_threads = 256;

__device__ float load_as_float(const void* col, int type, std::uint64_t r) {
    switch (type) {
    case 0: return static_cast<const float*>(col)[r];
    case 1: return static_cast<float>(static_cast<const long long*>(col)[r]);
    case 2: return __half2float(static_cast<const __half*>(col)[r]);
    default: return static_cast<float>(static_cast<const signed char*>(col)[r]);
    }
}

__global__ void convert_kernel(float* out, DeviceColumns in, std::uint64_t rows) {
    for (std::uint64_t r = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; r < rows;
         r += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
        float v[k_max_cols];
#pragma unroll
        for (int c = 0; c < k_max_cols; ++c)
            if (c < in.cols) v[c] = load_as_float(in.data[c], in.type[c], r);
        float* o = out + r * in.cols;
        if (in.cols == 8) {
            reinterpret_cast<float4*>(o)[0] = make_float4(v[0], v[1], v[2], v[3]);
            reinterpret_cast<float4*>(o)[1] = make_float4(v[4], v[5], v[6], v[7]);
        } else {
            for (int c = 0; c < in.cols; ++c) o[c] = v[c];
        }
    }
}

__global__ void consume_kernel(double* result, const float* m, std::uint64_t rows, int cols) {
    __shared__ double partial[k_threads / 32];
    double acc = 0;
    for (std::uint64_t r = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; r < rows;
         r += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
        float x[k_max_cols];
        const float* row = m + r * cols;
        if (cols == 8) {
            const float4 a = reinterpret_cast<const float4*>(row)[0], b = reinterpret_cast<const float4*>(row)[1];
            x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w; x[4] = b.x; x[5] = b.y; x[6] = b.z; x[7] = b.w;
        } else {
            for (int c = 0; c < cols && c < k_max_cols; ++c) x[c] = row[c];
        }
        float mx = 0;
        for (int c = 0; c < cols && c < k_max_cols; ++c) mx = fmaxf(mx, fabsf(x[c]));
        const float inv = __fdiv_rn(1.0f, __fadd_rn(mx, 1.0f));
        float s = 0;
        for (int c = 0; c < cols && c < k_max_cols; ++c) s = __fadd_rn(s, __fmul_rn(x[c], inv));
        acc += s;
    }
    for (int off = 16; off > 0; off /= 2) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0;
        for (int w = 0; w < k_threads / 32; ++w) t += partial[w];
        atomicAdd(result, t);
    }
}

unsigned grid_for(std::uint64_t rows) {
    const std::uint64_t blocks = (rows + k_threads - 1) / k_threads;
    return static_cast<unsigned>(blocks < 65535 ? (blocks ? blocks : 1) : 65535);
}

} // namespace

cudaError_t launch_convert(float* out, const DeviceColumns& in, std::uint64_t rows, cudaStream_t stream) {
    if (in.cols < 1 || in.cols > k_max_cols) return cudaErrorInvalidValue;
    convert_kernel<<<grid_for(rows), k_threads, 0, stream>>>(out, in, rows);
    return cudaGetLastError();
}

cudaError_t launch_consume(double* result, const float* matrix, std::uint64_t rows, int cols, cudaStream_t stream) {
    if (cols < 1 || cols > k_max_cols) return cudaErrorInvalidValue;
    consume_kernel<<<grid_for(rows), k_threads, 0, stream>>>(result, matrix, rows, cols);
    return cudaGetLastError();
}

} // namespace interopbench::pipeline
