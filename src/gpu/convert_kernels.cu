// Layout conversion kernels, written for bandwidth: every global access is a coalesced
// 16-byte load or store except at the edges of a row or an array, and each thread keeps
// several loads in flight before it uses any. Rows of any length and alignment are
// handled by loading the aligned 16-byte vectors that cover them and shifting bytes in
// registers (funnel shifts); only the partial vectors at the ends of a row segment fall
// back to element stores. Tiles never assume that a dimension is a multiple of anything.
#include "gpu/convert_kernels.hpp"

#include <algorithm>
#include <climits>
#include <mutex>
#include <numeric>
#include <type_traits>
#include <vector>

#include <cuda/atomic>

namespace interopbench::kernels {

namespace {

constexpr int k_threads = 256;
constexpr unsigned k_full_mask = 0xffffffffu;

template <int E> struct Bits;
template <> struct Bits<1> { using T = std::uint8_t; };
template <> struct Bits<2> { using T = std::uint16_t; };
template <> struct Bits<4> { using T = std::uint32_t; };
template <> struct Bits<8> { using T = unsigned long long; };

__device__ __forceinline__ uint4 load16(const std::uint8_t* p) {
    return __ldg(reinterpret_cast<const uint4*>(p));
}

// load16 that also asks L2 to fetch the whole aligned 256-byte block holding p from DRAM.
// The transpose's row segments use it. Measured against it on an H200 (the shapes harness, 256
// MiB and 1 GiB, two processes at 256 MiB): without the hint 0.5-3.5 points of the copy
// roofline lower on most shapes, with L2::128B and with ld.global.cg (L1 then hits nothing)
// up to 2 points lower, with L1::no_allocate or L1::evict_first up to 26 points lower (int8 on
// the scenario's square shape 84-85 -> 59-64%: L1 serves the sectors that neighbouring lanes'
// vectors and the shuffled next words share).
__device__ __forceinline__ uint4 load16_l2_256(const std::uint8_t* p) {
    uint4 v;
    asm volatile("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ void store16(std::uint8_t* p, uint4 v) {
    *reinterpret_cast<uint4*>(p) = v;
}

// 64-bit division by a divisor fixed at launch: m = floor((2^64 - 1) / d) gives the
// quotient or one less for n < 2^62, fixed by one comparison.
struct FastDiv {
    std::uint64_t d;
    std::uint64_t m;
};

FastDiv make_fastdiv(std::uint64_t d) { return FastDiv{d, ~0ull / d}; }

__device__ __forceinline__ std::uint64_t divmod(const FastDiv& f, std::uint64_t n, std::uint64_t& r) {
    std::uint64_t q = __umul64hi(n, f.m);
    r = n - q * f.d;
    if (r >= f.d) {
        ++q;
        r -= f.d;
    }
    return q;
}

__device__ __forceinline__ std::uint32_t pick4(unsigned q, std::uint32_t a, std::uint32_t b,
                                               std::uint32_t c, std::uint32_t d) {
    return q == 0 ? a : q == 1 ? b : q == 2 ? c : d;
}

// out = the NO words that start `sh` bytes (0..15) into the word array `in`.
template <int NO, int NI>
__device__ __forceinline__ void shift_bytes(const std::uint32_t (&in)[NI], unsigned sh,
                                            std::uint32_t (&out)[NO]) {
    static_assert(NI >= NO + 4, "shift_bytes reads up to four words past the output");
    const unsigned q = sh >> 2, r = (sh & 3) * 8;
#pragma unroll
    for (int t = 0; t < NO; ++t)
        out[t] = __funnelshift_r(pick4(q, in[t], in[t + 1], in[t + 2], in[t + 3]),
                                 pick4(q, in[t + 1], in[t + 2], in[t + 3], in[t + 4]), r);
}

// Bytes [lo, hi) of a word, all ones.
__device__ __forceinline__ std::uint32_t byte_mask(int lo, int hi) {
    const std::uint32_t upto = hi >= 4 ? ~0u : (1u << (8 * hi)) - 1;
    return upto & ~((1u << (8 * lo)) - 1);
}

// The first `keep` bytes of w (none below 0, all from 4), the rest from pad4.
__device__ __forceinline__ std::uint32_t keep_bytes(std::uint32_t w, int keep, std::uint32_t pad4) {
    const std::uint32_t mask = byte_mask(0, max(0, min(keep, 4)));
    return (w & mask) | (pad4 & ~mask);
}

__device__ __forceinline__ void put_words(std::uint32_t* w, int at, uint4 v) {
    w[at] = v.x;
    w[at + 1] = v.y;
    w[at + 2] = v.z;
    w[at + 3] = v.w;
}

template <int E>
__device__ __forceinline__ uint4 pack(const typename Bits<E>::T (&e)[16 / E]) {
    std::uint32_t w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if constexpr (E == 1)
            w[j] = std::uint32_t(e[4 * j]) | std::uint32_t(e[4 * j + 1]) << 8 |
                   std::uint32_t(e[4 * j + 2]) << 16 | std::uint32_t(e[4 * j + 3]) << 24;
        else if constexpr (E == 2)
            w[j] = std::uint32_t(e[2 * j]) | std::uint32_t(e[2 * j + 1]) << 16;
        else if constexpr (E == 4)
            w[j] = e[j];
        else
            w[j] = std::uint32_t(e[j / 2] >> (32 * (j % 2)));
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// Copies `nvec` aligned 16-byte vectors from global to shared memory, block-wide, four in
// flight per thread. With PAD > 0, byte b lands at b + PAD * (b / 128) (word stores).
template <std::uint32_t PAD = 0>
__device__ __forceinline__ void stage_vectors(std::uint8_t* smem, const std::uint8_t* in, std::uint32_t nvec) {
    constexpr int k_batch = 4;
    for (std::uint32_t base = 0; base < nvec; base += k_batch * k_threads) {
        uint4 v[k_batch];
#pragma unroll
        for (int u = 0; u < k_batch; ++u) {
            const std::uint32_t at = base + u * k_threads + threadIdx.x;
            if (at < nvec) v[u] = load16(in + 16ull * at);
        }
#pragma unroll
        for (int u = 0; u < k_batch; ++u) {
            const std::uint32_t at = base + u * k_threads + threadIdx.x;
            if (at >= nvec) continue;
            if constexpr (PAD == 0) {
                *reinterpret_cast<uint4*>(smem + 16 * at) = v[u];
            } else {
                auto* w = reinterpret_cast<std::uint32_t*>(smem + 16 * at + PAD * (at / 8));
                w[0] = v[u].x;
                w[1] = v[u].y;
                w[2] = v[u].z;
                w[3] = v[u].w;
            }
        }
    }
}

// Asynchronous staging (cp.async, sm_80 and later): 16-byte copies from global to shared
// memory that complete in the background, in commit groups.
// L2 is asked to fetch the whole aligned 256-byte block from DRAM: the staged ranges are
// contiguous runs. On an H200 SoA -> AoS at 256 MiB: xyz 92 -> 94%, mixed 89.4 -> 91%, wide
// and packed 0.2-0.9 points lower (93.5-94.7%); 1 GiB within 0.6 points.
__device__ __forceinline__ void copy_async16(void* smem, const void* global) {
    const auto s = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(s), "l"(global) : "memory");
}

__device__ __forceinline__ void async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most N of this thread's commit groups are still in flight.
template <int N> __device__ __forceinline__ void async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ void stage_vectors_async(std::uint8_t* smem, const std::uint8_t* in, std::uint32_t nvec) {
    for (std::uint32_t at = threadIdx.x; at < nvec; at += k_threads) copy_async16(smem + 16 * at, in + 16ull * at);
}

// Persistent blocks: runs process(tile, buffer) for tiles blockIdx.x, blockIdx.x +
// gridDim.x, ... below `tiles`, while stage(tile, buffer) has already started copying the
// block's next tile into the other buffer, so its loads stay in flight through all of its
// work. stage issues cp.async copies only. (Three buffers measured no faster.)
template <class Stage, class Process>
__device__ __forceinline__ void pipeline_tiles(std::uint8_t* buf0, std::uint8_t* buf1, std::uint32_t tiles,
                                               Stage stage, Process process) {
    std::uint32_t cur = blockIdx.x;
    if (cur >= tiles) return;
    stage(cur, buf0);
    async_commit();
    for (std::uint32_t k = 0;; ++k) {
        std::uint8_t* here = k % 2 == 0 ? buf0 : buf1;
        std::uint8_t* there = k % 2 == 0 ? buf1 : buf0;
        const std::uint32_t nxt = cur + gridDim.x;
        if (nxt < tiles) stage(nxt, there);
        async_commit();
        async_wait<1>();
        __syncthreads();
        process(cur, here);
        __syncthreads();
        if (nxt >= tiles) return;
        cur = nxt;
    }
}

// Blocks that fit on the device at once with `smem` bytes of dynamic shared memory each,
// at most `max_per_sm` per SM and at most `tiles`. The runtime is asked once per kernel,
// shared memory size, block size and device; later launches reuse its answer. A failed
// query counts as one block and is asked again next time.
template <class K>
unsigned resident_grid(K kernel, std::size_t smem, std::uint64_t tiles, int max_per_sm = INT_MAX,
                       int threads = k_threads) {
    struct Known {
        K kernel;
        std::size_t smem;
        int threads, device, sms, per_sm;
    };
    static std::mutex mutex;
    static std::vector<Known> known;
    int device = 0, sms = 1, per_sm = 1;
    if (cudaGetDevice(&device) == cudaSuccess) {
        const std::lock_guard lock(mutex);
        const auto k = std::find_if(known.begin(), known.end(), [&](const Known& x) {
            return x.kernel == kernel && x.smem == smem && x.threads == threads && x.device == device;
        });
        if (k != known.end()) {
            sms = k->sms;
            per_sm = k->per_sm;
        } else if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
                   cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) == cudaSuccess) {
            known.push_back({kernel, smem, threads, device, sms, per_sm});
        } else {
            sms = per_sm = 1;
        }
    }
    per_sm = std::min(per_sm, max_per_sm);
    return static_cast<unsigned>(std::clamp<std::uint64_t>(std::uint64_t(std::max(1, per_sm)) * std::max(1, sms), 1,
                                                           std::max<std::uint64_t>(tiles, 1)));
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

unsigned grid_for(std::uint64_t items, std::uint64_t per_block) {
    return static_cast<unsigned>(std::clamp<std::uint64_t>((items + per_block - 1) / per_block, 1, 1u << 20));
}

// ---- transpose ------------------------------------------------------------------------
//
// A block owns a tile of TR input rows x TC input columns (256-byte row segments), and the
// output is written in whole aligned 32-byte sectors: a sector of output row c (input
// column c) belongs to the tile holding the input row of its first element, and that tile
// also loads the GV - 1 input rows past its own (a halo, mostly served by L2), so no
// sector is written in part by two blocks.
//
// Phase 1 loads each row segment as the aligned 16-byte vectors covering it (several in
// flight per thread) and stores it into shared memory shifted so that the tile's first
// column sits at word 0 of the tile row (rows of an odd-width matrix start at every
// alignment).
//
// Phase 2: thread (g, j) builds vector j of output rows g, g + CPP, g + 2 CPP, ...: the V
// elements of input column c at the V tile rows starting at h(c) + V j, where h(c) is the
// first row at which a sector of output row c starts. CPP is a multiple of GV, so h, and
// with it every shared-memory address of the thread, is the same for all its columns:
// they are computed once and each column adds an immediate offset. The lanes of a warp
// cover VPC consecutive vectors of 32 / VPC output rows, KS columns apart, so every store is
// part of a coalesced run. Tile rows are PW words apart plus SK words per V rows; with PW, SK
// and KS chosen per element size (below), the lanes of a warp read distinct banks for any
// number of rows (the skew separates the vectors of one column; columns KS apart sit in
// different words of a row, whatever their h). With neighbouring columns (KS = 1), 1- and
// 2-byte elements had 2- to 4-way conflicts at even row counts: on an H200 at 256 MiB, KS = 4
// took 1-byte elements at 200, 300 and 1000 rows from 57/51/66.5 to 66/67.5/80% of the copy
// roofline (1 GiB, 1000 rows: 70 -> 81%), and left the odd shapes within noise.
//
// Only the rows before a column's first sector (head) and the sector that runs past its
// end are stored element by element. Matrices of few rows take tiles of all their rows
// (ShortShape below): a tile's output is then one contiguous run, written in aligned vectors
// end to end, so short, wide matrices stay at full vector width too.
//
// On an H200 the skew is worth about 15 points of the copy roofline for 1- and 2-byte
// elements (against the same kernel without it). Also measured there and dropped: staging
// the row segments of 1- and 2-byte elements as loaded (cp.async, rows at 16-byte boundaries,
// the shift applied to the read addresses), int8 70-73% against 75-79% at 256 MiB and 1 GiB:
// a row pitch of whole vectors brings back the bank conflicts of the column reads.
//
// A warp's vectors of one output row cover TQ tile rows; tiles of TR = NQ x TQ rows have each
// thread gather NQ vectors per column, TQ rows apart (the same banks, an immediate offset).
// 4-byte matrices of 1024 rows and more take tiles of 128 rows (NQ = 2; a halo of 7 rows per
// 128 instead of per 64). H200, 256 MiB, three processes: 37, 100 and 200 columns
// 78/81.5/83.5 -> 82-83.5/86.5-87.5/87-88.5% of the copy roofline, the scenario's square and
// tall shapes within a point; at 65 and 129 rows they cost 2.5-4 points (a second tile row of
// one row), hence 64-row tiles below 1024 rows. Measured there and dropped (points against
// the tiles above): 1-byte tiles of 256 rows (x 128 bytes: tall +0.7 to +2, 300 rows -2, wide
// at 1 GiB -0.4 to -0.8; x 256 bytes in dynamic shared memory, three blocks per SM: -11 to
// -14), 2-byte ones of 256 rows x 64 (-2.5 to -5.5), 8-byte ones of 128 rows (-4 to -24),
// tiles of 1.5 times these rows in dynamic shared memory (-11.5 to -35 on the scenario's
// shapes); sectors written in halves by two tiles (16-byte ownership, a halo of V - 1 rows):
// int8 at 1 GiB 85 -> 66%, lower at every size and shape from 256 MiB (not profiled); a block
// taking 2 to 8 tiles down a tile column and keeping the halo rows in shared memory for the
// next: 4-30 lower at 256 MiB and 1 GiB (its load and gather no longer overlap other
// tiles'), up to 8 lower even with one tile per block (the loop's code); tile groups of 4 to
// 64 tile rows for tall matrices: within a point. Also dropped: for 1- and 2-byte elements,
// load slots of 8 vectors of 4 rows per warp with each row segment placed its word shift
// further on (a pitch of 67 words), so that phase 1's word stores fall in distinct banks:
// they did (Nsight Compute, int8 at 16383 x 16383: 3.2 -> 0.8 million conflicts), but the
// gather's shared loads then met 25 times as many (the lanes' columns start at different
// rows, so at different shifts) and the instructions rose 45%: int8 84 -> 60%.
//
// What the halo costs, Nsight Compute, int8 at 16383 x 16383 (256 MiB): DRAM reads 8.52 M
// sectors against 8.39 M of input (the halo is not fetched twice); L1 receives 11.67 M from L2
// (about the input x 159 / 128 loaded rows x 9 / 8 sectors per unaligned row segment), while L2
// counts 13.07 M read sectors from the SMs (the 256-byte hint's requests add the rest), 8.49 M
// write sectors, 155-156 us, L2 throughput 92%, DRAM 70%, SMs active 96% of the time (the
// last of 15.5 waves of tiles); without a halo (16384 x 16384) 8.39 M received, 9.35 M
// counted, 138 us, L2 88%. Without the hint L2 counts just the 11.67 M and its throughput
// reads 89%, yet the kernel takes as long (157 us): no one unit is at its limit, the 24% more
// rows lengthen each tile's load phase. Measured and dropped: halo tiles in thread-block
// clusters of 2, 4 and 8 tiles down a tile column, each copying its halo from the next block's
// shared memory: L2 read sectors 13.08 -> 11.49 M, yet 156 -> 186 us, and at 256 MiB and 1 GiB
// every halo kernel 6-22 points lower (int8 square at 256 MiB 85 -> 72/70/69%, fp64 95 ->
// 75/75/74%); with one block per cluster (no cluster barrier run) the launch and the kernel's
// extra code alone cost int8 7-14 points there and wide 4-byte shapes up to 9.5. Also dropped:
// persistent blocks (as many as fit) that load the next tile's row segments into registers
// before gathering the current tile and shift them into the one shared buffer after it, so
// that a block's loads overlap its own gather (H200, 256 MiB, two processes, the shapes
// harness): with two blocks per SM (128 registers) int8 on the scenario's square shape 84.6-84.9
// -> 58%, the aligned 16384 x 16384 91.5 -> 52%, fp16 square 91 -> 64%; with three (spills)
// int8 41%, fp16 60%; 4- and 8-byte elements 1-19 points lower.

template <int E> struct TransposeShape;
template <> struct TransposeShape<1> { static constexpr int TR = 128, TC = 256, PW = 65, SK = 4, TQ = 128; };
template <> struct TransposeShape<2> { static constexpr int TR = 128, TC = 128, PW = 65, SK = 2, TQ = 128; };
template <> struct TransposeShape<4> { static constexpr int TR = 64, TC = 64, PW = 66, SK = 2, TQ = 64; };
template <> struct TransposeShape<8> { static constexpr int TR = 64, TC = 32, PW = 66, SK = 2, TQ = 64; };
// Twice the rows, the same pitch and passes (4-byte matrices of 1024 rows and more).
template <int E> struct TallShape : TransposeShape<E> { static constexpr int TR = 2 * TransposeShape<E>::TQ; };
// Half as many columns, for matrices with too few full tiles to keep the device busy through
// a tile's load and store phases. The pitch keeps its residue mod 32 words, so the banks the
// lanes read stay as above.
template <int E> struct HalfShape : TransposeShape<E> {
    using F = TransposeShape<E>;
    static constexpr int TC = F::TC / 2, PW = F::PW - F::TC * E / 8;
};
// Matrices of at most R rows (R = 8, 16, 32, 64; 128 for 1- and 2-byte elements, 256 for
// 1-byte ones): tiles of R rows x 32 KiB / R, no halo (the output is one run), so that short
// matrices still move about 32 KiB per tile. The lanes of a warp gather consecutive vectors,
// rows V apart in one column; with tile rows PW words apart (PW = 1 mod 32) those rows fall on
// two banks, so tiles of 64 rows and more skew every V rows by SK words (one word, two for
// 8-byte elements, whose alignment it keeps). On an H200 at 256 MiB the skew took 1-byte
// elements at 128 rows from 68 to 91% of the copy roofline, 2-byte ones from 86 to 92.5%, and
// 1-byte ones at 64 rows from 87 to 93%; at 33 rows, where vectors span columns and each
// element computes its own address, it cost 1-byte elements 5.5 points, so tiles of 64 rows
// skew only when the column length is a multiple of V. One-run tiles of 256 rows, 1-byte:
// 255 rows 64 -> 69%, 256 rows 84.5 -> 90% (2-byte elements at 200-256 rows: -3 to +1
// points); of 512 or 1024 rows: 5-18 points lower for both at 300-1023 rows.
struct OneRun {};
template <int E, int R, bool SKEW = false> struct ShortShape : OneRun {
    static constexpr int TR = R, TC = 32768 / R / E, PW = TC * E / 4 + (E == 8 ? 2 : 1);
    static constexpr int SK = SKEW ? (E == 8 ? 2 : 1) : 0;
    static constexpr int TQ = R;
};

// Tiles of a matrix whose column length is a multiple of a sector's elements: every column's
// first sector starts at row 0, so the sectors a tile owns end at its last row and it loads
// no halo (H200, 256 MiB, two processes, share of the copy: 1-byte elements at 16384 x 16384
// 82.6 -> 86%, at 1024 rows 84.2 -> 86.8%; 2-byte ones at 1024 and 2000 rows about a point
// higher, the rest within noise).
struct Aligned {};
template <class B> struct NoHalo : B, Aligned {};
// Whether every column of a matrix of `rows` E-byte rows starts a sector at row 0 (the tiled
// and the narrow kernels then load no halo).
template <int E> __host__ __device__ constexpr bool columns_start_sectors(std::uint64_t rows) {
    return rows % (32 / E) == 0;
}

template <int E, class B = TransposeShape<E>>
struct TransposeTile : B {
    static constexpr bool SHORT = std::is_base_of_v<OneRun, B>; // only the one-run path
    static constexpr int V = 16 / E;                 // elements of a 16-byte vector
    static constexpr int GV = 32 / E;                // elements of a 32-byte sector
    static constexpr bool HALO = !SHORT && !std::is_base_of_v<Aligned, B>;
    static constexpr int LR = HALO ? B::TR + GV - 1 : B::TR; // rows loaded: the tile's and the halo
    static constexpr int SEG_WORDS = B::TC * E / 4;  // words of a row segment
    static constexpr int IN_SLOTS = SEG_WORDS / 4 + 1; // vectors covering a row segment
    static constexpr int IN_PER_THREAD = (LR * IN_SLOTS + k_threads - 1) / k_threads;
    static constexpr int WORDS = LR * B::PW + B::SK * (LR / V + 1);
    static constexpr int VPC = SHORT ? 1 : B::TQ / V; // owned vectors per output row and TQ tile rows
    static constexpr int NQ = B::TR / B::TQ;          // vectors a thread gathers per column, TQ rows apart
    static constexpr int CPP = k_threads / VPC;      // output rows per pass of the block
    static constexpr int PASSES = SHORT ? 1 : B::TC / CPP;
    static constexpr int KS = E == 1 ? 4 : E == 2 ? 2 : 1; // column stride of a warp's lanes (tiled)
    static_assert(SHORT || (NQ * B::TQ == B::TR && B::TQ % GV == 0 && 32 % VPC == 0 && (k_threads / 32) % KS == 0 && CPP % GV == 0 && B::TC % CPP == 0), "tile shape");
    static_assert(B::PW >= SEG_WORDS && 4 * WORDS <= 48 * 1024, "static shared memory");
    // The skew's division: unsigned (a shift) but in the tiled 4-byte kernel. Measured on an
    // H200 (two or three processes each; the compiler's code for the rest of the kernel
    // differs with it): unsigned, the one-run tiles of 1-byte elements read 61/67.5/68.5% of
    // the copy roofline at 65/100/255 rows against 56/61/61% signed, 2-byte ones at 128 rows
    // 94 against 86-87%, and the tiled 2- and 8-byte kernels 85-91% against 81-89% at 100 and
    // 200 columns (8-byte at 65 rows: 90 against 83.5%); signed, the tiled 4-byte kernel reads
    // 92.3-93.4% on the scenario's square and wide shapes at 1 GiB against 90.5-91.2%.
    static __device__ __forceinline__ int row_word(int r) {
        if constexpr (!SHORT && E == 4) return r * B::PW + B::SK * (r / V);
        else return r * B::PW + B::SK * static_cast<int>(static_cast<unsigned>(r) / V);
    }
    static __device__ __forceinline__ int at(int r, int c) { return 4 * row_word(r) + c * E; }
};

// A 16-byte store kept as one vector store (the compiler may otherwise split a store of a
// vector built from 4-byte elements).
__device__ __forceinline__ void store16_vec(void* p, uint4 v) {
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

// The V elements at tile byte offsets a[i] + off, as one vector.
template <int E>
__device__ __forceinline__ uint4 gather_vector(const std::uint8_t* tile, const std::uint32_t (&a)[16 / E],
                                               std::uint32_t off) {
    if constexpr (E == 8) {
        const auto x = *reinterpret_cast<const unsigned long long*>(tile + a[0] + off);
        const auto y = *reinterpret_cast<const unsigned long long*>(tile + a[1] + off);
        return make_uint4(std::uint32_t(x), std::uint32_t(x >> 32), std::uint32_t(y), std::uint32_t(y >> 32));
    } else {
        std::uint32_t e[16 / E];
#pragma unroll
        for (int i = 0; i < 16 / E; ++i) {
            if constexpr (E == 1) e[i] = tile[a[i] + off];
            else if constexpr (E == 2) e[i] = *reinterpret_cast<const std::uint16_t*>(tile + a[i] + off);
            else e[i] = *reinterpret_cast<const std::uint32_t*>(tile + a[i] + off);
        }
        if constexpr (E == 1) {
            std::uint32_t w[4];
#pragma unroll
            for (int j = 0; j < 4; ++j)
                w[j] = __byte_perm(__byte_perm(e[4 * j], e[4 * j + 1], 0x0040),
                                   __byte_perm(e[4 * j + 2], e[4 * j + 3], 0x0040), 0x5410);
            return make_uint4(w[0], w[1], w[2], w[3]);
        } else if constexpr (E == 2) {
            return make_uint4(__byte_perm(e[0], e[1], 0x5410), __byte_perm(e[2], e[3], 0x5410),
                              __byte_perm(e[4], e[5], 0x5410), __byte_perm(e[6], e[7], 0x5410));
        } else {
            return make_uint4(e[0], e[1], e[2], e[3]);
        }
    }
}

// Blocks per SM the compiler keeps registers for (0: no bound). Full 1-byte tiles without a
// halo: five (48 registers against 62, no spills; H200, 256 MiB, two processes, share of the
// copy: 16384 x 16384 83.2-86.3 -> 90.7-91.2%, 1024 rows 84.3-87.7 -> 90.5-90.6%; 1 GiB,
// 16384 x 16384, one process: 89.6 -> 94.2%). Measured there and dropped: five for the 1-byte
// tiles with a halo (41.5 KiB of shared memory each, five of them fit: the scenario's int8
// shapes 79-87 -> 68.5-75%), five for the half-width 1-byte tiles (the scenario's int8 at 16
// MiB within noise), six for them (16-17 points lower), for the half-width 2-byte tiles (fp16 at
// 16 MiB 3-18 lower), for the 4-byte tiles of 128 rows (fp32 square and tall at 256 MiB and 1
// GiB 87.5-93.7 -> 75.5-80.5%), for the one-run tiles of 1- and 2-byte elements (40 registers,
// spills; 1-11 points below one) and for the tiled 2-byte kernels (about 20 lower). An
// explicit bound of one is not the same as none: it gave the tiled 4-byte kernel 56
// registers against 40, and 4- and 8-byte elements read up to 12 points lower on most shapes.
template <class Shape> constexpr int transpose_min_blocks() {
    return std::is_same_v<Shape, NoHalo<TransposeShape<1>>> ? 5 : 0;
}

template <int E, class Shape>
__global__ void __launch_bounds__(k_threads, transpose_min_blocks<Shape>())
    transpose_kernel(std::uint8_t* __restrict__ dst, const std::uint8_t* __restrict__ src,
                     std::uint64_t rows, std::uint64_t cols, std::uint32_t tiles_c, std::uint32_t tiles_r,
                     std::uint32_t tile_group) {
    using S = TransposeTile<E, Shape>;
    using T = typename Bits<E>::T;
    __shared__ __align__(16) std::uint32_t words[S::WORDS];
    const auto* tile = reinterpret_cast<const std::uint8_t*>(words);

    // Tiles in groups of tile_group tile rows, column by column within a group (see
    // launch_transpose_tiles).
    const std::uint32_t group = blockIdx.x / (tile_group * tiles_c), in_group = blockIdx.x % (tile_group * tiles_c);
    const std::uint32_t group_rows = min(tile_group, tiles_r - group * tile_group);
    const std::uint32_t tr = group * tile_group + in_group % group_rows, tc = in_group / group_rows;
    const std::uint64_t r0 = std::uint64_t(tr) * S::TR, c0 = std::uint64_t(tc) * S::TC;
    const int nr = static_cast<int>(min(std::uint64_t(S::TR), rows - r0));
    const int nl = static_cast<int>(min(std::uint64_t(S::LR), rows - r0)); // rows loaded
    const int nc = static_cast<int>(min(std::uint64_t(S::TC), cols - c0));
    const std::uint64_t row_bytes = cols * E;
    const std::uint64_t seg0 = (r0 * cols + c0) * E; // byte of (r0, c0)
    // Row rl's segment starts (sh0 + rl * cstep) & 15 bytes into its first aligned vector.
    const std::uint32_t sh0 = static_cast<std::uint32_t>(seg0 & 15), cstep = static_cast<std::uint32_t>(row_bytes & 15);
    const std::uint32_t seg_len = static_cast<std::uint32_t>(nc) * E;

    // Vectors in flight per thread. For 1- and 2-byte elements, 6 with the next word shuffled
    // (below) measured on an H200 at 256 MiB and 1 GiB: int8 79-82% of the copy roofline
    // against 75-82% with 4 and the next word loaded, fp16 82-90% against 82-90%; 8 in flight
    // and 4 with the shuffle measured lower (fp16 with 4: 80-87%). Also measured there and
    // dropped: each warp taking consecutive groups of 32 slots, so that lane 31's next word
    // comes from lane 0's vector of the next group (loaded only for a batch's last group, and
    // not at all where the shift is whole words): L2 read requests 4.78 -> 4.75 M at int8
    // 16383 x 16383 (lane 31's loads hit L1), the scenario's shapes within a point at 256 MiB
    // and 1 GiB, 1- and 2-byte elements at 33-300 rows 2-19 points lower (2-byte at 33 rows
    // 86 -> 67.5%).
    constexpr int k_batch = E < 4 ? 6 : 4;
    const unsigned lane = threadIdx.x % 32;
#pragma unroll 1
    for (int u0 = 0; u0 < S::IN_PER_THREAD; u0 += k_batch) {
        uint4 vec[k_batch];
        std::uint32_t next[k_batch];
#pragma unroll
        for (int u = 0; u < k_batch; ++u) {
            const int s = threadIdx.x + (u0 + u) * k_threads;
            const int rl = s / S::IN_SLOTS, k = s - rl * S::IN_SLOTS;
            vec[u] = make_uint4(0, 0, 0, 0);
            next[u] = 0;
            if (rl < nl) {
                const std::uint32_t sh = (sh0 + rl * cstep) & 15;
                if (16u * k < sh + seg_len) {
                    const std::uint8_t* p = src + ((seg0 + std::uint64_t(rl) * row_bytes) & ~15ull) + 16 * k;
                    vec[u] = load16_l2_256(p);
                    // Odd byte shifts (1- and 2-byte elements) also need the next vector's first
                    // word. The next lane loads that vector (slot s + 1, in the same row for every
                    // slot whose next vector is in the segment), except past lane 31.
                    if constexpr (E < 4) {
                        if (lane == 31 && 16u * k + 16 < sh + seg_len)
                            next[u] = __ldg(reinterpret_cast<const std::uint32_t*>(p + 16));
                    }
                }
            }
        }
        if constexpr (E < 4) {
#pragma unroll
            for (int u = 0; u < k_batch; ++u) {
                const std::uint32_t x = __shfl_down_sync(k_full_mask, vec[u].x, 1);
                if (lane != 31) next[u] = x;
            }
        }
#pragma unroll
        for (int u = 0; u < k_batch; ++u) {
            const int s = threadIdx.x + (u0 + u) * k_threads;
            const int rl = s / S::IN_SLOTS, k = s - rl * S::IN_SLOTS;
            if (rl >= nl) continue;
            const std::uint32_t sh = (sh0 + rl * cstep) & 15;
            if (16u * k >= sh + seg_len) continue;
            const int qs = static_cast<int>(sh >> 2);
            const unsigned r = (sh & 3) * 8;
            const std::uint32_t w[5] = {vec[u].x, vec[u].y, vec[u].z, vec[u].w, next[u]};
            std::uint32_t* row = words + S::row_word(rl);
#pragma unroll
            for (int t = 0; t < 4; ++t) {
                const int m = 4 * k - qs + t;
                if (m >= 0 && m < S::SEG_WORDS) row[m] = __funnelshift_r(w[t], w[t + 1], r);
            }
        }
    }
    __syncthreads();

    if constexpr (S::SHORT) {
        // Short matrix (at most TR rows): output elements [c0 * rows, (c0 + nc) * rows) are
        // one run. Thread t writes its vectors t, t + k_threads, ...; the (column, row) of a
        // vector's first element advances by a fixed step.
        static_assert(S::PASSES == 1 && S::CPP == k_threads, "one-run tiles: one pass of the block");
        const std::uint32_t rws = static_cast<std::uint32_t>(rows);
        const std::uint64_t first = c0 * rows, end = first + std::uint64_t(nc) * rows;
        const std::uint64_t v0 = first * E / 16, v1 = (end * E + 15) / 16;
        constexpr std::uint32_t step = k_threads * S::V;
        const std::uint32_t step_c = step / rws, step_r = step % rws;
        std::uint64_t v = v0 + threadIdx.x;
        // Position of element v * V relative to the run (negative before it: the head vector).
        std::int64_t rel0 = std::int64_t(v * S::V) - std::int64_t(first);
        int cl = 0, rl = 0;
        if (rel0 >= 0) {
            cl = static_cast<int>(std::uint64_t(rel0) / rws);
            rl = static_cast<int>(std::uint64_t(rel0) % rws);
        }
        // When the column length is a multiple of V, every vector lies within one column: its
        // rows a pitch apart (a loop of its own). For 1- and 2-byte elements and columns of at
        // least V, a vector spans at most two columns: its element i sits a pitch times i from
        // one of three bases, column cl's (before and after the skew step) or column cl + 1's
        // (H200, 256 MiB, two processes, share of the copy: 1-byte elements at 17, 33, 65,
        // 100, 200 and 255 rows 68/69/60.7/66.7/65.8/68 -> 71.5/74.5/63.5/69.3/67.9/70.5%,
        // 2-byte ones at 17 and 33 rows 84.5/83 -> 87.8/86.4%; 8-byte ones at 17 and 33 rows
        // lost 2.5-3 points with it, 4-byte ones moved within a point, so they keep the general
        // gather). Other vectors: element by element.
        enum { within, two_columns, general };
        auto run = [&](auto mode) {
            for (; v < v1; v += k_threads) {
                const std::uint64_t o0 = v * S::V;
                if (o0 >= first && o0 + S::V <= end) {
                    T e[S::V];
                    if constexpr (decltype(mode)::value == within) {
                        const std::uint8_t* p = tile + S::at(rl, cl);
#pragma unroll
                        for (int i = 0; i < S::V; ++i) e[i] = *reinterpret_cast<const T*>(p + 4 * S::PW * i);
                    } else if constexpr (decltype(mode)::value == two_columns) {
                        const int k = int(rws) - rl; // elements left in column cl
                        const int m = S::V - int(unsigned(rl) % S::V); // first element past the skew step
                        const std::uint32_t a = S::at(rl, cl), a2 = a + 4 * S::SK;
                        const std::uint32_t b = static_cast<std::uint32_t>((cl + 1) * E) - 4u * S::PW * std::uint32_t(k);
#pragma unroll
                        for (int i = 0; i < S::V; ++i) {
                            const std::uint32_t base = i < k ? (i < m ? a : a2) : b;
                            e[i] = *reinterpret_cast<const T*>(tile + base + 4 * S::PW * i);
                        }
                    } else {
                        int c = cl, r = rl;
#pragma unroll
                        for (int i = 0; i < S::V; ++i) {
                            e[i] = *reinterpret_cast<const T*>(tile + S::at(r, c));
                            if (++r == int(rws)) {
                                r = 0;
                                ++c;
                            }
                        }
                    }
                    store16_vec(dst + v * 16, pack<E>(e));
                } else {
                    for (int i = 0; i < S::V; ++i) {
                        const std::uint64_t o = o0 + i;
                        if (o < first || o >= end) continue;
                        const std::uint32_t rel = static_cast<std::uint32_t>(o - first);
                        const int c = static_cast<int>(rel / rws), r = static_cast<int>(rel - std::uint32_t(c) * rws);
                        reinterpret_cast<T*>(dst)[o] = *reinterpret_cast<const T*>(tile + S::at(r, c));
                    }
                }
                // Next vector of this thread: k_threads * V elements on.
                if (o0 + step >= first) {
                    if (o0 < first) {
                        const std::uint64_t rel = o0 + step - first;
                        cl = static_cast<int>(rel / rws);
                        rl = static_cast<int>(rel % rws);
                    } else {
                        cl += static_cast<int>(step_c);
                        rl += static_cast<int>(step_r);
                        if (rl >= int(rws)) {
                            rl -= static_cast<int>(rws);
                            ++cl;
                        }
                    }
                }
            }
        };
        if (rws % S::V == 0) run(std::integral_constant<int, within>{});
        else if (E <= 2 && rws >= S::V) run(std::integral_constant<int, two_columns>{});
        else run(std::integral_constant<int, general>{});
    } else {
    // Tiled: the matrix has more rows than the one-run tiles take (run_transpose).
    // Lane l of warp w: vector l % VPC of column g, the warp's columns KS apart (see above).
    constexpr int CPW = 32 / S::VPC; // columns per warp
    const int w = static_cast<int>(threadIdx.x / 32);
    const int j = static_cast<int>(lane) % S::VPC;
    const int g = w % S::KS + w / S::KS * CPW * S::KS + S::KS * (static_cast<int>(lane) / S::VPC);
    if (g >= nc) return;
    const std::uint64_t col_first = (c0 + g) * rows; // output element of (column c0 + g, row 0)
    const int h = static_cast<int>((S::GV - col_first % S::GV) % S::GV);
    const std::uint64_t rows_left = rows - r0;
    const int rl = h + S::V * j; // tile row of the vector's first element
    std::uint32_t a[S::V];
#pragma unroll
    for (int i = 0; i < S::V; ++i) a[i] = S::at(rl + i, g);
    T* out = reinterpret_cast<T*>(dst) + col_first + r0 + rl;
    constexpr std::uint32_t q_bytes = 4 * (S::TQ * S::PW + S::SK * (S::TQ / S::V)); // at(r + TQ, c) - at(r, c)
    const std::uint64_t pass_step = std::uint64_t(S::CPP) * rows;
#pragma unroll
    for (int m = 0; m < S::PASSES; ++m) {
        const int cl = g + S::CPP * m;
        if (cl >= nc) break;
        // Head: rows before the column's first sector start; that sector also holds the
        // previous column's last rows, whose tile stores those.
        if (r0 == 0)
            for (int r = j; r < h && r < int(rows); r += S::VPC)
                out[r - rl] = *reinterpret_cast<const T*>(tile + S::at(r, cl));
#pragma unroll
        for (int q = 0; q < S::NQ; ++q) {
            const int rq = rl + S::TQ * q; // the sector of this vector starts at h + GV (j / 2) + TQ q
            if (h + S::GV * (j / 2) + S::TQ * q >= nr || std::uint64_t(rq) >= rows_left) break;
            if (std::uint64_t(rq + S::V) <= rows_left) {
                store16_vec(out + S::TQ * q,
                            gather_vector<E>(tile, a, static_cast<std::uint32_t>(S::CPP * m * E + q_bytes * q)));
            } else {
                // The sector runs past the column's end: its rows here, the next column's head there.
                for (int r = rq; r < int(rows_left); ++r)
                    out[r - rl] = *reinterpret_cast<const T*>(tile + S::at(r, cl));
            }
        }
        out += pass_step;
    }
    }
}

// Narrow matrices (rows of at most k_narrow_bytes): a tile is a run of whole rows, so its
// input is one contiguous range, copied into shared memory as the aligned vectors covering
// it. The output rows are long; each is written as in the tiled kernel, in whole sectors
// owned by the tile holding their first element (a halo of GV - 1 rows), one warp's lanes
// on consecutive vectors of one output row.
constexpr std::uint32_t k_narrow_bytes = 128;
constexpr std::uint32_t k_narrow_tile = 16384; // bytes of a tile's own rows

template <int E>
__global__ void __launch_bounds__(k_threads)
    transpose_narrow_kernel(std::uint8_t* __restrict__ dst, const std::uint8_t* __restrict__ src,
                            std::uint64_t rows, std::uint32_t cols, std::uint32_t tile_rows) {
    using T = typename Bits<E>::T;
    constexpr int V = 16 / E, GV = 32 / E;
    // Byte b of the run sits at b + PAD * (b / 128): lanes reading rows V apart (a multiple
    // of 16 bytes apart) then spread over the banks. PAD keeps elements aligned.
    constexpr std::uint32_t PAD = E == 8 ? 8 : 4;
    constexpr std::uint32_t RUN = k_narrow_tile + k_narrow_bytes * GV + 32;
    __shared__ __align__(16) std::uint8_t run[RUN + PAD * (RUN / 128 + 1)];
    auto padded = [](std::uint32_t b) { return b + PAD * (b >> 7); };
    const std::uint32_t row_bytes = cols * E;
    const std::uint64_t r0 = std::uint64_t(blockIdx.x) * tile_rows;
    const std::uint32_t nr = static_cast<std::uint32_t>(min(std::uint64_t(tile_rows), rows - r0));
    const std::uint32_t halo = columns_start_sectors<E>(rows) ? 0 : GV - 1;
    const std::uint32_t nl = static_cast<std::uint32_t>(min(std::uint64_t(tile_rows + halo), rows - r0));
    const std::uint64_t begin = r0 * row_bytes, end = begin + std::uint64_t(nl) * row_bytes;
    const std::uint64_t a0 = begin & ~15ull;
    const std::uint32_t sh = static_cast<std::uint32_t>(begin - a0);
    const std::uint32_t nvec = static_cast<std::uint32_t>((end - a0 + 15) / 16);
    stage_vectors<PAD>(run, src + a0, nvec);
    __syncthreads();
    // Element (rl, c) of the tile is byte sh + (rl * cols + c) * E of the run.
    auto at = [&](std::uint32_t b) { return *reinterpret_cast<const T*>(run + padded(b)); };
    const std::uint64_t rows_left = rows - r0;
    // Vectors that can start in the tile (with slack), spread over groups of g threads, a
    // power of two: thread t takes vectors t % g + g k of the output rows t / g + (256 / g) m.
    const std::uint32_t vpc = nr / V + 2;
    std::uint32_t g = 1;
    while (g < vpc && g < k_threads) g *= 2;
    const std::uint32_t jt = threadIdx.x % g, per_pass = k_threads / g;
    for (std::uint32_t c = threadIdx.x / g; c < cols; c += per_pass) {
        const std::uint64_t col_first = std::uint64_t(c) * rows; // output element of (row 0, column c)
        const std::uint32_t h = static_cast<std::uint32_t>((GV - col_first % GV) % GV);
        T* out = reinterpret_cast<T*>(dst) + col_first + r0;
        const std::uint32_t col = sh + c * E;
        if (r0 == 0)
            for (std::uint32_t r = jt; r < h && r < rows; r += g)
                out[r] = at(col + r * row_bytes);
        for (std::uint32_t j = jt; j < vpc; j += g) {
            const std::uint32_t rl = h + V * j;
            if (h + GV * (j / 2) >= nr || rl >= rows_left) continue; // next tile's sector / next column's head
            const std::uint32_t e0 = col + rl * row_bytes;
            if (rl + V <= rows_left) {
                T e[V];
#pragma unroll
                for (int i = 0; i < V; ++i) e[i] = at(e0 + i * row_bytes);
                store16_vec(out + rl, pack<E>(e));
            } else {
                for (std::uint32_t r = rl; r < rows_left; ++r) out[r] = at(col + r * row_bytes);
            }
        }
    }
}

template <int E, class Shape>
cudaError_t launch_transpose_tiles(void* dst, const void* src, Dims2 d, cudaStream_t stream) {
    using S = TransposeTile<E, Shape>;
    const std::uint64_t tiles_r = (d.rows + S::TR - 1) / S::TR, tiles_c = (d.cols + S::TC - 1) / S::TC;
    if (tiles_c > UINT_MAX || tiles_r > INT_MAX || tiles_r * tiles_c > INT_MAX) return cudaErrorInvalidValue;
    // The order of the tiles sets how many separate runs of each matrix the blocks running at
    // once read and write. When the resident blocks hold whole tile columns, they go column by
    // column (one group of all tile rows): the output is then written front to back. Else in
    // groups of 16 tile rows. On an H200 (scenario shapes, 256 MiB and 1 GiB), groups of 128
    // and 256 tile rows (whole columns there) lifted square matrices 6-9.5 points of the copy
    // roofline over groups of 16 (with the 256-byte L2 fetches), and cost tall ones 1-4.5.
    const std::uint64_t resident = resident_grid(transpose_kernel<E, Shape>, 0, UINT_MAX);
    const std::uint32_t group = static_cast<std::uint32_t>(tiles_r <= resident ? tiles_r : 16);
    transpose_kernel<E, Shape><<<static_cast<unsigned>(tiles_r * tiles_c), k_threads, 0, stream>>>(
        static_cast<std::uint8_t*>(dst), static_cast<const std::uint8_t*>(src), d.rows, d.cols,
        static_cast<std::uint32_t>(tiles_c), static_cast<std::uint32_t>(tiles_r), std::max(group, 1u));
    return cudaGetLastError();
}

// The tiled kernel of Shape, without the halo where the column length allows: calls f with
// the ShapeTag of the tile shape that a matrix of `rows` rows takes.
template <class S> struct ShapeTag { using type = S; };
template <int E, class Shape, class F> decltype(auto) with_tiled_shape(std::uint64_t rows, F&& f) {
    return columns_start_sectors<E>(rows) ? f(ShapeTag<NoHalo<Shape>>{}) : f(ShapeTag<Shape>{});
}

template <int E, class Shape>
cudaError_t launch_tiled(void* dst, const void* src, Dims2 d, cudaStream_t stream) {
    return with_tiled_shape<E, Shape>(d.rows, [&](auto s) {
        return launch_transpose_tiles<E, typename decltype(s)::type>(dst, src, d, stream);
    });
}

template <int E>
cudaError_t run_transpose(void* dst, const void* src, Dims2 d, cudaStream_t stream) {
    if (d.rows <= 8) return launch_transpose_tiles<E, ShortShape<E, 8>>(dst, src, d, stream);
    if (d.rows <= 16) return launch_transpose_tiles<E, ShortShape<E, 16>>(dst, src, d, stream);
    if (d.rows <= 32) return launch_transpose_tiles<E, ShortShape<E, 32>>(dst, src, d, stream);
    if (d.rows <= 64)
        return d.rows % (16 / E) == 0 ? launch_transpose_tiles<E, ShortShape<E, 64, true>>(dst, src, d, stream)
                                      : launch_transpose_tiles<E, ShortShape<E, 64>>(dst, src, d, stream);
    if constexpr (E <= 2)
        if (d.rows <= 128) return launch_transpose_tiles<E, ShortShape<E, 128, true>>(dst, src, d, stream);
    if constexpr (E == 1)
        if (d.rows <= 256) return launch_transpose_tiles<E, ShortShape<E, 256, true>>(dst, src, d, stream);
    if (d.cols * E <= k_narrow_bytes) {
        constexpr std::uint32_t gv = 32 / E;
        const std::uint32_t row_bytes = static_cast<std::uint32_t>(d.cols * E);
        const std::uint32_t tile_rows = std::max(gv, k_narrow_tile / row_bytes / gv * gv);
        const std::uint64_t tiles = (d.rows + tile_rows - 1) / tile_rows;
        if (tiles > INT_MAX) return cudaErrorInvalidValue;
        transpose_narrow_kernel<E><<<static_cast<unsigned>(tiles), k_threads, 0, stream>>>(
            static_cast<std::uint8_t*>(dst), static_cast<const std::uint8_t*>(src), d.rows,
            static_cast<std::uint32_t>(d.cols), tile_rows);
        return cudaGetLastError();
    }
    if constexpr (E == 4)
        if (d.rows >= 1024) return launch_tiled<E, TallShape<E>>(dst, src, d, stream);
    using Full = TransposeShape<E>;
    // Half-width tiles for 1- and 2-byte elements when the full ones would not fill the
    // device twice over (H200, 16 MiB: tall fp16 82 -> 89%, wide int8 60 -> 65%; 4- and
    // 8-byte elements, near 100% there from L2, read mostly 1-7 points lower with them).
    // The device holds as many full tiles as the kernel that launch_tiled picks keeps resident
    // (1-byte tiles without a halo: five per SM, against four with it; H200, int8 at 33-40 MiB
    // with 1056-1280 full tiles, two processes: within the 5 points by which the kernels this
    // left as they were moved from one process to the next there).
    if constexpr (E <= 2) {
        const std::uint64_t full_tiles = ((d.rows + Full::TR - 1) / Full::TR) * ((d.cols + Full::TC - 1) / Full::TC);
        const std::uint64_t resident = with_tiled_shape<E, Full>(d.rows, [](auto s) {
            return std::uint64_t(resident_grid(transpose_kernel<E, typename decltype(s)::type>, 0, UINT_MAX));
        });
        if (full_tiles < 2 * resident) return launch_tiled<E, HalfShape<E>>(dst, src, d, stream);
    }
    return launch_tiled<E, Full>(dst, src, d, stream);
}

// ---- array of structs <-> struct of arrays ----------------------------------------------
//
// A block owns `chunk` consecutive records (about 16 KiB of them). The record chunk is
// one contiguous run of global memory, each field's slice of it is another. AoS -> SoA
// stages the records in shared memory and writes each field from registers, one record
// per thread; SoA -> AoS stages the field slices and builds whole 16-byte record vectors.

struct RecordArgs {
    std::uint32_t record_bytes;
    std::uint32_t nfields;
    std::uint32_t chunk;       // records per block, a multiple of 32
    std::uint32_t aligned;     // every field readable as one aligned word
    std::uint32_t gaps;        // bytes outside every field
    std::uint32_t staged_bytes; // bytes of all field slices of a chunk
    std::uint32_t offset[k_max_fields];
    std::uint32_t width[k_max_fields];
    std::uint32_t staged[k_max_fields]; // byte offset of each field's slice in shared memory
    std::uint64_t soa_offset[k_max_fields];
};

constexpr std::uint32_t k_chunk_bytes = 16384;     // AoS -> SoA, one chunk per block
// SoA -> AoS, per pipeline buffer. 8 KiB measured slower, also below 64 MiB only (16 MiB:
// xyz 84% against 99-103%, packed 60% against 67%).
constexpr std::uint32_t k_soa_chunk_bytes = 16384;
constexpr std::uint32_t k_max_record = 512;

// Copies a `w`-byte field within shared memory: one word when the layout is naturally
// aligned, byte by byte otherwise (the destination, a record being rebuilt, shares its words
// with the neighbouring threads' fields).
__device__ __forceinline__ void copy_field(std::uint8_t* d, const std::uint8_t* s, std::uint32_t w, bool aligned) {
    if (aligned) {
        switch (w) {
        case 1: *d = *s; break;
        case 2: *reinterpret_cast<std::uint16_t*>(d) = *reinterpret_cast<const std::uint16_t*>(s); break;
        case 4: *reinterpret_cast<std::uint32_t*>(d) = *reinterpret_cast<const std::uint32_t*>(s); break;
        default:
            *reinterpret_cast<unsigned long long*>(d) = *reinterpret_cast<const unsigned long long*>(s);
        }
    } else {
        for (std::uint32_t b = 0; b < w; ++b) d[b] = s[b];
    }
}

// Copies `bytes` from 16-byte aligned shared memory to 16-byte aligned global memory.
__device__ __forceinline__ void store_run(std::uint8_t* out, const std::uint8_t* staged,
                                          std::uint32_t bytes) {
    const std::uint32_t full = bytes / 16;
    for (std::uint32_t v = threadIdx.x; v < full; v += k_threads)
        store16(out + 16 * v, *reinterpret_cast<const uint4*>(staged + 16 * v));
    for (std::uint32_t b = full * 16 + threadIdx.x; b < bytes; b += k_threads) out[b] = staged[b];
}

// The W-byte field at byte `at` of the staged records. Unaligned fields are read as the
// aligned words that hold them (up to three; the staging area has 16 bytes of slack) and
// shifted into place.
template <int W, bool A>
__device__ __forceinline__ typename Bits<W>::T load_field(const std::uint8_t* records, std::uint32_t at) {
    using T = typename Bits<W>::T;
    if constexpr (A) {
        return *reinterpret_cast<const T*>(records + at);
    } else {
        const auto* words = reinterpret_cast<const std::uint32_t*>(records) + at / 4;
        const std::uint32_t r = 8 * (at % 4);
        const std::uint32_t lo = __funnelshift_r(words[0], words[1], r);
        if constexpr (W == 8) return (static_cast<T>(__funnelshift_r(words[1], words[2], r)) << 32) | lo;
        else return static_cast<T>(lo);
    }
}

// Field `off` (W bytes) of the chunk's `nr` staged records, one record per thread, stored
// straight to its slice: a warp writes 32 consecutive fields, whole 32-byte sectors.
template <int W, bool A>
__device__ __forceinline__ void split_field(std::uint8_t* __restrict__ slice, const std::uint8_t* records,
                                            std::uint32_t record_bytes, std::uint32_t off, std::uint32_t nr) {
    auto* out = reinterpret_cast<typename Bits<W>::T*>(slice);
#pragma unroll 4
    for (std::uint32_t i = threadIdx.x; i < nr; i += k_threads) out[i] = load_field<W, A>(records, i * record_bytes + off);
}

// One chunk of records per block, staged in shared memory as whole coalesced 16-byte
// vectors; each field is then read from there one record per thread and written to its
// slice from registers. It replaced a kernel that also staged every field slice in shared
// memory and stored the slices as vectors: on an H200 at 256 MiB, wide records 78.5%
// against 96.5% and packed 84% against 98%, with twice the instructions (per-field
// parameters reloaded in the inner loop, a second shared-memory pass). Tried with that
// older kernel and measured no faster: 8 KiB and 24 KiB chunks (wide 58% and 67% against
// 79%), records staged with 4 bytes of padding every 128 against bank conflicts (xyz 88%
// against 96%, wide 78%), and persistent pipelined blocks (xyz 85% against 97%).
template <bool A>
__global__ void __launch_bounds__(k_threads)
    aos_to_soa_kernel(std::uint8_t* __restrict__ soa, const std::uint8_t* __restrict__ aos,
                      std::uint64_t n, RecordArgs a) {
    extern __shared__ __align__(16) std::uint8_t smem[];
    const std::uint64_t i0 = std::uint64_t(blockIdx.x) * a.chunk;
    const std::uint32_t nr = static_cast<std::uint32_t>(min(std::uint64_t(a.chunk), n - i0));
    stage_vectors(smem, aos + i0 * a.record_bytes, (nr * a.record_bytes + 15) / 16);
    __syncthreads();
    for (std::uint32_t f = 0; f < a.nfields; ++f) {
        std::uint8_t* slice = soa + a.soa_offset[f] + i0 * a.width[f];
        const std::uint32_t off = a.offset[f];
        switch (a.width[f]) {
        case 1: split_field<1, A>(slice, smem, a.record_bytes, off, nr); break;
        case 2: split_field<2, A>(slice, smem, a.record_bytes, off, nr); break;
        case 4: split_field<4, A>(slice, smem, a.record_bytes, off, nr); break;
        default: split_field<8, A>(slice, smem, a.record_bytes, off, nr);
        }
    }
}

// SoA -> AoS works on chunks of `a.chunk` records: chunk `tile` holds chunk_rows of them,
// and stage_slices starts the cp.async copies of its field slices into `buf`.
__device__ __forceinline__ std::uint32_t chunk_rows(const RecordArgs& a, std::uint64_t n, std::uint32_t tile) {
    return static_cast<std::uint32_t>(min(std::uint64_t(a.chunk), n - std::uint64_t(tile) * a.chunk));
}

__device__ __forceinline__ void stage_slices(const RecordArgs& a, const std::uint8_t* soa, std::uint64_t n,
                                             std::uint32_t tile, std::uint8_t* buf) {
    const std::uint64_t i0 = std::uint64_t(tile) * a.chunk;
    for (std::uint32_t f = 0; f < a.nfields; ++f)
        stage_vectors_async(buf + a.staged[f], soa + a.soa_offset[f] + i0 * a.width[f],
                            (chunk_rows(a, n, tile) * a.width[f] + 15) / 16);
}

// SoA -> AoS for records whose plan does not fit (soa_plan, below: more than 256 vectors
// per period or 256 slots). Persistent blocks (pipeline_tiles): the next chunk's field
// slices are staged with cp.async while the current chunk's records are rebuilt in shared
// memory, one field of one record per thread (gap bytes zeroed first), and stored as whole
// coalesced vectors. Shared memory: two buffers of field slices, then the records. Tried on
// an H200 and measured slower: batching the field loads four deep (mixed records 64%
// against 76%), 8 KiB chunks (mixed 86% against 90%), and records padded by 4 bytes every
// 128 against bank conflicts, with unaligned fields or-ed into their words (mixed 78%,
// packed 46% against 65%).
__global__ void __launch_bounds__(k_threads)
    soa_to_aos_kernel(std::uint8_t* __restrict__ aos, const std::uint8_t* __restrict__ soa,
                      std::uint64_t n, RecordArgs a) {
    extern __shared__ __align__(16) std::uint8_t smem[];
    const std::uint32_t in_bytes = a.staged_bytes;
    std::uint8_t* records = smem + 2 * in_bytes;
    const auto tiles = static_cast<std::uint32_t>((n + a.chunk - 1) / a.chunk);
    auto stage = [&](std::uint32_t t, std::uint8_t* buf) { stage_slices(a, soa, n, t, buf); };
    auto process = [&](std::uint32_t t, const std::uint8_t* fields) {
        const std::uint32_t nr = chunk_rows(a, n, t);
        if (a.gaps) {
            for (std::uint32_t v = threadIdx.x; v < (nr * a.record_bytes + 15) / 16; v += k_threads)
                *reinterpret_cast<uint4*>(records + 16 * v) = make_uint4(0, 0, 0, 0);
            __syncthreads();
        }
        for (std::uint32_t f = 0; f < a.nfields; ++f)
            for (std::uint32_t i = threadIdx.x; i < nr; i += k_threads)
                copy_field(records + i * a.record_bytes + a.offset[f], fields + a.staged[f] + i * a.width[f],
                           a.width[f], a.aligned != 0);
        __syncthreads();
        store_run(aos + std::uint64_t(t) * a.chunk * a.record_bytes, records, nr * a.record_bytes);
    };
    pipeline_tiles(smem, smem + in_bytes, tiles, stage, process);
}

// SoA -> AoS by byte permutes. The record run of a chunk is cut into 16-byte output
// vectors, which repeat with a period of lcm(record bytes, 16) bytes. Each word of a vector
// of the period is a list of slots, one per aligned word of the staged field slices that
// its bytes come from. The host lists them once (soa_plan). A thread always builds the same
// vector of the period, so it turns its slots into shared addresses and byte-permute
// selectors once. Per vector, each slot is then one shared word load and one byte permute
// into the output word, and the vector is stored whole: no record buffer, no bank
// conflicts from the record stride, no second barrier. Persistent blocks stage the next
// chunk's slices with cp.async meanwhile (pipeline_tiles). Tried on an H200: pieces of up
// to 8 bytes placed with 64-bit shifts and masks, 34-66% of the copy roofline (instruction
// bound); three stage buffers, 4-6 resident blocks forced by register limits (spills), and
// two vectors per loop iteration (unrolled: packed 1 point slower, the others within 1.5),
// no faster; nor slices staged period by period (each field's piece of 16 records at a fixed
// place) so that one register per slot serves every period: packed 72 -> 40 registers, but
// xyz 75% against 89% and packed 81% against 83-86% at 256 MiB.
constexpr std::uint32_t k_max_plan = 256;
// Persistent blocks per SM. On an H200 at 256 MiB, two measured xyz 90%, mixed 87.6%, wide
// 94.3% and packed 89.1% of the copy roofline, against 88-90%, 85-86%, 83-85% and 83-87% for
// as many as fit (3-6 by registers and shared memory) or three to five, and 64-84% for one;
// mixed at 1 GiB 92.6% against 89.8% with three. Records of {2,1} and {8,8,1} bytes gain too
// (92.5-92.9% and 88.5-90.5% against 85-87%). The exception measured: sixteen packed 8-byte
// fields (124-byte records, chunks of 128), 66-67% against 81-82% for three or all and 86%
// for four.
constexpr int k_soa_blocks_per_sm = 2;

struct SoaPlan {
    std::uint32_t vectors; // 16-byte vectors per period
    std::uint32_t slots;   // slots per output word (the most any word needs; padded)
    std::uint32_t groups;  // threads building each vector of the period
    // Slot j of word k of vector v at [(v * 4 + k) * slots + j]: bits 0-15 the shared offset
    // of the word it reads in period 0, 16-31 that offset's step per period, 32-47 the
    // byte-permute selector: per output byte, 0-3 a byte of that word, 4-7 kept.
    unsigned long long slot[k_max_plan];
};

constexpr unsigned long long k_keep_all = 0x7654;

bool soa_plan(const RecordArgs& a, SoaPlan& p) {
    const std::uint32_t rb = a.record_bytes, g = std::gcd(rb, 16u), records = 16 / g;
    p = SoaPlan{};
    p.vectors = rb / g;
    if (p.vectors > std::uint32_t(k_threads) || a.staged_bytes >= (1u << 16)) return false;
    // Whole words per step: a thread's slots keep their place in the words they read.
    const std::uint32_t unit = 4 / std::gcd(records, 4u);
    p.groups = k_threads / p.vectors / unit * unit;
    if (p.groups == 0) return false;
    std::uint8_t field_of[k_max_record];
    std::fill(field_of, field_of + rb, 0xff);
    for (std::uint32_t f = 0; f < a.nfields; ++f)
        std::fill(field_of + a.offset[f], field_of + a.offset[f] + a.width[f], static_cast<std::uint8_t>(f));
    // The slots of word k of vector v: one per staged word that its bytes come from. Bytes of
    // one word from different records share a word of the slice only when records are
    // shorter than a word; then a period steps every slice by whole words, so the sharing
    // holds for every period.
    auto word_slots = [&](std::uint32_t v, std::uint32_t k, unsigned long long (&out)[4]) {
        std::uint32_t count = 0;
        for (std::uint32_t b = 0; b < 4; ++b) {
            const std::uint32_t at = 16 * v + 4 * k + b, r = at / rb, f = field_of[at % rb];
            if (f == 0xff) continue; // a gap byte stays zero
            const std::uint32_t src = a.staged[f] + r * a.width[f] + at % rb - a.offset[f], word = src & ~3u;
            std::uint32_t j = 0;
            while (j < count && (out[j] & 0xffff) != word) ++j;
            if (j == count) out[count++] = word | (unsigned long long)(records * a.width[f]) << 16 | k_keep_all << 32;
            out[j] = (out[j] & ~(0xfull << (32 + 4 * b))) | (unsigned long long)(src & 3) << (32 + 4 * b);
        }
        return count;
    };
    unsigned long long w[4];
    for (std::uint32_t v = 0; v < p.vectors; ++v)
        for (std::uint32_t k = 0; k < 4; ++k) p.slots = std::max(p.slots, word_slots(v, k, w));
    p.slots = std::max<std::uint32_t>(p.slots, 1);
    if (4 * p.vectors * p.slots > k_max_plan) return false;
    for (std::uint32_t v = 0; v < p.vectors; ++v)
        for (std::uint32_t k = 0; k < 4; ++k) {
            unsigned long long* out = p.slot + (4 * v + k) * p.slots;
            const std::uint32_t count = word_slots(v, k, w);
            for (std::uint32_t j = 0; j < p.slots; ++j) out[j] = j < count ? w[j] : k_keep_all << 32;
        }
    return true;
}

template <int SW>
__global__ void __launch_bounds__(k_threads)
    soa_to_aos_plan_kernel(std::uint8_t* __restrict__ aos, const std::uint8_t* __restrict__ soa, std::uint64_t n,
                           RecordArgs a, SoaPlan p) {
    extern __shared__ __align__(16) std::uint8_t smem[];
    const std::uint32_t active = p.groups * p.vectors;
    const std::uint32_t t = threadIdx.x, vp = t % p.vectors, q0 = t / p.vectors;
    // The plan goes through shared memory: parameter reads at a different index in every
    // lane are serialised, warp-uniform ones are not.
    auto* plan = reinterpret_cast<unsigned long long*>(smem + 2 * a.staged_bytes);
    for (std::uint32_t e = t / 32; e < 4 * p.vectors * SW; e += k_threads / 32)
        if (t % 32 == 0) plan[e] = p.slot[e];
    __syncthreads();
    // Per slot: the word it reads in period q0, its step from one vector this thread builds
    // to the next, and the byte-permute selector that puts its bytes into the output word
    // (the rest kept: 4-7).
    std::uint32_t at[4][SW], step[4][SW], sel[4][SW];
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
        for (int j = 0; j < SW; ++j) {
            const unsigned long long d = t < active ? plan[(vp * 4 + k) * SW + j] : k_keep_all << 32;
            // Period q0 moves the slot's bytes by whole elements, all of them into one word
            // (an element is aligned to its width).
            const std::uint32_t moved = q0 * static_cast<std::uint32_t>(d >> 16 & 0xffff);
            const auto raw = static_cast<std::uint32_t>(d >> 32 & 0xffff);
            std::uint32_t word = static_cast<std::uint32_t>(d & 0xffff), s = 0;
#pragma unroll
            for (int b = 0; b < 4; ++b) {
                const std::uint32_t nib = raw >> (4 * b) & 15;
                s |= (nib < 4 ? (nib + moved) & 3 : nib) << (4 * b);
                if (nib < 4) word = static_cast<std::uint32_t>(d & 0xffff) + ((nib + moved) & ~3u);
            }
            at[k][j] = word;
            step[k][j] = p.groups * static_cast<std::uint32_t>(d >> 16 & 0xffff);
            sel[k][j] = s;
        }
    const auto tiles = static_cast<std::uint32_t>((n + a.chunk - 1) / a.chunk);
    auto stage = [&](std::uint32_t tile, std::uint8_t* buf) { stage_slices(a, soa, n, tile, buf); };
    auto process = [&](std::uint32_t tile, const std::uint8_t* fields) {
        if (t >= active) return;
        const std::uint32_t bytes = chunk_rows(a, n, tile) * a.record_bytes, nvec = (bytes + 15) / 16;
        std::uint8_t* out = aos + std::uint64_t(tile) * a.chunk * a.record_bytes;
        for (std::uint32_t i = 0, v = t; v < nvec; ++i, v += active) {
            std::uint32_t o[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                o[k] = 0;
#pragma unroll
                for (int j = 0; j < SW; ++j)
                    if (sel[k][j] != k_keep_all) // not padding
                        o[k] = __byte_perm(*reinterpret_cast<const std::uint32_t*>(fields + at[k][j] + i * step[k][j]),
                                           o[k], sel[k][j]);
            }
            if (16 * v + 16 <= bytes) {
                store16(out + 16 * v, make_uint4(o[0], o[1], o[2], o[3]));
            } else {
                for (std::uint32_t b = 0; 16 * v + b < bytes; ++b)
                    out[16 * v + b] = static_cast<std::uint8_t>(pick4(b / 4, o[0], o[1], o[2], o[3]) >> (8 * (b % 4)));
            }
        }
    };
    pipeline_tiles(smem, smem + a.staged_bytes, tiles, stage, process);
}

// Chunks of about `chunk_bytes` of records; shared memory for the records, and for the
// field slices `slice_buffers` times.
bool record_args(const RecordLayout& rec, std::uint64_t n, std::uint32_t chunk_bytes, std::uint32_t slice_buffers,
                 RecordArgs& a, std::size_t& smem) {
    if (rec.record_bytes() > k_max_record || n == 0) return false;
    a = RecordArgs{};
    a.record_bytes = rec.record_bytes();
    a.nfields = static_cast<std::uint32_t>(rec.fields().size());
    a.chunk = std::max<std::uint32_t>(32, chunk_bytes / rec.record_bytes() / 32 * 32);
    a.aligned = rec.aligned() ? 1 : 0;
    a.gaps = rec.has_gaps() ? 1 : 0;
    const SoaLayout s = soa_layout(rec, n);
    std::uint32_t staged = 0;
    for (std::uint32_t f = 0; f < a.nfields; ++f) {
        a.offset[f] = rec.fields()[f].offset;
        a.width[f] = rec.fields()[f].width;
        a.soa_offset[f] = s.offsets[f];
        a.staged[f] = staged;
        staged += a.chunk * a.width[f]; // a multiple of 32: every slice stays 16-byte aligned
    }
    a.staged_bytes = staged;
    smem = std::size_t(a.chunk) * a.record_bytes + std::size_t(slice_buffers) * staged;
    return (n + a.chunk - 1) / a.chunk <= INT_MAX;
}

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
    // By thread 0 once the block's look-backs are over: the last block to get here leaves
    // the scratch ready for the next launch.
    auto finish = [&] {
        __threadfence();
        if (atomicAdd(counter + 1, 1u) != gridDim.x - 1) return;
        const std::uint32_t high = max(counter[3], tiles), next_epoch = (block_epoch + 1) % k_epochs;
        if (next_epoch == 0)
            for (std::uint32_t k = 0; k < high; ++k) status[k] = 0;
        counter[0] = 0;
        counter[1] = 0;
        counter[2] = next_epoch;
        counter[3] = high;
    };

    std::uint32_t t = first_tile;
    if (t >= tiles) {
        if (threadIdx.x == 0) finish();
        return;
    }

    // The look-back warp. Round j starts once the rows warps hand over slot j % S, which
    // holds the block's j-th tile, packed, its aggregate published; it then finds the tile's
    // prefix while the rows warps go on, and hands the prefix back.
    if (warp == NW) {
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
        // Offsets within the tile, in row order: a warp scan per round of rows, then the
        // warp totals scanned by each warp (two a lane at most).
#pragma unroll
        for (int r = 0; r < RPT; ++r) {
            const std::uint32_t inc = warp_inclusive_sum(len[r], lane);
            if (lane == 31) warp_totals[j % 2][r * NW + warp] = inc;
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
                x[q] = k < unsigned(NT) ? warp_totals[j % 2][k] : 0;
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
            if (threadIdx.x == 0) finish(); // the look-back warp is done
            return;
        }
        t = next;
    }
}

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

template <class F>
cudaError_t dispatch_elem(std::size_t elem, F&& fn) {
    switch (elem) {
    case 1: return fn(std::integral_constant<int, 1>{});
    case 2: return fn(std::integral_constant<int, 2>{});
    case 4: return fn(std::integral_constant<int, 4>{});
    case 8: return fn(std::integral_constant<int, 8>{});
    default: return cudaErrorInvalidValue;
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

cudaError_t launch_transpose(void* dst, const void* src, Dims2 dims, std::size_t elem, cudaStream_t stream) {
    if (dims.rows == 0 || dims.cols == 0 || !aligned16(dst) || !aligned16(src)) return cudaErrorInvalidValue;
    return dispatch_elem(elem, [&](auto e) { return run_transpose<decltype(e)::value>(dst, src, dims, stream); });
}

cudaError_t launch_aos_to_soa(void* soa, const void* aos, const RecordLayout& rec, std::uint64_t n,
                              cudaStream_t stream) {
    RecordArgs a;
    std::size_t smem = 0;
    if (!aligned16(soa) || !aligned16(aos) || !record_args(rec, n, k_chunk_bytes, 0, a, smem)) return cudaErrorInvalidValue;
    auto kernel = a.aligned ? aos_to_soa_kernel<true> : aos_to_soa_kernel<false>;
    kernel<<<static_cast<unsigned>((n + a.chunk - 1) / a.chunk), k_threads, smem + 16, stream>>>(
        static_cast<std::uint8_t*>(soa), static_cast<const std::uint8_t*>(aos), n, a);
    return cudaGetLastError();
}

cudaError_t launch_soa_to_aos(void* aos, const void* soa, const RecordLayout& rec, std::uint64_t n,
                              cudaStream_t stream) {
    RecordArgs a;
    std::size_t smem = 0;
    if (!aligned16(soa) || !aligned16(aos) || !record_args(rec, n, k_soa_chunk_bytes, 2, a, smem)) return cudaErrorInvalidValue;
    SoaPlan p;
    if (soa_plan(a, p)) {
        const std::size_t bytes = 2 * std::size_t(a.staged_bytes) + 4 * p.vectors * p.slots * sizeof(p.slot[0]);
        auto run = [&](auto kernel) {
            kernel<<<resident_grid(kernel, bytes, (n + a.chunk - 1) / a.chunk, k_soa_blocks_per_sm), k_threads, bytes,
                     stream>>>(
                static_cast<std::uint8_t*>(aos), static_cast<const std::uint8_t*>(soa), n, a, p);
            return cudaGetLastError();
        };
        switch (p.slots) {
        case 1: return run(soa_to_aos_plan_kernel<1>);
        case 2: return run(soa_to_aos_plan_kernel<2>);
        case 3: return run(soa_to_aos_plan_kernel<3>);
        default: return run(soa_to_aos_plan_kernel<4>);
        }
    }
    soa_to_aos_kernel<<<resident_grid(soa_to_aos_kernel, smem, (n + a.chunk - 1) / a.chunk), k_threads, smem, stream>>>(
        static_cast<std::uint8_t*>(aos), static_cast<const std::uint8_t*>(soa), n, a);
    return cudaGetLastError();
}

cudaError_t launch_arrow_fixed_to_dense(void* dense, const void* values, const std::uint8_t* validity,
                                        std::uint64_t n, std::size_t width, std::uint64_t fill,
                                        cudaStream_t stream) {
    if (n == 0 || !aligned16(dense) || !aligned16(values) || !aligned16(validity)) return cudaErrorInvalidValue;
    return dispatch_elem(width, [&](auto e) {
        constexpr int E = decltype(e)::value;
        const unsigned grid = grid_for((n * E + 15) / 16, k_threads * 4);
        fixed_to_dense_kernel<E><<<grid, k_threads, 0, stream>>>(
            static_cast<std::uint8_t*>(dense), static_cast<const std::uint8_t*>(values), validity, n, fill);
        return cudaGetLastError();
    });
}

cudaError_t launch_dense_to_arrow_fixed(void* values, std::uint8_t* validity, const void* dense,
                                        std::uint64_t n, std::size_t width, std::uint64_t null_value,
                                        cudaStream_t stream) {
    if (n == 0 || !aligned16(values) || !aligned16(validity) || !aligned16(dense)) return cudaErrorInvalidValue;
    return dispatch_elem(width, [&](auto e) {
        constexpr int E = decltype(e)::value;
        const unsigned grid = grid_for((n * E + 15) / 16, k_threads * 4);
        dense_to_fixed_kernel<E><<<grid, k_threads, 0, stream>>>(
            static_cast<std::uint8_t*>(values), validity, static_cast<const std::uint8_t*>(dense), n, null_value);
        return cudaGetLastError();
    });
}

cudaError_t launch_arrow_binary_to_dense(std::uint8_t* dense, const std::int32_t* offsets,
                                         const std::uint8_t* data, const std::uint8_t* validity,
                                         std::uint64_t n, std::uint64_t width, std::uint8_t pad,
                                         cudaStream_t stream) {
    if (n == 0 || width == 0 || width % 16 != 0 || width > UINT_MAX || !aligned16(dense) || !aligned16(data))
        return cudaErrorInvalidValue;
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

std::size_t dense_to_binary_scratch_bytes(std::uint64_t n, std::uint64_t width) {
    if (width == 0) return 0;
    const std::uint64_t rows_per_tile = binary_rows_per_tile(width);
    return 8 * (k_scratch_header_words + (n + rows_per_tile - 1) / rows_per_tile);
}

cudaError_t launch_dense_to_arrow_binary(std::int32_t* offsets, std::uint8_t* data,
                                         const std::uint8_t* dense, std::uint64_t n,
                                         std::uint64_t width, std::uint8_t pad, void* scratch,
                                         cudaStream_t stream) {
    if (n == 0 || width == 0 || width % 16 != 0 || width > 256 || !aligned16(dense) || !aligned16(data) ||
        scratch == nullptr)
        return cudaErrorInvalidValue;
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

cudaError_t launch_strided_to_contiguous(void* dst, const void* parent, const StridedView& view,
                                         std::size_t elem, cudaStream_t stream) {
    if (view.dims.rows == 0 || view.dims.cols == 0 || (view.col_stride != 1 && view.col_stride != 2) ||
        !aligned16(dst) || !aligned16(parent))
        return cudaErrorInvalidValue;
    return dispatch_elem(elem, [&](auto e) { return run_strided<decltype(e)::value>(dst, parent, view, stream); });
}

} // namespace interopbench::kernels
