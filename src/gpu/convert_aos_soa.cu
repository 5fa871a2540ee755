// Array of structs <-> struct of arrays (launch_aos_to_soa, launch_soa_to_aos): records of up
// to 512 bytes with up to k_max_fields fields. AoS -> SoA stages record chunks in shared memory
// and writes the fields from registers; SoA -> AoS rebuilds 16-byte record vectors from staged
// field slices by a host-made plan of byte permutes (persistent blocks, cp.async staging), or,
// for records whose plan does not fit, in a shared record buffer.
#include "gpu/convert_groups.cuh"
#include "gpu/convert_kernels_common.cuh"

#include <algorithm>
#include <climits>
#include <numeric>

namespace interopbench::kernels {

namespace {

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

} // namespace

cudaError_t detail::aos_to_soa(void* soa, const void* aos, const RecordLayout& rec, std::uint64_t n,
                               cudaStream_t stream) {
    RecordArgs a;
    std::size_t smem = 0;
    if (!record_args(rec, n, k_chunk_bytes, 0, a, smem)) return cudaErrorInvalidValue;
    auto kernel = a.aligned ? aos_to_soa_kernel<true> : aos_to_soa_kernel<false>;
    kernel<<<static_cast<unsigned>((n + a.chunk - 1) / a.chunk), k_threads, smem + 16, stream>>>(
        static_cast<std::uint8_t*>(soa), static_cast<const std::uint8_t*>(aos), n, a);
    return cudaGetLastError();
}

cudaError_t detail::soa_to_aos(void* aos, const void* soa, const RecordLayout& rec, std::uint64_t n,
                               cudaStream_t stream) {
    RecordArgs a;
    std::size_t smem = 0;
    if (!record_args(rec, n, k_soa_chunk_bytes, 2, a, smem)) return cudaErrorInvalidValue;
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

} // namespace interopbench::kernels
