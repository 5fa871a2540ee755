// Arrow fixed-width column <-> dense (launch_arrow_fixed_to_dense, launch_dense_to_arrow_fixed):
// values of 1, 2, 4 or 8 bytes plus a validity bitmap, one pass of 16-byte vectors with the
// vector's validity bits in a register; nulls become a fill value one way and are found by a
// null value the other.
#include "gpu/convert_groups.cuh"
#include "gpu/convert_kernels_common.cuh"

namespace interopbench::kernels {

namespace {

// ---- Arrow fixed-width column <-> dense ----------------------------------------------------

template <int V>
__device__ __forceinline__ std::uint32_t load_bits(const std::uint8_t* validity, std::uint64_t v) {
    if constexpr (V == 16) return *reinterpret_cast<const std::uint16_t*>(validity + 2 * v);
    else if constexpr (V == 8) return validity[v];
    else if constexpr (V == 4) return (validity[v >> 1] >> ((v & 1) * 4)) & 0xfu;
    else return (validity[v >> 2] >> ((v & 3) * 2)) & 0x3u;
}

// Per element i of the vector: bit i of `bits` set keeps the value, clear puts the fill.
template <int E>
__device__ __forceinline__ uint4 select_valid(uint4 v, std::uint32_t bits, std::uint64_t fill) {
    std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        std::uint32_t mask, f;
        if constexpr (E == 1) {
            const std::uint32_t b = (bits >> (4 * j)) & 0xfu;
            mask = ((b * 0x00204081u) & 0x01010101u) * 0xffu; // bit i -> byte i all ones
            f = std::uint32_t(fill & 0xff) * 0x01010101u;
        } else if constexpr (E == 2) {
            const std::uint32_t b = (bits >> (2 * j)) & 0x3u;
            mask = ((b & 1) ? 0x0000ffffu : 0) | ((b & 2) ? 0xffff0000u : 0);
            f = std::uint32_t(fill & 0xffff) * 0x00010001u;
        } else if constexpr (E == 4) {
            mask = ((bits >> j) & 1) ? ~0u : 0;
            f = std::uint32_t(fill);
        } else {
            mask = ((bits >> (j / 2)) & 1) ? ~0u : 0;
            f = std::uint32_t(fill >> (32 * (j % 2)));
        }
        w[j] = (w[j] & mask) | (f & ~mask);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// Bit i set when element i of the vector differs from `null_value`.
template <int E>
__device__ __forceinline__ std::uint32_t valid_bits(uint4 v, std::uint64_t null_value) {
    const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
    std::uint32_t bits = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if constexpr (E == 1) {
            const std::uint32_t ne = __vcmpne4(w[j], std::uint32_t(null_value & 0xff) * 0x01010101u);
            bits |= (((ne & 0x01010101u) * 0x10204080u) >> 28) << (4 * j); // byte flags -> 4 bits
        } else if constexpr (E == 2) {
            const std::uint32_t nv = std::uint32_t(null_value & 0xffff);
            bits |= (((w[j] & 0xffffu) != nv) | (((w[j] >> 16) != nv) << 1)) << (2 * j);
        } else if constexpr (E == 4) {
            bits |= std::uint32_t(w[j] != std::uint32_t(null_value)) << j;
        } else if (j % 2 == 1) {
            const unsigned long long e = (static_cast<unsigned long long>(w[j]) << 32) | w[j - 1];
            bits |= std::uint32_t(e != null_value) << (j / 2);
        }
    }
    return bits;
}

template <int E>
__device__ __forceinline__ typename Bits<E>::T element(uint4 v, int i) {
    const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
    if constexpr (E == 8) return (static_cast<unsigned long long>(w[2 * i + 1]) << 32) | w[2 * i];
    else return static_cast<typename Bits<E>::T>(w[i * E / 4] >> (8 * ((i * E) % 4)));
}

template <int E>
__global__ void __launch_bounds__(k_threads)
    fixed_to_dense_kernel(std::uint8_t* __restrict__ dense, const std::uint8_t* __restrict__ values,
                          const std::uint8_t* __restrict__ validity, std::uint64_t n, std::uint64_t fill) {
    constexpr int V = 16 / E, U = 4;
    using T = typename Bits<E>::T;
    const std::uint64_t nvec = (n + V - 1) / V, full = n / V;
    for (std::uint64_t base = std::uint64_t(blockIdx.x) * k_threads * U; base < nvec;
         base += std::uint64_t(gridDim.x) * k_threads * U) {
        uint4 val[U];
        std::uint32_t bits[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::uint64_t v = base + u * k_threads + threadIdx.x;
            if (v < nvec) {
                val[u] = load16(values + 16 * v);
                bits[u] = validity != nullptr ? load_bits<V>(validity, v) : 0xffffu;
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::uint64_t v = base + u * k_threads + threadIdx.x;
            if (v >= nvec) continue;
            const uint4 out = select_valid<E>(val[u], bits[u], fill);
            if (v < full) {
                store16(dense + 16 * v, out);
            } else {
#pragma unroll
                for (int i = 0; i < V; ++i)
                    if (v * V + i < n) reinterpret_cast<T*>(dense)[v * V + i] = element<E>(out, i);
            }
        }
    }
}

template <int E>
__global__ void __launch_bounds__(k_threads)
    dense_to_fixed_kernel(std::uint8_t* __restrict__ values, std::uint8_t* __restrict__ validity,
                          const std::uint8_t* __restrict__ dense, std::uint64_t n, std::uint64_t null_value) {
    constexpr int V = 16 / E, U = 4;
    using T = typename Bits<E>::T;
    const std::uint64_t nvec = (n + V - 1) / V, full = n / V, nbytes = (n + 7) / 8;
    const unsigned lane = threadIdx.x % 32;
    // Warps take 32 x U consecutive vectors at a time, so vectors that share a bitmap byte
    // sit in neighbouring lanes of one warp.
    const std::uint64_t warp = (std::uint64_t(blockIdx.x) * k_threads + threadIdx.x) / 32;
    const std::uint64_t warps = std::uint64_t(gridDim.x) * k_threads / 32;
    for (std::uint64_t base = warp * 32 * U; base < nvec; base += warps * 32 * U) {
        uint4 val[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::uint64_t v = base + 32 * u + lane;
            if (v < nvec) val[u] = load16(dense + 16 * v);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::uint64_t v = base + 32 * u + lane;
            std::uint32_t bits = 0;
            if (v < nvec) {
                bits = valid_bits<E>(val[u], null_value);
                if (v < full) {
                    store16(values + 16 * v, val[u]);
                } else {
                    bits &= (1u << (n - v * V)) - 1;
#pragma unroll
                    for (int i = 0; i < V; ++i)
                        if (v * V + i < n) reinterpret_cast<T*>(values)[v * V + i] = element<E>(val[u], i);
                }
            }
            if constexpr (V == 16) {
                if (v < nvec) {
                    if (2 * v + 1 < nbytes) *reinterpret_cast<std::uint16_t*>(validity + 2 * v) = std::uint16_t(bits);
                    else validity[2 * v] = std::uint8_t(bits);
                }
            } else if constexpr (V == 8) {
                if (v < nvec) validity[v] = std::uint8_t(bits);
            } else {
                // 8 / V neighbouring lanes fill one bitmap byte.
#pragma unroll
                for (int step = 1; step < 8 / V; step *= 2)
                    bits |= __shfl_down_sync(k_full_mask, bits, step) << (step * V);
                if (lane % (8 / V) == 0 && v < nvec) validity[v / (8 / V)] = std::uint8_t(bits);
            }
        }
    }
}

} // namespace

cudaError_t detail::arrow_fixed_to_dense(void* dense, const void* values, const std::uint8_t* validity,
                                         std::uint64_t n, std::size_t width, std::uint64_t fill,
                                         cudaStream_t stream) {
    return dispatch_elem(width, [&](auto e) {
        constexpr int E = decltype(e)::value;
        const unsigned grid = grid_for((n * E + 15) / 16, k_threads * 4);
        fixed_to_dense_kernel<E><<<grid, k_threads, 0, stream>>>(
            static_cast<std::uint8_t*>(dense), static_cast<const std::uint8_t*>(values), validity, n, fill);
        return cudaGetLastError();
    });
}

cudaError_t detail::dense_to_arrow_fixed(void* values, std::uint8_t* validity, const void* dense, std::uint64_t n,
                                         std::size_t width, std::uint64_t null_value, cudaStream_t stream) {
    return dispatch_elem(width, [&](auto e) {
        constexpr int E = decltype(e)::value;
        const unsigned grid = grid_for((n * E + 15) / 16, k_threads * 4);
        dense_to_fixed_kernel<E><<<grid, k_threads, 0, stream>>>(
            static_cast<std::uint8_t*>(values), validity, static_cast<const std::uint8_t*>(dense), n, null_value);
        return cudaGetLastError();
    });
}

} // namespace interopbench::kernels
