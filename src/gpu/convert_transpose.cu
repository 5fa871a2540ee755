// The transpose (launch_transpose): row-major rows x cols -> cols x rows for 1-, 2-, 4- and
// 8-byte elements. The tile-shape types that pick a kernel per element size and matrix shape,
// the tiled kernel (one-run tiles for matrices of few rows, halo tiles written in whole
// sectors for the rest), the kernel for narrow matrices, and the host choice among them
// (run_transpose). tests/gpu/transpose_shapes.cu includes this file to time the kernels on
// shapes the scenario does not make.
#include "gpu/convert_groups.cuh"
#include "gpu/convert_kernels_common.cuh"

#include <algorithm>
#include <climits>
#include <type_traits>

namespace interopbench::kernels {

namespace {

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

// The E-byte elements e as one 16-byte vector, first element in the low bytes.
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

// The tile (tile row tr, tile column tc) of block blockIdx.x: tiles go in groups of
// tile_group tile rows, column by column within a group (see launch_transpose_tiles).
__device__ __forceinline__ void tile_of_block(std::uint32_t tiles_c, std::uint32_t tiles_r, std::uint32_t tile_group,
                                              std::uint32_t& tr, std::uint32_t& tc) {
    const std::uint32_t group = blockIdx.x / (tile_group * tiles_c), in_group = blockIdx.x % (tile_group * tiles_c);
    const std::uint32_t group_rows = min(tile_group, tiles_r - group * tile_group);
    tr = group * tile_group + in_group % group_rows;
    tc = in_group / group_rows;
}

// The output of a one-run tile (ShortShape), once the tile is in shared memory.
template <int E, class S>
__device__ __forceinline__ void store_one_run(std::uint8_t* dst, const std::uint8_t* tile, std::uint64_t rows,
                                              std::uint64_t c0, int nc) {
    using T = typename Bits<E>::T;
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

    std::uint32_t tr, tc;
    tile_of_block(tiles_c, tiles_r, tile_group, tr, tc);
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
        store_one_run<E, S>(dst, tile, rows, c0, nc);
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

} // namespace

cudaError_t detail::transpose(void* dst, const void* src, Dims2 dims, std::size_t elem, cudaStream_t stream) {
    return dispatch_elem(elem, [&](auto e) { return run_transpose<decltype(e)::value>(dst, src, dims, stream); });
}

} // namespace interopbench::kernels
