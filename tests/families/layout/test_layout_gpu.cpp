// The layout kernels on a GPU against the host references, at the edges: one element, one
// row, one column, a few rows or columns, primes, and sizes just around every tile, halo
// and sector boundary. Outputs are poisoned first, so an unwritten or overwritten byte
// fails. Every test skips without a usable GPU.
#include <doctest/doctest.h>

#include "../../test_support.hpp"

#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "gpu/convert.hpp"
#include "gpu/convert_kernels.hpp"

using namespace interopbench;

namespace {

bool have_gpu() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

constexpr std::uint8_t k_poison = 0xA5;

/// Device memory holding `bytes` (rounded up to 16, plus a spare vector), freed at scope end.
struct Dev {
    void* p = nullptr;
    std::size_t n = 0;
    explicit Dev(std::size_t bytes, int fill = k_poison) : n(bytes) {
        REQUIRE(cudaMalloc(&p, (bytes + 31) / 16 * 16) == cudaSuccess);
        REQUIRE(cudaMemset(p, fill, (bytes + 31) / 16 * 16) == cudaSuccess);
    }
    Dev(const void* host, std::size_t bytes) : Dev(bytes, 0x3c) {
        REQUIRE(cudaMemcpy(p, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    }
    ~Dev() { cudaFree(p); }
    template <class T> T* as() const { return static_cast<T*>(p); }
    /// The bytes and one spare vector past them (must still hold the poison).
    std::vector<std::uint8_t> get(std::size_t bytes) const {
        std::vector<std::uint8_t> h(bytes + 16);
        REQUIRE(cudaMemcpy(h.data(), p, bytes + 16, cudaMemcpyDeviceToHost) == cudaSuccess);
        return h;
    }
};

std::vector<std::uint8_t> rnd(std::uint64_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> v(n);
    fill_random(v.data(), n, seed, 1);
    return v;
}

/// Checks `got` (bytes + 16 spare) against `want` and that the spare bytes are untouched.
void same(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want) {
    REQUIRE(got.size() >= want.size() + 16);
    std::size_t first_bad = want.size();
    for (std::size_t i = 0; i < want.size(); ++i)
        if (got[i] != want[i]) {
            first_bad = i;
            break;
        }
    CAPTURE(first_bad);
    CHECK(first_bad == want.size());
    bool spare_ok = true;
    for (std::size_t i = want.size(); i < want.size() + 16; ++i) spare_ok = spare_ok && got[i] == k_poison;
    CHECK(spare_ok);
}

void sync_ok(cudaError_t launched) {
    REQUIRE(launched == cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

// Runs dense -> Arrow binary `launches` times on one scratch, checking each result against
// the reference; returns the reference column (offsets, data).
struct BinaryColumn {
    std::vector<std::int32_t> offsets;
    std::vector<std::uint8_t> data;
};
BinaryColumn check_dense_to_binary(const std::vector<std::uint8_t>& dense, std::uint64_t n, std::uint64_t width,
                                   void* scratch, int launches) {
    BinaryColumn ref{std::vector<std::int32_t>(n + 1), std::vector<std::uint8_t>(n * width)};
    ref.data.resize(dense_to_arrow_binary_reference(dense.data(), n, width, 0, ref.offsets.data(), ref.data.data()));
    std::vector<std::uint8_t> want_off((n + 1) * 4);
    std::memcpy(want_off.data(), ref.offsets.data(), want_off.size());
    Dev in(dense.data(), n * width), off((n + 1) * 4), out(n * width);
    for (int launch = 0; launch < launches; ++launch) {
        CAPTURE(launch);
        sync_ok(kernels::launch_dense_to_arrow_binary(off.as<std::int32_t>(), out.as<std::uint8_t>(),
                                                      in.as<std::uint8_t>(), n, width, 0, scratch, nullptr));
        same(off.get(want_off.size()), want_off);
        CHECK(std::memcmp(out.get(ref.data.size()).data(), ref.data.data(), ref.data.size()) == 0);
    }
    return ref;
}

} // namespace

TEST_CASE("gpu: transpose at every edge shape matches the reference") {
    if (!have_gpu()) return testing::skip("no usable GPU here");
    const std::uint64_t rows_set[] = {1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 35, 48, 63, 64, 65, 67, 96, 127, 128, 129,
                                      131, 159, 160, 161, 163, 192, 200, 240, 255, 256, 257, 300, 1000, 1031};
    const std::uint64_t cols_set[] = {1, 2, 3, 17, 33, 255, 256, 257, 263, 1031};
    for (std::size_t e : {1, 2, 4, 8})
        for (auto r : rows_set)
            for (auto c : cols_set) {
                CAPTURE(e);
                CAPTURE(r);
                CAPTURE(c);
                const Dims2 d{r, c};
                const std::uint64_t bytes = matrix_bytes(d, e);
                const auto in = rnd(bytes, r * 7919 + c * 31 + e);
                std::vector<std::uint8_t> want(bytes);
                transpose_reference(in.data(), want.data(), d, e);
                Dev src(in.data(), bytes), dst(bytes);
                sync_ok(kernels::launch_transpose(dst.p, src.p, d, e, nullptr));
                same(dst.get(bytes), want);
            }
    auto check_large = [](Dims2 d, std::size_t e) {
        CAPTURE(e);
        CAPTURE(d.rows);
        CAPTURE(d.cols);
        const std::uint64_t bytes = matrix_bytes(d, e);
        const auto in = rnd(bytes, d.rows + d.cols + e);
        std::vector<std::uint8_t> want(bytes);
        transpose(in.data(), want.data(), d, e, 4);
        Dev src(in.data(), bytes), dst(bytes);
        sync_ok(kernels::launch_transpose(dst.p, src.p, d, e, nullptr));
        same(dst.get(bytes), want);
    };
    // Very short and very narrow matrices with many elements.
    for (Dims2 d : {Dims2{1, 1000003}, Dims2{5, 1000003}, Dims2{8, 524309}, Dims2{9, 262147}, Dims2{16, 262147}, Dims2{40, 100003}, Dims2{64, 65539},
                   Dims2{48, 65537}, Dims2{240, 40009}, Dims2{255, 40013}, Dims2{1000, 20011},
                   Dims2{1000003, 1}, Dims2{262147, 16}, Dims2{100003, 37}, Dims2{4099, 4093}})
        for (std::size_t e : {1, 2, 4, 8}) check_large(d, e);
    // 1- and 2-byte elements take half-width tiles unless the full ones fill the device twice
    // over; these shapes have enough of them on any current GPU (over 2000 tiles). 8192 rows:
    // the tiles without a halo (full 1-byte ones bounded to five blocks per SM).
    for (Dims2 d : {Dims2{8191, 8193}, Dims2{300007, 1031}, Dims2{8192, 8225}})
        for (std::size_t e : {1, 2}) check_large(d, e);
    // Column lengths that are a multiple of a sector's elements: no halo (4-byte tiles of 128
    // rows from 1024 rows on, narrow matrices).
    for (Dims2 d : {Dims2{2048, 3001}, Dims2{262144, 16}, Dims2{65536, 37}})
        for (std::size_t e : {1, 2, 4, 8}) check_large(d, e);
}

TEST_CASE("gpu: array of structs <-> struct of arrays at edge counts matches the references") {
    if (!have_gpu()) return testing::skip("no usable GPU here");
    const RecordLayout recs[] = {RecordLayout::natural({4, 4, 4}), RecordLayout::natural({8, 4, 2, 1}),
                                 RecordLayout::natural({8, 8, 4, 4, 2, 2, 1, 1}), RecordLayout::packed({8, 1, 4, 2}),
                                 RecordLayout::packed({1}), RecordLayout::packed({2, 1}), RecordLayout::packed({8, 8, 1}),
                                 RecordLayout(24, {{1, 4}, {9, 1}, {16, 8}}),
                                 RecordLayout::packed({1, 1, 1, 1}), // four slots per output word
                                 RecordLayout(301, {{0, 8}, {150, 4}, {300, 1}})}; // its plan does not fit
    for (const auto& rec : recs)
        for (std::uint64_t n : {1ull, 2ull, 3ull, 31ull, 32ull, 33ull, 1023ull, 1024ull, 1025ull, 4097ull, 100003ull}) {
            CAPTURE(rec.describe());
            CAPTURE(n);
            const SoaLayout s = soa_layout(rec, n);
            const std::uint64_t aos = n * rec.record_bytes();
            {
                const auto in = rnd(aos, n + 1);
                std::vector<std::uint8_t> want(s.bytes, k_poison);
                aos_to_soa_reference(in.data(), want.data(), rec, n);
                Dev src(in.data(), aos), dst(s.bytes);
                sync_ok(kernels::launch_aos_to_soa(dst.p, src.p, rec, n, nullptr));
                const auto got = dst.get(s.bytes);
                // Only the field arrays are results: the padding between them is not written.
                for (std::size_t f = 0; f < rec.fields().size(); ++f) {
                    const std::uint64_t at = s.offsets[f], len = n * rec.fields()[f].width;
                    CHECK(std::memcmp(got.data() + at, want.data() + at, len) == 0);
                }
            }
            {
                const auto in = rnd(s.bytes, n + 2);
                std::vector<std::uint8_t> want(aos);
                soa_to_aos_reference(in.data(), want.data(), rec, n);
                Dev src(in.data(), s.bytes), dst(aos);
                sync_ok(kernels::launch_soa_to_aos(dst.p, src.p, rec, n, nullptr));
                same(dst.get(aos), want);
            }
        }
}

TEST_CASE("gpu: Arrow fixed-width and binary columns <-> dense at edge counts match the references") {
    if (!have_gpu()) return testing::skip("no usable GPU here");
    const std::uint64_t null_bits = ~0ull;
    for (std::size_t w : {1, 2, 4, 8})
        for (std::uint64_t n : {1ull, 2ull, 7ull, 8ull, 9ull, 15ull, 16ull, 17ull, 127ull, 1025ull, 100003ull}) {
            CAPTURE(w);
            CAPTURE(n);
            auto values = rnd(n * w, n + w);
            auto bits = rnd(bitmap_bytes(n), n);
            if (n % 8) bits.back() &= static_cast<std::uint8_t>((1u << (n % 8)) - 1);
            for (std::uint64_t i = 0; i < n; ++i)
                if (!bit_is_set(bits.data(), i)) std::memset(values.data() + i * w, 0xff, w);
                else if (values[i * w] == 0xff) values[i * w] = 0;
            std::vector<std::uint8_t> dense(n * w);
            arrow_fixed_to_dense_reference(values.data(), bits.data(), dense.data(), n, w, &null_bits);
            Dev v(values.data(), n * w), b(bits.data(), bits.size()), out(n * w);
            sync_ok(kernels::launch_arrow_fixed_to_dense(out.p, v.p, b.as<std::uint8_t>(), n, w, null_bits, nullptr));
            same(out.get(n * w), dense);
            std::vector<std::uint8_t> back(n * w), back_bits(bitmap_bytes(n));
            dense_to_arrow_fixed_reference(dense.data(), back.data(), back_bits.data(), n, w, &null_bits);
            Dev d(dense.data(), n * w), ov(n * w), ob(bitmap_bytes(n));
            sync_ok(kernels::launch_dense_to_arrow_fixed(ov.p, ob.as<std::uint8_t>(), d.p, n, w, null_bits, nullptr));
            same(ov.get(n * w), back);
            same(ob.get(back_bits.size()), back_bits);
        }
    for (std::uint64_t width : {16ull, 32ull, 48ull, 64ull, 80ull, 256ull}) {
        // One scratch for every size of the width, as the launches leave it.
        Dev scratch(kernels::dense_to_binary_scratch_bytes(300007, width), 0);
        for (std::uint64_t n : {1ull, 2ull, 63ull, 255ull, 256ull, 257ull, 511ull, 512ull, 513ull, 1025ull, 100003ull, 300007ull}) {
            CAPTURE(width);
            CAPTURE(n);
            // Padded rows of random lengths 0..width (pad 0, values never 0).
            auto dense = rnd(n * width, n + width);
            const auto lens = rnd(n, n * 3);
            for (std::uint64_t i = 0; i < n; ++i)
                for (std::uint64_t k = 0; k < width; ++k) {
                    std::uint8_t& byte = dense[i * width + k];
                    byte = k < lens[i] % (width + 1) ? (byte == 0 ? 1 : byte) : 0;
                }
            const auto [offsets, data] = check_dense_to_binary(dense, n, width, scratch.p, 2);
            const std::uint64_t data_bytes = data.size();
            {
                // And back, with nulls.
                auto bits = rnd(bitmap_bytes(n), n + 5);
                std::vector<std::uint8_t> want(n * width);
                arrow_binary_to_dense_reference(offsets.data(), data.data(), bits.data(), want.data(), n, width, 0);
                Dev off(offsets.data(), (n + 1) * 4), dat(data.data(), std::max<std::uint64_t>(data_bytes, 1)),
                    b(bits.data(), bits.size()), out(n * width);
                sync_ok(kernels::launch_arrow_binary_to_dense(out.as<std::uint8_t>(), off.as<std::int32_t>(),
                                                              dat.as<std::uint8_t>(), b.as<std::uint8_t>(), n, width,
                                                              0, nullptr));
                same(out.get(n * width), want);
            }
        }
    }
}

TEST_CASE("gpu: dense -> Arrow binary clears its scratch when the epoch wraps") {
    if (!have_gpu()) return testing::skip("no usable GPU here");
    // The scratch layout of convert_kernels.hpp: the epoch about to wrap, and status words
    // of epoch 0 that no launch wrote, which the launch after the wrap must not believe.
    const std::uint64_t width = 32, big = 300007, small = 5000;
    const std::size_t bytes = kernels::dense_to_binary_scratch_bytes(big, width);
    std::vector<std::uint64_t> host(bytes / 8, (2ull << 62) | 12345); // inclusive prefix 12345 of epoch 0
    host[0] = 0;
    host[1] = (std::uint64_t(bytes / 8 - 2) << 32) | ((1u << 30) - 1);
    Dev scratch(host.data(), bytes);
    for (std::uint64_t n : {small, big, big, small}) {
        CAPTURE(n);
        auto dense = rnd(n * width, n + 7);
        for (std::uint64_t i = 0; i < n * width; ++i)
            if (i % width >= (i / width) % (width + 1)) dense[i] = 0;
            else if (dense[i] == 0) dense[i] = 1;
        check_dense_to_binary(dense, n, width, scratch.p, 1);
    }
}

TEST_CASE("gpu: strided views at edge shapes match the reference") {
    if (!have_gpu()) return testing::skip("no usable GPU here");
    for (std::size_t e : {1, 2, 4, 8})
        for (Dims2 d : {Dims2{1, 1}, Dims2{1, 17}, Dims2{17, 1}, Dims2{3, 5}, Dims2{131, 67}, Dims2{7, 1031}, Dims2{1031, 7}})
            for (std::uint64_t cs : {1ull, 2ull}) {
                CAPTURE(e);
                CAPTURE(d.rows);
                CAPTURE(d.cols);
                CAPTURE(cs);
                const StridedView v{d, (d.cols - 1) * cs + 1 + 5, cs, 3};
                const std::uint64_t parent = view_extent(v) * e, bytes = matrix_bytes(d, e);
                const auto in = rnd(parent, d.rows + cs);
                std::vector<std::uint8_t> want(bytes);
                strided_to_contiguous_reference(in.data(), want.data(), v, e);
                Dev src(in.data(), parent), dst(bytes);
                sync_ok(kernels::launch_strided_to_contiguous(dst.p, src.p, v, e, nullptr));
                same(dst.get(bytes), want);
            }
}
