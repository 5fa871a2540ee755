// The null endpoints' kernels (transfer_kernels.hpp).
#include "families/transfer/transfer_kernels.hpp"

#include <algorithm>

namespace interopbench::kernels {
namespace {

constexpr unsigned k_threads = 512;

__global__ void __launch_bounds__(512) read_fold_kernel(const ulonglong2* __restrict__ src, std::size_t pairs,
                                                        const unsigned long long* __restrict__ tail, bool has_tail,
                                                        unsigned long long* fold) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    unsigned long long acc = 0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < pairs; i += stride) {
        const ulonglong2 v = src[i];
        acc ^= v.x ^ v.y;
    }
    if (has_tail && blockIdx.x == 0 && threadIdx.x == 0) acc ^= *tail;
    if (acc) atomicXor(fold, acc);
}

__global__ void __launch_bounds__(512) write_words_kernel(ulonglong2* __restrict__ dst, std::size_t pairs,
                                                          unsigned long long* __restrict__ tail, bool has_tail,
                                                          unsigned long long word) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    const ulonglong2 v = make_ulonglong2(word, word);
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < pairs; i += stride)
        dst[i] = v;
    if (has_tail && blockIdx.x == 0 && threadIdx.x == 0) *tail = word;
}

unsigned grid(std::size_t items, unsigned max_blocks) {
    return static_cast<unsigned>(
        std::max<std::size_t>(1, std::min<std::size_t>(std::max(1u, max_blocks), (items + k_threads - 1) / k_threads)));
}

} // namespace

cudaError_t launch_read_fold(const void* src, std::size_t bytes, unsigned max_blocks, unsigned long long* fold,
                             cudaStream_t stream) {
    if (bytes % 8 != 0 || reinterpret_cast<std::uintptr_t>(src) % 16 != 0) return cudaErrorInvalidValue;
    const std::size_t pairs = bytes / 16;
    const auto* words = static_cast<const unsigned long long*>(src);
    read_fold_kernel<<<grid(pairs, max_blocks), k_threads, 0, stream>>>(static_cast<const ulonglong2*>(src), pairs,
                                                                       words + 2 * pairs, bytes % 16 != 0, fold);
    return cudaGetLastError();
}

cudaError_t launch_write_words(void* dst, std::size_t bytes, unsigned max_blocks, unsigned long long word,
                               cudaStream_t stream) {
    if (bytes % 8 != 0 || reinterpret_cast<std::uintptr_t>(dst) % 16 != 0) return cudaErrorInvalidValue;
    const std::size_t pairs = bytes / 16;
    auto* words = static_cast<unsigned long long*>(dst);
    write_words_kernel<<<grid(pairs, max_blocks), k_threads, 0, stream>>>(static_cast<ulonglong2*>(dst), pairs,
                                                                         words + 2 * pairs, bytes % 16 != 0, word);
    return cudaGetLastError();
}

} // namespace interopbench::kernels
