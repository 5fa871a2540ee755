#pragma once
/// Memory layout conversions on the host: shapes and their validation, byte accounting,
/// multi-threaded conversions (the `host` variant of the layout scenarios and the reference
/// the device kernels are checked against) and plain element-by-element references.
///
/// Conversions move bits: an element is 1, 2, 4 or 8 bytes and its value is never
/// interpreted, so fp16, fp32, fp64 and int8 differ only in width. Buffers never overlap.
/// `threads` is the number of workers (1 runs on the calling thread); small inputs use fewer.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace interopbench {

// ---- element types and shapes -------------------------------------------------------

/// Element types of the layout scenarios.
enum class DType { fp16, fp32, fp64, int8 };
/// Parses "fp16|fp32|fp64|int8"; throws UsageError otherwise.
DType parse_dtype(std::string_view text);
const char* to_string(DType t);
/// Bytes per element: 2, 4, 8, 1.
std::size_t dtype_size(DType t);

/// a * b; throws UsageError naming `what` when the product does not fit in 64 bits.
std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what);

/// Aspect of a generated matrix: square, tall-skinny (rows about 256 x cols) or
/// wide-short (cols about 256 x rows).
enum class ShapeKind { square, tall, wide };
/// Parses "square|tall|wide"; throws UsageError otherwise.
ShapeKind parse_shape(std::string_view text);
const char* to_string(ShapeKind s);

/// A rows x cols matrix, in elements.
struct Dims2 {
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;
};

/// Bytes of a `dims` matrix of `elem`-byte elements. Throws UsageError for a zero
/// dimension, an element size other than 1, 2, 4 or 8, or a byte count that overflows.
std::uint64_t matrix_bytes(Dims2 dims, std::size_t elem);

/// The matrix of `shape` with at most `bytes` bytes of `elem`-byte elements. Both dimensions
/// are odd, so no power-of-two tile divides them and every kernel runs its edge code; each
/// is at least 3. Throws UsageError when `bytes` is too small for the shape (the message
/// names the smallest size that works) or `elem` is not 1, 2, 4 or 8.
Dims2 dims_for(std::uint64_t bytes, std::size_t elem, ShapeKind shape);

/// Bytes a conversion reads and writes, each counted once.
struct ByteCount {
    std::uint64_t read = 0;
    std::uint64_t written = 0;
    std::uint64_t total() const { return read + written; }
};

/// memcpy of `bytes` split over `threads`: the plain copy that host conversions are
/// compared with.
void parallel_copy(void* dst, const void* src, std::uint64_t bytes, unsigned threads);

/// Fills `bytes` at `dst` with pseudo-random bytes from `seed` (a hash of the seed and the
/// 8-byte word index: reproducible, independent of `threads`).
void fill_random(void* dst, std::uint64_t bytes, std::uint64_t seed, unsigned threads);

// ---- transpose ----------------------------------------------------------------------

/// Transposes the row-major `dims` matrix at `src` into the row-major cols x rows matrix at
/// `dst`, i.e. writes the column-major form of the input. Column-major to row-major is the
/// same operation with the dimensions swapped. Blocked, split over `threads`.
void transpose(const void* src, void* dst, Dims2 dims, std::size_t elem, unsigned threads);
/// Element-by-element transpose on the calling thread.
void transpose_reference(const void* src, void* dst, Dims2 dims, std::size_t elem);
/// Reads and writes rows x cols x elem bytes each.
ByteCount transpose_bytes(Dims2 dims, std::size_t elem);

// ---- array of structs <-> struct of arrays --------------------------------------------

/// Most fields a record may have.
inline constexpr std::size_t k_max_fields = 16;

/// One field of a record: its byte offset in the record and its width (1, 2, 4 or 8).
struct Field {
    std::uint32_t offset = 0;
    std::uint32_t width = 0;
};

/// The layout of one record: its size and its fields. Bytes not covered by a field are
/// gaps (padding); they are not read into the struct of arrays and are written as zero
/// when records are rebuilt.
class RecordLayout {
public:
    /// Throws UsageError for no fields or more than k_max_fields, a width other than 1, 2, 4
    /// or 8, a field that does not fit in `record_bytes`, or fields that overlap.
    RecordLayout(std::uint32_t record_bytes, std::vector<Field> fields);
    /// C-struct layout: each field aligned to its width, the record padded to a multiple of
    /// the widest field.
    static RecordLayout natural(const std::vector<std::uint32_t>& widths);
    /// No padding at all: fields back to back, mostly unaligned.
    static RecordLayout packed(const std::vector<std::uint32_t>& widths);

    std::uint32_t record_bytes() const { return m_record_bytes; }
    const std::vector<Field>& fields() const { return m_fields; }
    /// Sum of the field widths.
    std::uint32_t field_bytes() const;
    /// True when some bytes of the record belong to no field.
    bool has_gaps() const { return field_bytes() < m_record_bytes; }
    /// True when every field offset is a multiple of its width and the record size a
    /// multiple of every width, so each field can be accessed as one aligned word.
    bool aligned() const;
    /// "16B: 8@0 4@8 2@12 1@14" (width@offset).
    std::string describe() const;

private:
    std::uint32_t m_record_bytes = 0;
    std::vector<Field> m_fields;
};

/// Where each field's array starts in one struct-of-arrays buffer of `n` records: byte
/// offsets, each a multiple of 256; `bytes` is the buffer size.
struct SoaLayout {
    std::vector<std::uint64_t> offsets;
    std::uint64_t bytes = 0;
};
/// Throws UsageError for n = 0 or when a size overflows.
SoaLayout soa_layout(const RecordLayout& rec, std::uint64_t n);

/// Splits `n` records at `aos` into the field arrays of `soa` (laid out by soa_layout).
void aos_to_soa(const void* aos, void* soa, const RecordLayout& rec, std::uint64_t n,
                unsigned threads);
/// Rebuilds `n` records at `aos` from the field arrays of `soa`; gap bytes become zero.
void soa_to_aos(const void* soa, void* aos, const RecordLayout& rec, std::uint64_t n,
                unsigned threads);
void aos_to_soa_reference(const void* aos, void* soa, const RecordLayout& rec, std::uint64_t n);
void soa_to_aos_reference(const void* soa, void* aos, const RecordLayout& rec, std::uint64_t n);
/// AoS side: whole records (gaps included); SoA side: the field bytes.
ByteCount aos_soa_bytes(const RecordLayout& rec, std::uint64_t n, bool to_soa);

// ---- Arrow-style columns <-> dense ----------------------------------------------------

/// Bytes of a validity bitmap of `n` entries: ceil(n / 8). Bit i (least significant bit
/// first) is 1 when entry i is valid, as in Arrow.
std::uint64_t bitmap_bytes(std::uint64_t n);
/// Bit `i` of an Arrow validity bitmap.
inline bool bit_is_set(const std::uint8_t* bitmap, std::uint64_t i) {
    return (bitmap[i >> 3] >> (i & 7)) & 1u;
}

/// Fixed-width column (n values of `width` bytes, validity bitmap; nullptr = all valid)
/// -> dense array of n values where nulls hold the `width` bytes at `fill`.
void arrow_fixed_to_dense(const void* values, const std::uint8_t* validity, void* dense,
                          std::uint64_t n, std::size_t width, const void* fill,
                          unsigned threads);
/// Dense array -> fixed-width column: values copied; an entry whose bytes equal the
/// `width` bytes at `null_value` is marked null. Bits past n in the last bitmap byte are 0.
/// Returns the null count.
std::uint64_t dense_to_arrow_fixed(const void* dense, void* values, std::uint8_t* validity,
                                   std::uint64_t n, std::size_t width, const void* null_value,
                                   unsigned threads);
void arrow_fixed_to_dense_reference(const void* values, const std::uint8_t* validity,
                                    void* dense, std::uint64_t n, std::size_t width,
                                    const void* fill);
std::uint64_t dense_to_arrow_fixed_reference(const void* dense, void* values,
                                             std::uint8_t* validity, std::uint64_t n,
                                             std::size_t width, const void* null_value);
/// Values plus bitmap on the Arrow side, n x width on the dense side.
ByteCount arrow_fixed_bytes(std::uint64_t n, std::size_t width, bool to_dense);

/// Variable-length binary column (int32 offsets[n + 1], data, validity; nullptr = all
/// valid) -> n x `width` bytes, row i holding value i cut to `width` bytes and padded with
/// `pad`; a null row is all `pad`. Throws UsageError when width is 0.
void arrow_binary_to_dense(const std::int32_t* offsets, const std::uint8_t* data,
                           const std::uint8_t* validity, std::uint8_t* dense, std::uint64_t n,
                           std::uint64_t width, std::uint8_t pad, unsigned threads);
/// n x `width` bytes -> binary column without nulls: value i is row i without its trailing
/// `pad` bytes (fixed-width padded strings, as numpy's 'S' type). `offsets` gets n + 1
/// entries; `data` must hold n x width bytes. Returns the data bytes. Throws UsageError when
/// they do not fit int32 offsets.
std::uint64_t dense_to_arrow_binary(const std::uint8_t* dense, std::uint64_t n,
                                    std::uint64_t width, std::uint8_t pad,
                                    std::int32_t* offsets, std::uint8_t* data,
                                    unsigned threads);
void arrow_binary_to_dense_reference(const std::int32_t* offsets, const std::uint8_t* data,
                                     const std::uint8_t* validity, std::uint8_t* dense,
                                     std::uint64_t n, std::uint64_t width, std::uint8_t pad);
std::uint64_t dense_to_arrow_binary_reference(const std::uint8_t* dense, std::uint64_t n,
                                              std::uint64_t width, std::uint8_t pad,
                                              std::int32_t* offsets, std::uint8_t* data);
/// Offsets (n + 1 int32), `data_bytes` of values and the bitmap when `with_validity` on
/// the Arrow side; n x width on the dense side.
ByteCount arrow_binary_bytes(std::uint64_t n, std::uint64_t width, std::uint64_t data_bytes,
                             bool with_validity, bool to_dense);

// ---- strided view -> contiguous --------------------------------------------------------

/// A 2-D view into a parent buffer: element (r, c) is parent element
/// offset + r * row_stride + c * col_stride (strides in elements, as DLPack).
struct StridedView {
    Dims2 dims;
    std::uint64_t row_stride = 0;
    std::uint64_t col_stride = 1;
    std::uint64_t offset = 0;
};
/// Elements the parent must hold for `view`. Throws UsageError for zero dimensions, a zero
/// column stride, rows that overlap (row_stride < (cols - 1) * col_stride + 1) or overflow.
std::uint64_t view_extent(const StridedView& view);
/// Copies the view's elements, row by row, into the dense rows x cols matrix at `dst`.
void strided_to_contiguous(const void* parent, void* dst, const StridedView& view,
                           std::size_t elem, unsigned threads);
void strided_to_contiguous_reference(const void* parent, void* dst, const StridedView& view,
                                     std::size_t elem);
/// The view's elements read (only those, not the gaps the hardware may also fetch) and
/// written.
ByteCount strided_bytes(const StridedView& view, std::size_t elem);
/// The device-memory traffic the view forces when memory moves in `sector`-byte sectors
/// aligned to the parent's start (a GPU's 32-byte sectors): every sector holding an element
/// of the view is read once (a sector two rows share, once), and the dense result is written
/// in whole sectors. At least strided_bytes(view, elem).total(); for column stride 2 about
/// 1.5 times it.
std::uint64_t strided_sector_bytes(const StridedView& view, std::size_t elem, std::uint64_t sector = 32);

} // namespace interopbench
