// Host layout conversions. The fast versions split the work into contiguous ranges, one per
// thread, and use cache blocking where the access pattern needs it; the references are the
// obvious element loops, kept separate so tests and host checks compare two different codes.
#include "gpu/convert.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "interopbench/errors.hpp"
#include "interopbench/splitmix.hpp"

namespace interopbench {

namespace {

// Below this many bytes per worker a thread costs more than it saves.
constexpr std::uint64_t k_min_bytes_per_thread = 1 << 20;

unsigned workers_for(std::uint64_t bytes, unsigned threads) {
    const std::uint64_t useful = std::max<std::uint64_t>(1, bytes / k_min_bytes_per_thread);
    return static_cast<unsigned>(std::clamp<std::uint64_t>(useful, 1, std::max(1u, threads)));
}

// Calls fn(begin, end) on `workers` contiguous slices of [0, n); the calling thread takes
// the first slice.
template <class F>
void parallel_for(std::uint64_t n, unsigned workers, F&& fn) {
    workers = static_cast<unsigned>(std::clamp<std::uint64_t>(workers, 1, std::max<std::uint64_t>(n, 1)));
    if (workers == 1) {
        fn(std::uint64_t{0}, n);
        return;
    }
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    const std::uint64_t step = n / workers, extra = n % workers;
    std::uint64_t begin = 0;
    std::uint64_t first_end = 0;
    for (unsigned t = 0; t < workers; ++t) {
        const std::uint64_t end = begin + step + (t < extra ? 1 : 0);
        if (t == 0)
            first_end = end;
        else
            pool.emplace_back([&fn, begin, end] { fn(begin, end); });
        begin = end;
    }
    fn(std::uint64_t{0}, first_end);
    for (auto& th : pool) th.join();
}

void check_elem(std::size_t elem) {
    if (elem != 1 && elem != 2 && elem != 4 && elem != 8)
        throw UsageError(fmt::format("element size {} bytes is not supported", elem),
                         "use 1, 2, 4 or 8 bytes (int8, fp16, fp32, fp64)");
}

std::uint64_t odd_floor(std::uint64_t x) { return (x % 2 == 0 && x > 0) ? x - 1 : x; }

std::uint64_t isqrt(std::uint64_t x) {
    auto r = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(x)));
    while (r > 0 && r * r > x) --r;
    while (r + 1 <= x / (r + 1)) ++r; // (r + 1)^2 <= x without overflowing
    return r;
}

template <class T>
void transpose_blocked(const T* src, T* dst, std::uint64_t rows, std::uint64_t cols,
                       std::uint64_t row_begin, std::uint64_t row_end) {
    // 64x64 blocks keep both the rows read and the rows written in cache.
    constexpr std::uint64_t k_block = 64;
    for (std::uint64_t r0 = row_begin; r0 < row_end; r0 += k_block) {
        const std::uint64_t r1 = std::min(r0 + k_block, row_end);
        for (std::uint64_t c0 = 0; c0 < cols; c0 += k_block) {
            const std::uint64_t c1 = std::min(c0 + k_block, cols);
            for (std::uint64_t c = c0; c < c1; ++c)
                for (std::uint64_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
        }
    }
}

template <class T>
void strided_rows(const T* parent, T* dst, const StridedView& v, std::uint64_t row_begin,
                  std::uint64_t row_end) {
    const std::uint64_t cols = v.dims.cols;
    for (std::uint64_t r = row_begin; r < row_end; ++r) {
        const T* in = parent + v.offset + r * v.row_stride;
        T* out = dst + r * cols;
        if (v.col_stride == 1) {
            std::memcpy(out, in, cols * sizeof(T));
        } else {
            for (std::uint64_t c = 0; c < cols; ++c) out[c] = in[c * v.col_stride];
        }
    }
}

// Calls fn.template operator()<T>() with T the unsigned integer of `elem` bytes.
template <class F>
void with_elem_type(std::size_t elem, F&& fn) {
    switch (elem) {
    case 1: fn(std::uint8_t{}); break;
    case 2: fn(std::uint16_t{}); break;
    case 4: fn(std::uint32_t{}); break;
    case 8: fn(std::uint64_t{}); break;
    default: check_elem(elem);
    }
}

void copy_field(const std::uint8_t* src, std::uint64_t src_stride, std::uint8_t* dst,
                std::uint64_t dst_stride, std::uint32_t width, std::uint64_t count) {
    // A constant-size memcpy per width compiles to one load and one store.
    auto loop = [&](auto tag) {
        constexpr std::size_t w = sizeof(tag);
        for (std::uint64_t i = 0; i < count; ++i)
            std::memcpy(dst + i * dst_stride, src + i * src_stride, w);
    };
    with_elem_type(width, loop);
}

} // namespace

// ---- element types and shapes -------------------------------------------------------

DType parse_dtype(std::string_view text) {
    if (text == "fp16") return DType::fp16;
    if (text == "fp32") return DType::fp32;
    if (text == "fp64") return DType::fp64;
    if (text == "int8") return DType::int8;
    throw UsageError(fmt::format("unknown dtype '{}'", text), "use fp16, fp32, fp64 or int8");
}

const char* to_string(DType t) {
    switch (t) {
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::fp64: return "fp64";
    case DType::int8: return "int8";
    }
    return "?";
}

std::size_t dtype_size(DType t) {
    switch (t) {
    case DType::fp16: return 2;
    case DType::fp32: return 4;
    case DType::fp64: return 8;
    case DType::int8: return 1;
    }
    return 0;
}

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what) {
    std::uint64_t out = 0;
    if (__builtin_mul_overflow(a, b, &out))
        throw UsageError(fmt::format("{} overflows: {} x {} does not fit in 64 bits", what, a, b),
                         "use smaller dimensions");
    return out;
}

ShapeKind parse_shape(std::string_view text) {
    if (text == "square") return ShapeKind::square;
    if (text == "tall") return ShapeKind::tall;
    if (text == "wide") return ShapeKind::wide;
    throw UsageError(fmt::format("unknown shape '{}'", text), "use square, tall or wide");
}

const char* to_string(ShapeKind s) {
    switch (s) {
    case ShapeKind::square: return "square";
    case ShapeKind::tall: return "tall";
    case ShapeKind::wide: return "wide";
    }
    return "?";
}

std::uint64_t matrix_bytes(Dims2 dims, std::size_t elem) {
    check_elem(elem);
    if (dims.rows == 0 || dims.cols == 0)
        throw UsageError(fmt::format("matrix {}x{} has a zero dimension", dims.rows, dims.cols),
                         "every dimension must be at least 1");
    return checked_mul(checked_mul(dims.rows, dims.cols, "matrix element count"), elem,
                       "matrix byte count");
}

Dims2 dims_for(std::uint64_t bytes, std::size_t elem, ShapeKind shape) {
    check_elem(elem);
    constexpr std::uint64_t k_aspect = 256, k_min_dim = 3;
    const std::uint64_t elems = bytes / elem;
    const std::uint64_t min_elems =
        shape == ShapeKind::square ? k_min_dim * k_min_dim : k_aspect * k_min_dim * k_min_dim;
    if (elems < min_elems)
        throw UsageError(fmt::format("size {} B is too small for a {} matrix of {}-byte elements",
                                     bytes, to_string(shape), elem),
                         fmt::format("use at least {} B", min_elems * elem));
    Dims2 d;
    if (shape == ShapeKind::square) {
        d.rows = d.cols = odd_floor(isqrt(elems));
    } else {
        const std::uint64_t narrow = odd_floor(isqrt(elems / k_aspect));
        const std::uint64_t long_side = odd_floor(elems / narrow);
        d = shape == ShapeKind::tall ? Dims2{long_side, narrow} : Dims2{narrow, long_side};
    }
    return d;
}

void parallel_copy(void* dst, const void* src, std::uint64_t bytes, unsigned threads) {
    auto* out = static_cast<std::uint8_t*>(dst);
    const auto* in = static_cast<const std::uint8_t*>(src);
    parallel_for(bytes, workers_for(bytes, threads),
                 [&](std::uint64_t b, std::uint64_t e) { std::memcpy(out + b, in + b, e - b); });
}

void fill_random(void* dst, std::uint64_t bytes, std::uint64_t seed, unsigned threads) {
    auto* out = static_cast<std::uint8_t*>(dst);
    const std::uint64_t words = (bytes + 7) / 8;
    const std::uint64_t key = splitmix64(seed);
    parallel_for(words, workers_for(bytes, threads), [&](std::uint64_t b, std::uint64_t e) {
        for (std::uint64_t w = b; w < e; ++w) {
            const std::uint64_t v = splitmix64(key ^ w);
            const std::uint64_t n = std::min<std::uint64_t>(8, bytes - w * 8);
            std::memcpy(out + w * 8, &v, n);
        }
    });
}

// ---- transpose ----------------------------------------------------------------------

void transpose(const void* src, void* dst, Dims2 dims, std::size_t elem, unsigned threads) {
    const std::uint64_t bytes = matrix_bytes(dims, elem);
    with_elem_type(elem, [&](auto tag) {
        using T = decltype(tag);
        parallel_for(dims.rows, workers_for(bytes, threads), [&](std::uint64_t b, std::uint64_t e) {
            transpose_blocked(static_cast<const T*>(src), static_cast<T*>(dst), dims.rows,
                              dims.cols, b, e);
        });
    });
}

void transpose_reference(const void* src, void* dst, Dims2 dims, std::size_t elem) {
    matrix_bytes(dims, elem);
    const auto* in = static_cast<const std::uint8_t*>(src);
    auto* out = static_cast<std::uint8_t*>(dst);
    for (std::uint64_t r = 0; r < dims.rows; ++r)
        for (std::uint64_t c = 0; c < dims.cols; ++c)
            std::memcpy(out + (c * dims.rows + r) * elem, in + (r * dims.cols + c) * elem, elem);
}

ByteCount transpose_bytes(Dims2 dims, std::size_t elem) {
    const std::uint64_t b = matrix_bytes(dims, elem);
    return {b, b};
}

// ---- records ------------------------------------------------------------------------

RecordLayout::RecordLayout(std::uint32_t record_bytes, std::vector<Field> fields)
    : m_record_bytes(record_bytes), m_fields(std::move(fields)) {
    if (m_fields.empty() || m_fields.size() > k_max_fields)
        throw UsageError(fmt::format("a record has {} fields", m_fields.size()),
                         fmt::format("use 1 to {} fields", k_max_fields));
    std::vector<Field> sorted = m_fields;
    std::sort(sorted.begin(), sorted.end(),
              [](const Field& a, const Field& b) { return a.offset < b.offset; });
    std::uint64_t covered = 0;
    for (const Field& f : sorted) {
        if (f.width != 1 && f.width != 2 && f.width != 4 && f.width != 8)
            throw UsageError(fmt::format("field width {} bytes is not supported", f.width),
                             "field widths are 1, 2, 4 or 8 bytes");
        if (std::uint64_t{f.offset} + f.width > record_bytes)
            throw UsageError(fmt::format("field of {} bytes at offset {} does not fit a {}-byte record",
                                         f.width, f.offset, record_bytes),
                             "make the record larger or the field narrower");
        if (f.offset < covered)
            throw UsageError(fmt::format("field at offset {} overlaps the previous field", f.offset),
                             "fields must not share bytes");
        covered = std::uint64_t{f.offset} + f.width;
    }
}

RecordLayout RecordLayout::natural(const std::vector<std::uint32_t>& widths) {
    std::vector<Field> fields;
    std::uint32_t at = 0, widest = 1;
    for (std::uint32_t w : widths) {
        const std::uint32_t align = std::max(1u, w);
        at = (at + align - 1) / align * align;
        fields.push_back({at, w});
        at += w;
        widest = std::max(widest, w);
    }
    return RecordLayout((at + widest - 1) / widest * widest, std::move(fields));
}

RecordLayout RecordLayout::packed(const std::vector<std::uint32_t>& widths) {
    std::vector<Field> fields;
    std::uint32_t at = 0;
    for (std::uint32_t w : widths) {
        fields.push_back({at, w});
        at += w;
    }
    return RecordLayout(at, std::move(fields));
}

std::uint32_t RecordLayout::field_bytes() const {
    std::uint32_t sum = 0;
    for (const Field& f : m_fields) sum += f.width;
    return sum;
}

bool RecordLayout::aligned() const {
    for (const Field& f : m_fields)
        if (f.offset % f.width != 0 || m_record_bytes % f.width != 0) return false;
    return true;
}

std::string RecordLayout::describe() const {
    std::string out = fmt::format("{}B:", m_record_bytes);
    for (const Field& f : m_fields) out += fmt::format(" {}@{}", f.width, f.offset);
    return out;
}

SoaLayout soa_layout(const RecordLayout& rec, std::uint64_t n) {
    if (n == 0) throw UsageError("zero records", "use at least one record");
    checked_mul(n, rec.record_bytes(), "record array byte count");
    SoaLayout s;
    std::uint64_t at = 0;
    for (const Field& f : rec.fields()) {
        s.offsets.push_back(at);
        const std::uint64_t bytes = checked_mul(n, f.width, "field array byte count");
        at += (bytes + 255) / 256 * 256;
    }
    s.bytes = at;
    return s;
}

void aos_to_soa(const void* aos, void* soa, const RecordLayout& rec, std::uint64_t n,
                unsigned threads) {
    const SoaLayout s = soa_layout(rec, n);
    const auto* in = static_cast<const std::uint8_t*>(aos);
    auto* out = static_cast<std::uint8_t*>(soa);
    const std::uint64_t rb = rec.record_bytes();
    parallel_for(n, workers_for(n * rb, threads), [&](std::uint64_t b, std::uint64_t e) {
        for (std::size_t f = 0; f < rec.fields().size(); ++f) {
            const Field& fd = rec.fields()[f];
            copy_field(in + b * rb + fd.offset, rb, out + s.offsets[f] + b * fd.width, fd.width,
                       fd.width, e - b);
        }
    });
}

void soa_to_aos(const void* soa, void* aos, const RecordLayout& rec, std::uint64_t n,
                unsigned threads) {
    const SoaLayout s = soa_layout(rec, n);
    const auto* in = static_cast<const std::uint8_t*>(soa);
    auto* out = static_cast<std::uint8_t*>(aos);
    const std::uint64_t rb = rec.record_bytes();
    parallel_for(n, workers_for(n * rb, threads), [&](std::uint64_t b, std::uint64_t e) {
        if (rec.has_gaps()) std::memset(out + b * rb, 0, (e - b) * rb);
        for (std::size_t f = 0; f < rec.fields().size(); ++f) {
            const Field& fd = rec.fields()[f];
            copy_field(in + s.offsets[f] + b * fd.width, fd.width, out + b * rb + fd.offset, rb,
                       fd.width, e - b);
        }
    });
}

void aos_to_soa_reference(const void* aos, void* soa, const RecordLayout& rec, std::uint64_t n) {
    const SoaLayout s = soa_layout(rec, n);
    const auto* in = static_cast<const std::uint8_t*>(aos);
    auto* out = static_cast<std::uint8_t*>(soa);
    for (std::uint64_t i = 0; i < n; ++i)
        for (std::size_t f = 0; f < rec.fields().size(); ++f) {
            const Field& fd = rec.fields()[f];
            for (std::uint32_t k = 0; k < fd.width; ++k)
                out[s.offsets[f] + i * fd.width + k] = in[i * rec.record_bytes() + fd.offset + k];
        }
}

void soa_to_aos_reference(const void* soa, void* aos, const RecordLayout& rec, std::uint64_t n) {
    const SoaLayout s = soa_layout(rec, n);
    const auto* in = static_cast<const std::uint8_t*>(soa);
    auto* out = static_cast<std::uint8_t*>(aos);
    for (std::uint64_t i = 0; i < n; ++i) {
        std::uint8_t* record = out + i * rec.record_bytes();
        for (std::uint32_t k = 0; k < rec.record_bytes(); ++k) record[k] = 0;
        for (std::size_t f = 0; f < rec.fields().size(); ++f) {
            const Field& fd = rec.fields()[f];
            for (std::uint32_t k = 0; k < fd.width; ++k)
                record[fd.offset + k] = in[s.offsets[f] + i * fd.width + k];
        }
    }
}

ByteCount aos_soa_bytes(const RecordLayout& rec, std::uint64_t n, bool to_soa) {
    soa_layout(rec, n);
    const std::uint64_t aos = n * rec.record_bytes(), fields = n * rec.field_bytes();
    return to_soa ? ByteCount{aos, fields} : ByteCount{fields, aos};
}

// ---- Arrow-style columns ------------------------------------------------------------

std::uint64_t bitmap_bytes(std::uint64_t n) { return n / 8 + (n % 8 != 0 ? 1 : 0); }

void arrow_fixed_to_dense(const void* values, const std::uint8_t* validity, void* dense,
                          std::uint64_t n, std::size_t width, const void* fill,
                          unsigned threads) {
    check_elem(width);
    const std::uint64_t bytes = checked_mul(n, width, "column byte count");
    with_elem_type(width, [&](auto tag) {
        using T = decltype(tag);
        T f;
        std::memcpy(&f, fill, sizeof f);
        const T* in = static_cast<const T*>(values);
        T* out = static_cast<T*>(dense);
        // Slices of whole bitmap bytes; a byte of eight valid entries is one plain copy.
        parallel_for(bitmap_bytes(n), workers_for(bytes, threads), [&](std::uint64_t b, std::uint64_t e) {
            for (std::uint64_t byte = b; byte < e; ++byte) {
                const std::uint64_t i0 = byte * 8, i1 = std::min(n, i0 + 8);
                const unsigned bits = validity != nullptr ? validity[byte] : 0xffu;
                if (bits == 0xffu) {
                    std::memcpy(out + i0, in + i0, (i1 - i0) * sizeof(T));
                    continue;
                }
                for (std::uint64_t i = i0; i < i1; ++i) out[i] = ((bits >> (i - i0)) & 1u) != 0 ? in[i] : f;
            }
        });
    });
}

std::uint64_t dense_to_arrow_fixed(const void* dense, void* values, std::uint8_t* validity,
                                   std::uint64_t n, std::size_t width, const void* null_value,
                                   unsigned threads) {
    check_elem(width);
    const std::uint64_t bytes = checked_mul(n, width, "column byte count");
    const unsigned workers = workers_for(bytes, threads);
    std::vector<std::uint64_t> nulls(workers, 0);
    with_elem_type(width, [&](auto tag) {
        using T = decltype(tag);
        T nv;
        std::memcpy(&nv, null_value, sizeof nv);
        const T* in = static_cast<const T*>(dense);
        T* out = static_cast<T*>(values);
        const std::uint64_t nbytes = bitmap_bytes(n);
        const std::uint64_t step = nbytes / workers, extra = nbytes % workers;
        parallel_for(workers, workers, [&](std::uint64_t wb, std::uint64_t we) {
            for (std::uint64_t w = wb; w < we; ++w) {
                const std::uint64_t b = w * step + std::min(w, extra);
                const std::uint64_t e = b + step + (w < extra ? 1 : 0);
                std::uint64_t count = 0;
                for (std::uint64_t byte = b; byte < e; ++byte) {
                    std::uint8_t bits = 0;
                    const std::uint64_t i_end = std::min(n, byte * 8 + 8);
                    for (std::uint64_t i = byte * 8; i < i_end; ++i) {
                        out[i] = in[i];
                        const bool valid = in[i] != nv;
                        bits |= static_cast<std::uint8_t>(valid) << (i & 7);
                        count += !valid;
                    }
                    validity[byte] = bits;
                }
                nulls[w] = count;
            }
        });
    });
    std::uint64_t total = 0;
    for (std::uint64_t c : nulls) total += c;
    return total;
}

void arrow_fixed_to_dense_reference(const void* values, const std::uint8_t* validity,
                                    void* dense, std::uint64_t n, std::size_t width,
                                    const void* fill) {
    check_elem(width);
    const auto* in = static_cast<const std::uint8_t*>(values);
    const auto* f = static_cast<const std::uint8_t*>(fill);
    auto* out = static_cast<std::uint8_t*>(dense);
    for (std::uint64_t i = 0; i < n; ++i) {
        const bool valid = validity == nullptr || ((validity[i / 8] >> (i % 8)) & 1) == 1;
        for (std::size_t k = 0; k < width; ++k) out[i * width + k] = valid ? in[i * width + k] : f[k];
    }
}

std::uint64_t dense_to_arrow_fixed_reference(const void* dense, void* values,
                                             std::uint8_t* validity, std::uint64_t n,
                                             std::size_t width, const void* null_value) {
    check_elem(width);
    const auto* in = static_cast<const std::uint8_t*>(dense);
    auto* out = static_cast<std::uint8_t*>(values);
    std::memset(validity, 0, bitmap_bytes(n));
    std::uint64_t nulls = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * width, in + i * width, width);
        if (std::memcmp(in + i * width, null_value, width) == 0)
            ++nulls;
        else
            validity[i / 8] = static_cast<std::uint8_t>(validity[i / 8] | (1u << (i % 8)));
    }
    return nulls;
}

ByteCount arrow_fixed_bytes(std::uint64_t n, std::size_t width, bool to_dense) {
    check_elem(width);
    const std::uint64_t values = checked_mul(n, width, "column byte count");
    const ByteCount arrow_side{values + bitmap_bytes(n), 0};
    return to_dense ? ByteCount{arrow_side.read, values} : ByteCount{values, arrow_side.read};
}

void arrow_binary_to_dense(const std::int32_t* offsets, const std::uint8_t* data,
                           const std::uint8_t* validity, std::uint8_t* dense, std::uint64_t n,
                           std::uint64_t width, std::uint8_t pad, unsigned threads) {
    if (width == 0) throw UsageError("dense width of 0 bytes", "use a width of at least 1 byte");
    const std::uint64_t bytes = checked_mul(n, width, "dense byte count");
    parallel_for(n, workers_for(bytes, threads), [&](std::uint64_t b, std::uint64_t e) {
        for (std::uint64_t i = b; i < e; ++i) {
            std::uint8_t* row = dense + i * width;
            std::uint64_t len = 0;
            if (validity == nullptr || bit_is_set(validity, i))
                len = std::min<std::uint64_t>(width, static_cast<std::uint64_t>(offsets[i + 1] - offsets[i]));
            std::memcpy(row, data + offsets[i], len);
            std::memset(row + len, pad, width - len);
        }
    });
}

std::uint64_t dense_to_arrow_binary(const std::uint8_t* dense, std::uint64_t n,
                                    std::uint64_t width, std::uint8_t pad,
                                    std::int32_t* offsets, std::uint8_t* data,
                                    unsigned threads) {
    if (width == 0) throw UsageError("dense width of 0 bytes", "use a width of at least 1 byte");
    const std::uint64_t bytes = checked_mul(n, width, "dense byte count");
    const unsigned workers = workers_for(bytes, threads);
    // Pass 1: each slice measures its rows; pass 2: slice totals become start offsets, then
    // each slice writes its offsets and copies its values.
    std::vector<std::uint64_t> slice_bytes(workers + 1, 0);
    auto length = [&](std::uint64_t i) {
        const std::uint8_t* row = dense + i * width;
        std::uint64_t len = width;
        while (len > 0 && row[len - 1] == pad) --len;
        return len;
    };
    const std::uint64_t step = n / workers, extra = n % workers;
    auto slice_begin = [&](std::uint64_t w) { return w * step + std::min(w, extra); };
    parallel_for(workers, workers, [&](std::uint64_t wb, std::uint64_t we) {
        for (std::uint64_t w = wb; w < we; ++w) {
            std::uint64_t sum = 0;
            for (std::uint64_t i = slice_begin(w); i < slice_begin(w + 1); ++i) sum += length(i);
            slice_bytes[w + 1] = sum;
        }
    });
    for (unsigned w = 0; w < workers; ++w) slice_bytes[w + 1] += slice_bytes[w];
    const std::uint64_t total = slice_bytes[workers];
    if (total > static_cast<std::uint64_t>(INT32_MAX))
        throw UsageError(fmt::format("{} bytes of values do not fit int32 offsets", total),
                         "use a smaller size");
    parallel_for(workers, workers, [&](std::uint64_t wb, std::uint64_t we) {
        for (std::uint64_t w = wb; w < we; ++w) {
            std::uint64_t at = slice_bytes[w];
            for (std::uint64_t i = slice_begin(w); i < slice_begin(w + 1); ++i) {
                const std::uint64_t len = length(i);
                offsets[i] = static_cast<std::int32_t>(at);
                std::memcpy(data + at, dense + i * width, len);
                at += len;
            }
        }
    });
    offsets[n] = static_cast<std::int32_t>(total);
    return total;
}

void arrow_binary_to_dense_reference(const std::int32_t* offsets, const std::uint8_t* data,
                                     const std::uint8_t* validity, std::uint8_t* dense,
                                     std::uint64_t n, std::uint64_t width, std::uint8_t pad) {
    for (std::uint64_t i = 0; i < n; ++i) {
        const bool valid = validity == nullptr || ((validity[i / 8] >> (i % 8)) & 1) == 1;
        const std::int64_t len = valid ? offsets[i + 1] - offsets[i] : 0;
        for (std::uint64_t k = 0; k < width; ++k)
            dense[i * width + k] = static_cast<std::int64_t>(k) < len ? data[offsets[i] + k] : pad;
    }
}

std::uint64_t dense_to_arrow_binary_reference(const std::uint8_t* dense, std::uint64_t n,
                                              std::uint64_t width, std::uint8_t pad,
                                              std::int32_t* offsets, std::uint8_t* data) {
    std::uint64_t at = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
        offsets[i] = static_cast<std::int32_t>(at);
        std::uint64_t len = 0;
        for (std::uint64_t k = 0; k < width; ++k)
            if (dense[i * width + k] != pad) len = k + 1;
        for (std::uint64_t k = 0; k < len; ++k) data[at + k] = dense[i * width + k];
        at += len;
    }
    offsets[n] = static_cast<std::int32_t>(at);
    return at;
}

ByteCount arrow_binary_bytes(std::uint64_t n, std::uint64_t width, std::uint64_t data_bytes,
                             bool with_validity, bool to_dense) {
    const std::uint64_t dense = checked_mul(n, width, "dense byte count");
    const std::uint64_t arrow = (n + 1) * 4 + data_bytes + (with_validity ? bitmap_bytes(n) : 0);
    return to_dense ? ByteCount{arrow, dense} : ByteCount{dense, arrow};
}

// ---- strided view -------------------------------------------------------------------

std::uint64_t view_extent(const StridedView& v) {
    if (v.dims.rows == 0 || v.dims.cols == 0)
        throw UsageError(fmt::format("view {}x{} has a zero dimension", v.dims.rows, v.dims.cols),
                         "every dimension must be at least 1");
    if (v.col_stride == 0)
        throw UsageError("view column stride is 0", "use a column stride of at least 1");
    const std::uint64_t row_span =
        checked_mul(v.dims.cols - 1, v.col_stride, "view row span") + 1;
    if (v.dims.rows > 1 && v.row_stride < row_span)
        throw UsageError(fmt::format("view rows overlap: row stride {} < row span {}",
                                     v.row_stride, row_span),
                         "use a row stride of at least (cols - 1) x col_stride + 1");
    std::uint64_t extent = checked_mul(v.dims.rows - 1, v.row_stride, "view extent");
    if (__builtin_add_overflow(extent, row_span, &extent) ||
        __builtin_add_overflow(extent, v.offset, &extent))
        throw UsageError("view extent overflows 64 bits", "use smaller dimensions");
    return extent;
}

void strided_to_contiguous(const void* parent, void* dst, const StridedView& view,
                           std::size_t elem, unsigned threads) {
    checked_mul(view_extent(view), elem, "view byte extent");
    const std::uint64_t bytes = matrix_bytes(view.dims, elem);
    with_elem_type(elem, [&](auto tag) {
        using T = decltype(tag);
        parallel_for(view.dims.rows, workers_for(bytes, threads),
                     [&](std::uint64_t b, std::uint64_t e) {
                         strided_rows(static_cast<const T*>(parent), static_cast<T*>(dst), view, b, e);
                     });
    });
}

void strided_to_contiguous_reference(const void* parent, void* dst, const StridedView& view,
                                     std::size_t elem) {
    view_extent(view);
    matrix_bytes(view.dims, elem);
    const auto* in = static_cast<const std::uint8_t*>(parent);
    auto* out = static_cast<std::uint8_t*>(dst);
    for (std::uint64_t r = 0; r < view.dims.rows; ++r)
        for (std::uint64_t c = 0; c < view.dims.cols; ++c)
            std::memcpy(out + (r * view.dims.cols + c) * elem,
                        in + (view.offset + r * view.row_stride + c * view.col_stride) * elem, elem);
}

ByteCount strided_bytes(const StridedView& view, std::size_t elem) {
    view_extent(view);
    const std::uint64_t b = matrix_bytes(view.dims, elem);
    return {b, b};
}

} // namespace interopbench

namespace interopbench {

std::uint64_t strided_sector_bytes(const StridedView& view, std::size_t elem, std::uint64_t sector) {
    view_extent(view);
    const std::uint64_t out = matrix_bytes(view.dims, elem);
    const std::uint64_t step = view.col_stride * elem;
    std::uint64_t read = 0;
    if (step > sector) {
        // Every element sits alone in its sector (elements never straddle one: 32 % elem == 0).
        read = checked_mul(view.dims.rows * view.dims.cols, sector, "sector bytes");
    } else {
        // Each row's span is fetched whole; rows that share a sector share its fetch.
        std::uint64_t last = ~0ull, sectors = 0;
        const std::uint64_t span = ((view.dims.cols - 1) * view.col_stride + 1) * elem;
        for (std::uint64_t r = 0; r < view.dims.rows; ++r) {
            const std::uint64_t first_byte = (view.offset + r * view.row_stride) * elem;
            const std::uint64_t s0 = first_byte / sector, s1 = (first_byte + span - 1) / sector;
            sectors += s1 - s0 + 1 - (s0 == last ? 1 : 0);
            last = s1;
        }
        read = sectors * sector;
    }
    return read + (out + sector - 1) / sector * sector;
}

} // namespace interopbench
