// pipeline: files -> host -> device -> row-major float32 matrix -> DLPack handoff -> consumer,
// every stage timed, and what each fix buys.
//
// What: a dataset of .npy column files (two each of float32, int64, float16, int8; npy.hpp)
// read batch by batch (`batch` file bytes per batch, `dataset` file bytes in all). Per batch:
// read each column's slice into a host staging buffer (the shared readers of hostio/readers;
// the columns dealt over the --storage-dir directories) -> copy to the device ->
// convert the columns into one rows x 8 row-major float32 matrix (with the casts) -> hand the
// matrix to a consumer through DLPack -> the consumer's kernel reads every element (per-row
// normalisation by the row's largest magnitude, and a sum) -> next batch. One sample is one
// pass over the whole dataset.
// Variants: naive = pageable staging, cudaMalloc + cudaFree per batch, the conversion on the
// host before the copy, a deep copy (device to device) at the handoff, everything synchronous
// on one stream; +pinned, +pool (cudaMallocFromPoolAsync from an own pool whose release
// threshold keeps its memory), +gpu_convert (the columns are copied and converted by a
// kernel), +zero_copy (the DLPack tensor is the matrix itself), +overlap (a reader thread
// fills a ring of 3 pinned slots while the GPU copies on one stream and converts and consumes
// on another: the copy needs pinned memory to be asynchronous, so this ring is pinned
// whatever the rest), +parallel_read (each batch's column slices read on several threads, each
// a contiguous share of the batch's bytes: the CPUs this process may use, at most 16), tuned =
// all of them.
// How: the end-to-end time is the host steady_clock from the first read to the last
// completion (the primary figure). Stages are timed without adding synchronisation to the
// overlapped variants: host stages (reads, the host conversion, allocation calls, the DLPack
// export/import) by host clocks on the thread that does them, device stages (copy, kernel
// conversion, handoff copy, consumer) by CUDA event pairs recorded on their own streams and
// read after the pass; each stage's times are summed over the batches. The serial variants
// synchronise after each stage because that is what they are. Overlap = sum of stage times
// over the end-to-end time. The cache state of every column file is put in place and proven
// before each sample (cold: pages dropped, mincore none resident; warm: all resident).
// After the run: speedup over the same run's naive configuration, efficiency against the
// slowest standalone stage, each at its best in the run (pipeline_read over its thread
// counts, pinned h2d_copy, pipeline_convert); per cache state, dataset, batch and GPU the
// finding (details "finding": the stage that bounds naive, the best single fix, tuned's
// speedup and bound, in a line of words and as numbers), and for a configuration with
// something of its own to say a diagnosis (details "diagnosis": allocation's share, more
// readers when the read bounds the pass and pipeline_read shows the machine reads faster,
// the registered page cache).
// Caveats: cudaFree synchronises the device, which is part of what naive costs.
#include "families/pipeline/pipeline.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "families/pipeline/dataset.hpp"
#include "families/pipeline/pipeline_kernels.hpp"
#include "gpu/cuda_util.hpp"
#include "gpu/interchange.hpp"
#include "gpu/registered_mapping.hpp"
#include "hostio/readers.hpp"
#include "hostio/storage_io.hpp"
#include "topology/topology.hpp"

namespace interopbench {
namespace pipeline {

const std::vector<std::string>& variant_names() {
    static const std::vector<std::string> v{"naive",    "+pinned",        "+pool",           "+gpu_convert", "+zero_copy",
                                            "+overlap", "+parallel_read", "+registered_cache", "tuned"};
    return v;
}

Variant parse_variant(const std::string& n) {
    Variant v;
    if (n == "naive") return v;
    if (n == "+pinned") v.pinned = true;
    else if (n == "+pool") v.pool = true;
    else if (n == "+gpu_convert") v.gpu_convert = true;
    else if (n == "+zero_copy") v.zero_copy = true;
    else if (n == "+overlap") v.overlap = true;
    else if (n == "+parallel_read") v.parallel_read = true;
    else if (n == "+registered_cache") v.registered_cache = v.gpu_convert = true; // the host never holds the bytes
    else if (n == "tuned") v = Variant{true, true, true, true, true, true, true};
    else throw UsageError(fmt::format("unknown pipeline variant '{}'", n),
                          "use naive, +pinned, +pool, +gpu_convert, +zero_copy, +overlap, +parallel_read, "
                          "+registered_cache or tuned");
    return v;
}

Geometry geometry(std::uint64_t dataset, std::uint64_t batch) {
    const std::uint64_t row = file_row_bytes();
    if (dataset < row || batch < row)
        throw UsageError(fmt::format("{} {} holds no row (a row is {} bytes in the files): zero batches",
                                     dataset < row ? "dataset" : "batch", format_size(dataset < row ? dataset : batch), row),
                         fmt::format("give a {} of at least {} bytes", dataset < row ? "dataset" : "batch", row));
    if (batch > dataset)
        throw UsageError(fmt::format("batch {} is larger than the dataset {}", format_size(batch), format_size(dataset)),
                         "give a batch no larger than the dataset (e.g. --axis batch=64M with --axis dataset=1G)");
    Geometry g;
    g.rows = dataset / row;
    g.batch_rows = batch / row;
    g.batches = (g.rows + g.batch_rows - 1) / g.batch_rows;
    return g;
}

unsigned slots(const Variant& v) { return v.overlap ? 3u : 1u; }

std::uint64_t device_bytes_needed(const Variant& v, const Geometry& g) {
    const std::uint64_t mat = g.batch_rows * matrix_row_bytes();
    const std::uint64_t in = v.gpu_convert ? soa_batch_layout(g.batch_rows).bytes : 0;
    const std::uint64_t copy = v.zero_copy ? 0 : mat;
    return slots(v) * (in + mat + copy) + 4096;
}

std::uint64_t host_bytes_needed(const Variant& v, const Geometry& g) {
    const std::uint64_t staging = soa_batch_layout(g.batch_rows).bytes;
    const std::uint64_t mat = v.gpu_convert ? 0 : g.batch_rows * matrix_row_bytes();
    return slots(v) * (staging + mat);
}

std::optional<std::uint64_t> site_bytes(const std::vector<Config>& configs) {
    std::optional<std::uint64_t> out;
    std::vector<std::uint64_t> seen;
    for (const Config& c : configs) {
        if (c.scenario->info().id != "pipeline" && c.scenario->info().id != "pipeline_read") continue;
        const Geometry g = geometry(c.params.get_uint("dataset"), c.params.get_uint("batch"));
        if (!out) out = 0;
        if (std::find(seen.begin(), seen.end(), g.rows) != seen.end()) continue;
        seen.push_back(g.rows);
        *out += g.rows * file_row_bytes() + 128 * columns().size();
    }
    return out;
}

} // namespace pipeline

namespace {

using namespace pipeline;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

enum Stage { s_read, s_h2d, s_alloc, s_convert, s_handoff, s_consume, k_stages };
const char* const k_stage_names[k_stages] = {"read", "h2d", "alloc", "convert", "handoff", "consume"};

/// A queue of slot or batch numbers between the reader thread and the GPU thread; -1 stops.
class Channel {
public:
    void push(long v) {
        {
            std::lock_guard<std::mutex> l(m_mutex);
            m_items.push_back(v);
        }
        m_cv.notify_one();
    }
    long pop() {
        std::unique_lock<std::mutex> l(m_mutex);
        m_cv.wait(l, [&] { return !m_items.empty(); });
        const long v = m_items.front();
        m_items.pop_front();
        return v;
    }
private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<long> m_items;
};

/// The host memory a variant stages its batches in (and the read bound it is measured against).
gpu::HostMem staging_kind(const Variant& v) { return v.pinned || v.overlap ? gpu::HostMem::pinned : gpu::HostMem::pageable; }

/// The dataset's column files as the pipeline reads them: one descriptor and one cache state
/// per file, and a batch read as the column slices into a staging buffer of the batch layout
/// by the shared readers (hostio/readers): one thread, or `threads` each a contiguous share of
/// the batch's bytes across its columns (the pipeline and its standalone read stage,
/// pipeline_read, share it).
class ColumnFiles {
public:
    ColumnFiles(Datasets& sets, std::uint64_t rows, bool cold, unsigned threads, bool pin)
        : m_data(sets.get(rows)), m_pool(threads, pin) {
        for (std::size_t c = 0; c < columns().size(); ++c) {
            m_fds.push_back(storage::open_file(m_data->paths()[c], O_RDONLY | O_CLOEXEC));
            const std::uint64_t size = m_data->headers()[c].data_offset + rows * col_width(columns()[c]);
            m_cache.push_back(std::make_unique<storage::CacheState>(m_data->paths()[c], size, cold));
        }
    }
    /// Puts every file in its cache state; returns the largest fraction cached before.
    double prepare_sample() {
        double resident = 0;
        for (auto& c : m_cache) resident = std::max(resident, c->prepare_sample().fraction());
        return resident;
    }
    /// Rows [row0, row0 + n) of every column into `base` at the layout's offsets.
    void read(std::uint64_t row0, std::uint64_t n, unsigned char* base, const SoaBatch& layout) {
        std::vector<storage::FileSlice> slices;
        for (std::size_t c = 0; c < columns().size(); ++c) {
            const std::size_t w = col_width(columns()[c]);
            slices.push_back({m_fds[c].get(), &m_data->paths()[c], m_data->headers()[c].data_offset + row0 * w, n * w,
                              base + layout.offsets[c]});
        }
        // Each thread's share read whole: one pread per slice piece, as a loader would.
        storage::read_slices(m_pool, storage::read_method("buffered"), slices, ~0ull >> 2, 1);
    }
    unsigned threads() const { return m_pool.size(); }
    const std::vector<int>& cpus() const { return m_pool.cpus(); }
    const Dataset& data() const { return *m_data; }
    /// Every column file whole (header included), as a registered mapping takes them.
    std::vector<gpu::MappedFile> mapped_files() const {
        std::vector<gpu::MappedFile> out;
        for (std::size_t c = 0; c < columns().size(); ++c)
            out.push_back({m_data->paths()[c], m_fds[c].get(),
                           m_data->headers()[c].data_offset + m_data->headers()[c].length * col_width(columns()[c])});
        return out;
    }
    std::string cache_method() const { return m_cache.empty() ? "" : m_cache[0]->method(); }

private:
    std::shared_ptr<Dataset> m_data;
    std::vector<storage::Fd> m_fds;
    std::vector<std::unique_ptr<storage::CacheState>> m_cache;
    storage::ThreadPool m_pool;
};

class PipelineCase final : public Case {
public:
    PipelineCase(Datasets& sets, int device, std::string variant, Geometry g, bool cold, bool pin)
        : m_device(device), m_name(std::move(variant)), m_v(parse_variant(m_name)), m_g(g),
          m_layout(soa_batch_layout(g.batch_rows)),
          m_files(sets, g.rows, cold, m_v.parallel_read ? storage::auto_reader_threads() : 1, pin) {
        gpu::set_device(device);
        if (m_v.registered_cache) register_cache(cold);
        const gpu::HostMem kind = staging_kind(m_v);
        for (unsigned s = 0; s < slots(m_v) && !m_v.registered_cache; ++s) {
            m_staging.emplace_back(kind, m_layout.bytes);
            if (!m_v.gpu_convert) m_host_mat.emplace_back(kind, g.batch_rows * matrix_row_bytes());
        }
        m_copy_stream = std::make_unique<gpu::Stream>(device);
        m_compute_stream = std::make_unique<gpu::Stream>(device);
        if (m_v.pool) {
            cudaMemPoolProps props{};
            props.allocType = cudaMemAllocationTypePinned;
            props.location.type = cudaMemLocationTypeDevice;
            props.location.id = device;
            IB_CUDA_CHECK(cudaMemPoolCreate(&m_pool, &props));
            std::uint64_t keep = ~0ull;
            IB_CUDA_CHECK(cudaMemPoolSetAttribute(m_pool, cudaMemPoolAttrReleaseThreshold, &keep));
        }
        m_sum = gpu::DeviceBuffer(device, sizeof(double));
        m_events.resize(g.batches * 8);
        for (auto& e : m_events) e = std::make_unique<gpu::Event>();
        for (unsigned s = 0; s < slots(m_v); ++s) m_copied.push_back(std::make_unique<gpu::Event>());
    }

    ~PipelineCase() override {
        if (m_pool) {
            cudaDeviceSynchronize();
            cudaMemPoolDestroy(m_pool);
        }
    }

    /// +registered_cache (and tuned, warm): the column files registered once, as a loader keeps
    /// a cached dataset registered across epochs; registering and unregistering are timed once
    /// each here. A cold pass cannot use it (registering faults the pages in: the pass would read
    /// nothing from the drive): +registered_cache is refused, tuned reads as before; where the
    /// GPU, the driver or the memory lock limit refuse, the same.
    void register_cache(bool cold) {
        std::string why;
        const auto files = m_files.mapped_files();
        std::uint64_t bytes = 0;
        for (const auto& f : files) bytes += f.bytes;
        if (cold) why = "cold: registering the files faults their pages in, so a pass would read nothing from the drive";
        else if (auto no = gpu::registered_mapping_unsupported(m_device, bytes)) why = *no;
        if (why.empty()) {
            try {
                auto t0 = Clock::now();
                m_registered = std::make_unique<gpu::RegisteredMapping>(files);
                m_register_s = since(t0);
                t0 = Clock::now();
                m_registered->unregister();
                m_unregister_s = since(t0);
                m_registered = std::make_unique<gpu::RegisteredMapping>(files);
            } catch (const Unsupported& e) {
                m_registered.reset();
                why = e.what();
            }
        }
        if (why.empty()) return;
        if (m_name != "tuned") throw Unsupported("+registered_cache: " + why);
        m_v.registered_cache = false; // tuned without it
        m_unregistered_why = why;
    }

    Sample measure() override {
        gpu::set_device(m_device);
        const double resident = m_files.prepare_sample();
        IB_CUDA_CHECK(cudaMemsetAsync(m_sum.get(), 0, sizeof(double), m_compute_stream->get()));
        IB_CUDA_CHECK(cudaStreamSynchronize(m_compute_stream->get()));
        for (double& t : m_host) t = 0;
        const auto t0 = Clock::now();
        if (m_v.overlap) run_overlapped();
        else run_serial();
        IB_CUDA_CHECK(cudaStreamSynchronize(m_copy_stream->get()));
        IB_CUDA_CHECK(cudaStreamSynchronize(m_compute_stream->get()));
        const double e2e = since(t0);
        IB_CUDA_CHECK(cudaMemcpy(&m_last_sum, m_sum.get(), sizeof(double), cudaMemcpyDeviceToHost));
        if (m_registered) m_registered->check_unchanged(); // a column file changed under its pinned pages fails it

        double st[k_stages];
        for (int i = 0; i < k_stages; ++i) st[i] = m_host[i];
        for (std::uint64_t b = 0; b < m_g.batches; ++b) {
            st[s_h2d] += gpu::elapsed_s(ev(b, 0), ev(b, 1));
            if (m_v.gpu_convert) st[s_convert] += gpu::elapsed_s(ev(b, 2), ev(b, 3));
            if (!m_v.zero_copy) st[s_handoff] += gpu::elapsed_s(ev(b, 4), ev(b, 5));
            st[s_consume] += gpu::elapsed_s(ev(b, 6), ev(b, 7));
        }
        double sum = 0;
        for (int i = 0; i < k_stages; ++i) {
            sum += st[i];
            m_stage_total[i] += st[i];
        }
        ++m_samples;
        Sample s{static_cast<double>(m_files.data().data_bytes()) / e2e, e2e, e2e / static_cast<double>(m_g.batches)};
        for (int i = 0; i < k_stages; ++i) s.push_back(st[i]);
        for (int i = 0; i < k_stages; ++i) s.push_back(st[i] / e2e);
        s.push_back(sum / e2e);
        s.push_back(resident);
        return s;
    }

    void check() override {
        // The reference depends on the row count only: computed once per dataset size per run.
        static std::mutex mutex;
        static std::map<std::uint64_t, std::pair<double, double>> cache;
        std::pair<double, double> ra;
        {
            std::lock_guard<std::mutex> lock(mutex);
            auto it = cache.find(m_g.rows);
            if (it == cache.end()) {
                double abs_sum = 0;
                const double ref = reference_sum(m_g.rows, &abs_sum);
                it = cache.emplace(m_g.rows, std::make_pair(ref, abs_sum)).first;
            }
            ra = it->second;
        }
        const double ref = ra.first, abs_sum = ra.second;
        const double tol = 1e-8 * (abs_sum + 1.0); // far above double rounding over the rows, below one wrong batch
        if (!(std::fabs(m_last_sum - ref) <= tol))
            throw CheckFailed(fmt::format("the consumer's sum {:.10g} differs from the host reference {:.10g} (tolerance {:.3g})",
                                          m_last_sum, ref, tol));
    }

    nlohmann::json details() const override {
        nlohmann::json j;
        j["path"] = fmt::format("{} .npy column files -> {} host staging -> GPU {} -> row-major float32 matrix -> DLPack "
                                "({}) -> consumer kernel",
                                columns().size(), m_v.pinned || m_v.overlap ? "pinned" : "pageable", m_device,
                                m_v.zero_copy ? "zero-copy" : "deep copy");
        j["fixes"] = {{"pinned", m_v.pinned},       {"pool", m_v.pool},       {"gpu_convert", m_v.gpu_convert},
                      {"zero_copy", m_v.zero_copy}, {"overlap", m_v.overlap}, {"parallel_read", m_v.parallel_read},
                      {"registered_cache", m_v.registered_cache}};
        if (m_registered) {
            j["path"] = fmt::format("{} .npy column files registered in the page cache -> GPU {} by the copy engine (no "
                                    "host copy) -> row-major float32 matrix -> DLPack ({}) -> consumer kernel",
                                    columns().size(), m_device, m_v.zero_copy ? "zero-copy" : "deep copy");
            j["register_s"] = m_register_s;
            j["unregister_s"] = m_unregister_s;
            j["registered_bytes"] = registered_bytes();
            j["timed"] = "the passes only: the files were registered once when the configuration was set up";
        }
        if (!m_unregistered_why.empty()) j["registered_cache_note"] = "not used: " + m_unregistered_why;
        j["read_threads"] = m_files.threads();
        if (!m_files.cpus().empty()) j["reader_cpus"] = m_files.cpus();
        if (m_v.overlap && !m_v.pinned) j["note"] = "+overlap needs pinned memory for asynchronous copies: its ring is pinned";
        std::vector<std::string> types;
        for (ColType t : columns()) types.push_back(to_string(t));
        j["columns"] = types;
        j["files"] = m_files.data().paths();
        j["files_reused"] = m_files.data().reused();
        if (!m_files.data().notes().empty()) j["file_notes"] = m_files.data().notes();
        j["rows"] = m_g.rows;
        j["batch_rows"] = m_g.batch_rows;
        j["batches"] = m_g.batches;
        j["ring_slots"] = slots(m_v);
        j["file_bytes"] = m_files.data().data_bytes();
        j["matrix_bytes"] = m_g.rows * matrix_row_bytes();
        j["ops_per_sample"] = 1;
        j["timer"] = "end to end: host steady_clock from the first read to the last completion (primary)";
        j["stage_timing"] =
            "read: host clock around each pread on the reading thread; h2d: CUDA events on the copy stream; alloc: host "
            "clock around each allocation and free call; convert: CUDA events on the compute stream (gpu_convert) or host "
            "clock (host conversion); handoff: CUDA events around the device-to-device copy (deep copy) plus host clock "
            "around the DLPack export and import; consume: CUDA events on the compute stream. Summed over batches; no "
            "synchronisation is added between stages of the overlapped variants";
        j["cache_method"] = m_files.cache_method();
        j["verification"] = "the consumer's sum over the whole dataset against the host reference computed from the "
                            "generator (tolerance 1e-8 of the sum of magnitudes)";
        if (m_samples) {
            int best = 0;
            nlohmann::json mean = nlohmann::json::object();
            for (int i = 0; i < k_stages; ++i) {
                mean[k_stage_names[i]] = m_stage_total[i] / m_samples;
                if (m_stage_total[i] > m_stage_total[best]) best = i;
            }
            j["stages"] = mean; // mean seconds per pass by stage (the HTML page draws them stacked)
            j["bounding_stage"] = k_stage_names[best];
        }
        return j;
    }

private:
    const gpu::Event& ev(std::uint64_t b, int i) const { return *m_events[b * 8 + static_cast<std::uint64_t>(i)]; }

    /// Reads batch b into slot s (and converts on the host when the GPU does not); returns the
    /// stage times to the caller's accumulators.
    void read_batch(std::uint64_t b, unsigned s, double* read_s, double* convert_s) {
        if (m_registered) return; // the copy engine reads the registered page cache itself
        const std::uint64_t row0 = b * m_g.batch_rows, n = m_g.rows_of(b);
        auto* base = static_cast<unsigned char*>(m_staging[s].get());
        auto t = Clock::now();
        m_files.read(row0, n, base, m_layout);
        *read_s += since(t);
        if (!m_v.gpu_convert) {
            t = Clock::now();
            convert_host(base, m_layout, n, static_cast<float*>(m_host_mat[s].get()));
            *convert_s += since(t);
        }
    }

    void* dev_alloc(std::size_t bytes, cudaStream_t s) {
        void* p = nullptr;
        if (m_v.pool) IB_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, m_pool, s));
        else IB_CUDA_CHECK(cudaMalloc(&p, bytes));
        return p;
    }
    void dev_free(void* p, cudaStream_t s) {
        if (!p) return;
        if (m_v.pool) IB_CUDA_CHECK(cudaFreeAsync(p, s));
        else IB_CUDA_CHECK(cudaFree(p));
    }

    /// The GPU part of batch b from slot s: allocate, copy, convert, hand over, consume,
    /// free. `serial` synchronises after each stage (the serial variants).
    void gpu_batch(std::uint64_t b, unsigned s, bool serial) {
        const std::uint64_t n = m_g.rows_of(b);
        cudaStream_t ks = m_copy_stream->get(), cs = serial ? ks : m_compute_stream->get();
        const std::size_t mat_bytes = n * matrix_row_bytes();
        auto t = Clock::now();
        // Each allocation is needed by the stream that uses it first: the copy's destination
        // on the copy stream, the rest on the compute stream.
        void* d_in = m_v.gpu_convert ? dev_alloc(m_layout.bytes, ks) : nullptr;
        void* d_mat = dev_alloc(mat_bytes, m_v.gpu_convert ? cs : ks);
        void* d_copy = m_v.zero_copy ? nullptr : dev_alloc(mat_bytes, cs);
        m_host[s_alloc] += since(t);
        try {
            enqueue_batch(b, s, serial, d_in, d_mat, d_copy);
        } catch (...) {
            // A failed batch must not keep its device memory: wait for what was enqueued, free.
            cudaDeviceSynchronize();
            for (void* p : {d_in, d_mat, d_copy})
                if (p) static_cast<void>(m_v.pool ? cudaFreeAsync(p, cs) : cudaFree(p));
            cudaDeviceSynchronize();
            throw;
        }
        t = Clock::now();
        dev_free(d_in, cs);
        dev_free(d_mat, cs);
        dev_free(d_copy, cs);
        m_host[s_alloc] += since(t);
    }

    /// Copy, convert, hand over and consume batch b (its device buffers allocated).
    void enqueue_batch(std::uint64_t b, unsigned s, bool serial, void* d_in, void* d_mat, void* d_copy) {
        const std::uint64_t n = m_g.rows_of(b);
        const std::size_t cols = columns().size();
        cudaStream_t ks = m_copy_stream->get(), cs = serial ? ks : m_compute_stream->get();
        const std::size_t mat_bytes = n * matrix_row_bytes();
        IB_CUDA_CHECK(cudaEventRecord(ev(b, 0).get(), ks));
        if (m_registered) {
            // Each column's slice of the batch, from its registered mapping to its place in the batch.
            const std::uint64_t row0 = b * m_g.batch_rows;
            for (std::size_t c = 0; c < cols; ++c) {
                const std::size_t w = col_width(columns()[c]);
                const auto* src = static_cast<const unsigned char*>(m_registered->data(c)) +
                                  m_files.data().headers()[c].data_offset + row0 * w;
                IB_CUDA_CHECK(cudaMemcpyAsync(static_cast<unsigned char*>(d_in) + m_layout.offsets[c], src, n * w,
                                              cudaMemcpyHostToDevice, ks));
            }
        } else if (m_v.gpu_convert)
            IB_CUDA_CHECK(cudaMemcpyAsync(d_in, m_staging[s].get(), m_layout.bytes, cudaMemcpyHostToDevice, ks));
        else
            IB_CUDA_CHECK(cudaMemcpyAsync(d_mat, m_host_mat[s].get(), mat_bytes, cudaMemcpyHostToDevice, ks));
        IB_CUDA_CHECK(cudaEventRecord(ev(b, 1).get(), ks));
        if (m_v.overlap) IB_CUDA_CHECK(cudaEventRecord(m_copied[s]->get(), ks));
        if (serial) IB_CUDA_CHECK(cudaStreamSynchronize(ks));
        else IB_CUDA_CHECK(cudaStreamWaitEvent(cs, ev(b, 1).get(), 0));

        if (m_v.gpu_convert) {
            DeviceColumns dc{};
            dc.cols = static_cast<int>(cols);
            for (std::size_t c = 0; c < cols; ++c) {
                dc.data[c] = static_cast<unsigned char*>(d_in) + m_layout.offsets[c];
                dc.type[c] = static_cast<int>(columns()[c]);
            }
            IB_CUDA_CHECK(cudaEventRecord(ev(b, 2).get(), cs));
            IB_CUDA_CHECK(launch_convert(static_cast<float*>(d_mat), dc, n, cs));
            IB_CUDA_CHECK(cudaEventRecord(ev(b, 3).get(), cs));
            if (serial) IB_CUDA_CHECK(cudaStreamSynchronize(cs));
        }

        void* handed = d_mat;
        if (!m_v.zero_copy) {
            IB_CUDA_CHECK(cudaEventRecord(ev(b, 4).get(), cs));
            IB_CUDA_CHECK(cudaMemcpyAsync(d_copy, d_mat, mat_bytes, cudaMemcpyDeviceToDevice, cs));
            IB_CUDA_CHECK(cudaEventRecord(ev(b, 5).get(), cs));
            if (serial) IB_CUDA_CHECK(cudaStreamSynchronize(cs));
            handed = d_copy;
        }
        const auto t = Clock::now();
        TensorDesc desc;
        desc.data = handed;
        desc.device = {DLDeviceType::cuda, m_device};
        desc.dtype = dlpack_dtype(DType::fp32);
        desc.shape = {static_cast<std::int64_t>(n), static_cast<std::int64_t>(cols)};
        desc.strides = row_major_strides(desc.shape);
        DLManagedTensorVersioned* tensor =
            export_dlpack(desc, m_v.zero_copy ? 0 : k_dlpack_flag_is_copied, [] {});
        const TensorView view = import_dlpack(tensor);
        m_host[s_handoff] += since(t);
        if (matrix_order(view) != MatrixOrder::row_major || view.device.device_type != DLDeviceType::cuda) {
            release(tensor);
            throw ConfigError("the consumer received a tensor that is not a row-major CUDA matrix");
        }
        IB_CUDA_CHECK(cudaEventRecord(ev(b, 6).get(), cs));
        const cudaError_t launched = launch_consume(static_cast<double*>(m_sum.get()), static_cast<const float*>(view.data),
                                                    static_cast<std::uint64_t>(view.shape[0]), static_cast<int>(view.shape[1]), cs);
        release(tensor);
        IB_CUDA_CHECK(launched);
        IB_CUDA_CHECK(cudaEventRecord(ev(b, 7).get(), cs));
        if (serial) IB_CUDA_CHECK(cudaStreamSynchronize(cs));
    }

    void run_serial() {
        for (std::uint64_t b = 0; b < m_g.batches; ++b) {
            read_batch(b, 0, &m_host[s_read], &m_host[s_convert]);
            gpu_batch(b, 0, true);
        }
    }

    void run_overlapped() {
        Channel free_slots, ready;
        const unsigned S = slots(m_v);
        std::vector<char> pending(S, 0); // not vector<bool>: the reader reads one slot while this thread sets another
        for (unsigned s = 0; s < S; ++s) free_slots.push(s);
        double read_s = 0, convert_s = 0;
        std::exception_ptr reader_error;
        std::thread reader([&] {
            try {
                gpu::set_device(m_device);
                for (std::uint64_t b = 0; b < m_g.batches; ++b) {
                    const long s = free_slots.pop();
                    if (s < 0) return;
                    // The slot's previous copy must be done before its bytes are overwritten.
                    if (pending[static_cast<std::size_t>(s)]) IB_CUDA_CHECK(cudaEventSynchronize(m_copied[static_cast<std::size_t>(s)]->get()));
                    read_batch(b, static_cast<unsigned>(s), &read_s, &convert_s);
                    ready.push(static_cast<long>(b));
                }
            } catch (...) {
                reader_error = std::current_exception();
                ready.push(-1);
            }
        });
        try {
            for (std::uint64_t b = 0; b < m_g.batches; ++b) {
                const long got = ready.pop();
                if (got < 0) break;
                const unsigned s = static_cast<unsigned>(b % S);
                gpu_batch(b, s, false);
                pending[s] = 1; // m_copied[s] is recorded: the reader may wait on it
                free_slots.push(s);
            }
        } catch (...) {
            free_slots.push(-1);
            reader.join();
            throw;
        }
        reader.join();
        if (reader_error) std::rethrow_exception(reader_error);
        m_host[s_read] += read_s;
        m_host[s_convert] += convert_s;
    }

    std::uint64_t registered_bytes() const {
        std::uint64_t bytes = 0;
        for (const auto& f : m_files.mapped_files()) bytes += f.bytes;
        return bytes;
    }

    int m_device;
    std::string m_name;
    Variant m_v;
    Geometry m_g;
    SoaBatch m_layout;
    ColumnFiles m_files;
    std::unique_ptr<gpu::RegisteredMapping> m_registered; ///< +registered_cache: every column file, registered once
    double m_register_s = 0, m_unregister_s = 0;
    std::string m_unregistered_why; ///< why tuned runs without the registered cache
    std::vector<gpu::HostBuffer> m_staging, m_host_mat;
    std::unique_ptr<gpu::Stream> m_copy_stream, m_compute_stream;
    cudaMemPool_t m_pool = nullptr;
    gpu::DeviceBuffer m_sum;
    std::vector<std::unique_ptr<gpu::Event>> m_events;
    std::vector<std::unique_ptr<gpu::Event>> m_copied;
    double m_host[k_stages] = {};
    double m_stage_total[k_stages] = {};
    int m_samples = 0;
    double m_last_sum = 0;
};

Axis cache_axis() {
    return {"cache", "cold: pages of every column file dropped before each pass and mincore shows none cached; warm: all cached",
            AxisKind::choice, {"warm"}, {"cold", "warm"}};
}
Axis dataset_axis() { return {"dataset", "file bytes of the dataset (8 columns, 30 bytes a row)", AxisKind::size, {"1G"}, {}}; }
Axis batch_axis() { return {"batch", "file bytes per batch", AxisKind::size, {"64M"}, {}}; }
MetricInfo resident_metric() {
    return {"resident_before", "ratio", Better::lower, "largest fraction of a column file cached before the pass"};
}

/// Why the dataset's cache state cannot be had: warm needs it in the page cache beside the
/// host buffers (`host_bytes`), cold needs a directory whose pages can be dropped.
std::optional<std::string> cache_unsupported(storage::Site& site, bool warm, const Geometry& g, std::uint64_t host_bytes) {
    if (warm) {
        const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
        const double mem = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
        const double data = static_cast<double>(g.rows * file_row_bytes());
        if (mem > 0 && 1.5 * data + static_cast<double>(host_bytes) > mem)
            return fmt::format("warm needs the dataset in the page cache: {} is too large for {} of RAM",
                               format_size(g.rows * file_row_bytes()), format_size(static_cast<std::uint64_t>(mem)));
        return std::nullopt;
    }
    return site.cold_unreachable();
}

/// Bytes a conversion reads and writes per file byte it counts: the columns in, the float32 matrix out.
double convert_traffic() { return 1 + static_cast<double>(matrix_row_bytes()) / static_cast<double>(file_row_bytes()); }

class PipelineScenario final : public storage::SiteScenario {
public:
    explicit PipelineScenario(std::shared_ptr<Datasets> sets) : SiteScenario(sets->site_ptr()), m_sets(std::move(sets)) {
        m_info.id = "pipeline";
        m_info.family = "pipeline";
        m_info.summary = ".npy column files -> host -> GPU -> row-major float32 matrix -> DLPack -> consumer kernel, "
                         "every stage timed, per variant (naive, single fixes, tuned)";
        m_info.counting = "dataset file bytes (the column data, headers excluded) once per pass";
        m_info.axes = {{"variant",
                        "naive: pageable, cudaMalloc/cudaFree per batch, host conversion, deep copy at handoff, "
                        "synchronous; +pinned, +pool, +gpu_convert, +zero_copy, +overlap, +parallel_read (each batch's "
                        "column slices read on several threads: the CPUs this process may use, at most 16), "
                        "+registered_cache (warm only: the column files registered with CUDA once, each batch copied "
                        "by the copy engine straight from the page cache, converted on the GPU): one fix each; tuned: "
                        "all (the registered cache where warm and the GPU allows it)",
                        AxisKind::choice, {"naive", "tuned"}, variant_names()},
                       cache_axis(), dataset_axis(), batch_axis(), device_axis()};
        m_info.metrics = {{"throughput", "B/s", Better::higher, "dataset file bytes over the end-to-end time"},
                          {"time", "s", Better::lower, "end-to-end time of one pass (host clock)"},
                          {"time_per_batch", "s", Better::lower, "end-to-end time over the number of batches"}};
        const char* const help[k_stages] = {"reading the columns' slices (host clock, summed)",
                                            "host-to-device copies (CUDA events on the copy stream)",
                                            "device allocation and free calls (host clock)",
                                            "layout conversion (kernel events, or host clock for the host conversion)",
                                            "handoff: deep copy (events) plus DLPack export/import (host clock)",
                                            "consumer kernel (CUDA events)"};
        for (int i = 0; i < k_stages; ++i)
            m_info.metrics.push_back({fmt::format("{}_time", k_stage_names[i]), "s", Better::lower, help[i]});
        for (int i = 0; i < k_stages; ++i)
            m_info.metrics.push_back({fmt::format("{}_share", k_stage_names[i]), "ratio", Better::lower,
                                      fmt::format("{} time over the end-to-end time", k_stage_names[i])});
        m_info.metrics.push_back({"overlap", "ratio", Better::higher, "sum of the stage times over the end-to-end time"});
        m_info.metrics.push_back(resident_metric());
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params& p) const override {
        const int dev = static_cast<int>(p.get_uint("device"));
        const Variant v = parse_variant(p.get("variant"));
        // Without a GPU conversion the host converts and the float32 matrix crosses the link.
        const double over_link = v.gpu_convert ? 1 : static_cast<double>(matrix_row_bytes()) / static_cast<double>(file_row_bytes());
        const bool cold = p.get("cache") == "cold";
        // A registered cache is read by the copy engine itself: the host link alone.
        std::vector<PathUse> out;
        if (cold || !v.registered_cache) out.push_back({cold ? PathKind::storage : PathKind::page_cache});
        out.push_back({PathKind::host_link, dev, -1, "h2d", over_link});
        if (v.gpu_convert) out.push_back({PathKind::gpu_memory, dev, -1, "", convert_traffic()});
        return out;
    }

    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        const Variant v = parse_variant(p.get("variant"));
        Geometry g;
        try {
            g = geometry(p.get_uint("dataset"), p.get_uint("batch"));
        } catch (const UsageError& e) {
            return std::string(e.what());
        }
        if (auto why = gpu_unavailable_reason(m)) return why;
        if (p.get("variant") == "+registered_cache" && p.get("cache") == "cold")
            return std::string("+registered_cache is warm only: registering the files faults their pages in, so a cold "
                               "pass would read nothing from the drive");
        const int dev = static_cast<int>(p.get_uint("device"));
        const DeviceInfo* d = m.device(dev);
        if (!d) return fmt::format("GPU {} does not exist", dev);
        const std::uint64_t need = device_bytes_needed(v, g);
        if (need > d->free_memory)
            return fmt::format("needs {} of device memory ({} batch slot(s) of {} rows: columns, matrix, handoff copy); "
                               "GPU {} has {} free",
                               format_size(need), slots(v), g.batch_rows, dev, format_size(d->free_memory));
        return cache_unsupported(site(), p.get("cache") == "warm", g, host_bytes_needed(v, g));
    }

    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        reset_placement();
        const Variant v = parse_variant(p.get("variant"));
        const Geometry g = geometry(p.get_uint("dataset"), p.get_uint("batch"));
        if (auto why = host_memory_shortfall(host_bytes_needed(v, g))) throw Unsupported(*why);
        return std::make_unique<PipelineCase>(*m_sets, static_cast<int>(p.get_uint("device")), p.get("variant"), g,
                                              p.get("cache") == "cold", ctx.bind_numa);
    }

private:
    std::shared_ptr<Datasets> m_sets;
    ScenarioInfo m_info;
};

// ---- pipeline_convert: the conversion kernel alone, the standalone rate of that stage ----

class ConvertCase final : public Case {
public:
    ConvertCase(int device, std::uint64_t rows, double sample_time)
        : m_device(device), m_rows(rows), m_layout(soa_batch_layout(rows)), m_stream(device),
          m_in(device, m_layout.bytes), m_out(device, rows * matrix_row_bytes()) {
        gpu::set_device(device);
        std::vector<unsigned char> host(m_layout.bytes);
        fill_batch(host.data(), m_layout, 0, rows);
        IB_CUDA_CHECK(cudaMemcpy(m_in.get(), host.data(), host.size(), cudaMemcpyHostToDevice));
        for (std::size_t c = 0; c < columns().size(); ++c) {
            m_cols.data[c] = static_cast<unsigned char*>(m_in.get()) + m_layout.offsets[c];
            m_cols.type[c] = static_cast<int>(columns()[c]);
        }
        m_cols.cols = static_cast<int>(columns().size());
        gpu::TimedRegion t({&m_stream}, false);
        t.begin();
        IB_CUDA_CHECK(launch_convert(static_cast<float*>(m_out.get()), m_cols, rows, m_stream.get()));
        m_reps = gpu::reps_for(t.end(), sample_time);
    }
    Sample measure() override {
        gpu::set_device(m_device);
        gpu::TimedRegion t({&m_stream}, true);
        t.begin();
        for (int i = 0; i < m_reps; ++i)
            IB_CUDA_CHECK(launch_convert(static_cast<float*>(m_out.get()), m_cols, m_rows, m_stream.get()));
        const double per = t.end() / m_reps;
        return {static_cast<double>(m_layout.data_bytes) / per, per};
    }
    void check() override {
        std::vector<float> got(m_rows * columns().size()), want(got.size());
        IB_CUDA_CHECK(cudaMemcpy(got.data(), m_out.get(), got.size() * 4, cudaMemcpyDeviceToHost));
        std::vector<unsigned char> host(m_layout.bytes);
        fill_batch(host.data(), m_layout, 0, m_rows);
        convert_host(host.data(), m_layout, m_rows, want.data());
        std::uint64_t bad = 0;
        for (std::size_t i = 0; i < got.size(); ++i) bad += got[i] != want[i];
        if (bad) throw CheckFailed(fmt::format("{} of {} matrix elements differ from the host conversion", bad, got.size()));
    }
    nlohmann::json details() const override {
        return {{"path", "device columns -> device row-major float32 matrix"},
                {"rows", m_rows},
                {"bytes_per_op", m_layout.data_bytes},
                {"ops_per_sample", m_reps},
                {"timer", "CUDA events, stream held by a spin kernel while enqueueing"},
                {"verification", "the matrix compared element by element with the host conversion"}};
    }

private:
    int m_device;
    std::uint64_t m_rows;
    SoaBatch m_layout;
    gpu::Stream m_stream;
    gpu::DeviceBuffer m_in, m_out;
    DeviceColumns m_cols{};
    int m_reps = 1;
};

class ConvertScenario final : public Scenario {
public:
    ConvertScenario() {
        m_info.id = "pipeline_convert";
        m_info.family = "pipeline";
        m_info.summary = "the pipeline's conversion kernel alone (mixed-type columns -> row-major float32), device-resident";
        m_info.counting = "file bytes of the batch's columns (read) once per conversion";
        m_info.axes = {batch_axis(), device_axis()};
        m_info.metrics = {{"bandwidth", "B/s", Better::higher, "column bytes converted per second"},
                          {"time", "s", Better::lower, "time of one conversion"}};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params& p) const override {
        return {{PathKind::gpu_memory, static_cast<int>(p.get_uint("device")), -1, "", convert_traffic()}};
    }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        const std::uint64_t batch = p.get_uint("batch");
        if (batch < file_row_bytes()) return fmt::format("batch {} holds no row ({} bytes)", batch, file_row_bytes());
        if (auto why = gpu_unavailable_reason(m)) return why;
        const DeviceInfo* d = m.device(static_cast<int>(p.get_uint("device")));
        const std::uint64_t rows = batch / file_row_bytes();
        const std::uint64_t need = soa_batch_layout(rows).bytes + rows * matrix_row_bytes();
        if (d && need > d->free_memory)
            return fmt::format("needs {} of device memory; GPU {} has {} free", format_size(need), d->ordinal,
                               format_size(d->free_memory));
        return std::nullopt;
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        return std::make_unique<ConvertCase>(static_cast<int>(p.get_uint("device")), p.get_uint("batch") / file_row_bytes(),
                                             ctx.sample_time_s);
    }

private:
    ScenarioInfo m_info;
};

// ---- pipeline_read: the read stage alone, the standalone rate of that stage -------------
// The same files, batch slices, readers and staging buffer kind as the pipeline's read; its
// best over the thread counts a run measures is the read ceiling of the pipeline's bound. A
// one-file read (storage_read) is another workload: eight files, each with its own
// read-ahead, read in slices of a batch.

class ReadCase final : public Case {
public:
    ReadCase(Datasets& sets, Geometry g, bool cold, gpu::HostMem kind, unsigned threads, bool pin)
        : m_g(g), m_layout(soa_batch_layout(g.batch_rows)), m_files(sets, g.rows, cold, threads, pin), m_staging(kind, m_layout.bytes) {}
    Sample measure() override {
        const double resident = m_files.prepare_sample();
        auto* base = static_cast<unsigned char*>(m_staging.get());
        const auto t0 = Clock::now();
        for (std::uint64_t b = 0; b < m_g.batches; ++b)
            m_files.read(b * m_g.batch_rows, m_g.rows_of(b), base, m_layout);
        const double t = since(t0);
        return {static_cast<double>(m_files.data().data_bytes()) / t, t, t / static_cast<double>(m_g.batches), resident};
    }
    void check() override {
        // The staging buffer holds the last batch: compare it with the generator's.
        const std::uint64_t row0 = (m_g.batches - 1) * m_g.batch_rows, n = m_g.rows - row0;
        std::vector<unsigned char> want(m_layout.bytes);
        fill_batch(want.data(), m_layout, row0, n);
        const auto* got = static_cast<const unsigned char*>(m_staging.get());
        for (std::size_t c = 0; c < columns().size(); ++c)
            if (std::memcmp(got + m_layout.offsets[c], want.data() + m_layout.offsets[c], n * col_width(columns()[c])) != 0)
                throw CheckFailed(fmt::format("column {} of the last batch (rows {} to {}) differs from the generator's values",
                                              c, row0, row0 + n - 1));
    }
    nlohmann::json details() const override {
        return {{"path", fmt::format("{} .npy column files -> {} host staging, the batch's column slices on {} thread(s)",
                                     columns().size(), gpu::to_string(m_staging.kind()), m_files.threads())},
                {"threads_used", m_files.threads()},
                {"files", m_files.data().paths()},
                {"files_reused", m_files.data().reused()},
                {"rows", m_g.rows},
                {"batch_rows", m_g.batch_rows},
                {"batches", m_g.batches},
                {"file_bytes", m_files.data().data_bytes()},
                {"ops_per_sample", 1},
                {"timer", "host steady_clock around the reads of one pass"},
                {"cache_method", m_files.cache_method()},
                {"verification", "the last batch's columns compared byte for byte with the generator's values"}};
    }

private:
    Geometry m_g;
    SoaBatch m_layout;
    ColumnFiles m_files;
    gpu::HostBuffer m_staging;
};

class ReadScenario final : public storage::SiteScenario {
public:
    explicit ReadScenario(std::shared_ptr<Datasets> sets) : SiteScenario(sets->site_ptr()), m_sets(std::move(sets)) {
        m_info.id = "pipeline_read";
        m_info.family = "pipeline";
        m_info.needs_gpu = false;
        m_info.summary = "the pipeline's read stage alone: its column files batch by batch into host staging, on one "
                         "or several reader threads (pageable runs without a GPU)";
        m_info.counting = "dataset file bytes (the column data, headers excluded) once per pass";
        m_info.axes = {cache_axis(), dataset_axis(), batch_axis(),
                       {"host_mem", "staging buffer: pinned (the +pinned, +overlap and tuned variants) or pageable (the others)",
                        AxisKind::choice, {"pinned"}, {"pageable", "pinned"}},
                       {"threads",
                        "reader threads, each a contiguous share of the batch's bytes across its columns (1: the read of "
                        "the variants without +parallel_read; 0: the CPUs this process may use, at most 16, as "
                        "+parallel_read)",
                        AxisKind::integer, {"1"}, {}, 0, 1024}};
        m_info.metrics = {{"bandwidth", "B/s", Better::higher, "dataset file bytes over the time to read them"},
                          {"time", "s", Better::lower, "time of one pass"},
                          {"time_per_batch", "s", Better::lower, "time of one pass over the number of batches"},
                          resident_metric()};
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params& p) const override {
        return {{p.get("cache") == "cold" ? PathKind::storage : PathKind::page_cache}};
    }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        Geometry g;
        try {
            g = geometry(p.get_uint("dataset"), p.get_uint("batch"));
        } catch (const UsageError& e) {
            return std::string(e.what());
        }
        if (const auto t = p.get_uint("threads"); t != 0)
            if (auto why = storage::threads_refused(t, m.host_cores)) return why;
        if (p.get("host_mem") == "pinned")
            if (auto why = gpu_unavailable_reason(m)) return why;
        return cache_unsupported(site(), p.get("cache") == "warm", g, soa_batch_layout(g.batch_rows).bytes);
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        reset_placement();
        const Geometry g = geometry(p.get_uint("dataset"), p.get_uint("batch"));
        if (auto why = host_memory_shortfall(soa_batch_layout(g.batch_rows).bytes)) throw Unsupported(*why);
        const unsigned threads = p.get_uint("threads") ? static_cast<unsigned>(p.get_uint("threads")) : storage::auto_reader_threads();
        return std::make_unique<ReadCase>(*m_sets, g, p.get("cache") == "cold", gpu::parse_host_mem(p.get("host_mem")),
                                          threads, ctx.bind_numa);
    }

private:
    std::shared_ptr<Datasets> m_sets;
    ScenarioInfo m_info;
};

// ---- after the run ---------------------------------------------------------------------

double median_of(const Result& r, const std::string& metric) {
    const MetricResult* m = r.metric(metric);
    return r.status == Status::ok && m && m->stats.n > 0 ? m->stats.median : 0;
}

std::string gbps(double v) { return fmt::format("{:.2f} GB/s", v / 1e9); }

// The largest stage of a pass and its share of the pass.
std::pair<std::string, double> largest_stage(const Result& r) {
    std::string stage = "read";
    double share = -1;
    for (int i = 0; i < k_stages; ++i) {
        const double s = median_of(r, fmt::format("{}_share", k_stage_names[i]));
        if (s > share) {
            share = s;
            stage = k_stage_names[i];
        }
    }
    return {stage, share};
}



} // namespace

void register_pipeline(Registry& r, std::shared_ptr<storage::Site> site) {
    auto sets = std::make_shared<Datasets>(std::move(site));
    r.add(std::make_unique<PipelineScenario>(sets));
    r.add(std::make_unique<ConvertScenario>());
    r.add(std::make_unique<ReadScenario>(sets));
}

void annotate_pipeline_results(std::vector<Result>& results) {
    auto same_run = [](const Result& a, const Result& b) {
        for (const char* k : {"cache", "dataset", "batch", "device"})
            if (a.params.find(k) != b.params.find(k)) return false;
        return true;
    };
    // The configurations of r's cache state, dataset, batch and GPU that the run's finding
    // is made of: naive, the fastest single fix, tuned.
    struct Group {
        const Result *naive = nullptr, *best_fix = nullptr, *tuned = nullptr;
    };
    const auto group_of = [&](const Result& r) {
        Group g;
        for (const Result& o : results) {
            if (o.scenario != "pipeline" || !same_run(o, r) || median_of(o, "throughput") <= 0) continue;
            const std::string ov = o.params.get("variant");
            if (ov == "naive") g.naive = &o;
            else if (ov == "tuned") g.tuned = &o;
            else if (!g.best_fix || median_of(o, "throughput") > median_of(*g.best_fix, "throughput")) g.best_fix = &o;
        }
        return g;
    };
    for (Result& r : results) {
        if (r.scenario != "pipeline" || r.status != Status::ok) continue;
        const double tp = median_of(r, "throughput");
        const std::string variant = r.params.get("variant");
        const Result* naive = group_of(r).naive;
        if (naive) r.details["speedup_over_naive"] = tp / median_of(*naive, "throughput");
        else r.details["speedup_note"] = "no naive configuration of the same cache, dataset, batch and device in this run";

        // The slowest standalone stage of the same run, each at its best: the read ceiling is the
        // best pipeline_read of the same dataset, batch and cache state over the thread counts
        // and staging kinds the run measured (never one reader unless that was the best), the
        // copy ceiling the best pinned copy-engine h2d_copy to this GPU, the conversion kernel
        // alone at this batch.
        const Result *rd = nullptr, *h2d = nullptr, *conv = nullptr;
        for (const Result& o : results) {
            if (o.status != Status::ok) continue;
            // A variant that reads on many threads is bounded only by a read measured on as many
            // (threads 0: the same automatic count), so that the ceiling cannot be beaten.
            const auto threads = o.params.find("threads");
            const bool enough_readers =
                !parse_variant(variant).parallel_read ||
                (threads && !threads->empty() && threads->size() < 6 &&
                 threads->find_first_not_of("0123456789") == std::string::npos &&
                 (*threads == "0" || std::stoul(*threads) >= 16));
            if (o.scenario == "pipeline_read" && o.params.find("cache") == r.params.find("cache") &&
                o.params.find("dataset") == r.params.find("dataset") && o.params.find("batch") == r.params.find("batch") &&
                enough_readers && (!rd || median_of(o, "bandwidth") > median_of(*rd, "bandwidth")))
                rd = &o;
            if (o.scenario == "h2d_copy" && o.params.find("device") == r.params.find("device") &&
                o.params.find("host_mem") == "pinned" && o.params.find("engine") == "ce" &&
                (!h2d || median_of(o, "bandwidth") > median_of(*h2d, "bandwidth")))
                h2d = &o;
            if (o.scenario == "pipeline_convert" && o.params.find("device") == r.params.find("device") &&
                o.params.find("batch") == r.params.find("batch"))
                conv = &o;
        }
        // A registered cache is not read by the host: its read stage is no bound.
        const bool registered = r.details.contains("fixes") && r.details["fixes"].is_object() &&
                                r.details["fixes"].value("registered_cache", false);
        const Result* reader = registered ? nullptr : rd;
        nlohmann::json bound = nlohmann::json::object();
        const Result* slowest = nullptr;
        for (const Result* o : {reader, h2d, conv}) {
            if (!o) continue;
            bound[o->scenario] = {{"key", o->key}, {"bandwidth", median_of(*o, "bandwidth")}};
            if (o == rd) bound[o->scenario]["threads"] = o->params.find("threads").value_or("1");
            if (!slowest || median_of(*o, "bandwidth") < median_of(*slowest, "bandwidth")) slowest = o;
        }
        // The read and (for a GPU conversion) convert ceilings are the measured limits of the
        // page-cache or storage path and of GPU memory (limits.hpp; the host link's is the topology's).
        nlohmann::json measured = nlohmann::json::array();
        const std::string device = r.params.get("device");
        const int dev = !device.empty() && device.size() < 6 && device.find_first_not_of("0123456789") == std::string::npos
                            ? std::stoi(device)
                            : -1;
        const bool cold = r.params.get("cache") == "cold";
        if (reader)
            measured.push_back({{"path", PathUse{cold ? PathKind::storage : PathKind::page_cache}.id()},
                                {"bandwidth", median_of(*rd, "bandwidth")},
                                {"source", fmt::format("the best pipeline_read of this dataset, batch and cache state in "
                                                       "this run ({} threads)", rd->params.find("threads").value_or("1"))}});
        if (conv && dev >= 0 && parse_variant(variant).gpu_convert)
            measured.push_back({{"path", PathUse{PathKind::gpu_memory, dev}.id()},
                                {"bandwidth", median_of(*conv, "bandwidth")},
                                {"source", "pipeline_convert at this batch in this run (the conversion kernel alone)"}});
        r.details["measured_limits"] = measured;
        if ((reader || registered) && h2d && conv) {
            bound["bandwidth"] = median_of(*slowest, "bandwidth");
            bound["stage"] = slowest->scenario;
        } else {
            std::vector<std::string> missing;
            if (!reader && !registered) missing.push_back("pipeline_read of this dataset, batch and cache state");
            if (!h2d) missing.push_back("pinned copy-engine h2d_copy to this GPU");
            if (!conv) missing.push_back("pipeline_convert of this batch on this GPU");
            std::string list;
            for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
            bound["note"] = "no efficiency: this run has no " + list;
        }
        r.details["standalone_bound"] = bound;

        // The configuration's own diagnosis, where it has something of its own to say: the
        // allocation's share, more readers, the registered page cache.
        r.details.erase("diagnosis");
        const auto [stage, share] = largest_stage(r);
        std::vector<std::string> own;
        const double alloc = median_of(r, "alloc_share");
        if (alloc >= 0.2 && stage != "alloc") own.push_back(fmt::format("allocation alone {:.0f}% of the pass", 100 * alloc));
        // Reads the bound while the machine reads faster: more readers are the fix.
        const double read_rate = median_of(r, "read_time") > 0
                                     ? static_cast<double>(r.details.value("file_bytes", 0.0)) / median_of(r, "read_time")
                                     : 0;
        if (stage == "read" && rd && read_rate > 0 && median_of(*rd, "bandwidth") > 1.2 * read_rate)
            own.push_back(fmt::format("the machine reads faster: pipeline_read with {} thread(s) reaches {}, this pass read at "
                                      "{}{}",
                                      rd->params.find("threads").value_or("1"), gbps(median_of(*rd, "bandwidth")),
                                      gbps(read_rate), parse_variant(variant).parallel_read ? "" : " (the fix: +parallel_read)"));
        // The registered page cache: what it costs once and when it pays back (against the same
        // pass reading the files, +gpu_convert), or what it would give where it was not used.
        const double file_bytes = r.details.value("file_bytes", 0.0);
        if (registered && r.details.contains("register_s")) {
            const double reg_s = r.details.value("register_s", 0.0);
            const Result* reading = nullptr;
            for (const Result& o : results)
                if (o.scenario == "pipeline" && same_run(o, r) && o.params.get("variant") == "+gpu_convert" &&
                    median_of(o, "time") > 0)
                    reading = &o;
            const double saved = reading ? median_of(*reading, "time") - median_of(r, "time") : 0;
            std::string said = fmt::format("the dataset registered once in {:.3g} s", reg_s);
            if (saved > 0) {
                r.details["break_even_passes"] = reg_s / saved;
                said += fmt::format(", paid back after {:.2g} passes against +gpu_convert's {:.3g} s pass", reg_s / saved,
                                    median_of(*reading, "time"));
            }
            own.push_back(said);
        } else if (!cold && stage == "read" && h2d && file_bytes > 0) {
            const double copy_bw = conv ? std::min(median_of(*h2d, "bandwidth"), median_of(*conv, "bandwidth"))
                                        : median_of(*h2d, "bandwidth");
            const std::string note = r.details.value("registered_cache_note", std::string());
            if (!note.empty())
                own.push_back(fmt::format("the registered cache was {}", note));
            else
                own.push_back(fmt::format("registering the cached dataset would remove the host read and copy "
                                          "(+registered_cache): pass bound {:.3g} s -> {:.3g} s",
                                          median_of(r, "read_time"), file_bytes / copy_bw));
        }
        if (!own.empty())
            r.details["diagnosis"] = fmt::format("{}-bound ({:.0f}% of the {:.3g} s pass); {}.", stage, 100 * share,
                                                 median_of(r, "time"), fmt::join(own, "; "));
    }

    // What the run found for each cache state, dataset, batch and GPU, written on each of its
    // configurations (details "finding", shown once under the table and in the summary): the
    // stage that bounds naive, the best single fix and tuned's speedup, tuned's bound.
    for (Result& r : results) {
        if (r.scenario != "pipeline" || r.status != Status::ok) continue;
        r.details.erase("finding");
        const auto [naive, best_fix, tuned] = group_of(r);
        if (!naive && !tuned) continue;
        nlohmann::json finding = nlohmann::json::object();
        nlohmann::json scope = nlohmann::json::object();
        for (const char* k : {"cache", "dataset", "batch", "device"})
            if (const auto v = r.params.find(k)) scope[k] = *v;
        finding["scope"] = scope;
        std::vector<std::string> words;
        if (naive) {
            const auto [stage, share] = largest_stage(*naive);
            finding["naive"] = {{"bound", stage}, {"share", share}};
            words.push_back(fmt::format("naive is {}-bound ({:.0f}% of its pass)", stage, 100 * share));
        }
        const auto speedup = [&](const Result& o) { return median_of(o, "throughput") / median_of(*naive, "throughput"); };
        if (naive && best_fix) {
            finding["best_fix"] = {{"variant", best_fix->params.get("variant")}, {"speedup", speedup(*best_fix)}};
            words.push_back(fmt::format("best single fix {} {:.2f}x", best_fix->params.get("variant"), speedup(*best_fix)));
        }
        if (tuned) {
            const auto [stage, share] = largest_stage(*tuned);
            nlohmann::json t = {{"throughput", median_of(*tuned, "throughput")}, {"bound", stage}, {"share", share}};
            std::string said = naive ? fmt::format("tuned {:.2f}x ({})", speedup(*tuned), gbps(median_of(*tuned, "throughput")))
                                     : fmt::format("tuned {}", gbps(median_of(*tuned, "throughput")));
            if (naive) t["speedup"] = speedup(*tuned);
            said += fmt::format(", {}-bound ({:.0f}% of its pass)", stage, 100 * share);
            // Against its slowest stage measured alone, where the run measured every stage.
            const auto bound = tuned->details.find("standalone_bound");
            if (bound != tuned->details.end() && bound->is_object() && bound->contains("stage") &&
                bound->value("bandwidth", 0.0) > 0) {
                const double of = median_of(*tuned, "throughput") / bound->value("bandwidth", 0.0);
                t["of_slowest_stage"] = of;
                t["slowest_stage"] = (*bound)["stage"];
                said += fmt::format(", at {:.0f}% of its slowest stage alone ({} {})", 100 * of,
                                    (*bound)["stage"].get<std::string>(), gbps(bound->value("bandwidth", 0.0)));
            }
            finding["tuned"] = t;
            words.push_back(said);
        }
        finding["text"] = fmt::format("{}", fmt::join(words, "; "));
        r.details["finding"] = finding;
    }
}

} // namespace interopbench
