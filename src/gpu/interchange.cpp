// DLPack and Arrow exchange structures: producers allocate one holder per exported object
// that owns everything the C structure points to (shape, strides, buffer lists, format
// strings, children); the C release callback frees the holder and then notifies the
// producer. Consumers only read the C structures and check them against the specs.
#include "gpu/interchange.hpp"

#include <charconv>
#include <memory>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "interopbench/errors.hpp"

namespace interopbench {

namespace {

void check_desc(const TensorDesc& desc) {
    if (desc.shape.size() != desc.strides.size())
        throw UsageError(fmt::format("tensor has {} dimensions but {} strides", desc.shape.size(),
                                     desc.strides.size()),
                         "give one stride per dimension");
    for (std::int64_t d : desc.shape)
        if (d < 0)
            throw UsageError(fmt::format("tensor dimension {} is negative", d),
                             "dimensions are 0 or more");
}

template <class Managed>
struct DlpackHolder {
    Managed managed{};
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> strides;
    std::function<void()> on_release;
};

template <class Managed>
DlpackHolder<Managed>* make_holder(const TensorDesc& desc, std::function<void()> on_release) {
    check_desc(desc);
    auto holder = std::make_unique<DlpackHolder<Managed>>();
    holder->shape = desc.shape;
    holder->strides = desc.strides;
    holder->on_release = std::move(on_release);
    DLTensor& t = holder->managed.dl_tensor;
    t.data = desc.data;
    t.device = desc.device;
    t.ndim = static_cast<std::int32_t>(desc.shape.size());
    t.dtype = desc.dtype;
    t.shape = holder->shape.empty() ? nullptr : holder->shape.data();
    t.strides = holder->strides.empty() ? nullptr : holder->strides.data();
    t.byte_offset = desc.byte_offset;
    holder->managed.manager_ctx = holder.get();
    holder->managed.deleter = [](Managed* self) noexcept {
        auto* h = static_cast<DlpackHolder<Managed>*>(self->manager_ctx);
        std::function<void()> notify = std::move(h->on_release);
        delete h;
        if (notify) notify();
    };
    return holder.release();
}

TensorView view_of(const DLTensor& t) {
    if (t.ndim < 0) throw ConfigError(fmt::format("DLPack tensor has ndim {}", t.ndim));
    if (t.ndim > 0 && t.shape == nullptr) throw ConfigError("DLPack tensor has no shape");
    if (t.dtype.lanes != 1)
        throw ConfigError(fmt::format("DLPack tensor has {} lanes per element; only 1 is read",
                                      t.dtype.lanes));
    TensorView v;
    v.data = t.data == nullptr ? nullptr : static_cast<char*>(t.data) + t.byte_offset;
    v.device = t.device;
    v.dtype = t.dtype;
    v.shape.assign(t.shape, t.shape + t.ndim);
    if (t.strides != nullptr)
        v.strides.assign(t.strides, t.strides + t.ndim);
    else
        v.strides = row_major_strides(v.shape);
    return v;
}

// Owns one exported ArrowArray's buffer list and children; `child` is a child array
// owned by this holder until released.
struct ArrowArrayHolder {
    std::vector<const void*> buffers;
    std::vector<ArrowArray*> children;
    std::vector<std::unique_ptr<ArrowArray>> child_storage;
    std::function<void()> on_release;
};

void release_array_holder(ArrowArray* array) noexcept {
    auto* h = static_cast<ArrowArrayHolder*>(array->private_data);
    for (ArrowArray* child : h->children)
        if (child->release != nullptr) child->release(child);
    std::function<void()> notify = std::move(h->on_release);
    delete h;
    array->release = nullptr;
    array->private_data = nullptr;
    if (notify) notify();
}

void fill_array(ArrowArray* out, std::int64_t length, std::vector<const void*> buffers,
                std::unique_ptr<ArrowArray> child, std::function<void()> on_release) {
    auto holder = std::make_unique<ArrowArrayHolder>();
    holder->buffers = std::move(buffers);
    holder->on_release = std::move(on_release);
    if (child) {
        holder->children.push_back(child.get());
        holder->child_storage.push_back(std::move(child));
    }
    *out = ArrowArray{};
    out->length = length;
    out->null_count = 0;
    out->offset = 0;
    out->n_buffers = static_cast<std::int64_t>(holder->buffers.size());
    out->n_children = static_cast<std::int64_t>(holder->children.size());
    out->buffers = holder->buffers.data();
    out->children = holder->children.empty() ? nullptr : holder->children.data();
    out->dictionary = nullptr;
    out->release = release_array_holder;
    out->private_data = holder.release();
}

struct ArrowSchemaHolder {
    std::string format;
    std::string name;
    std::vector<ArrowSchema*> children;
    std::vector<std::unique_ptr<ArrowSchema>> child_storage;
};

void release_schema_holder(ArrowSchema* schema) noexcept {
    auto* h = static_cast<ArrowSchemaHolder*>(schema->private_data);
    for (ArrowSchema* child : h->children)
        if (child->release != nullptr) child->release(child);
    delete h;
    schema->release = nullptr;
    schema->private_data = nullptr;
}

void fill_schema(ArrowSchema* out, std::string format, std::string name,
                 std::unique_ptr<ArrowSchema> child) {
    auto holder = std::make_unique<ArrowSchemaHolder>();
    holder->format = std::move(format);
    holder->name = std::move(name);
    if (child) {
        holder->children.push_back(child.get());
        holder->child_storage.push_back(std::move(child));
    }
    *out = ArrowSchema{};
    out->format = holder->format.c_str();
    out->name = holder->name.c_str();
    out->metadata = nullptr;
    out->flags = 0;
    out->n_children = static_cast<std::int64_t>(holder->children.size());
    out->children = holder->children.empty() ? nullptr : holder->children.data();
    out->dictionary = nullptr;
    out->release = release_schema_holder;
    out->private_data = holder.release();
}

std::size_t format_width(const char* format) {
    const std::string_view f(format);
    if (f == "c" || f == "C") return 1;
    if (f == "e" || f == "s" || f == "S") return 2;
    if (f == "f" || f == "i" || f == "I") return 4;
    if (f == "g" || f == "l" || f == "L") return 8;
    return 0;
}

} // namespace

// ---- DLPack ---------------------------------------------------------------------------

DLDataType dlpack_dtype(DType t) {
    const auto bits = static_cast<std::uint8_t>(dtype_size(t) * 8);
    const auto code = t == DType::int8 ? DLDataTypeCode::int_ : DLDataTypeCode::float_;
    return DLDataType{static_cast<std::uint8_t>(code), bits, 1};
}

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape) {
    std::vector<std::int64_t> s(shape.size(), 1);
    for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
    return s;
}

std::vector<std::int64_t> col_major_strides(const std::vector<std::int64_t>& shape) {
    std::vector<std::int64_t> s(shape.size(), 1);
    for (std::size_t i = 1; i < shape.size(); ++i) s[i] = s[i - 1] * shape[i - 1];
    return s;
}

DLManagedTensorVersioned* export_dlpack(const TensorDesc& desc, std::uint64_t flags,
                                        std::function<void()> on_release) {
    auto* holder = make_holder<DLManagedTensorVersioned>(desc, std::move(on_release));
    holder->managed.version = DLPackVersion{k_dlpack_major, k_dlpack_minor};
    holder->managed.flags = flags;
    return &holder->managed;
}

DLManagedTensor* export_dlpack_legacy(const TensorDesc& desc, std::function<void()> on_release) {
    return &make_holder<DLManagedTensor>(desc, std::move(on_release))->managed;
}

TensorView import_dlpack(DLManagedTensorVersioned* tensor) {
    if (tensor == nullptr) throw ConfigError("DLPack tensor is null");
    if (tensor->version.major != k_dlpack_major) {
        const DLPackVersion got = tensor->version;
        release(tensor);
        throw ConfigError(fmt::format("DLPack version {}.{} cannot be read (this side speaks {}.x)",
                                      got.major, got.minor, k_dlpack_major));
    }
    TensorView v = view_of(tensor->dl_tensor);
    v.read_only = (tensor->flags & k_dlpack_flag_read_only) != 0;
    v.is_copied = (tensor->flags & k_dlpack_flag_is_copied) != 0;
    return v;
}

TensorView import_dlpack(const DLManagedTensor* tensor) {
    if (tensor == nullptr) throw ConfigError("DLPack tensor is null");
    return view_of(tensor->dl_tensor);
}

void release(DLManagedTensorVersioned* tensor) {
    if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
}

void release(DLManagedTensor* tensor) {
    if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
}

MatrixOrder matrix_order(const TensorView& view) {
    if (view.shape.size() != 2 || view.strides.size() != 2) return MatrixOrder::other;
    const std::int64_t rows = view.shape[0], cols = view.shape[1];
    const bool row_major = (cols == 1 || view.strides[1] == 1) && (rows == 1 || view.strides[0] == cols);
    if (row_major) return MatrixOrder::row_major;
    const bool col_major = (rows == 1 || view.strides[0] == 1) && (cols == 1 || view.strides[1] == rows);
    return col_major ? MatrixOrder::col_major : MatrixOrder::other;
}

const char* to_string(MatrixOrder order) {
    switch (order) {
    case MatrixOrder::row_major: return "row_major";
    case MatrixOrder::col_major: return "col_major";
    case MatrixOrder::other: return "other";
    }
    return "?";
}

// ---- Arrow ------------------------------------------------------------------------------

const char* arrow_format(DType t) {
    switch (t) {
    case DType::int8: return "c";
    case DType::fp16: return "e";
    case DType::fp32: return "f";
    case DType::fp64: return "g";
    }
    return "";
}

void export_fixed_size_list_schema(const char* elem_format, std::int64_t list_size,
                                   const char* name, ArrowSchema* out) {
    if (list_size < 1)
        throw UsageError(fmt::format("fixed-size list of {} elements", list_size),
                         "a list holds at least one element");
    auto child = std::make_unique<ArrowSchema>();
    fill_schema(child.get(), elem_format, "item", nullptr);
    fill_schema(out, fmt::format("+w:{}", list_size), name != nullptr ? name : "", std::move(child));
}

void export_fixed_size_list_array(const void* data, std::int64_t length, std::int64_t list_size,
                                  ArrowDeviceType device_type, std::int64_t device_id,
                                  void* sync_event, std::function<void()> on_release,
                                  ArrowDeviceArray* out) {
    if (list_size < 1 || length < 0)
        throw UsageError(fmt::format("fixed-size list array of {} lists of {} elements", length,
                                     list_size),
                         "a list holds at least one element; the length is 0 or more");
    auto child = std::make_unique<ArrowArray>();
    // Child: no validity bitmap, then the values.
    fill_array(child.get(), length * list_size, {nullptr, data}, nullptr, nullptr);
    *out = ArrowDeviceArray{};
    fill_array(&out->array, length, {nullptr}, std::move(child), std::move(on_release));
    out->device_id = device_id;
    out->device_type = device_type;
    out->sync_event = sync_event;
}

ArrowListView import_fixed_size_list(const ArrowSchema& schema, const ArrowDeviceArray& array,
                                     const char* elem_format) {
    if (schema.release == nullptr) throw ConfigError("Arrow schema was already released");
    if (array.array.release == nullptr) throw ConfigError("Arrow array was already released");
    const std::string_view format(schema.format != nullptr ? schema.format : "");
    std::int64_t list_size = 0;
    const char* digits = format.data() + std::min<std::size_t>(3, format.size());
    const auto parsed = std::from_chars(digits, format.data() + format.size(), list_size);
    if (format.substr(0, 3) != "+w:" || parsed.ec != std::errc{} ||
        parsed.ptr != format.data() + format.size() || list_size < 1)
        throw ConfigError(fmt::format("Arrow format '{}' is not a fixed-size list", format));
    if (schema.n_children != 1 || schema.children == nullptr || schema.children[0] == nullptr ||
        std::string_view(schema.children[0]->format) != elem_format)
        throw ConfigError(fmt::format("Arrow fixed-size list does not hold '{}' elements", elem_format));
    const ArrowArray& parent = array.array;
    if (parent.n_buffers != 1 || parent.n_children != 1 || parent.children == nullptr)
        throw ConfigError(fmt::format("Arrow fixed-size list array has {} buffers and {} children, "
                                      "expected 1 and 1",
                                      parent.n_buffers, parent.n_children));
    const ArrowArray& child = *parent.children[0];
    if (child.release == nullptr) throw ConfigError("Arrow child array was already released");
    if (child.n_buffers != 2 || child.buffers == nullptr)
        throw ConfigError(fmt::format("Arrow '{}' array has {} buffers, expected 2", elem_format,
                                      child.n_buffers));
    if (parent.null_count != 0 || child.null_count != 0)
        throw ConfigError("Arrow fixed-size list array has nulls; a dense matrix has none");
    if (child.length < (parent.offset + parent.length) * list_size + child.offset)
        throw ConfigError(fmt::format("Arrow child holds {} elements, fewer than {} lists of {}",
                                      child.length, parent.length, list_size));
    const std::size_t width = format_width(elem_format);
    if (width == 0) throw ConfigError(fmt::format("Arrow format '{}' is not fixed-width", elem_format));
    ArrowListView v;
    v.name = schema.name != nullptr ? schema.name : "";
    v.data = static_cast<const char*>(child.buffers[1]) +
             (child.offset + parent.offset * list_size) * static_cast<std::int64_t>(width);
    v.length = parent.length;
    v.list_size = list_size;
    v.device_type = array.device_type;
    v.device_id = array.device_id;
    v.sync_event = array.sync_event;
    return v;
}

void release(ArrowSchema* schema) {
    if (schema != nullptr && schema->release != nullptr) schema->release(schema);
}

void release(ArrowArray* array) {
    if (array != nullptr && array->release != nullptr) array->release(array);
}

void release(ArrowDeviceArray* array) {
    if (array != nullptr) release(&array->array);
}

} // namespace interopbench
