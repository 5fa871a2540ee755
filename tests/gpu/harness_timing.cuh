// What the standalone GPU harnesses of this folder share: an exit on any CUDA error, and the
// median time of a launch over 15 timed repetitions (two untimed first), by CUDA events.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            std::printf("CUDA error %s at line %d\n", cudaGetErrorString(e_), __LINE__);           \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

template <class F>
float median_ms(F&& launch, cudaStream_t st = nullptr) {
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    launch();
    launch();
    std::vector<float> t;
    for (int i = 0; i < 15; ++i) {
        CHECK_CUDA(cudaEventRecord(a, st));
        launch();
        CHECK_CUDA(cudaEventRecord(b, st));
        CHECK_CUDA(cudaEventSynchronize(b));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    CHECK_CUDA(cudaEventDestroy(a));
    CHECK_CUDA(cudaEventDestroy(b));
    return t[t.size() / 2];
}
