// Strided view -> contiguous (launch_strided_to_contiguous): the elements of a view with
// column stride 1 or 2 over a parent array, written as dense rows, one thread per aligned
// 16-byte output vector.
#include "gpu/convert_groups.cuh"
#include "gpu/convert_kernels_common.cuh"

namespace interopbench::kernels {

namespace {

// ---- strided view -> contiguous -----------------------------------------------------------
//
// One thread per aligned 16-byte output vector. When the vector lies within one output row,
// the source bytes are one span of the parent (column stride 1) or every other element of
// a span twice as long (stride 2): the thread loads the aligned vectors covering the span,
// shifts it to its start and, for stride 2, picks the even elements with byte permutes.
// A vector across two rows (rows of at least 16 bytes): 4- and 8-byte elements loaded one
// by one, all in flight together; 1- and 2-byte ones as two such spans, one from each row,
// merged. The array's last partial vector, and rows shorter than a vector, go element by
// element. Measured on an H200 (column slices, share of the copy): with every vector
// across two rows loaded element by element, one round trip after another, fp32 88% at
// 256 MiB and 1 GiB, int8 58-61% at 16 MiB; now fp32 93-94%, int8 91-101%. A development
// copy with the fp32 loads of now but the rest of the kernel as before reached 99-100%:
// not understood yet.

// The aligned vectors covering the span of one output vector from parent byte s.
template <int E, int CS, int NV>
__device__ __forceinline__ void load_span(uint4 (&span)[NV], const std::uint8_t* parent, std::uint64_t s) {
    const std::uint32_t last = static_cast<std::uint32_t>(s & 15) + 16 * CS - E * (CS - 1) - 1; // last byte, from s & ~15
#pragma unroll
    for (int q = 0; q < NV; ++q) span[q] = 16u * q <= last ? load16(parent + (s & ~15ull) + 16 * q) : make_uint4(0, 0, 0, 0);
}

// The output vector from a span that starts `shift` bytes into its first vector.
template <int E, int CS, int NV>
__device__ __forceinline__ uint4 pick_span(const uint4 (&span)[NV], std::uint32_t shift) {
    constexpr int NI = NV * 4, NO = CS == 1 ? 4 : 8;
    std::uint32_t in[NI];
#pragma unroll
    for (int q = 0; q < NV; ++q) put_words(in, 4 * q, span[q]);
    std::uint32_t w[NO];
    shift_bytes<NO>(in, shift, w);
    if constexpr (CS == 1) return make_uint4(w[0], w[1], w[2], w[3]);
    else if constexpr (E == 1)
        return make_uint4(__byte_perm(w[0], w[1], 0x6420), __byte_perm(w[2], w[3], 0x6420),
                          __byte_perm(w[4], w[5], 0x6420), __byte_perm(w[6], w[7], 0x6420));
    else if constexpr (E == 2)
        return make_uint4(__byte_perm(w[0], w[1], 0x5410), __byte_perm(w[2], w[3], 0x5410),
                          __byte_perm(w[4], w[5], 0x5410), __byte_perm(w[6], w[7], 0x5410));
    else if constexpr (E == 4) return make_uint4(w[0], w[2], w[4], w[6]);
    else return make_uint4(w[0], w[1], w[4], w[5]);
}

// Bytes [0, n) of x and the rest of y.
__device__ __forceinline__ uint4 merge_bytes(uint4 x, uint4 y, std::uint32_t n) {
    const int k = static_cast<int>(n);
    return make_uint4(keep_bytes(x.x, k, y.x), keep_bytes(x.y, k - 4, y.y), keep_bytes(x.z, k - 8, y.z),
                      keep_bytes(x.w, k - 12, y.w));
}

template <int E, int CS>
__global__ void __launch_bounds__(k_threads)
    strided_kernel(std::uint8_t* __restrict__ dst, const std::uint8_t* __restrict__ parent,
                   std::uint64_t out_bytes, FastDiv row_div, std::uint64_t row_stride_bytes,
                   std::uint64_t offset_bytes) {
    constexpr int V = 16 / E, U = 2, NV = CS == 1 ? 2 : 3;
    using T = typename Bits<E>::T;
    const std::uint64_t row_bytes = row_div.d, nvec = (out_bytes + 15) / 16;
    for (std::uint64_t base = std::uint64_t(blockIdx.x) * k_threads * U; base < nvec;
         base += std::uint64_t(gridDim.x) * k_threads * U) {
        uint4 span[U][NV];
        std::uint32_t shift[U];
        bool fast[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::uint64_t p = 16 * (base + u * k_threads + threadIdx.x);
            fast[u] = false;
            shift[u] = 0;
#pragma unroll
            for (int q = 0; q < NV; ++q) span[u][q] = make_uint4(0, 0, 0, 0);
            if (p + 16 <= out_bytes) {
                std::uint64_t cb;
                const std::uint64_t row = divmod(row_div, p, cb);
                if (cb + 16 <= row_bytes) {
                    const std::uint64_t s = offset_bytes + row * row_stride_bytes + cb * CS;
                    shift[u] = static_cast<std::uint32_t>(s & 15);
                    fast[u] = true;
                    load_span<E, CS>(span[u], parent, s);
                }
            }
        }
        // A vector across two rows: where its first byte sits in the parent, how many of
        // its bytes end that row, and where the next row's elements would sit if that row
        // went on into it.
        auto two_rows = [&](std::uint64_t v, std::uint64_t& here, std::uint64_t& there) {
            std::uint64_t cb;
            const std::uint64_t row = divmod(row_div, 16 * v, cb);
            here = offset_bytes + row * row_stride_bytes + cb * CS;
            there = here + row_stride_bytes - row_bytes * CS;
            return static_cast<std::uint32_t>(row_bytes - cb);
        };
        auto across = [&](std::uint64_t v) { return 16 * v + 16 <= out_bytes && row_bytes >= 16; };
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::uint64_t v = base + u * k_threads + threadIdx.x;
            if (v >= nvec) continue;
            if (fast[u]) {
                store16(dst + 16 * v, pick_span<E, CS>(span[u], shift[u]));
            } else if (E >= 4 && across(v)) {
                // At most four elements, each found on its own, their loads in flight
                // together.
                T x[V];
#pragma unroll
                for (int i = 0; i < V; ++i) {
                    std::uint64_t cb;
                    const std::uint64_t row = divmod(row_div, 16 * v + i * E, cb);
                    x[i] = *reinterpret_cast<const T*>(parent + offset_bytes + row * row_stride_bytes + cb * CS);
                }
#pragma unroll
                for (int i = 0; i < V; ++i) reinterpret_cast<T*>(dst)[v * V + i] = x[i];
            } else if (!across(v)) {
                for (int i = 0; i < V; ++i) {
                    const std::uint64_t at = 16 * v + std::uint64_t(i) * E;
                    if (at >= out_bytes) break;
                    std::uint64_t cb;
                    const std::uint64_t row = divmod(row_div, at, cb);
                    reinterpret_cast<T*>(dst)[at / E] = *reinterpret_cast<const T*>(
                        parent + offset_bytes + row * row_stride_bytes + cb * CS);
                }
            }
        }
        // 1- and 2-byte elements across two rows, once the other vectors' registers are
        // free: the two rows' spans, merged.
        if constexpr (E < 4) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const std::uint64_t v = base + u * k_threads + threadIdx.x;
                if (fast[u] || v >= nvec || !across(v)) continue;
                std::uint64_t here, there;
                const std::uint32_t n = two_rows(v, here, there);
                uint4 a[NV], b[NV];
                load_span<E, CS>(a, parent, here);
                load_span<E, CS>(b, parent, there);
                store16(dst + 16 * v, merge_bytes(pick_span<E, CS>(a, static_cast<std::uint32_t>(here & 15)),
                                                  pick_span<E, CS>(b, static_cast<std::uint32_t>(there & 15)), n));
            }
        }
    }
}

template <int E>
cudaError_t run_strided(void* dst, const void* parent, const StridedView& v, cudaStream_t stream) {
    const std::uint64_t out_bytes = v.dims.rows * v.dims.cols * E;
    const unsigned grid = grid_for((out_bytes + 15) / 16, k_threads * 2);
    auto* out = static_cast<std::uint8_t*>(dst);
    const auto* in = static_cast<const std::uint8_t*>(parent);
    const FastDiv row_div = make_fastdiv(v.dims.cols * E);
    if (v.col_stride == 1)
        strided_kernel<E, 1><<<grid, k_threads, 0, stream>>>(out, in, out_bytes, row_div, v.row_stride * E, v.offset * E);
    else
        strided_kernel<E, 2><<<grid, k_threads, 0, stream>>>(out, in, out_bytes, row_div, v.row_stride * E, v.offset * E);
    return cudaGetLastError();
}

} // namespace

cudaError_t detail::strided_to_contiguous(void* dst, const void* parent, const StridedView& view, std::size_t elem,
                                          cudaStream_t stream) {
    return dispatch_elem(elem, [&](auto e) { return run_strided<decltype(e)::value>(dst, parent, view, stream); });
}

} // namespace interopbench::kernels
