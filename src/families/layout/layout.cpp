// Layout conversions: layout_transpose, layout_aos_soa, layout_arrow_dense, layout_strided.
//
// What: the cost of changing how data is laid out: row-major <-> column-major transposes
// (fp16, fp32, fp64, int8; square, tall-skinny, wide-short), array of structs <-> struct of
// arrays for records of mixed field widths, Arrow-style columns <-> dense arrays
// (fixed-width with a validity bitmap, nulls filled; variable-length binary padded to a
// fixed width) and strided views -> contiguous. Variant `gpu` runs the CUDA kernels on the
// first selected GPU; variant `host` runs the multi-threaded host code on every host core
// and needs no GPU.
// How: one sample times a run of conversions, then a run of plain copies of the same byte
// count in the same configuration: cudaMemcpyAsync device to device (gpu, CUDA events, the
// stream held while enqueueing) or memcpy over the same threads (host, host clock). Each
// run lasts about half the sample time.
// Reports: bandwidth (bytes read + written per conversion over its time), time per
// conversion, copy_bandwidth (the copy, counted the same way), efficiency = bandwidth /
// copy_bandwidth. Shapes come from the size: dimensions and record counts are odd, so no
// tile divides them and every kernel runs its edge code.
// Checked after sampling on random inputs (never zeros): outputs are poisoned, converted
// once more and compared byte for byte with the host result (gpu) or with the
// element-by-element reference (host).
// Caveats: bytes counted are those the conversion must move; a strided view with column
// stride 2 makes the hardware fetch the skipped elements too, and the binary column's
// data is read as much as its values' lengths say.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "gpu/cuda_util.hpp"
#include "gpu/device_copy.hpp"
#include "interopbench/errors.hpp"
#include "gpu/convert.hpp"
#include "interopbench/params.hpp"
#include "gpu/convert_kernels.hpp"
#include "topology/topology.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {
namespace {

constexpr std::uint8_t k_poison = 0xA5;
constexpr std::uint64_t k_seed = 0x6c61796f7574;
constexpr int k_max_reps = 200; // enqueued while the stream is held
constexpr std::uint64_t k_binary_width = 32;
constexpr std::uint8_t k_binary_pad = 0;
/// Nulls of fixed-width columns hold all-ones bytes (a NaN for the float types); the way
/// back recognises them by the same bytes.
constexpr std::uint64_t k_null_bits = ~0ull;

using Inputs = std::vector<const std::uint8_t*>;
using Outputs = std::vector<std::uint8_t*>;

std::uint64_t odd_count(std::uint64_t n) { return n % 2 == 0 ? n - 1 : n; }
std::uint64_t round16(std::uint64_t n) { return (n + 15) / 16 * 16; }

/// A validity bitmap with about one null in eight.
void fill_validity(std::uint8_t* bits, std::uint64_t n, std::uint64_t seed) {
    const std::uint64_t bytes = bitmap_bytes(n);
    std::vector<std::uint8_t> a(bytes), b(bytes), c(bytes);
    fill_random(a.data(), bytes, seed, 1);
    fill_random(b.data(), bytes, seed + 1, 1);
    fill_random(c.data(), bytes, seed + 2, 1);
    for (std::uint64_t i = 0; i < bytes; ++i) bits[i] = a[i] | b[i] | c[i];
    if (n % 8 != 0) bits[bytes - 1] &= static_cast<std::uint8_t>((1u << (n % 8)) - 1);
}

/// One conversion: its buffers, how to fill them and how to run it on the host and on a GPU.
class LayoutOp {
public:
    virtual ~LayoutOp() = default;
    virtual std::vector<std::uint64_t> input_bytes() const = 0;
    virtual std::vector<std::uint64_t> output_bytes() const = 0;
    virtual ByteCount bytes() const = 0;
    /// Random inputs with the structure the conversion expects.
    virtual void fill(const Outputs& in, unsigned threads) const = 0;
    virtual void run_host(const Inputs& in, const Outputs& out, unsigned threads) const = 0;
    /// The element-by-element reference (single thread).
    virtual void run_reference(const Inputs& in, const Outputs& out) const = 0;
    virtual cudaError_t launch(const Inputs& in, const Outputs& out, void* scratch, cudaStream_t s) const = 0;
    /// Device scratch the launches share, all zero before the first.
    virtual std::uint64_t scratch_bytes() const { return 0; }
    /// Shape facts for the report.
    virtual nlohmann::json facts() const = 0;
    /// The least device-memory traffic the layout forces, in whole 32-byte sectors, when it
    /// is more than bytes().total() (views that skip elements make the hardware fetch the
    /// sectors holding them); 0 when the bytes counted are the traffic.
    virtual std::uint64_t sector_bytes() const { return 0; }
};

class TransposeOp final : public LayoutOp {
public:
    TransposeOp(Dims2 dims, std::size_t elem) : m_dims(dims), m_elem(elem), m_bytes(matrix_bytes(dims, elem)) {}
    std::vector<std::uint64_t> input_bytes() const override { return {m_bytes}; }
    std::vector<std::uint64_t> output_bytes() const override { return {m_bytes}; }
    ByteCount bytes() const override { return transpose_bytes(m_dims, m_elem); }
    void fill(const Outputs& in, unsigned threads) const override { fill_random(in[0], m_bytes, k_seed, threads); }
    void run_host(const Inputs& in, const Outputs& out, unsigned threads) const override {
        transpose(in[0], out[0], m_dims, m_elem, threads);
    }
    void run_reference(const Inputs& in, const Outputs& out) const override {
        transpose_reference(in[0], out[0], m_dims, m_elem);
    }
    cudaError_t launch(const Inputs& in, const Outputs& out, void*, cudaStream_t s) const override {
        return kernels::launch_transpose(out[0], in[0], m_dims, m_elem, s);
    }
    nlohmann::json facts() const override {
        return {{"rows", m_dims.rows}, {"cols", m_dims.cols}, {"element_bytes", m_elem},
                {"conversion", "row-major rows x cols -> column-major (row-major cols x rows); column-major to "
                               "row-major is the same operation on the swapped shape (tall <-> wide)"}};
    }

private:
    Dims2 m_dims;
    std::size_t m_elem;
    std::uint64_t m_bytes;
};

class AosSoaOp final : public LayoutOp {
public:
    AosSoaOp(RecordLayout rec, std::uint64_t n, bool to_soa)
        : m_rec(std::move(rec)), m_n(n), m_to_soa(to_soa), m_soa(soa_layout(m_rec, n)) {}
    std::vector<std::uint64_t> input_bytes() const override { return {m_to_soa ? aos() : m_soa.bytes}; }
    std::vector<std::uint64_t> output_bytes() const override { return {m_to_soa ? m_soa.bytes : aos()}; }
    ByteCount bytes() const override { return aos_soa_bytes(m_rec, m_n, m_to_soa); }
    void fill(const Outputs& in, unsigned threads) const override {
        fill_random(in[0], input_bytes()[0], k_seed, threads);
    }
    void run_host(const Inputs& in, const Outputs& out, unsigned threads) const override {
        if (m_to_soa) aos_to_soa(in[0], out[0], m_rec, m_n, threads);
        else soa_to_aos(in[0], out[0], m_rec, m_n, threads);
    }
    void run_reference(const Inputs& in, const Outputs& out) const override {
        if (m_to_soa) aos_to_soa_reference(in[0], out[0], m_rec, m_n);
        else soa_to_aos_reference(in[0], out[0], m_rec, m_n);
    }
    cudaError_t launch(const Inputs& in, const Outputs& out, void*, cudaStream_t s) const override {
        return m_to_soa ? kernels::launch_aos_to_soa(out[0], in[0], m_rec, m_n, s)
                        : kernels::launch_soa_to_aos(out[0], in[0], m_rec, m_n, s);
    }
    nlohmann::json facts() const override {
        return {{"records", m_n}, {"record", m_rec.describe()}, {"fields", m_rec.fields().size()},
                {"field_arrays", "one buffer, each array starting at a multiple of 256 bytes"},
                {"gaps", m_rec.has_gaps() ? "not read into the arrays; written as zero into records" : "none"}};
    }

private:
    std::uint64_t aos() const { return m_n * m_rec.record_bytes(); }
    RecordLayout m_rec;
    std::uint64_t m_n;
    bool m_to_soa;
    SoaLayout m_soa;
};

class ArrowFixedOp final : public LayoutOp {
public:
    ArrowFixedOp(std::uint64_t n, std::size_t width, bool to_dense) : m_n(n), m_width(width), m_to_dense(to_dense) {}
    std::vector<std::uint64_t> input_bytes() const override {
        if (m_to_dense) return {m_n * m_width, bitmap_bytes(m_n)};
        return {m_n * m_width};
    }
    std::vector<std::uint64_t> output_bytes() const override {
        if (m_to_dense) return {m_n * m_width};
        return {m_n * m_width, bitmap_bytes(m_n)};
    }
    ByteCount bytes() const override { return arrow_fixed_bytes(m_n, m_width, m_to_dense); }
    void fill(const Outputs& in, unsigned threads) const override {
        fill_random(in[0], m_n * m_width, k_seed, threads);
        std::vector<std::uint8_t> nulls(bitmap_bytes(m_n));
        fill_validity(m_to_dense ? in[1] : nulls.data(), m_n, k_seed + 7);
        const std::uint8_t* valid = m_to_dense ? in[1] : nulls.data();
        // Valid values never look like the null value; on the way back nulls hold it.
        for (std::uint64_t i = 0; i < m_n; ++i) {
            std::uint8_t* v = in[0] + i * m_width;
            if (!bit_is_set(valid, i) && !m_to_dense) std::memcpy(v, &k_null_bits, m_width);
            else if (std::memcmp(v, &k_null_bits, m_width) == 0) v[0] = 0;
        }
    }
    void run_host(const Inputs& in, const Outputs& out, unsigned threads) const override {
        if (m_to_dense) arrow_fixed_to_dense(in[0], in[1], out[0], m_n, m_width, &k_null_bits, threads);
        else dense_to_arrow_fixed(in[0], out[0], out[1], m_n, m_width, &k_null_bits, threads);
    }
    void run_reference(const Inputs& in, const Outputs& out) const override {
        if (m_to_dense) arrow_fixed_to_dense_reference(in[0], in[1], out[0], m_n, m_width, &k_null_bits);
        else dense_to_arrow_fixed_reference(in[0], out[0], out[1], m_n, m_width, &k_null_bits);
    }
    cudaError_t launch(const Inputs& in, const Outputs& out, void*, cudaStream_t s) const override {
        return m_to_dense ? kernels::launch_arrow_fixed_to_dense(out[0], in[0], in[1], m_n, m_width, k_null_bits, s)
                          : kernels::launch_dense_to_arrow_fixed(out[0], out[1], in[0], m_n, m_width, k_null_bits, s);
    }
    nlohmann::json facts() const override {
        return {{"entries", m_n}, {"value_bytes", m_width}, {"nulls", "about 1 in 8"},
                {"null_value", "all-ones bytes (a NaN for the float types)"},
                {"conversion", m_to_dense ? "values + validity bitmap -> dense, nulls filled"
                                          : "dense -> values + validity bitmap (entries equal to the null value are "
                                            "null; the null count is not computed)"}};
    }

private:
    std::uint64_t m_n;
    std::size_t m_width;
    bool m_to_dense;
};

class ArrowBinaryOp final : public LayoutOp {
public:
    ArrowBinaryOp(std::uint64_t n, bool to_dense) : m_n(n), m_to_dense(to_dense), m_lengths(n) {
        // Value lengths 0..width, uniformly; null rows are empty, as Arrow writers leave them.
        std::vector<std::uint8_t> r(n);
        fill_random(r.data(), n, k_seed + 3, 1);
        if (to_dense) {
            m_validity.resize(bitmap_bytes(n));
            fill_validity(m_validity.data(), n, k_seed + 4);
        }
        for (std::uint64_t i = 0; i < n; ++i) {
            const bool valid = !to_dense || bit_is_set(m_validity.data(), i);
            m_lengths[i] = valid ? static_cast<std::uint8_t>(r[i] % (k_binary_width + 1)) : 0;
            m_data_bytes += m_lengths[i];
        }
        if (m_data_bytes > static_cast<std::uint64_t>(INT32_MAX))
            throw UsageError(fmt::format("{} bytes of values do not fit int32 offsets", m_data_bytes),
                             "use a smaller size for the binary column");
    }
    std::vector<std::uint64_t> input_bytes() const override {
        if (m_to_dense) return {(m_n + 1) * 4, std::max<std::uint64_t>(m_data_bytes, 1), bitmap_bytes(m_n)};
        return {m_n * k_binary_width};
    }
    std::vector<std::uint64_t> output_bytes() const override {
        if (m_to_dense) return {m_n * k_binary_width};
        return {(m_n + 1) * 4, m_n * k_binary_width};
    }
    ByteCount bytes() const override {
        return arrow_binary_bytes(m_n, k_binary_width, m_data_bytes, m_to_dense, m_to_dense);
    }
    void fill(const Outputs& in, unsigned threads) const override {
        if (m_to_dense) {
            auto* offsets = reinterpret_cast<std::int32_t*>(in[0]);
            offsets[0] = 0;
            for (std::uint64_t i = 0; i < m_n; ++i) offsets[i + 1] = offsets[i] + m_lengths[i];
            fill_random(in[1], m_data_bytes, k_seed, threads);
            for (std::uint64_t i = 0; i < m_data_bytes; ++i) in[1][i] |= in[1][i] == k_binary_pad ? 1 : 0;
            std::memcpy(in[2], m_validity.data(), m_validity.size());
        } else {
            // Rows of `length` value bytes (never the pad) followed by pad bytes.
            fill_random(in[0], m_n * k_binary_width, k_seed, threads);
            for (std::uint64_t i = 0; i < m_n; ++i) {
                std::uint8_t* row = in[0] + i * k_binary_width;
                for (std::uint64_t k = 0; k < k_binary_width; ++k)
                    row[k] = k < m_lengths[i] ? (row[k] == k_binary_pad ? 1 : row[k]) : k_binary_pad;
            }
        }
    }
    void run_host(const Inputs& in, const Outputs& out, unsigned threads) const override {
        if (m_to_dense)
            arrow_binary_to_dense(reinterpret_cast<const std::int32_t*>(in[0]), in[1], in[2], out[0], m_n,
                                  k_binary_width, k_binary_pad, threads);
        else
            dense_to_arrow_binary(in[0], m_n, k_binary_width, k_binary_pad, reinterpret_cast<std::int32_t*>(out[0]),
                                  out[1], threads);
    }
    void run_reference(const Inputs& in, const Outputs& out) const override {
        if (m_to_dense)
            arrow_binary_to_dense_reference(reinterpret_cast<const std::int32_t*>(in[0]), in[1], in[2], out[0], m_n,
                                            k_binary_width, k_binary_pad);
        else
            dense_to_arrow_binary_reference(in[0], m_n, k_binary_width, k_binary_pad,
                                            reinterpret_cast<std::int32_t*>(out[0]), out[1]);
    }
    cudaError_t launch(const Inputs& in, const Outputs& out, void* scratch, cudaStream_t s) const override {
        if (m_to_dense)
            return kernels::launch_arrow_binary_to_dense(out[0], reinterpret_cast<const std::int32_t*>(in[0]), in[1],
                                                         in[2], m_n, k_binary_width, k_binary_pad, s);
        return kernels::launch_dense_to_arrow_binary(reinterpret_cast<std::int32_t*>(out[0]), out[1], in[0], m_n,
                                                     k_binary_width, k_binary_pad, scratch, s);
    }
    std::uint64_t scratch_bytes() const override {
        return m_to_dense ? 0 : kernels::dense_to_binary_scratch_bytes(m_n, k_binary_width);
    }
    nlohmann::json facts() const override {
        return {{"entries", m_n}, {"dense_width", k_binary_width}, {"value_bytes", m_data_bytes},
                {"lengths", fmt::format("uniform 0..{}", k_binary_width)}, {"pad_byte", k_binary_pad},
                {"conversion", m_to_dense ? "int32 offsets + data + validity -> rows padded to the width (nulls: all pad)"
                                          : "padded rows -> int32 offsets + data, trailing pad bytes dropped, no "
                                            "nulls; on the GPU in one pass (decoupled look-back for the offsets)"}};
    }

private:
    std::uint64_t m_n;
    bool m_to_dense;
    std::vector<std::uint8_t> m_lengths;
    std::vector<std::uint8_t> m_validity;
    std::uint64_t m_data_bytes = 0;
};

class StridedOp final : public LayoutOp {
public:
    StridedOp(StridedView view, std::size_t elem, std::string kind)
        : m_view(view), m_elem(elem), m_kind(std::move(kind)),
          m_parent(checked_mul(view_extent(view), elem, "parent byte count")),
          m_sectors(strided_sector_bytes(view, elem)) {}
    std::vector<std::uint64_t> input_bytes() const override { return {m_parent}; }
    std::vector<std::uint64_t> output_bytes() const override { return {matrix_bytes(m_view.dims, m_elem)}; }
    ByteCount bytes() const override { return strided_bytes(m_view, m_elem); }
    void fill(const Outputs& in, unsigned threads) const override { fill_random(in[0], m_parent, k_seed, threads); }
    void run_host(const Inputs& in, const Outputs& out, unsigned threads) const override {
        strided_to_contiguous(in[0], out[0], m_view, m_elem, threads);
    }
    void run_reference(const Inputs& in, const Outputs& out) const override {
        strided_to_contiguous_reference(in[0], out[0], m_view, m_elem);
    }
    cudaError_t launch(const Inputs& in, const Outputs& out, void*, cudaStream_t s) const override {
        return kernels::launch_strided_to_contiguous(out[0], in[0], m_view, m_elem, s);
    }
    std::uint64_t sector_bytes() const override { return m_sectors; }
    nlohmann::json facts() const override {
        return {{"rows", m_view.dims.rows}, {"cols", m_view.dims.cols}, {"element_bytes", m_elem},
                {"view", m_kind}, {"row_stride", m_view.row_stride}, {"col_stride", m_view.col_stride},
                {"offset", m_view.offset}, {"parent_bytes", m_parent}};
    }

private:
    StridedView m_view;
    std::size_t m_elem;
    std::string m_kind;
    std::uint64_t m_parent;
    std::uint64_t m_sectors;
};

// ---- cases ------------------------------------------------------------------------------

/// Sum of byte counts, saturating: sizes near 2^64 must not wrap into small ones.
std::uint64_t sum(const std::vector<std::uint64_t>& v) {
    constexpr std::uint64_t k_max = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t s = 0;
    for (auto x : v) s = x > k_max - s ? k_max : s + x;
    return s;
}

/// Throws CheckFailed naming the first differing byte of output `which`.
void compare(const std::uint8_t* got, const std::uint8_t* want, std::uint64_t n, std::size_t which, const char* against) {
    if (std::memcmp(got, want, n) == 0) return;
    std::uint64_t first = 0, bad = 0;
    for (std::uint64_t i = n; i-- > 0;)
        if (got[i] != want[i]) {
            first = i;
            ++bad;
        }
    throw CheckFailed(fmt::format("output {}: {} of {} bytes differ from the {}, first at byte {} (0x{:02x}, expected "
                                  "0x{:02x})",
                                  which, bad, n, against, first, got[first], want[first]));
}

/// `device`: the conversion ran on a GPU, whose memory moves in the sectors sector_bytes()
/// counts. On the host, write-allocation and prefetch decide the traffic: no traffic-aware
/// limit is claimed there (one measured above 100% of it).
nlohmann::json common_details(const LayoutOp& op, std::uint64_t copy_bytes, bool device) {
    nlohmann::json j = op.facts();
    j["bytes_read"] = op.bytes().read;
    j["bytes_written"] = op.bytes().written;
    j["copy_bytes"] = copy_bytes;
    if (op.sector_bytes() && !device)
        j["traffic_limit"] = "none on the host: its caches' write-allocation and prefetch decide the traffic, not the "
                             "GPU's 32-byte sectors; efficiency_traffic is not measured";
    else if (const std::uint64_t sectors = op.sector_bytes()) {
        j["sector_bytes"] = sectors;
        j["traffic_limit"] = "the copy roofline in this conversion's counting: copy_bandwidth x (bytes_read + "
                             "bytes_written) / sector_bytes; efficiency_traffic = bandwidth / that limit";
        j["traffic_limit_ratio"] = static_cast<double>(op.bytes().total()) / static_cast<double>(sectors);
    }
    return j;
}

/// bandwidth, time, copy_bandwidth, efficiency and, for layouts that force more traffic
/// than their bytes, efficiency against that traffic-aware limit (on a GPU, `device`; no
/// figure on the host: common_details says why).
Sample layout_sample(const LayoutOp& op, double t, double copy_bw, bool device) {
    const double bw = static_cast<double>(op.bytes().total()) / t;
    Sample s{bw, t, copy_bw, bw / copy_bw};
    if (const std::uint64_t sectors = op.sector_bytes())
        s.push_back(device ? static_cast<double>(sectors) / t / copy_bw : std::numeric_limits<double>::quiet_NaN());
    return s;
}

template <class Buffers>
Inputs const_ptrs(const Buffers& bufs) {
    Inputs out;
    for (const auto& b : bufs) out.push_back(static_cast<const std::uint8_t*>(b.get()));
    return out;
}

template <class Buffers>
Outputs ptrs(Buffers& bufs) {
    Outputs out;
    for (auto& b : bufs) out.push_back(static_cast<std::uint8_t*>(b.get()));
    return out;
}

/// Host memory that is not zero-filled on allocation.
class Bytes {
public:
    explicit Bytes(std::uint64_t n) : m_data(new std::uint8_t[std::max<std::uint64_t>(n, 1)]), m_size(n) {}
    std::uint8_t* get() const { return m_data.get(); }
    std::uint64_t size() const { return m_size; }

private:
    std::unique_ptr<std::uint8_t[]> m_data;
    std::uint64_t m_size;
};

std::vector<Bytes> host_buffers(const std::vector<std::uint64_t>& sizes, std::uint8_t fill) {
    std::vector<Bytes> out;
    for (auto n : sizes) {
        out.emplace_back(n);
        std::memset(out.back().get(), fill, n); // also touches the pages before any timing
    }
    return out;
}

class GpuLayoutCase final : public Case {
public:
    GpuLayoutCase(const CaseContext& ctx, int device, std::unique_ptr<LayoutOp> op)
        : m_op(std::move(op)), m_device(device), m_threads(std::max(1u, ctx.machine->host_cores)),
          m_stream(device), m_region({&m_stream}, true) {
        m_host_in = host_buffers(m_op->input_bytes(), 0);
        m_op->fill(ptrs(m_host_in), m_threads);
        for (const Bytes& b : m_host_in) {
            m_in.emplace_back(device, round16(b.size()));
            IB_CUDA_CHECK(cudaMemcpy(m_in.back().get(), b.get(), b.size(), cudaMemcpyHostToDevice));
        }
        for (auto n : m_op->output_bytes()) m_out.emplace_back(device, round16(n));
        if (m_op->scratch_bytes() > 0) {
            m_scratch = gpu::DeviceBuffer(device, m_op->scratch_bytes());
            IB_CUDA_CHECK(cudaMemsetAsync(m_scratch.get(), 0, m_scratch.size(), m_stream.get()));
        }
        m_copy_bytes = (m_op->bytes().total() + 1) / 2;
        m_copy = std::make_unique<gpu::DeviceCopy>(device, m_copy_bytes, gpu::DeviceCopyMethod::ce);
        IB_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
        // An untimed first run loads the kernel; then one timed operation of each kind sets
        // the repetition counts.
        IB_CUDA_CHECK(m_op->launch(const_ptrs(m_in), ptrs(m_out), m_scratch.get(), m_stream.get()));
        IB_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
        m_reps = gpu::reps_for(convert(1), ctx.sample_time_s / 2, k_max_reps);
        m_copy_reps = gpu::reps_for(m_copy->copy_seconds(1), ctx.sample_time_s / 2, k_max_reps);
    }

    Sample measure() override {
        const double t = convert(m_reps) / m_reps;
        const double tc = m_copy->copy_seconds(m_copy_reps) / m_copy_reps;
        return layout_sample(*m_op, t, 2.0 * static_cast<double>(m_copy_bytes) / tc, true);
    }

    void check() override {
        gpu::set_device(m_device);
        for (auto& b : m_out) IB_CUDA_CHECK(cudaMemsetAsync(b.get(), k_poison, b.size(), m_stream.get()));
        IB_CUDA_CHECK(m_op->launch(const_ptrs(m_in), ptrs(m_out), m_scratch.get(), m_stream.get()));
        IB_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
        const auto sizes = m_op->output_bytes();
        std::vector<Bytes> want = host_buffers(sizes, k_poison);
        m_op->run_host(const_ptrs(m_host_in), ptrs(want), m_threads);
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            Bytes got(sizes[i]);
            IB_CUDA_CHECK(cudaMemcpy(got.get(), m_out[i].get(), sizes[i], cudaMemcpyDeviceToHost));
            compare(got.get(), want[i].get(), sizes[i], i, "host result");
        }
    }

    nlohmann::json details() const override {
        nlohmann::json j = common_details(*m_op, m_copy_bytes, true);
        j["device"] = m_device;
        j["ops_per_sample"] = m_reps;
        j["copy_ops_per_sample"] = m_copy_reps;
        j["copy"] = std::string(gpu::describe(gpu::DeviceCopyMethod::ce)) + ", as d2d_copy method=ce (gpu/device_copy)";
        j["l2_note"] = "at sizes whose buffers fit in L2 (60 MB on an H200) the conversion and the copy both run "
                       "partly from L2; both are measured the same way";
        j["timer"] = "CUDA events; the stream is held while a run is enqueued";
        j["verification"] = "outputs poisoned, converted once more, compared byte for byte with the host conversion "
                            "of the same random inputs";
        return j;
    }

private:
    double convert(int reps) {
        m_region.begin();
        for (int r = 0; r < reps; ++r)
            IB_CUDA_CHECK(m_op->launch(const_ptrs(m_in), ptrs(m_out), m_scratch.get(), m_stream.get()));
        return m_region.end();
    }

    std::unique_ptr<LayoutOp> m_op;
    int m_device;
    unsigned m_threads;
    gpu::Stream m_stream;
    gpu::TimedRegion m_region;
    std::vector<Bytes> m_host_in;
    std::vector<gpu::DeviceBuffer> m_in, m_out;
    gpu::DeviceBuffer m_scratch;
    std::unique_ptr<gpu::DeviceCopy> m_copy;
    std::uint64_t m_copy_bytes = 0;
    int m_reps = 1, m_copy_reps = 1;
};

class HostLayoutCase final : public Case {
public:
    HostLayoutCase(const CaseContext& ctx, std::unique_ptr<LayoutOp> op)
        : m_op(std::move(op)), m_threads(std::max(1u, ctx.machine->host_cores)) {
        m_in = host_buffers(m_op->input_bytes(), 0);
        m_op->fill(ptrs(m_in), m_threads);
        m_out = host_buffers(m_op->output_bytes(), k_poison);
        m_copy_bytes = (m_op->bytes().total() + 1) / 2;
        m_copy_src = host_buffers({m_copy_bytes}, 0);
        fill_random(m_copy_src[0].get(), m_copy_bytes, k_seed, m_threads);
        m_copy_dst = host_buffers({m_copy_bytes}, 0);
        m_reps = gpu::reps_for(convert(1), ctx.sample_time_s / 2, k_max_reps);
        m_copy_reps = gpu::reps_for(copy(1), ctx.sample_time_s / 2, k_max_reps);
    }

    Sample measure() override {
        const double t = convert(m_reps) / m_reps;
        const double tc = copy(m_copy_reps) / m_copy_reps;
        return layout_sample(*m_op, t, 2.0 * static_cast<double>(m_copy_bytes) / tc, false);
    }

    void check() override {
        const auto sizes = m_op->output_bytes();
        for (auto& b : m_out) std::memset(b.get(), k_poison, b.size());
        m_op->run_host(const_ptrs(m_in), ptrs(m_out), m_threads);
        std::vector<Bytes> want = host_buffers(sizes, k_poison);
        m_op->run_reference(const_ptrs(m_in), ptrs(want));
        for (std::size_t i = 0; i < sizes.size(); ++i)
            compare(m_out[i].get(), want[i].get(), sizes[i], i, "element-by-element reference");
    }

    nlohmann::json details() const override {
        nlohmann::json j = common_details(*m_op, m_copy_bytes, false);
        j["threads"] = m_threads;
        j["ops_per_sample"] = m_reps;
        j["copy_ops_per_sample"] = m_copy_reps;
        j["copy"] = "memcpy split over the same threads";
        j["timer"] = "host steady clock";
        j["verification"] = "outputs poisoned, converted once more, compared byte for byte with the single-threaded "
                            "element-by-element reference";
        return j;
    }

private:
    double convert(int reps) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) m_op->run_host(const_ptrs(m_in), ptrs(m_out), m_threads);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }

    double copy(int reps) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) parallel_copy(m_copy_dst[0].get(), m_copy_src[0].get(), m_copy_bytes, m_threads);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }

    std::unique_ptr<LayoutOp> m_op;
    unsigned m_threads;
    std::vector<Bytes> m_in, m_out, m_copy_src, m_copy_dst;
    std::uint64_t m_copy_bytes = 0;
    int m_reps = 1, m_copy_reps = 1;
};

// ---- scenarios ----------------------------------------------------------------------------

using MakeOp = std::unique_ptr<LayoutOp> (*)(const Params&);

int layout_device(const Machine& m) { return m.selected.empty() ? 0 : m.selected.front(); }

/// One scenario id; `make` turns a configuration into its conversion (throwing UsageError
/// for shapes that cannot be made).
class LayoutScenario final : public Scenario {
public:
    LayoutScenario(ScenarioInfo info, MakeOp make) : m_info(std::move(info)), m_make(make) {}
    const ScenarioInfo& info() const override { return m_info; }

    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        const bool gpu = p.get("variant") == "gpu";
        if (gpu)
            if (auto why = gpu_unavailable_reason(m)) return why;
        std::unique_ptr<LayoutOp> op;
        try {
            op = m_make(p);
        } catch (const UsageError& e) {
            return std::string(e.what());
        }
        // Host side: inputs, outputs and the reference outputs (also for the GPU variant,
        // which fills on the host and checks there).
        const std::uint64_t both = sum({sum(op->input_bytes()), sum(op->output_bytes())});
        const std::uint64_t host_need = sum({both, both});
        if (auto why = host_memory_shortfall(host_need)) return why;
        if (!gpu) return std::nullopt;
        const int dev = layout_device(m);
        const DeviceInfo* info = m.device(dev);
        if (info == nullptr) return fmt::format("GPU {} does not exist", dev);
        const std::uint64_t need =
            sum({sum(op->input_bytes()), sum(op->output_bytes()), op->scratch_bytes(), op->bytes().total(), 16 * 8});
        if (need > info->free_memory)
            return fmt::format("needs {} of GPU {}'s memory, {} free", format_size(need), dev,
                               format_size(info->free_memory));
        return std::nullopt;
    }

    std::vector<PathUse> paths(const Params& p) const override {
        // bandwidth counts bytes read + written: each counted byte crosses memory once.
        if (p.get("variant") == "host") return {{PathKind::host_memory}};
        return {{PathKind::gpu_memory, k_first_gpu}};
    }

    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        auto op = m_make(p);
        if (p.get("variant") == "host") return std::make_unique<HostLayoutCase>(ctx, std::move(op));
        return std::make_unique<GpuLayoutCase>(ctx, layout_device(*ctx.machine), std::move(op));
    }

private:
    ScenarioInfo m_info;
    MakeOp m_make;
};

const char* k_counting =
    "bytes read + bytes written per conversion, each counted once (details: bytes_read, bytes_written); "
    "copy_bandwidth counts a plain copy of half that many bytes the same way (read + write); "
    "efficiency = bandwidth / copy_bandwidth";

ScenarioInfo base_info(std::string id, std::string summary, std::vector<Axis> axes) {
    ScenarioInfo i;
    i.id = std::move(id);
    i.family = "layout";
    i.summary = std::move(summary);
    i.needs_gpu = false; // the host variant runs anywhere; unsupported() asks for CUDA per configuration
    i.counting = k_counting;
    i.axes = {choice_axis("variant", "gpu: CUDA kernels on the first selected GPU; host: multi-threaded host code on every core",
                          {"gpu", "host"})};
    i.axes.insert(i.axes.end(), axes.begin(), axes.end());
    i.axes.push_back({"size", "bytes of the dense side (matrix, records or output); shapes are made odd, so a little "
                              "less is used",
                      AxisKind::size, {"256M"}, {}});
    i.metrics = {{"bandwidth", "B/s", Better::higher, "bytes read + written per conversion over its time"},
                 {"time", "s", Better::lower, "time per conversion"},
                 {"copy_bandwidth", "B/s", Better::higher,
                  "plain copy in the same configuration (device-to-device cudaMemcpyAsync, or memcpy on the host "
                  "threads), counted read + write"},
                 {"efficiency", "ratio", Better::higher, "bandwidth / copy_bandwidth"}};
    return i;
}

/// Views read whole 32-byte sectors, so their bytes are not their traffic: one more metric
/// compares them with the limit that traffic sets (details: sector_bytes).
ScenarioInfo with_traffic_metric(ScenarioInfo i) {
    i.counting += "; efficiency_traffic = bandwidth x sector_bytes / (bytes_read + bytes_written) / copy_bandwidth, "
                  "the efficiency against the copy roofline scaled by the 32-byte sectors the view makes the "
                  "GPU read (variant gpu only: on the host no traffic-aware limit is claimed)";
    i.metrics.push_back({"efficiency_traffic", "ratio", Better::higher,
                         "efficiency against the traffic-aware limit: the copy roofline in sector bytes"});
    return i;
}

Axis dtype_axis(std::vector<std::string> choices) {
    return choice_axis("dtype", "element type (moved as bits: only its width matters)", std::move(choices));
}
Axis shape_axis(std::vector<std::string> defaults) {
    return {"shape", "square; tall: rows about 256 x cols; wide: cols about 256 x rows", AxisKind::choice,
            std::move(defaults), {"square", "tall", "wide"}};
}

std::unique_ptr<LayoutOp> make_transpose(const Params& p) {
    const std::size_t e = dtype_size(parse_dtype(p.get("dtype")));
    return std::make_unique<TransposeOp>(dims_for(p.get_uint("size"), e, parse_shape(p.get("shape"))), e);
}

RecordLayout record_named(const std::string& name) {
    if (name == "xyz_f32") return RecordLayout::natural({4, 4, 4});
    if (name == "mixed") return RecordLayout::natural({8, 4, 2, 1});
    if (name == "wide") return RecordLayout::natural({8, 8, 4, 4, 2, 2, 1, 1});
    if (name == "packed") return RecordLayout::packed({8, 1, 4, 2});
    throw UsageError(fmt::format("unknown record '{}'", name), "use xyz_f32, mixed, wide or packed");
}

std::unique_ptr<LayoutOp> make_aos_soa(const Params& p) {
    RecordLayout rec = record_named(p.get("record"));
    const std::uint64_t n = p.get_uint("size") / rec.record_bytes();
    if (n == 0)
        throw UsageError(fmt::format("size {} B holds no {}-byte record", p.get_uint("size"), rec.record_bytes()),
                         "use a larger size");
    return std::make_unique<AosSoaOp>(std::move(rec), odd_count(n), p.get("direction") == "aos_to_soa");
}

std::unique_ptr<LayoutOp> make_arrow(const Params& p) {
    const std::string dtype = p.get("dtype");
    const bool to_dense = p.get("direction") == "to_dense";
    const std::uint64_t width = dtype == "binary" ? k_binary_width : dtype_size(parse_dtype(dtype));
    const std::uint64_t n = p.get_uint("size") / width;
    if (n == 0)
        throw UsageError(fmt::format("size {} B holds no {}-byte entry", p.get_uint("size"), width), "use a larger size");
    if (dtype == "binary") return std::make_unique<ArrowBinaryOp>(odd_count(n), to_dense);
    return std::make_unique<ArrowFixedOp>(odd_count(n), width, to_dense);
}

std::unique_ptr<LayoutOp> make_strided(const Params& p) {
    const std::size_t e = dtype_size(parse_dtype(p.get("dtype")));
    const Dims2 d = dims_for(p.get_uint("size"), e, parse_shape(p.get("shape")));
    const std::string kind = p.get("view");
    // Column range of a slightly wider matrix, starting off the first column; or every
    // other column of a matrix twice as wide (plus a spare column), starting at column 1.
    const StridedView v = kind == "cols_slice" ? StridedView{d, d.cols + 7, 1, 3} : StridedView{d, 2 * d.cols + 3, 2, 1};
    return std::make_unique<StridedOp>(v, e, kind);
}

} // namespace

void register_layout(Registry& r) {
    const std::vector<std::string> dtypes{"fp16", "fp32", "fp64", "int8"};
    r.add(std::make_unique<LayoutScenario>(
        base_info("layout_transpose", "row-major -> column-major transpose of 2-D arrays, against a plain copy",
                  {dtype_axis(dtypes), shape_axis({"square", "tall", "wide"})}),
        make_transpose));
    r.add(std::make_unique<LayoutScenario>(
        base_info("layout_aos_soa", "array of structs <-> struct of arrays for records of mixed field widths",
                  {choice_axis("record",
                               "xyz_f32: 3 x 4 bytes; mixed: 8,4,2,1 bytes aligned (16 with padding); wide: 8,8,4,4,2,2,1,1 "
                               "aligned (32); packed: 8,1,4,2 bytes unaligned (15)",
                               {"xyz_f32", "mixed", "wide", "packed"}),
                   choice_axis("direction", "aos_to_soa or soa_to_aos", {"aos_to_soa", "soa_to_aos"})}),
        make_aos_soa));
    r.add(std::make_unique<LayoutScenario>(
        base_info("layout_arrow_dense",
                  "Arrow-style columns <-> dense: fixed-width with validity (nulls filled), binary padded to 32 bytes",
                  {choice_axis("dtype", "fixed-width value type, or binary (int32 offsets + data, padded to 32 bytes when dense)",
                               {"fp16", "fp32", "fp64", "int8", "binary"}),
                   choice_axis("direction", "to_dense (Arrow -> dense) or from_dense (dense -> Arrow)",
                               {"to_dense", "from_dense"})}),
        make_arrow));
    r.add(std::make_unique<LayoutScenario>(
        with_traffic_metric(base_info("layout_strided", "strided 2-D view -> contiguous copy",
                  {dtype_axis(dtypes), shape_axis({"square"}),
                   choice_axis("view",
                               "cols_slice: a column range of a wider matrix (row stride cols + 7, from column 3); step2: "
                               "every other column (column stride 2)",
                               {"cols_slice", "step2"})})),
        make_strided));
}

} // namespace interopbench
