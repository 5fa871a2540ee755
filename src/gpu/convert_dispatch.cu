// The launch functions of convert_kernels.hpp: the argument checks (alignment, empty and
// oversized inputs), then the kernel group's entry point (convert_groups.cuh), which picks the
// kernel by element size or row width, sizes the grid and launches. No device code here.
#include "gpu/convert_groups.cuh"

#include <climits>
#include <cstdint>

namespace interopbench::kernels {

namespace {

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

} // namespace

cudaError_t launch_transpose(void* dst, const void* src, Dims2 dims, std::size_t elem, cudaStream_t stream) {
    if (dims.rows == 0 || dims.cols == 0 || !aligned16(dst) || !aligned16(src)) return cudaErrorInvalidValue;
    return detail::transpose(dst, src, dims, elem, stream);
}

cudaError_t launch_aos_to_soa(void* soa, const void* aos, const RecordLayout& rec, std::uint64_t n,
                              cudaStream_t stream) {
    if (!aligned16(soa) || !aligned16(aos)) return cudaErrorInvalidValue;
    return detail::aos_to_soa(soa, aos, rec, n, stream);
}

cudaError_t launch_soa_to_aos(void* aos, const void* soa, const RecordLayout& rec, std::uint64_t n,
                              cudaStream_t stream) {
    if (!aligned16(soa) || !aligned16(aos)) return cudaErrorInvalidValue;
    return detail::soa_to_aos(aos, soa, rec, n, stream);
}

cudaError_t launch_arrow_fixed_to_dense(void* dense, const void* values, const std::uint8_t* validity,
                                        std::uint64_t n, std::size_t width, std::uint64_t fill,
                                        cudaStream_t stream) {
    if (n == 0 || !aligned16(dense) || !aligned16(values) || !aligned16(validity)) return cudaErrorInvalidValue;
    return detail::arrow_fixed_to_dense(dense, values, validity, n, width, fill, stream);
}

cudaError_t launch_dense_to_arrow_fixed(void* values, std::uint8_t* validity, const void* dense,
                                        std::uint64_t n, std::size_t width, std::uint64_t null_value,
                                        cudaStream_t stream) {
    if (n == 0 || !aligned16(values) || !aligned16(validity) || !aligned16(dense)) return cudaErrorInvalidValue;
    return detail::dense_to_arrow_fixed(values, validity, dense, n, width, null_value, stream);
}

cudaError_t launch_arrow_binary_to_dense(std::uint8_t* dense, const std::int32_t* offsets,
                                         const std::uint8_t* data, const std::uint8_t* validity,
                                         std::uint64_t n, std::uint64_t width, std::uint8_t pad,
                                         cudaStream_t stream) {
    if (n == 0 || width == 0 || width % 16 != 0 || width > UINT_MAX || !aligned16(dense) || !aligned16(data))
        return cudaErrorInvalidValue;
    return detail::arrow_binary_to_dense(dense, offsets, data, validity, n, width, pad, stream);
}

cudaError_t launch_dense_to_arrow_binary(std::int32_t* offsets, std::uint8_t* data,
                                         const std::uint8_t* dense, std::uint64_t n,
                                         std::uint64_t width, std::uint8_t pad, void* scratch,
                                         cudaStream_t stream) {
    if (n == 0 || width == 0 || width % 16 != 0 || width > 256 || !aligned16(dense) || !aligned16(data) ||
        scratch == nullptr)
        return cudaErrorInvalidValue;
    return detail::dense_to_arrow_binary(offsets, data, dense, n, width, pad, scratch, stream);
}

cudaError_t launch_strided_to_contiguous(void* dst, const void* parent, const StridedView& view,
                                         std::size_t elem, cudaStream_t stream) {
    if (view.dims.rows == 0 || view.dims.cols == 0 || (view.col_stride != 1 && view.col_stride != 2) ||
        !aligned16(dst) || !aligned16(parent))
        return cudaErrorInvalidValue;
    return detail::strided_to_contiguous(dst, parent, view, elem, stream);
}

} // namespace interopbench::kernels
