// Times the layout transpose (kernels::launch_transpose, the kernel the layout_transpose
// scenario runs) on explicit shapes against a device-to-device copy of the same bytes, and
// checks every output against a naive transpose. For shapes the scenario's size/shape axes
// do not make: a few rows, a few columns, primes.
//
// Build (from the repository root, after building build-device/):
//   nvcc -O3 -std=c++20 -arch=sm_90 -Isrc -Iinclude -o build-device/transpose_shapes \
//     tests/gpu/transpose_shapes.cu build-device/libinteropbench_gpu.a build-device/libinteropbench_core.a
// Run: build-device/transpose_shapes MiB SHAPE... where SHAPE is square, rowsN (N rows),
// colsN (N columns), primeN (N rows, the largest prime column count that fits) or
// scenario-square, scenario-tall, scenario-wide (the layout_transpose scenario's own shapes
// for the size and element: odd dimensions).
// Prints one line per element size and shape: dimensions, copy and transpose time (median
// of 15 launches, CUDA events), efficiency = copy time / transpose time, and the check.
#include "gpu/convert_transpose.cu"
#include "harness_timing.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

template <class T>
__global__ void naive_transpose(T* out, const T* in, std::uint64_t rows, std::uint64_t cols) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < rows * cols;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        out[(i % cols) * rows + i / cols] = in[i];
}

__global__ void count_diff(const std::uint8_t* a, const std::uint8_t* b, std::uint64_t n, unsigned long long* bad) {
    unsigned long long local = 0;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        local += a[i] != b[i];
    if (local) atomicAdd(bad, local);
}

__global__ void fill(std::uint8_t* p, std::uint64_t n) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        std::uint64_t x = i * 0x9E3779B97F4A7C15ull;
        x ^= x >> 29;
        x *= 0xBF58476D1CE4E5B9ull;
        p[i] = std::uint8_t(x >> 32);
    }
}

bool is_prime(std::uint64_t x) {
    if (x < 2) return false;
    for (std::uint64_t d = 2; d * d <= x; ++d)
        if (x % d == 0) return false;
    return true;
}

bool dims_of(const std::string& shape, std::uint64_t elems, std::size_t elem, interopbench::Dims2& d) {
    auto number = [&](std::size_t at) { return std::strtoull(shape.c_str() + at, nullptr, 10); };
    if (shape.rfind("scenario-", 0) == 0) {
        // parse_shape and dims_for refuse unknown names and sizes too small for the shape.
        try {
            d = interopbench::dims_for(elems * elem, elem, interopbench::parse_shape(shape.substr(9)));
        } catch (const std::exception&) {
            return false;
        }
    } else if (shape == "square") {
        const auto s = static_cast<std::uint64_t>(std::sqrt(double(elems)));
        d = {s, s};
    } else if (shape.rfind("rows", 0) == 0 && number(4) > 0) {
        d = {number(4), elems / number(4)};
    } else if (shape.rfind("cols", 0) == 0 && number(4) > 0) {
        d = {elems / number(4), number(4)};
    } else if (shape.rfind("prime", 0) == 0 && number(5) > 0) {
        std::uint64_t c = elems / number(5);
        while (c > 1 && !is_prime(c)) --c;
        d = {number(5), c};
    } else {
        return false;
    }
    return d.rows > 0 && d.cols > 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::printf("usage: %s MiB SHAPE...  (SHAPE: square, rowsN, colsN, primeN, scenario-square|tall|wide)\n", argv[0]);
        return 2;
    }
    const std::uint64_t bytes = std::strtoull(argv[1], nullptr, 10) << 20;
    if (bytes == 0) {
        std::printf("size must be a positive number of MiB\n");
        return 2;
    }
    std::uint8_t *src, *dst, *ref;
    unsigned long long* bad;
    CHECK_CUDA(cudaMalloc(&src, bytes + 64));
    CHECK_CUDA(cudaMalloc(&dst, bytes + 64));
    CHECK_CUDA(cudaMalloc(&ref, bytes + 64));
    CHECK_CUDA(cudaMalloc(&bad, sizeof(*bad)));
    cudaStream_t st;
    CHECK_CUDA(cudaStreamCreate(&st));
    fill<<<1024, 256, 0, st>>>(src, bytes + 64);
    int failures = 0;
    for (int a = 2; a < argc; ++a)
        for (std::size_t e : {1, 2, 4, 8}) {
            interopbench::Dims2 d;
            if (!dims_of(argv[a], bytes / e, e, d)) {
                std::printf("unknown shape '%s': use square, rowsN, colsN, primeN or scenario-square|tall|wide\n", argv[a]);
                return 2;
            }
            const std::uint64_t n = d.rows * d.cols * e;
            switch (e) {
            case 1: naive_transpose<<<4096, 256, 0, st>>>(ref, src, d.rows, d.cols); break;
            case 2: naive_transpose<<<4096, 256, 0, st>>>((std::uint16_t*)ref, (const std::uint16_t*)src, d.rows, d.cols); break;
            case 4: naive_transpose<<<4096, 256, 0, st>>>((std::uint32_t*)ref, (const std::uint32_t*)src, d.rows, d.cols); break;
            default: naive_transpose<<<4096, 256, 0, st>>>((unsigned long long*)ref, (const unsigned long long*)src, d.rows, d.cols);
            }
            CHECK_CUDA(cudaMemsetAsync(dst, 0, n, st));
            CHECK_CUDA(interopbench::kernels::launch_transpose(dst, src, d, e, st));
            CHECK_CUDA(cudaMemsetAsync(bad, 0, sizeof(*bad), st));
            count_diff<<<2048, 256, 0, st>>>(dst, ref, n, bad);
            unsigned long long wrong = 0;
            CHECK_CUDA(cudaMemcpyAsync(&wrong, bad, sizeof(wrong), cudaMemcpyDeviceToHost, st));
            CHECK_CUDA(cudaStreamSynchronize(st));
            const float copy = median_ms([&] { cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, st); }, st);
            const float conv = median_ms([&] { interopbench::kernels::launch_transpose(dst, src, d, e, st); }, st);
            CHECK_CUDA(cudaGetLastError());
            failures += wrong != 0;
            std::printf("%zu-byte %-9s %10llu x %-10llu copy %9.1f us  transpose %9.1f us  efficiency %5.1f%%  %s\n", e,
                        argv[a], (unsigned long long)d.rows, (unsigned long long)d.cols, copy * 1e3, conv * 1e3,
                        100.0 * copy / conv, wrong ? "WRONG" : "ok");
        }
    return failures != 0;
}
