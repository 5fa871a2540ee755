// Zero-copy handoff between two libraries on one GPU: handoff.
//
// What: the cost of giving one library's device buffer (an fp32 matrix) to another, by
// path: DLPack (a versioned managed tensor), the Arrow C device interface (a fixed-size
// list device array with its sync event), a deep device-to-device copy, and a CPU round
// trip (device to host to device through pageable or pinned memory). The consumer wants
// row-major data: with consumer=same the producer has it row-major; with
// consumer=transposed the producer holds it column-major, so every path must also
// transpose (the zero-copy paths find that out from the DLPack strides or the Arrow field
// name and convert on the consumer stream; the copy paths transpose as part of the copy).
// How: each handoff is what two libraries would do: the producer records an event on its
// stream and the consumer's stream waits on it (DLPack and Arrow create that event per
// handoff, as the protocols do, and the structures are built, checked and released each
// time); copies and conversions run on the consumer stream. A sample runs handoffs back to
// back for about the sample time and ends when the consumer stream is idle, timed by the
// host clock: what a consumer waits for, host overheads included.
// Reports: time per handoff, bytes moved per handoff (each copy or conversion counted
// once: 0 for a zero-copy handoff of the right layout) and delivered bandwidth (matrix
// bytes made usable per second).
// Checked after sampling: one more handoff into poisoned consumer buffers; a zero-copy
// handoff must hand over the producer's own pointer (so nothing was copied) and every
// structure must have been released exactly once; the consumer's data is compared with
// the producer's (transposed where asked).
// Caveats: zero-copy times are host overheads of a few microseconds and so depend on the
// CPU; the transpose is the layout_transpose kernel.
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "gpu/cuda_util.hpp"
#include "gpu/interchange.hpp"
#include "gpu/convert.hpp"
#include "gpu/convert_kernels.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {
namespace {

enum class Path { dlpack, arrow_device, deep_copy, cpu_roundtrip_pageable, cpu_roundtrip_pinned };

Path parse_path(const std::string& s) {
    if (s == "dlpack") return Path::dlpack;
    if (s == "arrow_device") return Path::arrow_device;
    if (s == "deep_copy") return Path::deep_copy;
    if (s == "cpu_roundtrip_pageable") return Path::cpu_roundtrip_pageable;
    return Path::cpu_roundtrip_pinned;
}

constexpr std::uint8_t k_poison = 0xA5;
constexpr std::uint64_t k_seed = 0x68616e646f6666;
constexpr std::size_t k_elem = 4; // fp32

bool zero_copy(Path p) { return p == Path::dlpack || p == Path::arrow_device; }
bool roundtrip(Path p) { return p == Path::cpu_roundtrip_pageable || p == Path::cpu_roundtrip_pinned; }

class HandoffCase final : public Case {
public:
    HandoffCase(const CaseContext& ctx, int device, Path path, bool transposed, Dims2 dims)
        : m_path(path), m_transposed(transposed), m_device(device), m_dims(dims),
          m_bytes(matrix_bytes(dims, k_elem)), m_producer(device), m_consumer(device),
          m_host(m_bytes), m_a(device, m_bytes), m_b(device, m_bytes) {
        // The producer's buffer: row-major rows x cols, or its column-major form (the
        // row-major cols x rows array) when the consumer must transpose.
        fill_random(m_host.data(), m_bytes, k_seed, std::max(1u, ctx.machine->host_cores));
        IB_CUDA_CHECK(cudaMemcpy(m_a.get(), m_host.data(), m_bytes, cudaMemcpyHostToDevice));
        if (roundtrip(path)) {
            m_staging = gpu::HostBuffer(path == Path::cpu_roundtrip_pinned ? gpu::HostMem::pinned : gpu::HostMem::pageable,
                                        m_bytes);
            if (transposed) m_t = gpu::DeviceBuffer(device, m_bytes);
        }
        // A first handoff pays one-time costs (kernel loading); the second sets the repetitions.
        handoff();
        IB_CUDA_CHECK(cudaStreamSynchronize(m_consumer.get()));
        const auto t0 = std::chrono::steady_clock::now();
        handoff();
        IB_CUDA_CHECK(cudaStreamSynchronize(m_consumer.get()));
        m_reps = gpu::reps_for(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                               ctx.sample_time_s, 10000);
    }

    HandoffCase(const HandoffCase&) = delete;
    HandoffCase& operator=(const HandoffCase&) = delete;

    Sample measure() override {
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < m_reps; ++r) handoff();
        IB_CUDA_CHECK(cudaStreamSynchronize(m_consumer.get()));
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / m_reps;
        return {t, static_cast<double>(bytes_moved()), static_cast<double>(m_bytes) / t};
    }

    void check() override {
        gpu::set_device(m_device);
        IB_CUDA_CHECK(cudaMemsetAsync(m_b.get(), k_poison, m_bytes, m_consumer.get()));
        if (m_t.get()) IB_CUDA_CHECK(cudaMemsetAsync(m_t.get(), k_poison, m_bytes, m_consumer.get()));
        const void* got = handoff();
        IB_CUDA_CHECK(cudaStreamSynchronize(m_consumer.get()));
        if (m_exported != m_released)
            throw CheckFailed(fmt::format("{} exchange structures exported but {} released", m_exported, m_released));
        if (m_release_errors != 0)
            throw CheckFailed(fmt::format("{} sync events could not be destroyed on release", m_release_errors));
        const bool shared = got == m_a.get();
        if (shared != (zero_copy(m_path) && !m_transposed))
            throw CheckFailed(shared ? "the consumer reads the producer's buffer where a copy was expected"
                                     : "the consumer's data is not the producer's buffer: the zero-copy handoff copied");
        std::vector<std::uint8_t> want(m_bytes), seen(m_bytes);
        if (m_transposed) transpose(m_host.data(), want.data(), {m_dims.cols, m_dims.rows}, k_elem, 1);
        else std::memcpy(want.data(), m_host.data(), m_bytes);
        IB_CUDA_CHECK(cudaMemcpy(seen.data(), got, m_bytes, cudaMemcpyDeviceToHost));
        if (std::memcmp(seen.data(), want.data(), m_bytes) != 0) {
            std::uint64_t bad = 0;
            for (std::uint64_t i = 0; i < m_bytes; ++i) bad += seen[i] != want[i];
            throw CheckFailed(fmt::format("{} of {} bytes the consumer sees differ from the producer's data{}", bad,
                                          m_bytes, m_transposed ? " (transposed)" : ""));
        }
    }

    nlohmann::json details() const override {
        static const char* k_exchange[] = {"DLManagedTensorVersioned (DLPack 1.1), strides say the layout",
                                           "ArrowDeviceArray + ArrowSchema fixed_size_list<float>, sync event "
                                           "cudaEvent_t*, field name says rows or columns",
                                           "none", "none", "none"};
        nlohmann::json j{{"rows", m_dims.rows},
                         {"cols", m_dims.cols},
                         {"matrix_bytes", m_bytes},
                         {"producer_layout", m_transposed ? "column-major" : "row-major"},
                         {"consumer_layout", "row-major"},
                         {"exchange", k_exchange[static_cast<int>(m_path)]},
                         {"pointer_shared", zero_copy(m_path) && !m_transposed},
                         {"bytes_moved", bytes_moved()},
                         {"conversion", m_transposed ? "transpose column-major -> row-major on the consumer stream, "
                                                       "cost included"
                                                     : "none"},
                         {"sync", "event recorded on the producer stream, waited on by the consumer stream"},
                         {"ops_per_sample", m_reps},
                         {"timer", "host steady clock over a run of handoffs, until the consumer stream is idle"},
                         {"verification", "one more handoff into poisoned buffers: pointer identity for zero-copy "
                                          "paths, releases counted, data compared with the producer's"}};
        if (m_path == Path::cpu_roundtrip_pageable || m_path == Path::cpu_roundtrip_pinned)
            j["host_memory"] = m_path == Path::cpu_roundtrip_pinned ? "pinned" : "pageable";
        return j;
    }

private:
    /// Bytes copied or converted per handoff, each pass counted once.
    std::uint64_t bytes_moved() const {
        const std::uint64_t conversion = m_transposed ? m_bytes : 0;
        switch (m_path) {
        case Path::dlpack:
        case Path::arrow_device: return conversion;
        case Path::deep_copy: return m_bytes; // the transposing copy is the copy
        case Path::cpu_roundtrip_pageable:
        case Path::cpu_roundtrip_pinned: return 2 * m_bytes + conversion;
        }
        return 0;
    }

    /// The consumer's side once it holds a pointer: row-major data is used in place,
    /// column-major data is transposed into the consumer's buffer.
    const void* consume(const void* data, bool row_major) {
        if (row_major) return data;
        IB_CUDA_CHECK(kernels::launch_transpose(m_b.get(), data, {m_dims.cols, m_dims.rows}, k_elem, m_consumer.get()));
        return m_b.get();
    }

    /// One handoff, enqueued; returns the consumer's data pointer.
    const void* handoff() {
        switch (m_path) {
        case Path::dlpack: return handoff_dlpack();
        case Path::arrow_device: return handoff_arrow();
        case Path::deep_copy:
            IB_CUDA_CHECK(cudaEventRecord(m_ready.get(), m_producer.get()));
            IB_CUDA_CHECK(cudaStreamWaitEvent(m_consumer.get(), m_ready.get(), 0));
            if (m_transposed) return consume(m_a.get(), false);
            IB_CUDA_CHECK(cudaMemcpyAsync(m_b.get(), m_a.get(), m_bytes, cudaMemcpyDeviceToDevice, m_consumer.get()));
            return m_b.get();
        case Path::cpu_roundtrip_pageable:
        case Path::cpu_roundtrip_pinned: {
            IB_CUDA_CHECK(cudaEventRecord(m_ready.get(), m_producer.get()));
            IB_CUDA_CHECK(cudaStreamWaitEvent(m_consumer.get(), m_ready.get(), 0));
            void* back = m_transposed ? m_t.get() : m_b.get();
            IB_CUDA_CHECK(cudaMemcpyAsync(m_staging.get(), m_a.get(), m_bytes, cudaMemcpyDeviceToHost, m_consumer.get()));
            IB_CUDA_CHECK(cudaMemcpyAsync(back, m_staging.get(), m_bytes, cudaMemcpyHostToDevice, m_consumer.get()));
            return consume(back, !m_transposed);
        }
        }
        return nullptr;
    }

    const void* handoff_dlpack() {
        // Producer: make the consumer's stream wait for its work (what __dlpack__(stream=...)
        // does), then export.
        cudaEvent_t ev = nullptr;
        IB_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
        IB_CUDA_CHECK(cudaEventRecord(ev, m_producer.get()));
        IB_CUDA_CHECK(cudaStreamWaitEvent(m_consumer.get(), ev, 0));
        IB_CUDA_CHECK(cudaEventDestroy(ev));
        TensorDesc desc;
        desc.data = m_a.get();
        desc.device = {DLDeviceType::cuda, m_device};
        desc.dtype = dlpack_dtype(DType::fp32);
        desc.shape = {static_cast<std::int64_t>(m_dims.rows), static_cast<std::int64_t>(m_dims.cols)};
        desc.strides = m_transposed ? col_major_strides(desc.shape) : row_major_strides(desc.shape);
        DLManagedTensorVersioned* t = export_dlpack(desc, 0, [this] { ++m_released; });
        ++m_exported;
        // Consumer.
        const void* data = nullptr;
        try {
            const TensorView v = import_dlpack(t);
            const MatrixOrder order = matrix_order(v);
            if (order == MatrixOrder::other || v.device.device_type != DLDeviceType::cuda || v.device.device_id != m_device)
                throw ConfigError("DLPack tensor is not a compact matrix on this GPU");
            data = consume(v.data, order == MatrixOrder::row_major);
        } catch (...) {
            release(t);
            throw;
        }
        release(t);
        return data;
    }

    const void* handoff_arrow() {
        // Producer: an event recorded on its stream travels with the array; releasing the
        // array destroys it.
        auto* ev = new cudaEvent_t(nullptr);
        if (const cudaError_t err = cudaEventCreateWithFlags(ev, cudaEventDisableTiming); err != cudaSuccess) {
            delete ev;
            IB_CUDA_CHECK(err);
        }
        ArrowSchema schema;
        ArrowDeviceArray array;
        const std::int64_t rows = static_cast<std::int64_t>(m_dims.rows), cols = static_cast<std::int64_t>(m_dims.cols);
        export_fixed_size_list_schema("f", m_transposed ? rows : cols, m_transposed ? "columns" : "rows", &schema);
        export_fixed_size_list_array(m_a.get(), m_transposed ? cols : rows, m_transposed ? rows : cols,
                                     k_arrow_device_cuda, m_device, ev,
                                     [this, ev] {
                                         // A release callback cannot throw: errors are counted for check().
                                         if (cudaEventDestroy(*ev) != cudaSuccess) ++m_release_errors;
                                         delete ev;
                                         ++m_released;
                                     },
                                     &array);
        ++m_exported;
        const cudaError_t recorded = cudaEventRecord(*ev, m_producer.get());
        // Consumer.
        const void* data = nullptr;
        try {
            IB_CUDA_CHECK(recorded);
            const ArrowListView v = import_fixed_size_list(schema, array, "f");
            if (v.device_type != k_arrow_device_cuda || v.device_id != m_device)
                throw ConfigError("Arrow array is not on this GPU");
            if (v.sync_event != nullptr)
                IB_CUDA_CHECK(cudaStreamWaitEvent(m_consumer.get(), *static_cast<cudaEvent_t*>(v.sync_event), 0));
            if (v.name != "rows" && v.name != "columns")
                throw ConfigError(fmt::format("Arrow field '{}' does not say whether its lists are rows or columns", v.name));
            data = consume(v.data, v.name == "rows");
        } catch (...) {
            release(&array);
            release(&schema);
            throw;
        }
        release(&array);
        release(&schema);
        return data;
    }

    Path m_path;
    bool m_transposed;
    int m_device;
    Dims2 m_dims;
    std::uint64_t m_bytes;
    gpu::Stream m_producer, m_consumer;
    std::vector<std::uint8_t> m_host;
    gpu::DeviceBuffer m_a, m_b, m_t;
    gpu::HostBuffer m_staging;
    gpu::Event m_ready{m_device, gpu::EventUse::sync}; ///< producer -> consumer order (deep copy, round trip)
    std::uint64_t m_exported = 0, m_released = 0, m_release_errors = 0;
    int m_reps = 1;
};

int handoff_device(const Machine& m) { return m.selected.empty() ? 0 : m.selected.front(); }

class Handoff final : public Scenario {
public:
    Handoff() {
        m_info.id = "handoff";
        m_info.family = "handoff";
        m_info.summary = "hand a device matrix to another library: DLPack, Arrow device array, deep copy, CPU round trip";
        m_info.counting = "bytes_moved: bytes copied or converted per handoff, each copy or conversion pass counted once "
                          "(0 for zero-copy with the right layout); delivered_bandwidth: matrix bytes per handoff over "
                          "its time";
        m_info.axes = {
            choice_axis("path",
                        "dlpack: DLManagedTensorVersioned; arrow_device: ArrowDeviceArray with sync event; deep_copy: "
                        "device-to-device copy; cpu_roundtrip_pageable / cpu_roundtrip_pinned: device to host to device",
                        {"dlpack", "arrow_device", "deep_copy", "cpu_roundtrip_pageable", "cpu_roundtrip_pinned"}),
            choice_axis("consumer",
                        "same: the consumer takes the producer's row-major layout; transposed: the producer holds "
                        "column-major data and the consumer needs row-major, so a transpose is added",
                        {"same", "transposed"}),
            {"size", "bytes of the fp32 matrix (square, odd side)", AxisKind::size, {"1M", "256M"}, {}}};
        m_info.metrics = {{"time", "s", Better::lower, "time per handoff, until the consumer can use the data"},
                          {"bytes_moved", "B", Better::lower, "bytes copied or converted per handoff"},
                          {"delivered_bandwidth", "B/s", Better::higher, "matrix bytes over time per handoff"}};
    }
    const ScenarioInfo& info() const override { return m_info; }

    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        if (auto why = gpu_unavailable_reason(m)) return why;
        Dims2 d;
        try {
            d = dims_for(p.get_uint("size"), k_elem, ShapeKind::square);
        } catch (const UsageError& e) {
            return std::string(e.what());
        }
        const int dev = handoff_device(m);
        const DeviceInfo* info = m.device(dev);
        if (info == nullptr) return fmt::format("GPU {} does not exist", dev);
        const std::uint64_t need = 3 * matrix_bytes(d, k_elem);
        if (need > info->free_memory)
            return fmt::format("needs {} of GPU {}'s memory, {} free", format_size(need), dev, format_size(info->free_memory));
        return std::nullopt;
    }

    std::vector<PathUse> paths(const Params& p) const override {
        if (p.get("path").starts_with("cpu_roundtrip"))
            return {{PathKind::host_link, k_first_gpu, -1, "d2h"}, {PathKind::host_link, k_first_gpu, -1, "h2d"}};
        return {{PathKind::gpu_memory, k_first_gpu, -1, "", 2}}; // a copy or conversion reads and writes
    }

    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        return std::make_unique<HandoffCase>(ctx, handoff_device(*ctx.machine), parse_path(p.get("path")),
                                             p.get("consumer") == "transposed",
                                             dims_for(p.get_uint("size"), k_elem, ShapeKind::square));
    }

private:
    ScenarioInfo m_info;
};

} // namespace

void register_handoff(Registry& r) { r.add(std::make_unique<Handoff>()); }

} // namespace interopbench
