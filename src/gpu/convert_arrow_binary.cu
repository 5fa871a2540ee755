// Arrow binary column <-> padded dense rows (launch_arrow_binary_to_dense,
// launch_dense_to_arrow_binary, dense_to_binary_scratch_bytes): int32 offsets, value bytes and
// a validity bitmap against rows of a fixed width padded with a pad byte. To dense: one thread
// per row (rows of up to 64 bytes) or per 16-byte output vector. From dense: one pass with
// decoupled look-back over persistent blocks, whose scratch (tile counter, epoch, one status
// word per tile) is laid out here.
#include "gpu/convert_groups.cuh"
#include "gpu/convert_kernels_common.cuh"

#include <climits>
#include <type_traits>

#include <cuda/atomic>

namespace interopbench::kernels {

namespace {

// ---- Arrow binary column <-> padded dense ----------------------------------------------------
//
// To dense, rows of at most 64 bytes (16 P): one thread per row; it reads the row's offsets
// and the P + 1 aligned data vectors that can hold its bytes (only those it needs), shifts
// them into place, pads the rest and stores the row as P vectors. Measured on an H200
// (256 MiB, 32-byte rows): 95% of the copy roofline, against 79% for the kernel below,
// which wider rows keep: one thread per aligned 16-byte output vector, reading the row's
// offsets (the neighbouring lanes read the same ones) and the one or two aligned data
// vectors holding its bytes.

template <int P>
__global__ void __launch_bounds__(k_threads)
    binary_rows_to_dense_kernel(std::uint8_t* __restrict__ dense, const std::int32_t* __restrict__ offsets,
                                const std::uint8_t* __restrict__ data, const std::uint8_t* __restrict__ validity,
                                std::uint64_t n, std::uint32_t pad4) {
    for (std::uint64_t row = std::uint64_t(blockIdx.x) * k_threads + threadIdx.x; row < n;
         row += std::uint64_t(gridDim.x) * k_threads) {
        const std::int32_t o0 = __ldg(offsets + row), o1 = __ldg(offsets + row + 1);
        const bool valid = validity == nullptr || ((__ldg(validity + row / 8) >> (row % 8)) & 1);
        const std::uint32_t len =
            valid ? static_cast<std::uint32_t>(max(std::int64_t(0), min(std::int64_t(o1) - o0, std::int64_t(16 * P)))) : 0;
        const std::uint32_t src = static_cast<std::uint32_t>(o0), sh = src & 15, nv = (sh + len + 15) / 16;
        std::uint32_t w[4 * (P + 2)];
#pragma unroll
        for (int q = 0; q <= P; ++q)
            put_words(w, 4 * q, q < int(nv) ? load16(data + (src - sh) + 16 * q) : make_uint4(0, 0, 0, 0));
#pragma unroll
        for (int k = 4 * (P + 1); k < 4 * (P + 2); ++k) w[k] = 0;
        std::uint32_t o[4 * P];
        shift_bytes<4 * P>(w, sh, o);
#pragma unroll
        for (int t = 0; t < 4 * P; ++t) o[t] = keep_bytes(o[t], int(len) - 4 * t, pad4);
#pragma unroll
        for (int p = 0; p < P; ++p)
            store16(dense + row * (16 * P) + 16 * p, make_uint4(o[4 * p], o[4 * p + 1], o[4 * p + 2], o[4 * p + 3]));
    }
}

__global__ void __launch_bounds__(k_threads)
    binary_to_dense_kernel(std::uint8_t* __restrict__ dense, const std::int32_t* __restrict__ offsets,
                           const std::uint8_t* __restrict__ data, const std::uint8_t* __restrict__ validity,
                           std::uint64_t nvec, FastDiv per_row, std::uint32_t width, std::uint32_t pad4) {
    constexpr int U = 2;
    for (std::uint64_t base = std::uint64_t(blockIdx.x) * k_threads * U; base < nvec;
         base += std::uint64_t(gridDim.x) * k_threads * U) {
        std::uint32_t nval[U], src[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::uint64_t v = base + u * k_threads + threadIdx.x;
            nval[u] = 0;
            src[u] = 0;
            if (v < nvec) {
                std::uint64_t part;
                const std::uint64_t row = divmod(per_row, v, part);
                const std::int32_t o0 = __ldg(offsets + row), o1 = __ldg(offsets + row + 1);
                const bool valid = validity == nullptr || ((__ldg(validity + row / 8) >> (row % 8)) & 1);
                const std::int64_t len = valid ? min(std::int64_t(o1) - o0, std::int64_t(width)) : 0;
                const std::int64_t col0 = std::int64_t(part) * 16;
                nval[u] = static_cast<std::uint32_t>(max(std::int64_t(0), min(len - col0, std::int64_t(16))));
                src[u] = static_cast<std::uint32_t>(o0 + col0);
            }
        }
        uint4 lo[U], hi[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            lo[u] = hi[u] = make_uint4(0, 0, 0, 0);
            if (nval[u] > 0) {
                const std::uint32_t sh = src[u] & 15;
                lo[u] = load16(data + (src[u] - sh));
                if (sh + nval[u] > 16) hi[u] = load16(data + (src[u] - sh) + 16);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::uint64_t v = base + u * k_threads + threadIdx.x;
            if (v >= nvec) continue;
            const std::uint32_t in[8] = {lo[u].x, lo[u].y, lo[u].z, lo[u].w, hi[u].x, hi[u].y, hi[u].z, hi[u].w};
            std::uint32_t out[4];
            shift_bytes<4>(in, src[u] & 15, out);
#pragma unroll
            for (int t = 0; t < 4; ++t) out[t] = keep_bytes(out[t], int(nval[u]) - 4 * t, pad4);
            store16(dense + 16 * v, make_uint4(out[0], out[1], out[2], out[3]));
        }
    }
}

// From dense, in one pass, with decoupled look-back. Persistent blocks take tiles of rows
// in the order a counter hands them out (so every earlier tile belongs to a block that is
// already running), each block a pipeline of two or three tiles (slots):
// - the eight rows warps measure a tile's rows (held in registers, several per thread) and
//   scan their lengths; one thread publishes the tile's total ("aggregate"); they pack the
//   values into the tile's slot (byte stores at the ends of a row, word stores between),
//   then the rows' registers take the next tile's rows, and they store the tile one or
//   two rounds before, whose prefix has arrived meanwhile, as the aligned
//   16-byte vectors of `data` (only the vectors at both ends, shared with the neighbouring
//   tiles, byte by byte);
// - the ninth warp learns where a tile's values start while the rows warps go on: it
//   reads the status of 128 predecessors at a time and adds their aggregates up to the
//   nearest one that published its inclusive prefix, waiting only for the predecessors
//   nearer than that, then publishes the tile's inclusive prefix.
// So the wait for the look-back overlaps the next tile's loads and packing, and a tile's
// aggregate is published as soon as its rows are in, not after the last tile's look-back.
// Wider rows (above 64 bytes) are copied into a shared tile (cp.async) instead.
//
// Measured on an H200 (256 MiB, 32-byte rows, share of the copy roofline): one warp polling
// 32 predecessors while the others packed, 16 KiB tiles in shared memory: 38% (the
// inclusive prefixes advanced only 32 tiles per L2 round trip); the whole block polling 512
// at once: 28-36%; 16 KiB of rows in registers, a polling warp of its own, 128 at a time:
// 47%; the same with 32 KiB tiles: 55-58%; with the packing of now (byte and word stores
// in place of shared atomics on a cleared staging area: 39% fewer instructions): 56-57%,
// each block still waiting at its barrier for its own look-back (4.3 us median, against 4.2
// us for its loads); the two-tile pipeline: 63% (1 GiB: 65-66%); with the next tile
// loaded row by row as the rows are packed: 64% (1 GiB: 66%); 16 KiB tiles, four blocks per
// SM: 70.5%; rows measured without branches and the select tree of pack_span (18% fewer
// instructions): 75%; three slots: 78%; the next tile's loads after all rows are packed: 79%.
// Also tried: with two slots, the counter's answer held in a register until the rows warps'
// barrier, so that warp 0 need not wait for it at once (67.5% against 75%, not understood);
// with three, tiles taken a round ahead (76.5% against 77.5%). Earlier: persistent blocks that
// published the next tile's aggregate only after the last tile's look-back (36-43%: the
// look-backs chain); rows staged through shared memory (cp.async) a round ahead, values
// packed in place (48- and 64-byte rows at 64 MiB: 46-49% with three 16 KiB buffers, 53%
// with 32 KiB ones, against 59-64%: more barriers, more instructions).

constexpr std::uint32_t k_tile_bytes = 16384;  // a tile of rows wider than 64 bytes, at most
constexpr std::uint32_t k_stage_bytes = 32768; // a tile's values, at most
constexpr int k_lookback_per_lane = 4;         // the look-back window: 32 x 4 predecessors

// Rows of 16 P bytes, P = 1..4, held in registers: RPT rows per thread, 16-32 KiB a tile,
// and blocks per SM (at least). 32-byte rows (H200, two processes each, share of the copy at
// 16 MiB / 256 MiB / 1 GiB): 4 rows a thread, 3 blocks (72 registers, 80 bytes spilled):
// 43/67.5/67%; 4 rows, 2 blocks: 51/57/56%; 3 rows, 3 blocks: 51/69/68%; 3 rows, 4 blocks
// (spills): 44/69/68%; 2 rows, 3 blocks: 52/64/62.5%; 2 rows, 5 blocks (spills): 42/61/60%;
// 1 row, 4 blocks: 44/46/45%; 2 rows, 4 blocks (56 registers, no spills): 50.5-52/70.5/69.5%.
// Other widths not measured against alternatives.
__host__ __device__ constexpr int binary_rows_per_thread(int P) { return P == 1 ? 8 : P >= 2 ? 2 : 1; }
__host__ __device__ constexpr int binary_blocks_per_sm(int P) { return P == 2 ? 4 : 3; }

std::uint32_t binary_rows_per_tile(std::uint64_t width) {
    if (width <= 64) return k_threads * binary_rows_per_thread(static_cast<int>(width / 16));
    return static_cast<std::uint32_t>(k_tile_bytes / width);
}

// The scratch: word 0 the tile counter (low half) and the count of blocks done (high
// half), word 1 the launch's epoch (low half) and how many status words any launch has
// written (high half), then one status word per tile: its kind (bits 62-63: aggregate or
// inclusive prefix), the epoch of the launch that wrote it (bits 32-61) and its value
// (bits 0-31: offsets are int32). A status word of an earlier launch has another epoch,
// so it reads as not yet published, and the scratch needs no clearing between launches:
// the last block to finish resets the counters and moves the epoch on. Only when the
// epoch wraps (every 2^30 launches) does that block clear the status words.
constexpr unsigned long long k_status_aggregate = 1ull << 62;
constexpr unsigned long long k_status_inclusive = 2ull << 62;
constexpr unsigned long long k_status_kind = 3ull << 62;
constexpr unsigned long long k_status_value = 0xffffffffull;
constexpr std::uint32_t k_epochs = 1u << 30;
constexpr int k_scratch_header_words = 2;
constexpr unsigned long long k_lookback_timeout_ns = 2'000'000'000ull;

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned long long read_status(unsigned long long* p) {
    return cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*p).load(cuda::memory_order_relaxed);
}

__device__ __forceinline__ void write_status(unsigned long long* p, unsigned long long v) {
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*p).store(v, cuda::memory_order_relaxed);
}

// Called by one warp for tile `tile` > 0, after its aggregate is published. Returns the
// sum of the totals of all tiles before it: each round reads the status of 128
// predecessors, and sums the aggregates up to the nearest inclusive prefix once every tile
// nearer than it has published (a status word whose epoch bits are not `epoch` is not
// yet published). A tile that has not published after the timeout counts as 0, so a
// fault elsewhere gives wrong data (caught by the check) instead of a hung device.
__device__ unsigned long long look_back(unsigned long long* status, std::uint32_t tile, unsigned long long epoch) {
    constexpr int LB = k_lookback_per_lane, W = 32 * LB;
    const unsigned lane = threadIdx.x % 32;
    unsigned long long prefix = 0;
    std::int64_t end = std::int64_t(tile) - 1;
    const unsigned long long started = global_ns();
    while (true) {
        unsigned long long s[LB]; // the tile at distance 32 j + lane before `end`
#pragma unroll
        for (int j = 0; j < LB; ++j) {
            const std::int64_t at = end - (32 * j + std::int64_t(lane));
            s[j] = at >= 0 ? read_status(status + at) : k_status_inclusive | epoch;
            if ((s[j] & ~(k_status_kind | k_status_value)) != epoch || (s[j] & k_status_kind) == 0) s[j] = 0;
        }
        int inc = W, miss = W;
#pragma unroll
        for (int j = 0; j < LB; ++j) {
            const unsigned bi = __ballot_sync(k_full_mask, (s[j] & k_status_kind) == k_status_inclusive);
            const unsigned bm = __ballot_sync(k_full_mask, s[j] == 0);
            if (inc == W && bi != 0) inc = 32 * j + __ffs(bi) - 1;
            if (miss == W && bm != 0) miss = 32 * j + __ffs(bm) - 1;
        }
        if (miss < inc) {
            if (!__shfl_sync(k_full_mask, global_ns() - started >= k_lookback_timeout_ns, 0)) {
                __nanosleep(32); // back off instead of hammering L2 with polls
                continue;
            }
            inc = miss; // timed out: counts as an inclusive prefix of 0
        }
        unsigned long long sum = 0;
#pragma unroll
        for (int j = 0; j < LB; ++j)
            if (32 * j + int(lane) <= inc && s[j] != 0) sum += s[j] & k_status_value;
#pragma unroll
        for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(k_full_mask, sum, o);
        prefix += sum;
        if (inc < W) return prefix;
        end -= W;
    }
}

// The inclusive sum of x over lanes 0..lane of the warp.
__device__ __forceinline__ std::uint32_t warp_inclusive_sum(std::uint32_t x, unsigned lane) {
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
        const std::uint32_t y = __shfl_up_sync(k_full_mask, x, o);
        if (lane >= unsigned(o)) x += y;
    }
    return x;
}

// Bytes [0, n) of the word stream w into the staging bytes at offset o: byte stores for the
// (at most three) bytes before the first whole staging word and after the last, word stores
// between. The spans of different rows share no byte, so the staging area needs no clearing
// and no atomics. The last partial word is picked by a tree of selects on the bits of the
// whole word count (a select per word, each behind its own comparison, cost 16 instructions
// a 32-byte row).
template <int NW>
__device__ __forceinline__ void pack_span(std::uint8_t* staging, std::uint32_t o, const std::uint32_t (&w)[NW + 1],
                                          std::uint32_t n) {
    static_assert(NW >= 1 && NW <= 16, "rows of at most 64 bytes a call");
    const std::uint32_t hb = min((4u - (o & 3)) & 3u, n), rest = n - hb, nw = rest / 4, tb = rest % 4;
#pragma unroll
    for (int k = 0; k < 3; ++k)
        if (k < int(hb)) staging[o + k] = static_cast<std::uint8_t>(w[0] >> (8 * k));
    auto* words = reinterpret_cast<std::uint32_t*>(staging + o + hb); // word-aligned whenever rest > 0
    std::uint32_t x[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) x[j] = 0;
#pragma unroll
    for (int j = 0; j < NW; ++j) {
        x[j] = __funnelshift_r(w[j], w[j + 1], 8 * hb);
        if (j < int(nw)) words[j] = x[j];
    }
    // the tail, x[nw] (nw < NW whenever tb > 0)
    std::uint32_t y[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) y[i] = (nw & 1) ? x[2 * i + 1] : x[2 * i];
#pragma unroll
    for (int i = 0; i < 4; ++i) y[i] = (nw & 2) ? y[2 * i + 1] : y[2 * i];
#pragma unroll
    for (int i = 0; i < 2; ++i) y[i] = (nw & 4) ? y[2 * i + 1] : y[2 * i];
    const std::uint32_t tail = (nw & 8) ? y[1] : y[0];
    auto* end = staging + o + hb + 4 * nw;
#pragma unroll
    for (int k = 0; k < 3; ++k)
        if (k < int(tb)) end[k] = static_cast<std::uint8_t>(tail >> (8 * k));
}

// Stores the aligned output vectors q0 <= q < q1 of `out`, vector q being the 16 staging
// bytes from byte 16 q + 4 Q + r / 8 on (Q whole words, fixed for the tile, and r bits):
// two aligned shared loads and four funnel shifts a vector.
template <int Q>
__device__ __forceinline__ void store_shifted(std::uint8_t* out, const uint4* staging, std::uint32_t q0, std::uint32_t q1,
                                              std::uint32_t r) {
#pragma unroll 1
    for (std::uint32_t q = q0 + threadIdx.x; q < q1; q += k_threads) {
        const uint4 a = staging[q], b = staging[q + 1];
        const std::uint32_t in[9] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, 0};
        store16(out + 16 * q, make_uint4(__funnelshift_r(in[Q], in[Q + 1], r), __funnelshift_r(in[Q + 1], in[Q + 2], r),
                                         __funnelshift_r(in[Q + 2], in[Q + 3], r),
                                         __funnelshift_r(in[Q + 3], in[Q + 4], r)));
    }
}

// The length of a row of N words: one past its last byte that is not padding (0 for a row
// of padding only). Free of branches: a xor, a comparison and two selects a word (the
// piece-by-piece form below, used where rows are read from shared memory, compiles to a
// branch around each word's bit search: 75 instructions a 32-byte row against 36).
template <int N, int M>
__device__ __forceinline__ std::uint32_t row_length(const std::uint32_t (&w)[M], std::uint32_t pad4) {
    static_assert(N <= M, "the row's words");
    std::uint32_t last = 0, base = 0;
#pragma unroll
    for (int k = 0; k < N; ++k) {
        const std::uint32_t d = w[k] ^ pad4;
        last = d != 0 ? d : last;
        base = d != 0 ? 4u * k + 1 : base;
    }
    return last != 0 ? base + ((31u - __clz(last)) >> 3) : 0u;
}

// The row length a piece at byte `at` of its row implies: one past its last byte that is
// not padding, or `len` when the piece is all padding.
__device__ __forceinline__ std::uint32_t piece_end(uint4 v, std::uint32_t pad4, std::uint32_t at, std::uint32_t len) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const std::uint32_t diff = pick4(q, v.x, v.y, v.z, v.w) ^ pad4;
        if (diff != 0) len = at + 4 * q + (31 - __clz(diff)) / 8 + 1;
    }
    return len;
}


// The tile's `total` value bytes, staging bytes [16, 16 + total), into data[prefix, prefix +
// total), by the k_threads threads of the rows warps: in the aligned vectors q of data +
// (prefix - head), output byte 16 q + k is staging byte 16 q + k + (16 - head). The vectors
// at both ends, which the neighbouring tiles share, go byte by byte; the others through
// store_shifted, its word shift fixed for the tile.
__device__ __forceinline__ void store_tile_values(std::uint8_t* data, const std::uint8_t* staging,
                                                  unsigned long long prefix, std::uint32_t total) {
    const std::uint32_t head = static_cast<std::uint32_t>(prefix & 15), end = head + total, sh = 16 - head;
    std::uint8_t* out = data + (prefix - head);
    const std::uint32_t q0 = head > 0 ? 1 : 0, q1 = end / 16, r = 8 * (sh % 4);
    const auto* sv = reinterpret_cast<const uint4*>(staging);
    if (q1 > q0) {
        switch (sh / 4) {
        case 0: store_shifted<0>(out, sv, q0, q1, r); break;
        case 1: store_shifted<1>(out, sv, q0, q1, r); break;
        case 2: store_shifted<2>(out, sv, q0, q1, r); break;
        case 3: store_shifted<3>(out, sv, q0, q1, r); break;
        default: store_shifted<4>(out, sv, q0, q1, r); break;
        }
    }
    // Threads 0-15: byte k of vector 0 when it starts before `head`; 16-31: byte k of vector
    // q1 when it ends past `end` (unless that is vector 0 and the first group has it).
    if (threadIdx.x < 32) {
        const std::uint32_t k = threadIdx.x % 16, q = threadIdx.x < 16 ? 0 : q1;
        const bool mine = threadIdx.x < 16 ? head > 0 : end % 16 != 0 && !(q1 == 0 && head > 0);
        const std::uint32_t b = 16 * q + k;
        if (mine && b >= head && b < end) out[b] = staging[b + sh];
    }
}

// P > 0: rows of 16 P bytes in registers, RPT per thread (rows r k_threads + threadIdx.x of
// the tile); P == 0: wider rows, `width` bytes, staged in a shared tile (at most k_threads
// rows). The block has one more warp, which holds no rows: it publishes the tile's status
// and looks back while the others pack the values.
constexpr int k_binary_threads = k_threads + 32;

// A tile's values at most (bytes), and the dynamic shared memory of a block: per slot a
// staging area for the values (16 bytes more at each end) and a list of row offsets within
// the tile (16-bit: a tile holds at most 32 KiB of values), and for rows wider than 64 bytes
// the shared tile of rows. 32-byte rows take three slots, so a tile's look-back has two
// rounds of the rows warps to finish in, not one (H200, 16 MiB / 256 MiB / 1 GiB, share of
// the copy: 54.5-57/75/74% with two slots, 55.5-56.5/78/77% with three, two processes
// each). The other widths keep two, not measured against three (which would cost rows of
// 16, 48 and 64 bytes a block per SM).
__host__ __device__ constexpr std::uint32_t binary_stage_bytes(int P) {
    return P > 0 ? std::uint32_t(k_threads) * binary_rows_per_thread(P) * 16 * P : k_tile_bytes;
}
__host__ __device__ constexpr std::uint32_t binary_tile_rows(int P) {
    return P > 0 ? std::uint32_t(k_threads) * binary_rows_per_thread(P) : k_threads;
}
__host__ __device__ constexpr int binary_slots(int P) { return P == 2 ? 3 : 2; }
__host__ __device__ constexpr std::uint32_t binary_smem_bytes(int P) {
    return binary_slots(P) * (binary_stage_bytes(P) + 32 + 2 * binary_tile_rows(P)) + (P == 0 ? k_tile_bytes : 0);
}

// The barrier of the rows warps alone (1), and the hand-overs between them and the
// look-back warp: one barrier per slot and way (ids 2 to 7), the producer arrives, the
// consumer waits. Not the .aligned form (bar.sync, which __syncthreads is): the compiler does
// not see these as barriers, so it need not bring a warp's threads back together before
// them. Ids as immediates, so that the block takes only the barriers it uses (with ids in
// registers ptxas reserves all 16). compute-sanitizer racecheck (CUDA 13.0, H200) reports
// the hand-over of slot_tile, slot_total and slot_last (thread 0 writes them, then arrives;
// the look-back warp reads them after its wait) as hazards: it does not seem to model a
// barrier that some warps arrive at and others wait on. memcheck and synccheck find nothing,
// and every result is checked (the GPU tests, the scenario's own check).
__device__ __forceinline__ void rows_sync() { asm volatile("barrier.sync 1, %0;" ::"n"(k_threads) : "memory"); }
template <unsigned ID> __device__ __forceinline__ void arrive_id() {
    asm volatile("barrier.arrive %0, %1;" ::"n"(ID), "n"(k_threads + 32) : "memory");
}
template <unsigned ID> __device__ __forceinline__ void wait_id() {
    asm volatile("barrier.sync %0, %1;" ::"n"(ID), "n"(k_threads + 32) : "memory");
}
template <bool Wait> __device__ __forceinline__ void hand_over(unsigned id) {
    switch (id) {
    case 2: Wait ? wait_id<2>() : arrive_id<2>(); break;
    case 3: Wait ? wait_id<3>() : arrive_id<3>(); break;
    case 4: Wait ? wait_id<4>() : arrive_id<4>(); break;
    case 5: Wait ? wait_id<5>() : arrive_id<5>(); break;
    case 6: Wait ? wait_id<6>() : arrive_id<6>(); break;
    default: Wait ? wait_id<7>() : arrive_id<7>(); break;
    }
}
__device__ __forceinline__ void hand_arrive(unsigned id) { hand_over<false>(id); }
__device__ __forceinline__ void hand_wait(unsigned id) { hand_over<true>(id); }

// By thread 0 of each block of dense_to_binary_kernel once the block's look-backs are over:
// the last block to get here leaves the scratch ready for the next launch (counter: the
// scratch's header words, status: its status words).
__device__ __forceinline__ void finish_launch(unsigned int* counter, unsigned long long* status, std::uint32_t tiles,
                                              const std::uint32_t& block_epoch) {
    __threadfence();
    if (atomicAdd(counter + 1, 1u) != gridDim.x - 1) return;
    const std::uint32_t high = max(counter[3], tiles), next_epoch = (block_epoch + 1) % k_epochs;
    if (next_epoch == 0)
        for (std::uint32_t k = 0; k < high; ++k) status[k] = 0;
    counter[0] = 0;
    counter[1] = 0;
    counter[2] = next_epoch;
    counter[3] = high;
}

// The look-back warp of dense_to_binary_kernel. Round j starts once the rows warps hand over
// slot j % S, which holds the block's j-th tile, packed, its aggregate published; it then
// finds the tile's prefix while the rows warps go on, and hands the prefix back. Returns
// after the block's last tile.
template <unsigned S>
__device__ __forceinline__ void look_back_rounds(unsigned long long* status, const std::uint32_t* slot_tile,
                                                 const std::uint32_t* slot_total, const std::uint32_t* slot_last,
                                                 unsigned long long* slot_prefix, const std::uint32_t& block_epoch) {
    constexpr unsigned TILE_READY = 2, PREFIX_READY = 2 + S;
    const unsigned lane = threadIdx.x % 32;
    auto epoch_bits = [&] { return static_cast<unsigned long long>(block_epoch) << 32; };
    for (unsigned j = 0;; ++j) {
        const unsigned s = j % S;
        hand_wait(TILE_READY + s);
        const std::uint32_t tt = slot_tile[s], total = slot_total[s];
        const bool last = slot_last[s] != 0;
        const unsigned long long p = tt == 0 ? 0 : look_back(status, tt, epoch_bits());
        if (lane == 0) {
            if (tt > 0) write_status(status + tt, k_status_inclusive | epoch_bits() | (p + total));
            slot_prefix[s] = p;
        }
        __syncwarp();
        hand_arrive(PREFIX_READY + s);
        if (last) return;
    }
}

// The length of each of the thread's rows of the tile (row_length: rows of 16 P bytes in
// registers, v; piece_end: wider rows in the shared tile), 0 past the tile's nr rows.
template <int P, int RPT>
__device__ __forceinline__ void measure_rows(std::uint32_t (&len)[RPT], const uint4 (&v)[RPT][P > 0 ? P : 1],
                                             const std::uint8_t* tile, std::uint32_t width, std::uint32_t nr,
                                             std::uint32_t pad4) {
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
        const std::uint32_t row = r * k_threads + threadIdx.x;
        len[r] = 0;
        if (row < nr) {
            if constexpr (P > 0) {
                std::uint32_t w[4 * P];
#pragma unroll
                for (int p = 0; p < P; ++p) put_words(w, 4 * p, v[r][p]);
                len[r] = row_length<4 * P>(w, pad4);
            } else {
                for (int p = int(width / 16) - 1; p >= 0 && len[r] == 0; --p)
                    len[r] = piece_end(*reinterpret_cast<const uint4*>(tile + row * width + 16 * p), pad4, 16 * p, 0);
            }
        }
    }
}

// Offsets within the tile, in row order (d: of each of the thread's rows), and the tile's
// total: a warp scan per round of rows, then the warp totals scanned by each warp (two a lane
// at most). Ends with the rows warps' barrier between the two scans.
template <int RPT, int NW>
__device__ __forceinline__ std::uint32_t scan_lengths(const std::uint32_t (&len)[RPT], std::uint32_t (&d)[RPT],
                                                      std::uint32_t* warp_totals, unsigned lane, unsigned warp) {
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
        const std::uint32_t inc = warp_inclusive_sum(len[r], lane);
        if (lane == 31) warp_totals[r * NW + warp] = inc;
        d[r] = inc - len[r];
    }
    rows_sync();
    constexpr int NT = RPT * NW, PER = (NT + 31) / 32;
    static_assert(PER <= 2, "at most 64 warp totals");
    std::uint32_t total, e[PER];
    {
        std::uint32_t x[PER], sum = 0;
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const unsigned k = lane * PER + q;
            x[q] = k < unsigned(NT) ? warp_totals[k] : 0;
            sum += x[q];
        }
        const std::uint32_t inc = warp_inclusive_sum(sum, lane);
        e[0] = inc - sum;
        if constexpr (PER == 2) e[1] = e[0] + x[0];
        total = __shfl_sync(k_full_mask, inc, 31);
    }
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
        const int k = r * NW + int(warp);
        d[r] += __shfl_sync(k_full_mask, PER == 2 && k % 2 == 1 ? e[PER - 1] : e[0], k / PER);
    }
    return total;
}

template <int P>
__global__ void __launch_bounds__(k_binary_threads, binary_blocks_per_sm(P))
    dense_to_binary_kernel(std::int32_t* __restrict__ offsets, std::uint8_t* __restrict__ data,
                           const std::uint8_t* __restrict__ dense, std::uint64_t n, std::uint32_t width,
                           std::uint32_t rows_per_tile, std::uint32_t tiles, std::uint32_t pad4,
                           unsigned long long* scratch) {
    constexpr int RPT = binary_rows_per_thread(P), NW = k_threads / 32;
    constexpr std::uint32_t STAGE = binary_stage_bytes(P), ROWS = binary_tile_rows(P);
    constexpr unsigned S = binary_slots(P), TILE_READY = 2, PREFIX_READY = 2 + S;
    static_assert(STAGE <= k_stage_bytes, "a tile's values fit the staging area");
    // staging[s]: the values of the tile in slot s at byte 16 + (offset within the tile),
    // shifted into the vectors of `data` when stored; row_at[s]: its rows' offsets.
    extern __shared__ __align__(16) std::uint8_t smem[];
    auto staging = [&](unsigned s) { return smem + s * (STAGE + 32); };
    auto row_at = [&](unsigned s) { return reinterpret_cast<std::uint16_t*>(smem + S * (STAGE + 32)) + s * ROWS; };
    std::uint8_t* tile = smem + S * (STAGE + 32 + 2 * ROWS); // rows wider than 64 bytes
    __shared__ std::uint32_t warp_totals[2][RPT * NW];
    __shared__ std::uint32_t first_tile, next_tile[2], slot_tile[S], slot_total[S], slot_last[S];
    __shared__ unsigned long long slot_prefix[S];
    __shared__ std::uint32_t block_epoch;
    unsigned long long* status = scratch + k_scratch_header_words;
    auto* counter = reinterpret_cast<unsigned int*>(scratch); // [tiles handed out, blocks done, epoch, high water]
    if (threadIdx.x == 0) {
        first_tile = atomicAdd(counter, 1u);
        block_epoch = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(counter[2]).load(cuda::memory_order_relaxed);
    }
    __syncthreads();
    // Read where it is used (a register held through the loops costs the rows warps).
    auto epoch_bits = [&] { return static_cast<unsigned long long>(block_epoch) << 32; };
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;

    std::uint32_t t = first_tile;
    if (t >= tiles) {
        if (threadIdx.x == 0) finish_launch(counter, status, tiles, block_epoch);
        return;
    }

    // The look-back warp: the prefix of each of the block's tiles (look_back_rounds).
    if (warp == NW) {
        look_back_rounds<S>(status, slot_tile, slot_total, slot_last, slot_prefix, block_epoch);
        return;
    }

    // The rows warps: round j measures, scans and packs the block's j-th tile into slot
    // j % S and publishes its aggregate, starts loading the next tile, hands the slot to the
    // look-back warp, then stores tile j - (S - 1) once its prefix is back. The tile counter
    // and the warp totals alternate between two copies by round: the rows warps meet only
    // once a round (rows_sync), so a warp may write round j + 1's while another still reads
    // round j's.
    uint4 v[RPT][P > 0 ? P : 1];
    auto load_rows = [&](std::uint32_t tt) {
        const std::uint64_t i0 = std::uint64_t(tt) * rows_per_tile;
        const std::uint32_t nr = static_cast<std::uint32_t>(min(std::uint64_t(rows_per_tile), n - i0));
        if constexpr (P > 0) {
#pragma unroll
            for (int r = 0; r < RPT; ++r) {
                const std::uint32_t row = r * k_threads + threadIdx.x;
                if (row < nr) {
#pragma unroll
                    for (int p = 0; p < P; ++p) v[r][p] = load16(dense + (i0 + row) * (16 * P) + 16 * p);
                }
            }
        } else {
            stage_vectors_async(tile, dense + i0 * width, nr * width / 16);
            async_commit();
        }
    };
    auto store_slot = [&](unsigned s) {
        const std::uint32_t tt = slot_tile[s], total = slot_total[s];
        const unsigned long long prefix = slot_prefix[s];
        const std::uint64_t i0 = std::uint64_t(tt) * rows_per_tile;
        const std::uint32_t nr = static_cast<std::uint32_t>(min(std::uint64_t(rows_per_tile), n - i0));
        if (nr == ROWS) { // all but the last tile: straight-line stores
#pragma unroll
            for (std::uint32_t r = 0; r < ROWS / k_threads; ++r) {
                const std::uint32_t row = r * k_threads + threadIdx.x;
                offsets[i0 + row] = static_cast<std::int32_t>(prefix + row_at(s)[row]);
            }
        } else {
            for (std::uint32_t row = threadIdx.x; row < nr; row += k_threads)
                offsets[i0 + row] = static_cast<std::int32_t>(prefix + row_at(s)[row]);
        }
        if (threadIdx.x == 0 && i0 + nr == n) offsets[n] = static_cast<std::int32_t>(prefix + total);
        store_tile_values(data, staging(s), prefix, total);
    };

    load_rows(t);
    for (unsigned j = 0;; ++j) {
        const unsigned s = j % S;
        if (threadIdx.x == 0) next_tile[j % 2] = atomicAdd(counter, 1u);
        const std::uint64_t i0 = std::uint64_t(t) * rows_per_tile;
        const std::uint32_t nr = static_cast<std::uint32_t>(min(std::uint64_t(rows_per_tile), n - i0));
        if constexpr (P == 0) {
            async_wait<0>();
            rows_sync();
        }
        std::uint32_t len[RPT], d[RPT];
        measure_rows<P>(len, v, tile, width, nr, pad4);
        const std::uint32_t total = scan_lengths<RPT, NW>(len, d, warp_totals[j % 2], lane, warp);
        const std::uint32_t next = next_tile[j % 2];
        if (threadIdx.x == 0) {
            write_status(status + t, (t == 0 ? k_status_inclusive : k_status_aggregate) | epoch_bits() | total);
            slot_tile[s] = t;
            slot_total[s] = total;
            slot_last[s] = next >= tiles;
        }
        // Rows in registers: once all are packed, their registers take the next tile's rows,
        // whose loads stay in flight through the hand-over and the stores below. (Each row's
        // registers taking the next tile's row as soon as it was packed left the next row's
        // packing waiting on those loads: Nsight Compute put 17% of the warps' stall samples
        // on the first instruction that read it. 32-byte rows, H200, two processes each,
        // share of the copy at 16 MiB / 256 MiB / 1 GiB: 55-56/77.4/77.3% -> 55-56.5/79/78.5%.)
        const std::uint64_t next_i0 = std::uint64_t(next) * rows_per_tile;
        const std::uint32_t next_nr =
            next < tiles ? static_cast<std::uint32_t>(min(std::uint64_t(rows_per_tile), n - next_i0)) : 0;
#pragma unroll
        for (int r = 0; r < RPT; ++r) {
            const std::uint32_t row = r * k_threads + threadIdx.x;
            if constexpr (P > 0) {
                if (row < nr) {
                    row_at(s)[row] = static_cast<std::uint16_t>(d[r]);
                    std::uint32_t w[4 * P + 1];
#pragma unroll
                    for (int p = 0; p < P; ++p) put_words(w, 4 * p, v[r][p]);
                    w[4 * P] = 0;
                    pack_span<4 * P>(staging(s), 16 + d[r], w, len[r]);
                }
            } else {
                if (row >= nr) continue;
                row_at(s)[row] = static_cast<std::uint16_t>(d[r]);
                for (std::uint32_t p = 0; 16 * p < len[r]; ++p) {
                    std::uint32_t w[5];
                    put_words(w, 0, *reinterpret_cast<const uint4*>(tile + row * width + 16 * p));
                    w[4] = 0;
                    pack_span<4>(staging(s), 16 + d[r] + 16 * p, w, min(16u, len[r] - 16 * p));
                }
            }
        }
        if constexpr (P > 0) { // load_rows(next), written out: the form measured (through
                               // load_rows the compiler makes other code, not measured)
#pragma unroll
            for (int r = 0; r < RPT; ++r) {
                const std::uint32_t row = r * k_threads + threadIdx.x;
                if (row < next_nr) {
#pragma unroll
                    for (int p = 0; p < P; ++p) v[r][p] = load16(dense + (next_i0 + row) * (16 * P) + 16 * p);
                }
            }
        }
        // Wider rows: the next tile's copy starts once every warp is done with the shared
        // tile, and stays in flight through the stores below.
        if constexpr (P == 0) {
            rows_sync();
            if (next < tiles) load_rows(next);
        }
        hand_arrive(TILE_READY + s); // hands this tile to the look-back warp
        // Tile j - (S - 1) is stored once its prefix is in: the look-back has S - 1 rounds.
        if (j >= S - 1) {
            hand_wait(PREFIX_READY + (j - (S - 1)) % S);
            store_slot((j - (S - 1)) % S);
        }
        if (next >= tiles) {
            for (unsigned k = j + 2 >= S ? j + 2 - S : 0; k <= j; ++k) { // the tiles not yet stored
                hand_wait(PREFIX_READY + k % S);
                store_slot(k % S);
            }
            if (threadIdx.x == 0) finish_launch(counter, status, tiles, block_epoch); // look-back warp done
            return;
        }
        t = next;
    }
}

// Rows of 16 P bytes: P = 1..4 (the register kernels), P = 0 for wider rows.
template <class F>
cudaError_t dispatch_row_pieces(std::uint64_t width, F&& fn) {
    switch (width / 16) {
    case 1: return fn(std::integral_constant<int, 1>{});
    case 2: return fn(std::integral_constant<int, 2>{});
    case 3: return fn(std::integral_constant<int, 3>{});
    case 4: return fn(std::integral_constant<int, 4>{});
    default: return fn(std::integral_constant<int, 0>{});
    }
}

} // namespace

std::size_t dense_to_binary_scratch_bytes(std::uint64_t n, std::uint64_t width) {
    if (width == 0) return 0;
    const std::uint64_t rows_per_tile = binary_rows_per_tile(width);
    return 8 * (k_scratch_header_words + (n + rows_per_tile - 1) / rows_per_tile);
}

cudaError_t detail::arrow_binary_to_dense(std::uint8_t* dense, const std::int32_t* offsets, const std::uint8_t* data,
                                          const std::uint8_t* validity, std::uint64_t n, std::uint64_t width,
                                          std::uint8_t pad, cudaStream_t stream) {
    const std::uint32_t pad4 = pad * 0x01010101u;
    return dispatch_row_pieces(width, [&](auto pieces) {
        constexpr int P = decltype(pieces)::value;
        if constexpr (P > 0) {
            binary_rows_to_dense_kernel<P><<<grid_for(n, k_threads), k_threads, 0, stream>>>(dense, offsets, data,
                                                                                            validity, n, pad4);
        } else {
            const std::uint64_t nvec = n * (width / 16);
            binary_to_dense_kernel<<<grid_for(nvec, k_threads * 2), k_threads, 0, stream>>>(
                dense, offsets, data, validity, nvec, make_fastdiv(width / 16), static_cast<std::uint32_t>(width), pad4);
        }
        return cudaGetLastError();
    });
}

cudaError_t detail::dense_to_arrow_binary(std::int32_t* offsets, std::uint8_t* data, const std::uint8_t* dense,
                                          std::uint64_t n, std::uint64_t width, std::uint8_t pad, void* scratch,
                                          cudaStream_t stream) {
    const std::uint32_t rows_per_tile = binary_rows_per_tile(width);
    const std::uint64_t tiles = (n + rows_per_tile - 1) / rows_per_tile;
    if (tiles > INT_MAX) return cudaErrorInvalidValue;
    auto* status = static_cast<unsigned long long*>(scratch);
    return dispatch_row_pieces(width, [&](auto pieces) {
        constexpr int P = decltype(pieces)::value;
        auto* kernel = dense_to_binary_kernel<P>;
        constexpr std::uint32_t smem = binary_smem_bytes(P);
        if (cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            err != cudaSuccess)
            return err;
        kernel<<<resident_grid(kernel, smem, tiles, INT_MAX, k_binary_threads), k_binary_threads, smem, stream>>>(
            offsets, data, dense, n, static_cast<std::uint32_t>(width), rows_per_tile, static_cast<std::uint32_t>(tiles),
            pad * 0x01010101u, status);
        return cudaGetLastError();
    });
}

} // namespace interopbench::kernels
