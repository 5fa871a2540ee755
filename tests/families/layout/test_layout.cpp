// Layout conversions and exchange structures, without a GPU: host conversions against the
// element-by-element references on odd shapes, bad shapes, byte accounting, DLPack and
// Arrow structures filled, checked and released.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "interopbench/runner.hpp"
#include "interopbench/errors.hpp"
#include "gpu/interchange.hpp"
#include "gpu/convert.hpp"
#include "interopbench/registry.hpp"
#include "families/builtin.hpp"

using namespace interopbench;

namespace {

std::vector<std::uint8_t> random_bytes(std::uint64_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> v(n);
    fill_random(v.data(), n, seed, 3);
    return v;
}

const std::size_t k_elems[] = {1, 2, 4, 8};

} // namespace

TEST_CASE("dtype and shape names") {
    CHECK(parse_dtype("fp16") == DType::fp16);
    CHECK(dtype_size(parse_dtype("fp64")) == 8);
    CHECK(dtype_size(DType::int8) == 1);
    CHECK(std::string(to_string(DType::fp32)) == "fp32");
    CHECK_THROWS_AS(parse_dtype("bf16"), UsageError);
    CHECK(parse_shape("tall") == ShapeKind::tall);
    CHECK_THROWS_AS(parse_shape("round"), UsageError);
}

TEST_CASE("shapes are validated") {
    CHECK(checked_mul(1ull << 31, 1ull << 31, "x") == (1ull << 62));
    CHECK_THROWS_AS(checked_mul(1ull << 32, 1ull << 32, "x"), UsageError);
    CHECK(matrix_bytes({3, 5}, 4) == 60);
    CHECK_THROWS_AS(matrix_bytes({0, 5}, 4), UsageError);
    CHECK_THROWS_AS(matrix_bytes({5, 0}, 4), UsageError);
    CHECK_THROWS_AS(matrix_bytes({1ull << 40, 1ull << 30}, 1), UsageError);
    CHECK_THROWS_AS(matrix_bytes({1ull << 31, 1ull << 31}, 8), UsageError);
    CHECK_THROWS_AS(matrix_bytes({3, 5}, 3), UsageError);
}

TEST_CASE("generated dimensions are odd, fit the size and follow the shape") {
    for (std::size_t elem : k_elems) {
        for (std::uint64_t bytes : {1ull << 20, 256ull << 20, (1ull << 30) + 12345}) {
            CAPTURE(elem);
            CAPTURE(bytes);
            const Dims2 sq = dims_for(bytes, elem, ShapeKind::square);
            const Dims2 tall = dims_for(bytes, elem, ShapeKind::tall);
            const Dims2 wide = dims_for(bytes, elem, ShapeKind::wide);
            for (Dims2 d : {sq, tall, wide}) {
                CHECK(d.rows % 2 == 1);
                CHECK(d.cols % 2 == 1);
                CHECK(d.rows >= 3);
                CHECK(d.cols >= 3);
                CHECK(matrix_bytes(d, elem) <= bytes);
                // Close to the requested size: at most a few rows or columns short.
                CHECK(matrix_bytes(d, elem) * 10 >= bytes * 9);
            }
            CHECK(sq.rows == sq.cols);
            CHECK(tall.rows >= 100 * tall.cols);
            CHECK(wide.cols >= 100 * wide.rows);
            CHECK(tall.rows == wide.cols);
            CHECK(tall.cols == wide.rows);
        }
    }
    const Dims2 d = dims_for(256ull << 20, 4, ShapeKind::square);
    CHECK(d.rows == 8191);
    CHECK_THROWS_AS(dims_for(8, 4, ShapeKind::square), UsageError);
    CHECK_THROWS_AS(dims_for(1000, 1, ShapeKind::tall), UsageError);
    CHECK_NOTHROW(dims_for(9, 1, ShapeKind::square));
    CHECK_THROWS_AS(dims_for(1 << 20, 16, ShapeKind::square), UsageError);
}

TEST_CASE("random fill is reproducible, thread-independent and not zeros") {
    std::vector<std::uint8_t> a(100003), b(100003);
    fill_random(a.data(), a.size(), 7, 1);
    fill_random(b.data(), b.size(), 7, 4);
    CHECK(a == b);
    fill_random(b.data(), b.size(), 8, 4);
    CHECK(a != b);
    const auto zeros = std::count(a.begin(), a.end(), std::uint8_t{0});
    CHECK(zeros < 1000);
}

TEST_CASE("parallel copy copies") {
    const auto in = random_bytes((3 << 20) + 5, 9);
    std::vector<std::uint8_t> out(in.size(), 0);
    parallel_copy(out.data(), in.data(), in.size(), 4);
    CHECK(out == in);
}

TEST_CASE("transpose matches the reference on odd shapes") {
    const Dims2 shapes[] = {{1, 1}, {1, 17}, {19, 1}, {3, 5}, {67, 131}, {131, 67}, {257, 33}, {5, 1031}};
    for (std::size_t elem : k_elems) {
        for (Dims2 d : shapes) {
            CAPTURE(elem);
            CAPTURE(d.rows);
            CAPTURE(d.cols);
            const std::uint64_t bytes = matrix_bytes(d, elem);
            const auto in = random_bytes(bytes, d.rows * 31 + d.cols);
            std::vector<std::uint8_t> fast(bytes, 0xA5), ref(bytes, 0x5A);
            transpose(in.data(), fast.data(), d, elem, 4);
            transpose_reference(in.data(), ref.data(), d, elem);
            CHECK(fast == ref);
            // The reference itself: element (r, c) lands at (c, r).
            const std::uint64_t r = d.rows - 1, c = d.cols / 2;
            CHECK(std::memcmp(ref.data() + (c * d.rows + r) * elem, in.data() + (r * d.cols + c) * elem,
                              elem) == 0);
            // Back again gives the input.
            std::vector<std::uint8_t> back(bytes);
            transpose(fast.data(), back.data(), {d.cols, d.rows}, elem, 2);
            CHECK(back == in);
        }
    }
    // Large enough to be split over several threads.
    const Dims2 big{1023, 2049};
    const auto in = random_bytes(matrix_bytes(big, 1), 3);
    std::vector<std::uint8_t> fast(in.size()), ref(in.size());
    transpose(in.data(), fast.data(), big, 1, 4);
    transpose_reference(in.data(), ref.data(), big, 1);
    CHECK(fast == ref);
}

TEST_CASE("record layouts") {
    const RecordLayout mixed = RecordLayout::natural({8, 4, 2, 1});
    CHECK(mixed.record_bytes() == 16);
    CHECK(mixed.fields()[1].offset == 8);
    CHECK(mixed.fields()[2].offset == 12);
    CHECK(mixed.fields()[3].offset == 14);
    CHECK(mixed.field_bytes() == 15);
    CHECK(mixed.has_gaps());
    CHECK(mixed.aligned());
    CHECK(mixed.describe() == "16B: 8@0 4@8 2@12 1@14");

    const RecordLayout gap = RecordLayout::natural({1, 8});
    CHECK(gap.record_bytes() == 16);
    CHECK(gap.fields()[1].offset == 8);

    const RecordLayout packed = RecordLayout::packed({8, 1, 4, 2});
    CHECK(packed.record_bytes() == 15);
    CHECK_FALSE(packed.has_gaps());
    CHECK_FALSE(packed.aligned());

    CHECK(RecordLayout::natural({4, 4, 4}).record_bytes() == 12);
    CHECK_FALSE(RecordLayout::natural({4, 4, 4}).has_gaps());

    // Field widths that do not fit the record, overlaps, bad widths, field counts.
    CHECK_THROWS_AS(RecordLayout(8, {{0, 8}, {4, 8}}), UsageError);
    CHECK_THROWS_AS(RecordLayout(12, {{8, 8}}), UsageError);
    CHECK_THROWS_AS(RecordLayout(4, {{0, 4}, {2, 1}}), UsageError);
    CHECK_THROWS_AS(RecordLayout(16, {{0, 3}}), UsageError);
    CHECK_THROWS_AS(RecordLayout(16, {}), UsageError);
    CHECK_THROWS_AS(RecordLayout(0xFFFFFFFFu, {{0xFFFFFFFCu, 8}}), UsageError);
    CHECK_THROWS_AS(RecordLayout::natural(std::vector<std::uint32_t>(17, 1)), UsageError);
    CHECK_NOTHROW(RecordLayout::natural(std::vector<std::uint32_t>(16, 1)));
}

TEST_CASE("array of structs <-> struct of arrays match the references") {
    const RecordLayout layouts[] = {RecordLayout::natural({4, 4, 4}), RecordLayout::natural({8, 4, 2, 1}),
                                    RecordLayout::packed({8, 1, 4, 2}),
                                    RecordLayout::natural({8, 8, 4, 4, 2, 2, 1, 1}),
                                    RecordLayout(24, {{16, 2}, {0, 8}, {9, 1}})};
    for (const RecordLayout& rec : layouts) {
        for (std::uint64_t n : {1ull, 7ull, 1001ull, 300001ull}) {
            CAPTURE(rec.describe());
            CAPTURE(n);
            const SoaLayout s = soa_layout(rec, n);
            for (std::uint64_t off : s.offsets) CHECK(off % 256 == 0);
            CHECK(s.bytes >= n * rec.field_bytes());
            const auto aos = random_bytes(n * rec.record_bytes(), n);
            std::vector<std::uint8_t> soa(s.bytes, 0xA5), soa_ref(s.bytes, 0xA5);
            aos_to_soa(aos.data(), soa.data(), rec, n, 4);
            aos_to_soa_reference(aos.data(), soa_ref.data(), rec, n);
            CHECK(soa == soa_ref);
            std::vector<std::uint8_t> back(aos.size(), 0xA5), back_ref(aos.size(), 0x5A);
            soa_to_aos(soa.data(), back.data(), rec, n, 4);
            soa_to_aos_reference(soa.data(), back_ref.data(), rec, n);
            CHECK(back == back_ref);
            // Field bytes survive the round trip; gap bytes become zero.
            std::vector<bool> covered(rec.record_bytes(), false);
            for (const Field& f : rec.fields())
                for (std::uint32_t k = 0; k < f.width; ++k) covered[f.offset + k] = true;
            bool same = true;
            for (std::uint64_t i = 0; i < n; ++i)
                for (std::uint32_t k = 0; k < rec.record_bytes(); ++k) {
                    const std::uint64_t at = i * rec.record_bytes() + k;
                    same &= back[at] == (covered[k] ? aos[at] : 0);
                }
            CHECK(same);
        }
    }
    CHECK_THROWS_AS(soa_layout(RecordLayout::natural({4}), 0), UsageError);
}

TEST_CASE("fixed-width Arrow column <-> dense matches the references") {
    for (std::size_t w : k_elems) {
        for (std::uint64_t n : {1ull, 8ull, 13ull, 100003ull}) {
            CAPTURE(w);
            CAPTURE(n);
            auto values = random_bytes(n * w, n + w);
            const auto validity = random_bytes(bitmap_bytes(n), n * 3);
            const std::uint8_t fill[8] = {0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8};
            // Valid values never equal the fill, so the way back finds exactly the nulls.
            for (std::uint64_t i = 0; i < n; ++i)
                if (std::memcmp(values.data() + i * w, fill, w) == 0) values[i * w] = 0;
            std::vector<std::uint8_t> dense(n * w, 0xA5), ref(n * w, 0x5A);
            arrow_fixed_to_dense(values.data(), validity.data(), dense.data(), n, w, fill, 4);
            arrow_fixed_to_dense_reference(values.data(), validity.data(), ref.data(), n, w, fill);
            CHECK(dense == ref);
            std::uint64_t expected_nulls = 0;
            for (std::uint64_t i = 0; i < n; ++i) expected_nulls += bit_is_set(validity.data(), i) ? 0 : 1;

            // Back: nulls are found again through the fill value.
            std::vector<std::uint8_t> out(n * w, 0xA5), out_ref(n * w, 0x5A);
            std::vector<std::uint8_t> bits(bitmap_bytes(n), 0xA5), bits_ref(bitmap_bytes(n), 0x5A);
            const std::uint64_t nulls = dense_to_arrow_fixed(dense.data(), out.data(), bits.data(), n, w, fill, 4);
            const std::uint64_t nulls_ref =
                dense_to_arrow_fixed_reference(dense.data(), out_ref.data(), bits_ref.data(), n, w, fill);
            CHECK(out == out_ref);
            CHECK(bits == bits_ref);
            CHECK(nulls == nulls_ref);
            CHECK(nulls == expected_nulls);
            for (std::uint64_t i = 0; i < n; ++i)
                if (bit_is_set(bits.data(), i) != bit_is_set(validity.data(), i)) FAIL("validity differs at ", i);
            if (n % 8 != 0) CHECK((bits.back() >> (n % 8)) == 0);
        }
    }
    // No bitmap: everything valid.
    const auto values = random_bytes(40, 1);
    std::vector<std::uint8_t> dense(40);
    const std::uint32_t fill = 0;
    arrow_fixed_to_dense(values.data(), nullptr, dense.data(), 10, 4, &fill, 1);
    CHECK(dense == values);
}

TEST_CASE("binary Arrow column <-> padded dense matches the references") {
    for (std::uint64_t width : {1ull, 7ull, 32ull}) {
        for (std::uint64_t n : {1ull, 9ull, 20011ull}) {
            CAPTURE(width);
            CAPTURE(n);
            // Values of 0..width+3 bytes (longer ones are cut), bytes never the pad.
            const auto lens = random_bytes(n, 11 * n + width);
            std::vector<std::int32_t> offsets(n + 1, 0);
            for (std::uint64_t i = 0; i < n; ++i)
                offsets[i + 1] = offsets[i] + static_cast<std::int32_t>(lens[i] % (width + 4));
            auto data = random_bytes(static_cast<std::uint64_t>(offsets[n]) + 1, n);
            for (auto& b : data) b = b == 0 ? 1 : b;
            const auto validity = random_bytes(bitmap_bytes(n), n + 5);
            std::vector<std::uint8_t> dense(n * width, 0xA5), ref(n * width, 0x5A);
            arrow_binary_to_dense(offsets.data(), data.data(), validity.data(), dense.data(), n, width, 0, 4);
            arrow_binary_to_dense_reference(offsets.data(), data.data(), validity.data(), ref.data(), n, width, 0);
            CHECK(dense == ref);

            std::vector<std::int32_t> off2(n + 1, -1), off2_ref(n + 1, -2);
            std::vector<std::uint8_t> data2(n * width, 0xA5), data2_ref(n * width, 0xA5);
            const std::uint64_t total = dense_to_arrow_binary(dense.data(), n, width, 0, off2.data(), data2.data(), 4);
            const std::uint64_t total_ref =
                dense_to_arrow_binary_reference(dense.data(), n, width, 0, off2_ref.data(), data2_ref.data());
            CHECK(total == total_ref);
            CHECK(off2 == off2_ref);
            CHECK(std::memcmp(data2.data(), data2_ref.data(), total) == 0);
            // Round trip: each valid value comes back cut to the width; nulls come back empty.
            bool same = true;
            for (std::uint64_t i = 0; i < n; ++i) {
                const bool valid = bit_is_set(validity.data(), i);
                const std::int64_t len = valid ? std::min<std::int64_t>(offsets[i + 1] - offsets[i], width) : 0;
                same &= off2[i + 1] - off2[i] == len;
                same &= std::memcmp(data2.data() + off2[i], data.data() + offsets[i], len) == 0;
            }
            CHECK(same);
        }
    }
    std::vector<std::int32_t> offsets{0, 0};
    std::uint8_t byte = 0;
    CHECK_THROWS_AS(arrow_binary_to_dense(offsets.data(), &byte, nullptr, &byte, 1, 0, 0, 1), UsageError);
    CHECK_THROWS_AS(dense_to_arrow_binary(&byte, 1, 0, 0, offsets.data(), &byte, 1), UsageError);
}

TEST_CASE("strided views to contiguous match the reference") {
    for (std::size_t elem : k_elems) {
        for (Dims2 d : {Dims2{1, 1}, Dims2{3, 5}, Dims2{131, 67}, Dims2{17, 2049}}) {
            const StridedView views[] = {
                {d, d.cols + 7, 1, 3},         // a column range of a wider matrix
                {d, 2 * d.cols + 3, 2, 1},     // every other column
                {d, d.cols, 1, 0},             // already contiguous
                {d, 5 * d.cols + 1, 5, 2},     // any other step
            };
            for (const StridedView& v : views) {
                CAPTURE(elem);
                CAPTURE(d.rows);
                CAPTURE(d.cols);
                CAPTURE(v.col_stride);
                const std::uint64_t extent = view_extent(v);
                CHECK(extent == v.offset + (d.rows - 1) * v.row_stride + (d.cols - 1) * v.col_stride + 1);
                const auto parent = random_bytes(extent * elem, extent + elem);
                std::vector<std::uint8_t> out(d.rows * d.cols * elem, 0xA5), ref(out.size(), 0x5A);
                strided_to_contiguous(parent.data(), out.data(), v, elem, 4);
                strided_to_contiguous_reference(parent.data(), ref.data(), v, elem);
                CHECK(out == ref);
            }
        }
    }
    CHECK_THROWS_AS(view_extent({{0, 3}, 3, 1, 0}), UsageError);
    CHECK_THROWS_AS(view_extent({{3, 3}, 3, 0, 0}), UsageError);
    CHECK_THROWS_AS(view_extent({{3, 3}, 4, 2, 0}), UsageError);
    CHECK_THROWS_AS(view_extent({{1ull << 40, 3}, 1ull << 40, 1, 0}), UsageError);
    CHECK_THROWS_AS(view_extent({{2, 3}, 3, 1, std::numeric_limits<std::uint64_t>::max() - 2}), UsageError);
    CHECK_NOTHROW(view_extent({{1, 3}, 0, 1, 0}));
}

TEST_CASE("byte accounting") {
    const ByteCount t = transpose_bytes({3, 5}, 8);
    CHECK(t.read == 120);
    CHECK(t.written == 120);
    CHECK(t.total() == 240);

    const RecordLayout mixed = RecordLayout::natural({8, 4, 2, 1});
    const ByteCount to_soa = aos_soa_bytes(mixed, 10, true);
    CHECK(to_soa.read == 160);
    CHECK(to_soa.written == 150);
    const ByteCount to_aos = aos_soa_bytes(mixed, 10, false);
    CHECK(to_aos.read == 150);
    CHECK(to_aos.written == 160);

    CHECK(bitmap_bytes(0) == 0);
    CHECK(bitmap_bytes(1) == 1);
    CHECK(bitmap_bytes(8) == 1);
    CHECK(bitmap_bytes(9) == 2);
    const ByteCount fixed = arrow_fixed_bytes(13, 4, true);
    CHECK(fixed.read == 52 + 2);
    CHECK(fixed.written == 52);
    CHECK(arrow_fixed_bytes(13, 4, false).written == 54);

    const ByteCount bin = arrow_binary_bytes(10, 32, 123, true, true);
    CHECK(bin.read == 44 + 123 + 2);
    CHECK(bin.written == 320);
    const ByteCount bin_back = arrow_binary_bytes(10, 32, 123, false, false);
    CHECK(bin_back.read == 320);
    CHECK(bin_back.written == 44 + 123);

    const ByteCount s = strided_bytes({{3, 5}, 11, 2, 0}, 4);
    CHECK(s.read == 60);
    CHECK(s.written == 60);
}

// ---- exchange structures ---------------------------------------------------------------

TEST_CASE("DLPack versioned tensor: exported, read and released once") {
    float storage[6] = {1, 2, 3, 4, 5, 6};
    int released = 0;
    TensorDesc desc;
    desc.data = storage;
    desc.device = {DLDeviceType::cuda, 1};
    desc.dtype = dlpack_dtype(DType::fp32);
    desc.shape = {2, 3};
    desc.strides = row_major_strides(desc.shape);
    desc.byte_offset = 4;
    DLManagedTensorVersioned* t = export_dlpack(desc, k_dlpack_flag_read_only, [&] { ++released; });
    REQUIRE(t != nullptr);
    CHECK(t->version.major == k_dlpack_major);
    CHECK(t->version.minor == k_dlpack_minor);
    CHECK(t->dl_tensor.ndim == 2);
    CHECK(t->dl_tensor.dtype.code == 2);
    CHECK(t->dl_tensor.dtype.bits == 32);
    CHECK(t->dl_tensor.dtype.lanes == 1);
    CHECK(static_cast<int>(t->dl_tensor.device.device_type) == 2);

    const TensorView v = import_dlpack(t);
    CHECK(v.data == static_cast<void*>(reinterpret_cast<char*>(storage) + 4));
    CHECK(v.shape == std::vector<std::int64_t>{2, 3});
    CHECK(v.strides == std::vector<std::int64_t>{3, 1});
    CHECK(v.read_only);
    CHECK_FALSE(v.is_copied);
    CHECK(matrix_order(v) == MatrixOrder::row_major);
    CHECK(released == 0);
    release(t);
    CHECK(released == 1);
    release(static_cast<DLManagedTensorVersioned*>(nullptr));

    CHECK_THROWS_AS(export_dlpack(TensorDesc{storage, {}, {}, {2, 3}, {1}, 0}, 0, nullptr), UsageError);
    CHECK_THROWS_AS(export_dlpack(TensorDesc{storage, {}, {}, {-2}, {1}, 0}, 0, nullptr), UsageError);
}

TEST_CASE("DLPack consumer rejects another major version and still releases") {
    int released = 0;
    TensorDesc desc;
    desc.shape = {4};
    desc.strides = {1};
    desc.dtype = dlpack_dtype(DType::int8);
    DLManagedTensorVersioned* t = export_dlpack(desc, 0, [&] { ++released; });
    t->version.major = k_dlpack_major + 1;
    CHECK_THROWS_AS(import_dlpack(t), ConfigError);
    CHECK(released == 1);

    // A newer minor version is readable.
    DLManagedTensorVersioned* t2 = export_dlpack(desc, k_dlpack_flag_is_copied, [&] { ++released; });
    t2->version.minor = k_dlpack_minor + 5;
    const TensorView v = import_dlpack(t2);
    CHECK(v.is_copied);
    CHECK(v.dtype.code == 0);
    CHECK(v.dtype.bits == 8);
    release(t2);
    CHECK(released == 2);

    // Vector lanes and broken shapes are refused.
    DLManagedTensorVersioned* t3 = export_dlpack(desc, 0, nullptr);
    t3->dl_tensor.dtype.lanes = 4;
    CHECK_THROWS_AS(import_dlpack(t3), ConfigError);
    t3->dl_tensor.dtype.lanes = 1;
    t3->dl_tensor.shape = nullptr;
    CHECK_THROWS_AS(import_dlpack(t3), ConfigError);
    release(t3);
    CHECK_THROWS_AS(import_dlpack(static_cast<DLManagedTensorVersioned*>(nullptr)), ConfigError);
}

TEST_CASE("DLPack legacy tensor and layouts") {
    double storage[12] = {};
    int released = 0;
    TensorDesc desc;
    desc.data = storage;
    desc.dtype = dlpack_dtype(DType::fp64);
    desc.shape = {3, 4};
    desc.strides = col_major_strides(desc.shape);
    CHECK(desc.strides == std::vector<std::int64_t>{1, 3});
    DLManagedTensor* t = export_dlpack_legacy(desc, [&] { ++released; });
    TensorView v = import_dlpack(t);
    CHECK(v.data == storage);
    CHECK(matrix_order(v) == MatrixOrder::col_major);
    CHECK(std::string(to_string(matrix_order(v))) == "col_major");

    // No strides means compact row-major.
    t->dl_tensor.strides = nullptr;
    v = import_dlpack(t);
    CHECK(v.strides == std::vector<std::int64_t>{4, 1});
    CHECK(matrix_order(v) == MatrixOrder::row_major);
    release(t);
    CHECK(released == 1);

    TensorView odd;
    odd.shape = {3, 4};
    odd.strides = {8, 2};
    CHECK(matrix_order(odd) == MatrixOrder::other);
    odd.shape = {1, 4};
    odd.strides = {4, 1};
    CHECK(matrix_order(odd) == MatrixOrder::row_major);
    odd.shape = {5, 1};
    odd.strides = {1, 5};
    CHECK(matrix_order(odd) == MatrixOrder::row_major);
    odd.shape = {2, 3, 4};
    odd.strides = {12, 4, 1};
    CHECK(matrix_order(odd) == MatrixOrder::other);
    CHECK(row_major_strides({2, 3, 4}) == std::vector<std::int64_t>{12, 4, 1});
    CHECK(col_major_strides({2, 3, 4}) == std::vector<std::int64_t>{1, 2, 6});
}

TEST_CASE("Arrow fixed-size list: exported, read and released once") {
    float storage[15] = {};
    int event = 42;
    int released = 0;
    ArrowSchema schema;
    ArrowDeviceArray array;
    export_fixed_size_list_schema(arrow_format(DType::fp32), 5, "rows", &schema);
    export_fixed_size_list_array(storage, 3, 5, k_arrow_device_cuda, 1, &event, [&] { ++released; }, &array);
    CHECK(std::string(schema.format) == "+w:5");
    CHECK(std::string(schema.name) == "rows");
    CHECK(std::string(schema.children[0]->name) == "item");
    REQUIRE(schema.n_children == 1);
    CHECK(std::string(schema.children[0]->format) == "f");
    CHECK(array.array.length == 3);
    CHECK(array.array.n_buffers == 1);
    CHECK(array.array.buffers[0] == nullptr);
    REQUIRE(array.array.n_children == 1);
    CHECK(array.array.children[0]->length == 15);
    CHECK(array.array.children[0]->buffers[1] == storage);
    CHECK(array.device_type == k_arrow_device_cuda);
    CHECK(array.reserved[0] == 0);

    const ArrowListView v = import_fixed_size_list(schema, array, "f");
    CHECK(v.data == storage);
    CHECK(v.name == "rows");
    CHECK(v.length == 3);
    CHECK(v.list_size == 5);
    CHECK(v.device_id == 1);
    CHECK(v.sync_event == &event);
    CHECK_THROWS_AS(import_fixed_size_list(schema, array, "g"), ConfigError);

    // An offset into the parent moves the view by whole lists.
    array.array.offset = 1;
    array.array.length = 2;
    CHECK(import_fixed_size_list(schema, array, "f").data == storage + 5);
    array.array.length = 3;
    CHECK_THROWS_AS(import_fixed_size_list(schema, array, "f"), ConfigError);
    array.array.offset = 0;

    CHECK(released == 0);
    release(&array);
    CHECK(released == 1);
    CHECK((array.array.release == nullptr));
    release(&array);
    CHECK(released == 1);
    CHECK_THROWS_AS(import_fixed_size_list(schema, array, "f"), ConfigError);
    release(&schema);
    CHECK((schema.release == nullptr));
    release(&schema);

    CHECK_THROWS_AS(export_fixed_size_list_schema("f", 0, "rows", &schema), UsageError);
    CHECK_THROWS_AS(export_fixed_size_list_array(storage, 1, 0, k_arrow_device_cpu, 0, nullptr, nullptr, &array),
                    UsageError);
}

TEST_CASE("Arrow child moved out is released on its own") {
    std::int8_t storage[8] = {};
    int released = 0;
    ArrowDeviceArray array;
    export_fixed_size_list_array(storage, 2, 4, k_arrow_device_cpu, 0, nullptr, [&] { ++released; }, &array);
    // A consumer moves the child: it copies the structure and marks the source released.
    ArrowArray child = *array.array.children[0];
    array.array.children[0]->release = nullptr;
    release(&array);
    CHECK(released == 1);
    CHECK((child.release != nullptr));
    CHECK(child.buffers[1] == storage);
    release(&child);
    CHECK((child.release == nullptr));
}

TEST_CASE("Arrow consumer refuses what is not a fixed-size list") {
    ArrowSchema schema;
    ArrowDeviceArray array;
    float storage[4] = {};
    export_fixed_size_list_schema("f", 2, "columns", &schema);
    export_fixed_size_list_array(storage, 2, 2, k_arrow_device_cpu, 0, nullptr, nullptr, &array);
    const char* saved = schema.format;
    for (const char* bad : {"f", "+w:", "+w:x", "+w:2x", "+w:0", "+l"}) {
        CAPTURE(bad);
        schema.format = bad;
        CHECK_THROWS_AS(import_fixed_size_list(schema, array, "f"), ConfigError);
    }
    schema.format = saved;
    CHECK_NOTHROW(import_fixed_size_list(schema, array, "f"));
    array.array.children[0]->null_count = 1;
    CHECK_THROWS_AS(import_fixed_size_list(schema, array, "f"), ConfigError);
    array.array.children[0]->null_count = 0;
    array.array.n_children = 0;
    CHECK_THROWS_AS(import_fixed_size_list(schema, array, "f"), ConfigError);
    array.array.n_children = 1;
    release(&array);
    release(&schema);
    CHECK(std::string(arrow_format(DType::int8)) == "c");
    CHECK(std::string(arrow_format(DType::fp16)) == "e");
    CHECK(std::string(arrow_format(DType::fp64)) == "g");
}

// ---- the scenarios, without a GPU -----------------------------------------------------------

namespace {

Machine no_gpu_machine() {
    Machine m;
    m.cuda_available = false;
    m.cuda_note = "no NVIDIA driver";
    m.host_cores = 2;
    return m;
}

Registry layout_registry() {
    return builtin_registry({"layout", "handoff"});
}

} // namespace

TEST_CASE("layout scenarios are registered with their axes and metrics") {
    const Registry r = layout_registry();
    std::vector<std::string> ids;
    for (const auto& s : r.all()) ids.push_back(s->info().id);
    CHECK(ids == std::vector<std::string>{"layout_transpose", "layout_aos_soa", "layout_arrow_dense", "layout_strided",
                                          "handoff"});
    for (const char* id : {"layout_transpose", "layout_aos_soa", "layout_arrow_dense", "layout_strided"}) {
        CAPTURE(id);
        const ScenarioInfo& info = r.find(id)->info();
        CHECK_FALSE(info.needs_gpu);
        CHECK(info.axes.front().name == "variant");
        CHECK(info.axes.back().name == "size");
        // The four shared metrics keep their places; views add the traffic-aware efficiency.
        REQUIRE(info.metrics.size() == (std::string(id) == "layout_strided" ? 5u : 4u));
        CHECK(info.metrics[0].name == "bandwidth");
        CHECK(info.metrics[3].name == "efficiency");
        if (info.metrics.size() == 5) CHECK(info.metrics[4].name == "efficiency_traffic");
        CHECK(info.counting.find("read + ") != std::string::npos);
    }
    const ScenarioInfo& h = r.find("handoff")->info();
    CHECK(h.needs_gpu);
    CHECK(h.metrics[0].name == "time");
    CHECK(h.metrics[1].name == "bytes_moved");
}

TEST_CASE("without a GPU only the host variant runs, and bad shapes are skipped with a reason") {
    const Registry r = layout_registry();
    const Machine m = no_gpu_machine();
    const Scenario* t = r.find("layout_transpose");
    const Params gpu = typed_params(t->info(), {{"variant", "gpu"}, {"dtype", "fp32"}, {"shape", "square"}, {"size", "1048576"}}, m);
    const Params host = typed_params(t->info(), {{"variant", "host"}, {"dtype", "fp32"}, {"shape", "square"}, {"size", "1048576"}}, m);
    CHECK(t->unsupported(m, gpu) == std::optional<std::string>("no NVIDIA driver"));
    CHECK_FALSE(t->unsupported(m, host).has_value());
    const Params tiny = typed_params(t->info(), {{"variant", "host"}, {"dtype", "fp64"}, {"shape", "tall"}, {"size", "4096"}}, m);
    const auto why = t->unsupported(m, tiny);
    REQUIRE(why.has_value());
    CHECK(why->find("too small") != std::string::npos);
    const Params no_record = typed_params(r.find("layout_aos_soa")->info(), {{"variant", "host"}, {"record", "wide"}, {"direction", "aos_to_soa"}, {"size", "16"}}, m);
    CHECK(r.find("layout_aos_soa")->unsupported(m, no_record).has_value());
    const Params handoff = typed_params(r.find("handoff")->info(), {{"path", "dlpack"}, {"consumer", "same"}, {"size", "1048576"}}, m);
    CHECK(r.find("handoff")->unsupported(m, handoff) == std::optional<std::string>("no NVIDIA driver"));
}

TEST_CASE("host variant of every conversion measures, verifies and reports its bytes") {
    const Registry r = layout_registry();
    const Machine m = no_gpu_machine();
    const CaseContext ctx{&m, 0.001, false};
    const std::vector<std::pair<std::string, Params>> configs = {
        {"layout_transpose", typed_params(r.find("layout_transpose")->info(), {{"variant", "host"}, {"dtype", "int8"}, {"shape", "wide"}, {"size", "300000"}}, m)},
        {"layout_transpose", typed_params(r.find("layout_transpose")->info(), {{"variant", "host"}, {"dtype", "fp64"}, {"shape", "square"}, {"size", "300000"}}, m)},
        {"layout_aos_soa", typed_params(r.find("layout_aos_soa")->info(), {{"variant", "host"}, {"record", "packed"}, {"direction", "aos_to_soa"}, {"size", "300000"}}, m)},
        {"layout_aos_soa", typed_params(r.find("layout_aos_soa")->info(), {{"variant", "host"}, {"record", "mixed"}, {"direction", "soa_to_aos"}, {"size", "300000"}}, m)},
        {"layout_arrow_dense", typed_params(r.find("layout_arrow_dense")->info(), {{"variant", "host"}, {"dtype", "fp16"}, {"direction", "to_dense"}, {"size", "300000"}}, m)},
        {"layout_arrow_dense", typed_params(r.find("layout_arrow_dense")->info(), {{"variant", "host"}, {"dtype", "fp32"}, {"direction", "from_dense"}, {"size", "300000"}}, m)},
        {"layout_arrow_dense", typed_params(r.find("layout_arrow_dense")->info(), {{"variant", "host"}, {"dtype", "binary"}, {"direction", "to_dense"}, {"size", "300000"}}, m)},
        {"layout_arrow_dense", typed_params(r.find("layout_arrow_dense")->info(), {{"variant", "host"}, {"dtype", "binary"}, {"direction", "from_dense"}, {"size", "300000"}}, m)},
        {"layout_strided", typed_params(r.find("layout_strided")->info(), {{"variant", "host"}, {"dtype", "fp16"}, {"shape", "tall"}, {"view", "cols_slice"}, {"size", "300000"}}, m)},
        {"layout_strided", typed_params(r.find("layout_strided")->info(), {{"variant", "host"}, {"dtype", "int8"}, {"shape", "square"}, {"view", "step2"}, {"size", "300000"}}, m)},
    };
    for (const auto& [id, params] : configs) {
        CAPTURE(id);
        CAPTURE(params.canonical());
        const Scenario* s = r.find(id);
        REQUIRE(s != nullptr);
        REQUIRE_FALSE(s->unsupported(m, params).has_value());
        auto c = s->prepare(ctx, params);
        const Sample sample = c->measure();
        REQUIRE(sample.size() == s->info().metrics.size());
        CHECK(sample[0] > 0);
        CHECK(sample[1] > 0);
        CHECK(sample[2] > 0);
        CHECK(sample[3] == doctest::Approx(sample[0] / sample[2]));
        CHECK_NOTHROW(c->check());
        const nlohmann::json d = c->details();
        CHECK(d.at("bytes_read").get<std::uint64_t>() > 0);
        CHECK(d.at("bytes_written").get<std::uint64_t>() > 0);
        CHECK(d.at("copy_bytes").get<std::uint64_t>() ==
              (d.at("bytes_read").get<std::uint64_t>() + d.at("bytes_written").get<std::uint64_t>() + 1) / 2);
        CHECK(d.at("bytes_read").get<std::uint64_t>() + d.at("bytes_written").get<std::uint64_t>() <= 3 * 300000);
        // The traffic-aware limit counts a GPU's 32-byte sectors: on the host none is claimed (the
        // metric is left unmeasured and the details say why); the sector counts are checked in
        // "sector traffic of strided views".
        CHECK_FALSE(d.contains("sector_bytes"));
        if (id == "layout_strided") {
            CHECK(std::isnan(sample[4]));
            CHECK(d.at("traffic_limit").get<std::string>().rfind("none on the host", 0) == 0);
        }
    }
}

TEST_CASE("sector traffic of strided views") {
    // Contiguous, sector-aligned rows: exactly the bytes.
    CHECK(strided_sector_bytes(StridedView{{4, 8}, 8, 1, 0}, 4) == 2 * 128);
    // Every other fp32 of 8: a 60-byte span from byte 64 r, two sectors per row; output 128 B.
    CHECK(strided_sector_bytes(StridedView{{4, 8}, 16, 2, 0}, 4) == 4 * 64 + 128);
    // Step 2 reads about twice what it uses.
    const StridedView v{{1001, 1001}, 2 * 1001 + 3, 2, 1};
    const ByteCount b = strided_bytes(v, 4);
    const double ratio = double(strided_sector_bytes(v, 4)) / double(b.total());
    CHECK(ratio > 1.45);
    CHECK(ratio < 1.55);
    // Rows that share a sector fetch it once: a 1-element-wide view of consecutive bytes.
    CHECK(strided_sector_bytes(StridedView{{64, 1}, 1, 1, 0}, 1) == 2 * 32 + 64);
    // A stride past a sector: one sector per element.
    CHECK(strided_sector_bytes(StridedView{{2, 3}, 100, 5, 0}, 8) == 6 * 32 + 64);
}
