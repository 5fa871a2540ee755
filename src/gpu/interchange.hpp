#pragma once
/// Zero-copy exchange structures, written from the public specifications' field layouts:
/// DLPack 1.1 (DLTensor, the legacy DLManagedTensor and DLManagedTensorVersioned) and the
/// Arrow C data interface (ArrowSchema, ArrowArray) with the C device data interface
/// (ArrowDeviceArray). They are plain C layouts, binary compatible with any library that
/// speaks these protocols; the static_asserts below pin sizes and field offsets (LP64).
///
/// Around them, the producer and consumer halves of a handoff: export a buffer (the
/// structure owns its metadata and frees it when released, then tells the producer once),
/// check what was received, release. Host-only: device memory and events are opaque
/// pointers here; for CUDA the Arrow sync event is a `cudaEvent_t*`, as the spec says.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/convert.hpp"

namespace interopbench {

// ---- DLPack ---------------------------------------------------------------------------

/// The DLPack ABI this implementation speaks. A consumer rejects another major version.
inline constexpr std::uint32_t k_dlpack_major = 1;
inline constexpr std::uint32_t k_dlpack_minor = 1;

struct DLPackVersion {
    std::uint32_t major;
    std::uint32_t minor;
};

/// Where memory lives (values as in DLPack; only the CUDA-related ones are named).
enum class DLDeviceType : std::int32_t {
    cpu = 1,           ///< ordinary host memory
    cuda = 2,          ///< device memory
    cuda_host = 3,     ///< pinned host memory (cudaMallocHost)
    cuda_managed = 13, ///< managed memory (cudaMallocManaged)
};

struct DLDevice {
    DLDeviceType device_type;
    std::int32_t device_id; ///< 0 for host, pinned and managed memory
};

/// Type codes used here (DLPack values).
enum class DLDataTypeCode : std::uint8_t { int_ = 0, uint = 1, float_ = 2 };

/// Element type: code (a DLDataTypeCode value), bits per lane, lanes (1 for scalars).
struct DLDataType {
    std::uint8_t code;
    std::uint8_t bits;
    std::uint16_t lanes;
};

/// A strided tensor that owns nothing. Element (i0, i1, ...) is at
/// data + byte_offset + sum(i_k * strides[k]) * bits / 8; strides are in elements.
struct DLTensor {
    void* data;
    DLDevice device;
    std::int32_t ndim;
    DLDataType dtype;
    std::int64_t* shape;
    std::int64_t* strides;
    std::uint64_t byte_offset;
};

/// Legacy (unversioned) managed tensor: the consumer calls `deleter(self)` once when done.
struct DLManagedTensor {
    DLTensor dl_tensor;
    void* manager_ctx;
    void (*deleter)(DLManagedTensor* self);
};

/// Flag bits of DLManagedTensorVersioned::flags.
inline constexpr std::uint64_t k_dlpack_flag_read_only = 1ull << 0;
inline constexpr std::uint64_t k_dlpack_flag_is_copied = 1ull << 1;
inline constexpr std::uint64_t k_dlpack_flag_subbyte_padded = 1ull << 2;

/// Versioned managed tensor, the current exchange structure. Everything up to `flags`
/// keeps its place across major versions, so a consumer can always read the version and
/// call the deleter.
struct DLManagedTensorVersioned {
    DLPackVersion version;
    void* manager_ctx;
    void (*deleter)(DLManagedTensorVersioned* self);
    std::uint64_t flags;
    DLTensor dl_tensor;
};

static_assert(sizeof(DLDevice) == 8 && sizeof(DLDataType) == 4);
static_assert(sizeof(DLTensor) == 48 && offsetof(DLTensor, device) == 8 &&
              offsetof(DLTensor, ndim) == 16 && offsetof(DLTensor, dtype) == 20 &&
              offsetof(DLTensor, shape) == 24 && offsetof(DLTensor, strides) == 32 &&
              offsetof(DLTensor, byte_offset) == 40);
static_assert(sizeof(DLManagedTensor) == 64 && offsetof(DLManagedTensor, deleter) == 56);
static_assert(sizeof(DLManagedTensorVersioned) == 80 &&
              offsetof(DLManagedTensorVersioned, deleter) == 16 &&
              offsetof(DLManagedTensorVersioned, flags) == 24 &&
              offsetof(DLManagedTensorVersioned, dl_tensor) == 32);

/// DLPack element type of a layout dtype.
DLDataType dlpack_dtype(DType t);

/// What a producer hands over: memory, its device, element type, shape and strides.
struct TensorDesc {
    void* data = nullptr;
    DLDevice device{DLDeviceType::cpu, 0};
    DLDataType dtype{};
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> strides; ///< in elements; same length as shape
    std::uint64_t byte_offset = 0;
};

/// Row-major (C-order) strides of `shape`.
std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape);
/// Column-major (Fortran-order) strides of `shape`.
std::vector<std::int64_t> col_major_strides(const std::vector<std::int64_t>& shape);

/// Producer: a versioned managed tensor over `desc` (no data copied). It owns copies of the
/// shape and strides; its deleter frees them and then calls `on_release` (which must not
/// throw). Throws UsageError when shape and strides differ in length or a dimension is
/// negative.
DLManagedTensorVersioned* export_dlpack(const TensorDesc& desc, std::uint64_t flags,
                                        std::function<void()> on_release);
/// Producer: the legacy unversioned form, same ownership rules.
DLManagedTensor* export_dlpack_legacy(const TensorDesc& desc, std::function<void()> on_release);

/// What a consumer sees after checking a tensor.
struct TensorView {
    void* data = nullptr; ///< data + byte_offset
    DLDevice device{DLDeviceType::cpu, 0};
    DLDataType dtype{};
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> strides; ///< filled in (row-major) when the producer gave none
    bool read_only = false;
    bool is_copied = false;
};

/// Consumer: checks a versioned tensor and describes it; the caller keeps ownership and
/// releases it with release(). A different major version cannot be read: the tensor is
/// released (the deleter is the one field that is safe to use) and ConfigError is thrown.
/// Also throws ConfigError for a null pointer, negative ndim, missing shape, or lanes != 1.
TensorView import_dlpack(DLManagedTensorVersioned* tensor);
/// Consumer: the same checks for a legacy tensor (it has no version).
TensorView import_dlpack(const DLManagedTensor* tensor);
/// Calls the deleter once; null tensors and null deleters are allowed.
void release(DLManagedTensorVersioned* tensor);
void release(DLManagedTensor* tensor);

/// How a 2-D view is laid out in memory.
enum class MatrixOrder { row_major, col_major, other };
/// The order of a 2-D view: compact row-major, compact column-major, or anything else
/// (strided, not 2-D). A dimension of extent 1 matches either; row-major is reported first.
MatrixOrder matrix_order(const TensorView& view);
const char* to_string(MatrixOrder order);

// ---- Arrow C data interface -------------------------------------------------------------

inline constexpr std::int64_t k_arrow_flag_dictionary_ordered = 1;
inline constexpr std::int64_t k_arrow_flag_nullable = 2;
inline constexpr std::int64_t k_arrow_flag_map_keys_sorted = 4;

/// Type description of an array (format string, children, release callback).
struct ArrowSchema {
    const char* format;
    const char* name;
    const char* metadata;
    std::int64_t flags;
    std::int64_t n_children;
    ArrowSchema** children;
    ArrowSchema* dictionary;
    void (*release)(ArrowSchema*);
    void* private_data;
};

/// Data of an array: buffers (validity first), children, release callback. `release` is
/// null once released.
struct ArrowArray {
    std::int64_t length;
    std::int64_t null_count;
    std::int64_t offset;
    std::int64_t n_buffers;
    std::int64_t n_children;
    const void** buffers;
    ArrowArray** children;
    ArrowArray* dictionary;
    void (*release)(ArrowArray*);
    void* private_data;
};

/// Device type of the Arrow device interface (same values as DLPack).
using ArrowDeviceType = std::int32_t;
inline constexpr ArrowDeviceType k_arrow_device_cpu = 1;
inline constexpr ArrowDeviceType k_arrow_device_cuda = 2;
inline constexpr ArrowDeviceType k_arrow_device_cuda_host = 3;
inline constexpr ArrowDeviceType k_arrow_device_cuda_managed = 13;

/// An array whose buffers live on a device, with the event a consumer waits on before
/// reading them (null when no wait is needed). Released through `array.release`.
struct ArrowDeviceArray {
    ArrowArray array;
    std::int64_t device_id;
    ArrowDeviceType device_type;
    void* sync_event;
    std::int64_t reserved[3];
};

static_assert(sizeof(ArrowSchema) == 72 && offsetof(ArrowSchema, release) == 56);
static_assert(sizeof(ArrowArray) == 80 && offsetof(ArrowArray, buffers) == 40 &&
              offsetof(ArrowArray, release) == 64);
static_assert(sizeof(ArrowDeviceArray) == 128 && offsetof(ArrowDeviceArray, device_id) == 80 &&
              offsetof(ArrowDeviceArray, device_type) == 88 &&
              offsetof(ArrowDeviceArray, sync_event) == 96 &&
              offsetof(ArrowDeviceArray, reserved) == 104);

/// Arrow format string of a layout dtype: int8 "c", fp16 "e", fp32 "f", fp64 "g".
const char* arrow_format(DType t);

/// Producer: the schema of a fixed-size list of `list_size` elements of format
/// `elem_format` ("+w:<list_size>" with one child "item"), the field named `name`. A matrix
/// whose rows are the lists is row-major; whose columns are the lists, column-major. Arrow
/// has no strides, so the name is where a producer says which ("rows" or "columns" here).
/// Throws UsageError for list_size < 1.
void export_fixed_size_list_schema(const char* elem_format, std::int64_t list_size,
                                   const char* name, ArrowSchema* out);
/// Producer: the array of `length` lists of `list_size` elements stored contiguously at
/// `data` (no nulls, nothing copied), on the given device, with `sync_event`. Releasing it
/// releases its child (unless the child was moved out and released on its own), then calls
/// `on_release` once (it must not throw).
void export_fixed_size_list_array(const void* data, std::int64_t length, std::int64_t list_size,
                                  ArrowDeviceType device_type, std::int64_t device_id,
                                  void* sync_event, std::function<void()> on_release,
                                  ArrowDeviceArray* out);

/// What a consumer found in a fixed-size-list device array.
struct ArrowListView {
    std::string name;           ///< the field name
    const void* data = nullptr; ///< first element, offsets applied
    std::int64_t length = 0;    ///< number of lists
    std::int64_t list_size = 0; ///< elements per list
    ArrowDeviceType device_type = k_arrow_device_cpu;
    std::int64_t device_id = 0;
    void* sync_event = nullptr;
};
/// Consumer: checks that `schema` is a fixed-size list of `elem_format` and that `array`
/// matches it (buffer and child counts, no nulls, not released); throws ConfigError naming
/// what differs.
ArrowListView import_fixed_size_list(const ArrowSchema& schema, const ArrowDeviceArray& array,
                                     const char* elem_format);
/// Calls the release callback unless already released; afterwards release is null.
void release(ArrowSchema* schema);
void release(ArrowArray* array);
void release(ArrowDeviceArray* array);

} // namespace interopbench
