// storage_to_gpu and gpu_to_storage: files to and from device memory.
//
// What: a whole file of `size` bytes into device memory (storage_to_gpu) by
//  - pageable: pread into malloc'd memory, then cudaMemcpy (the two copies a user writes first);
//  - pinned: pread into pinned memory, then one copy;
//  - pipelined: a ring of `ring` pinned chunk buffers, one stream each: chunk i+1 is read
//    while chunk i is copied (odirect_pipelined: the same with O_DIRECT reads);
//  - mmap: cudaMemcpy straight from a mapping of the file;
//  - cufile / cufile_registered: cuFileRead into device memory on `threads` threads, with the
//    device buffer unregistered or registered (cuFileBufRegister).
// gpu_to_storage is the reverse (a checkpoint being saved): device memory -> file by
// pageable, pinned, pipelined and cufile writes, fdatasync'd before the sample ends.
// How: host steady_clock from the start of the first read to the completion of the last
// copy (the data is usable on the GPU) or of fdatasync. Time to the first chunk on the GPU
// comes from CUDA events (pipelined paths) or the host clock. Before each read sample the
// cache state is put in place and proven with mincore (see storage_read); every sample
// records device and cache bytes and CPU time. Data is verified after sampling: on the GPU
// against the file's pattern (a checksum kernel), or for writes by reading the file back.
// cuFile's mode (gds, p2pdma, compat) comes from its statistics and the kernel, never from
// speed. Caveats: the pageable and mmap paths have no first-chunk point before the end; the
// cuFile statistics are switched on (level 3) for the cufile configurations.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "families/storage/storage_common.hpp"
#include "gpu/cuda_util.hpp"
#include "gpu/cufile_loader.hpp"
#include "topology/topology.hpp"

namespace interopbench {
namespace {

using namespace storage;
using clock_type = std::chrono::steady_clock;

enum class GpuPath { pageable, pinned, pipelined, odirect_pipelined, mmap, cufile, cufile_registered };

GpuPath parse_gpu_path(const std::string& s) {
    static const std::pair<const char*, GpuPath> k[] = {
        {"pageable", GpuPath::pageable},   {"pinned", GpuPath::pinned},
        {"pipelined", GpuPath::pipelined}, {"odirect_pipelined", GpuPath::odirect_pipelined},
        {"mmap", GpuPath::mmap},           {"cufile", GpuPath::cufile},
        {"cufile_registered", GpuPath::cufile_registered}};
    for (const auto& [n, v] : k)
        if (s == n) return v;
    throw ConfigError(fmt::format("unknown path '{}'", s));
}
bool is_cufile(GpuPath p) { return p == GpuPath::cufile || p == GpuPath::cufile_registered; }
bool is_pipelined(GpuPath p) { return p == GpuPath::pipelined || p == GpuPath::odirect_pipelined; }
bool is_direct(GpuPath p) { return p == GpuPath::odirect_pipelined; }

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

/// The ring of a pipelined path: K pinned chunk buffers, one stream and one event each.
struct Ring {
    std::vector<gpu::HostBuffer> buffers;
    std::vector<std::unique_ptr<gpu::Stream>> streams;
    std::vector<std::unique_ptr<gpu::Event>> done;
    Ring(int device, unsigned k, std::uint64_t chunk) {
        for (unsigned i = 0; i < k; ++i) {
            buffers.emplace_back(gpu::HostMem::pinned, chunk);
            streams.push_back(std::make_unique<gpu::Stream>(device));
            done.push_back(std::make_unique<gpu::Event>(gpu::EventUse::sync));
        }
    }
};

/// A registered cuFile handle on an open file.
class CufileHandle {
public:
    CufileHandle(const gpu::CufileApi* api, int fd, const std::string& path) : m_api(api) {
        gpu::cufile::Descr d{};
        d.type = 1; // CU_FILE_HANDLE_TYPE_OPAQUE_FD
        d.handle.fd = fd;
        const gpu::cufile::Error e = api->handle_register(&m_h, &d);
        // cuFile refuses files it cannot serve here (its file checks: file system, block
        // device, open flags) even in compatibility mode: that is this machine's answer, so
        // the configuration is skipped with cuFile's own error, not failed.
        if (e.err != 0)
            throw Unsupported(fmt::format("cuFile does not take {} on this machine: cuFileHandleRegister returned {} "
                                          "(its log, cufile.log in the working directory, says why)",
                                          path, gpu::cufile_error_name(e.err)));
    }
    ~CufileHandle() {
        if (m_h) m_api->handle_deregister(m_h);
    }
    CufileHandle(const CufileHandle&) = delete;
    CufileHandle& operator=(const CufileHandle&) = delete;
    gpu::cufile::Handle get() const { return m_h; }

private:
    const gpu::CufileApi* m_api;
    gpu::cufile::Handle m_h = nullptr;
};

nlohmann::json cufile_details(const gpu::CufileCounts& c, const std::string& mode, bool reads) {
    nlohmann::json j = gpu::cufile_facts_json();
    j["mode"] = mode;
    j["mode_source"] = c.available ? "cuFile statistics (level 3)" : "kernel module and configuration (" + c.note + ")";
    if (c.available)
        j["counts"] = reads ? nlohmann::json{{"reads", c.reads}, {"nvfs", c.nvfs_reads}, {"p2pdma", c.p2p_reads}, {"posix", c.posix_reads}}
                            : nlohmann::json{{"writes", c.writes}, {"nvfs", c.nvfs_writes}, {"p2pdma", c.p2p_writes}, {"posix", c.posix_writes}};
    return j;
}

std::string detect_mode(const gpu::CufileCounts& c, bool reads) {
    const CufileHostFacts h = cufile_host_facts();
    return gpu::cufile_mode(c, reads, h.nvidia_fs, h.use_pci_p2pdma.value_or(false), h.force_compat_mode.value_or(false));
}

/// cuFile for one case (reads or writes): the driver, its statistics, the file's handle
/// and, for cufile_registered, the device buffer registered with cuFile (deregistered
/// before the handle goes).
class CufileSide {
public:
    CufileSide(bool reads, bool register_buffer, int fd, const std::string& file, void* dev, std::uint64_t size)
        : m_reads(reads) {
        std::string why;
        m_api = gpu::cufile_driver(&why);
        if (!m_api) throw ConfigError(why);
        m_stats = gpu::cufile_stats_begin(&m_stats_note);
        m_handle = std::make_unique<CufileHandle>(m_api, fd, file);
        if (register_buffer) {
            const gpu::cufile::Error e = m_api->buf_register(dev, size, 0);
            if (e.err != 0) throw ConfigError(fmt::format("cuFileBufRegister failed: {}", gpu::cufile_error_name(e.err)));
            m_registered = dev;
        }
    }
    ~CufileSide() {
        if (m_registered) m_api->buf_deregister(m_registered);
    }
    CufileSide(const CufileSide&) = delete;
    CufileSide& operator=(const CufileSide&) = delete;
    const gpu::CufileApi* api() const { return m_api; }
    gpu::cufile::Handle handle() const { return m_handle->get(); }
    /// The details' "cufile" and "cufile_mode": the counters since the case began (or why
    /// there are none), read the first time only.
    void describe(nlohmann::json& j) const {
        if (m_mode.empty()) {
            m_counts = m_stats ? gpu::cufile_stats_read() : gpu::CufileCounts{false, m_stats_note};
            m_mode = detect_mode(m_counts, m_reads);
        }
        j["cufile"] = cufile_details(m_counts, m_mode, m_reads);
        j["cufile_mode"] = m_mode;
    }

private:
    bool m_reads;
    const gpu::CufileApi* m_api = nullptr;
    bool m_stats = false;
    std::string m_stats_note;
    std::unique_ptr<CufileHandle> m_handle;
    void* m_registered = nullptr;
    mutable gpu::CufileCounts m_counts;
    mutable std::string m_mode;
};

/// The host buffer a path reads into or writes from: pageable or pinned, none for the others.
gpu::HostBuffer host_buffer_for(GpuPath path, std::uint64_t size) {
    if (path == GpuPath::pageable) return gpu::HostBuffer(gpu::HostMem::pageable, size);
    if (path == GpuPath::pinned) return gpu::HostBuffer(gpu::HostMem::pinned, size);
    return gpu::HostBuffer{};
}

/// cuFile I/O of [0, size) in chunks on `threads` threads; returns seconds to the first chunk.
double cufile_io(const gpu::CufileApi* api, gpu::cufile::Handle h, void* dev, std::uint64_t size, std::uint64_t chunk,
                 unsigned threads, int device, bool read, const std::string& path) {
    const auto t0 = clock_type::now();
    std::atomic<double> first{-1};
    std::vector<std::exception_ptr> errors(std::max(1u, threads));
    const std::uint64_t per = std::max(chunk, (size / std::max(1u, threads) + chunk - 1) / chunk * chunk);
    auto work = [&](unsigned t) {
        try {
            gpu::set_device(device);
            const std::uint64_t b = t * per, e = std::min(size, b + per);
            for (std::uint64_t off = b; off < e; off += chunk) {
                const std::uint64_t n = std::min(chunk, e - off);
                const ssize_t got = read ? api->read(h, dev, n, static_cast<off_t>(off), static_cast<off_t>(off))
                                         : api->write(h, dev, n, static_cast<off_t>(off), static_cast<off_t>(off));
                if (got < 0)
                    throw ConfigError(fmt::format("{} on {} at byte {} failed: {}", read ? "cuFileRead" : "cuFileWrite", path,
                                                  off, gpu::cufile_error_name(got == -1 ? -errno : static_cast<int>(got))));
                if (static_cast<std::uint64_t>(got) != n)
                    throw ConfigError(fmt::format("{} on {} at byte {} moved {} of {} bytes: the file was truncated or "
                                                  "replaced while measuring",
                                                  read ? "cuFileRead" : "cuFileWrite", path, off, got, n));
                if (t == 0 && off == b) first = since(t0);
            }
        } catch (...) {
            errors[t] = std::current_exception();
        }
    };
    if (threads <= 1) {
        work(0);
    } else {
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads && t * per < size; ++t) pool.emplace_back(work, t);
        for (auto& th : pool) th.join();
    }
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
    return first.load();
}

/// Shared by both directions: the device buffer and the stream.
struct GpuSide {
    int device;
    gpu::DeviceBuffer dev;
    gpu::Stream stream;
    GpuSide(int d, std::uint64_t size) : device(d), dev(d, size), stream(d) {}
};

// ---- storage_to_gpu ----------------------------------------------------------------------------

class ToGpuCase final : public Case {
public:
    ToGpuCase(const CaseContext& ctx, std::shared_ptr<PatternFile> file, GpuPath path, std::uint64_t chunk, unsigned ring,
              unsigned threads, int device, bool cold)
        : m_file(std::move(file)), m_path(path), m_size(m_file->size()), m_chunk(std::min(chunk, m_size)),
          m_threads(threads), m_cache(m_file->path(), m_size, cold), m_gpu(device, m_size),
          m_acct(Site::instance().facts().device), m_start(gpu::EventUse::timing), m_first(gpu::EventUse::timing) {
        (void)ctx;
        IB_CUDA_CHECK(cudaMemsetAsync(m_gpu.dev.get(), 0, m_size, m_gpu.stream.get())); // poison the destination
        IB_CUDA_CHECK(cudaStreamSynchronize(m_gpu.stream.get()));
        m_host = host_buffer_for(path, m_size);
        if (is_pipelined(path)) m_ring = std::make_unique<Ring>(device, ring, m_chunk);
        const int flags = O_RDONLY | (is_direct(path) || (is_cufile(path) && !Site::instance().odirect_unsupported()) ? O_DIRECT : 0);
        m_fd = open_file(m_file->path(), flags);
        if (is_cufile(path))
            m_cufile = std::make_unique<CufileSide>(true, path == GpuPath::cufile_registered, m_fd.get(), m_file->path(),
                                                    m_gpu.dev.get(), m_size);
    }

    Sample measure() override {
        const Residency before = m_cache.prepare_sample();
        if (!is_cufile(m_path) && !is_direct(m_path)) ::posix_fadvise(m_fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
        m_acct.start();
        const auto t0 = clock_type::now();
        double first = -1;
        char* dev = static_cast<char*>(m_gpu.dev.get());
        const cudaStream_t s = m_gpu.stream.get();
        switch (m_path) {
        case GpuPath::pageable:
        case GpuPath::pinned:
            for (std::uint64_t off = 0; off < m_size; off += m_chunk)
                pread_all(m_fd.get(), static_cast<char*>(m_host.get()) + off, std::min(m_chunk, m_size - off), off, m_file->path());
            if (m_path == GpuPath::pageable) {
                IB_CUDA_CHECK(cudaMemcpy(dev, m_host.get(), m_size, cudaMemcpyHostToDevice));
            } else {
                IB_CUDA_CHECK(cudaMemcpyAsync(dev, m_host.get(), m_size, cudaMemcpyHostToDevice, s));
                IB_CUDA_CHECK(cudaStreamSynchronize(s));
            }
            break;
        case GpuPath::pipelined:
        case GpuPath::odirect_pipelined: {
            Ring& r = *m_ring;
            const std::size_t k = r.buffers.size();
            IB_CUDA_CHECK(cudaEventRecord(m_start.get(), r.streams[0]->get()));
            std::uint64_t i = 0;
            for (std::uint64_t off = 0; off < m_size; off += m_chunk, ++i) {
                const std::size_t slot = static_cast<std::size_t>(i % k);
                if (i >= k) IB_CUDA_CHECK(cudaEventSynchronize(r.done[slot]->get())); // slot's last copy done
                const std::uint64_t n = std::min(m_chunk, m_size - off);
                pread_all(m_fd.get(), r.buffers[slot].get(), n, off, m_file->path());
                IB_CUDA_CHECK(cudaMemcpyAsync(dev + off, r.buffers[slot].get(), n, cudaMemcpyHostToDevice, r.streams[slot]->get()));
                IB_CUDA_CHECK(cudaEventRecord(r.done[slot]->get(), r.streams[slot]->get()));
                if (i == 0) IB_CUDA_CHECK(cudaEventRecord(m_first.get(), r.streams[0]->get()));
            }
            for (auto& st : r.streams) IB_CUDA_CHECK(cudaStreamSynchronize(st->get()));
            first = gpu::elapsed_s(m_start, m_first);
            break;
        }
        case GpuPath::mmap: {
            void* map = ::mmap(nullptr, m_size, PROT_READ, MAP_SHARED, m_fd.get(), 0);
            if (map == MAP_FAILED) throw ConfigError(fmt::format("mmap of {} failed: {}", m_file->path(), std::strerror(errno)));
            ::madvise(map, m_size, MADV_SEQUENTIAL);
            const cudaError_t err = cudaMemcpy(dev, map, m_size, cudaMemcpyHostToDevice);
            ::munmap(map, m_size);
            IB_CUDA_CHECK(err);
            break;
        }
        case GpuPath::cufile:
        case GpuPath::cufile_registered:
            first = cufile_io(m_cufile->api(), m_cufile->handle(), dev, m_size, m_chunk, m_threads, m_gpu.device, true,
                              m_file->path());
            break;
        }
        const double t = since(t0);
        m_acct.stop();
        Sample out{static_cast<double>(m_size) / t, first >= 0 ? first : t};
        push_accounting(out, m_acct, m_size, m_acct.cpu_seconds(), before, true);
        return out;
    }

    void check() override {
        gpu::set_device(m_gpu.device);
        if (const auto bad = gpu::count_pattern_mismatches_device(m_gpu.dev.get(), m_size, PatternFile::k_seed, m_gpu.stream.get()))
            throw CheckFailed(fmt::format("{} of {} words on the GPU differ from the file's pattern", bad, (m_size + 7) / 8));
    }

    nlohmann::json details() const override {
        nlohmann::json j = path_details(Site::instance().facts());
        static const char* k_names[] = {"pageable bounce buffer", "pinned bounce buffer", "pinned ring",
                                        "O_DIRECT into a pinned ring", "mapping", "cuFile", "cuFile, registered buffer"};
        j["path"] = fmt::format("file ({}) -> {} -> GPU{}", j["file_system"].get<std::string>(),
                                k_names[static_cast<int>(m_path)], m_gpu.device);
        j["file"] = m_file->path();
        j["file_reused"] = m_file->reused();
        j["bytes_per_op"] = m_size;
        j["ops_per_sample"] = 1;
        j["chunk"] = m_chunk;
        if (m_ring) j["ring"] = m_ring->buffers.size();
        if (is_cufile(m_path)) {
            j["threads_used"] = m_threads;
            m_cufile->describe(j);
        }
        j["cache_method"] = m_cache.method();
        j["timer"] = "host steady_clock to the last copy's completion; first chunk by CUDA events (pipelined) or host clock";
        j["verification"] = "device buffer checked against the file's pattern by a GPU kernel after sampling";
        return j;
    }

private:
    std::shared_ptr<PatternFile> m_file;
    GpuPath m_path;
    std::uint64_t m_size, m_chunk;
    unsigned m_threads;
    CacheState m_cache;
    GpuSide m_gpu;
    Accounting m_acct;
    gpu::Event m_start, m_first;
    gpu::HostBuffer m_host;
    std::unique_ptr<Ring> m_ring;
    Fd m_fd;
    std::unique_ptr<CufileSide> m_cufile; // before m_fd goes
};

// ---- gpu_to_storage ----------------------------------------------------------------------------

class FromGpuCase final : public Case {
public:
    FromGpuCase(GpuPath path, std::uint64_t size, std::uint64_t chunk, unsigned ring, unsigned threads, int device)
        : m_path(path), m_size(size), m_chunk(std::min(chunk, size)), m_threads(threads), m_gpu(device, size),
          m_acct(Site::instance().facts().device) {
        const std::string dir = Site::instance().dir();
        m_target = dir + "/" + temp_file_name(::getpid(), fmt::format("write-{}", size));
        m_guard = cleanup::Guard(m_target);
        const bool direct = is_cufile(path) && !Site::instance().odirect_unsupported();
        m_fd = open_file(m_target, O_CREAT | O_TRUNC | O_RDWR | (direct ? O_DIRECT : 0));
        if (const int rc = ::posix_fallocate(m_fd.get(), 0, static_cast<off_t>(size)); rc != 0)
            throw ConfigError(fmt::format("cannot allocate {} for {}: {}", format_size(size), m_target, std::strerror(rc)));
        gpu::fill_pattern_device(m_gpu.dev.get(), size, PatternFile::k_seed, m_gpu.stream.get());
        m_host = host_buffer_for(path, size);
        if (path == GpuPath::pipelined) m_ring = std::make_unique<Ring>(device, ring, m_chunk);
        if (is_cufile(path))
            m_cufile = std::make_unique<CufileSide>(false, path == GpuPath::cufile_registered, m_fd.get(), m_target,
                                                    m_gpu.dev.get(), size);
    }

    Sample measure() override {
        m_acct.start();
        const auto t0 = clock_type::now();
        char* dev = static_cast<char*>(m_gpu.dev.get());
        const cudaStream_t s = m_gpu.stream.get();
        switch (m_path) {
        case GpuPath::pageable:
        case GpuPath::pinned:
            if (m_path == GpuPath::pageable) {
                IB_CUDA_CHECK(cudaMemcpy(m_host.get(), dev, m_size, cudaMemcpyDeviceToHost));
            } else {
                IB_CUDA_CHECK(cudaMemcpyAsync(m_host.get(), dev, m_size, cudaMemcpyDeviceToHost, s));
                IB_CUDA_CHECK(cudaStreamSynchronize(s));
            }
            for (std::uint64_t off = 0; off < m_size; off += m_chunk)
                pwrite_all(m_fd.get(), static_cast<char*>(m_host.get()) + off, std::min(m_chunk, m_size - off), off, m_target);
            break;
        case GpuPath::pipelined: {
            Ring& r = *m_ring;
            const std::size_t k = r.buffers.size();
            const std::uint64_t chunks = (m_size + m_chunk - 1) / m_chunk;
            auto enqueue = [&](std::uint64_t i) {
                const std::size_t slot = static_cast<std::size_t>(i % k);
                const std::uint64_t off = i * m_chunk, n = std::min(m_chunk, m_size - off);
                IB_CUDA_CHECK(cudaMemcpyAsync(r.buffers[slot].get(), dev + off, n, cudaMemcpyDeviceToHost, r.streams[slot]->get()));
                IB_CUDA_CHECK(cudaEventRecord(r.done[slot]->get(), r.streams[slot]->get()));
            };
            for (std::uint64_t i = 0; i < std::min<std::uint64_t>(k, chunks); ++i) enqueue(i);
            for (std::uint64_t i = 0; i < chunks; ++i) {
                const std::size_t slot = static_cast<std::size_t>(i % k);
                IB_CUDA_CHECK(cudaEventSynchronize(r.done[slot]->get()));
                const std::uint64_t off = i * m_chunk;
                pwrite_all(m_fd.get(), r.buffers[slot].get(), std::min(m_chunk, m_size - off), off, m_target);
                if (i + k < chunks) enqueue(i + k);
            }
            break;
        }
        case GpuPath::cufile:
        case GpuPath::cufile_registered:
            cufile_io(m_cufile->api(), m_cufile->handle(), dev, m_size, m_chunk, m_threads, m_gpu.device, false, m_target);
            break;
        default: throw ConfigError("path not available for writes");
        }
        if (::fdatasync(m_fd.get()) != 0)
            throw ConfigError(fmt::format("fdatasync of {} failed: {}", m_target, std::strerror(errno)));
        const double t = since(t0);
        m_acct.stop();
        Sample out{static_cast<double>(m_size) / t, t};
        push_accounting(out, m_acct, m_size, m_acct.cpu_seconds(), Residency{}, false);
        return out;
    }

    void check() override {
        Fd fd = open_file(m_target, O_RDONLY);
        std::vector<std::uint64_t> buf((16u << 20) / 8);
        std::uint64_t bad = 0;
        for (std::uint64_t off = 0; off < m_size; off += buf.size() * 8) {
            const std::uint64_t n = std::min<std::uint64_t>(buf.size() * 8, m_size - off);
            pread_all(fd.get(), buf.data(), n, off, m_target);
            bad += count_file_pattern_mismatches(buf.data(), off, n / 8 * 8);
        }
        if (bad) throw CheckFailed(fmt::format("{} of {} words in the written file differ from the device's data", bad, m_size / 8));
    }

    nlohmann::json details() const override {
        nlohmann::json j = path_details(Site::instance().facts());
        static const char* k_names[] = {"pageable bounce buffer", "pinned bounce buffer", "pinned ring", "", "", "cuFile",
                                        "cuFile, registered buffer"};
        j["path"] = fmt::format("GPU{} -> {} -> file ({})", m_gpu.device, k_names[static_cast<int>(m_path)],
                                j["file_system"].get<std::string>());
        j["file"] = m_target;
        j["bytes_per_op"] = m_size;
        j["ops_per_sample"] = 1;
        j["chunk"] = m_chunk;
        j["durability"] = "fdatasync before the sample ends";
        if (m_ring) j["ring"] = m_ring->buffers.size();
        if (is_cufile(m_path)) {
            j["threads_used"] = m_threads;
            m_cufile->describe(j);
        }
        j["timer"] = "host steady_clock, fdatasync included";
        j["verification"] = "the file read back and compared with the device's pattern after sampling";
        return j;
    }

private:
    GpuPath m_path;
    std::uint64_t m_size, m_chunk;
    unsigned m_threads;
    GpuSide m_gpu;
    Accounting m_acct;
    std::string m_target;
    cleanup::Guard m_guard;
    Fd m_fd;
    gpu::HostBuffer m_host;
    std::unique_ptr<Ring> m_ring;
    std::unique_ptr<CufileSide> m_cufile; // before m_fd and the file go
};

// ---- scenarios ---------------------------------------------------------------------------------

std::optional<std::string> gpu_side_unsupported(const Machine& m, const Params& p, std::uint64_t host_copies) {
    if (auto why = gpu_unavailable_reason(m)) return why;
    const int d = static_cast<int>(p.get_uint("device"));
    const DeviceInfo* info = m.device(d);
    if (!info) return fmt::format("GPU {} does not exist", d);
    const std::uint64_t size = p.get_uint("size");
    if (size > info->free_memory)
        return fmt::format("{} does not fit in GPU {}'s free memory ({})", format_size(size), d, format_size(info->free_memory));
    (void)host_copies;
    return std::nullopt;
}

std::optional<std::string> path_axes_unsupported(GpuPath path, const Params& p) {
    if (!is_pipelined(path) && p.get_uint("ring") != 0) return std::string("ring applies to the pipelined paths only");
    if (!is_cufile(path) && p.get_uint("threads") != 1) return std::string("threads applies to the cufile paths only");
    if (is_cufile(path)) {
        std::string why;
        if (!gpu::cufile_driver(&why)) return "cuFile: " + why;
    }
    return std::nullopt;
}

Axis ring_axis() {
    return {"ring", "pinned chunk buffers (and streams) in the pipeline ring; 0 = the default 4 (pipelined paths only)",
            AxisKind::integer, {"0"}, {}, 0, 64};
}

/// storage_to_gpu and gpu_to_storage: a file and one GPU, moved by a `path`, with the pipeline
/// ring and the cuFile threads; `reads` says which way.
class GpuPathScenario : public Scenario {
public:
    const ScenarioInfo& info() const override { return m_info; }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        const GpuPath path = parse_gpu_path(p.get("path"));
        if (auto why = gpu_side_unsupported(m, p, 1)) return why;
        if (auto why = path_axes_unsupported(path, p)) return why;
        return storage_unsupported(p, m_reads && is_direct(path), m_reads);
    }

protected:
    /// Axes size, `path_axis`, cache (reads only), chunk, ring, threads (`threads_help`), device;
    /// `metrics`, then the accounting metrics.
    GpuPathScenario(bool reads, Axis path_axis, const char* threads_help, std::vector<MetricInfo> metrics)
        : m_reads(reads) {
        m_info.family = "storage";
        m_info.axes = {size_axis(), std::move(path_axis)};
        if (reads) m_info.axes.push_back(cache_axis());
        m_info.axes.insert(m_info.axes.end(), {chunk_axis(), ring_axis(), threads_axis(threads_help), device_axis()});
        m_info.metrics = std::move(metrics);
        for (auto& m : accounting_metrics(reads)) m_info.metrics.push_back(m);
    }

    /// What prepare() reads and does first: the GPU current, the host side near it.
    struct GpuSide {
        int device;
        GpuPath path;
        unsigned ring;
        unsigned threads;
    };
    static GpuSide prepare_gpu_side(const CaseContext& ctx, const Params& p) {
        const int dev = static_cast<int>(p.get_uint("device"));
        gpu::set_device(dev);
        place_host_side(ctx, dev);
        return {dev, parse_gpu_path(p.get("path")), static_cast<unsigned>(p.get_uint("ring") ? p.get_uint("ring") : 4),
                static_cast<unsigned>(p.get_uint("threads"))};
    }

    ScenarioInfo m_info;

private:
    bool m_reads;
};

class StorageToGpu final : public GpuPathScenario {
public:
    StorageToGpu()
        : GpuPathScenario(true,
                          choice_axis("path",
                                      "pageable: pread into malloc'd memory + cudaMemcpy; pinned: pread into pinned "
                                      "memory + copy; pipelined: a ring of pinned chunks, read i+1 while copying i; "
                                      "odirect_pipelined: the same with O_DIRECT; mmap: cudaMemcpy from a mapping; "
                                      "cufile / cufile_registered: cuFileRead",
                                      {"pageable", "pinned", "pipelined", "odirect_pipelined", "mmap", "cufile",
                                       "cufile_registered"}),
                          "cuFile reader threads (cufile paths only)",
                          {{"bandwidth", "B/s", Better::higher, "file bytes over the time until the last byte is on the GPU"},
                           {"first_chunk_time", "s", Better::lower, "time until the first chunk is usable on the GPU"}}) {
        m_info.id = "storage_to_gpu";
        m_info.summary = "file -> device memory: pageable, pinned, pipelined, O_DIRECT pipelined, mmap and cuFile paths";
        m_info.counting = "file bytes moved once per sample, to data usable on the GPU; device and cache bytes beside them";
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        const GpuSide g = prepare_gpu_side(ctx, p);
        auto file = Site::instance().pattern_file(p.get_uint("size"));
        return std::make_unique<ToGpuCase>(ctx, std::move(file), g.path, p.get_uint("chunk"), g.ring, g.threads, g.device,
                                           p.get("cache") == "cold");
    }
};

class GpuToStorage final : public GpuPathScenario {
public:
    GpuToStorage()
        : GpuPathScenario(false,
                          choice_axis("path",
                                      "pageable: cudaMemcpy to malloc'd memory + pwrite; pinned: the same through pinned "
                                      "memory; pipelined: a ring of pinned chunks, copy i+1 while writing i; cufile / "
                                      "cufile_registered: cuFileWrite",
                                      {"pageable", "pinned", "pipelined", "cufile", "cufile_registered"}),
                          "cuFile writer threads (cufile paths only)",
                          {{"bandwidth", "B/s", Better::higher, "file bytes over the time until they are durable"},
                           {"time", "s", Better::lower, "time to write and flush the whole file"}}) {
        m_info.id = "gpu_to_storage";
        m_info.summary = "device memory -> file (a checkpoint save): pageable, pinned, pipelined and cuFile writes, fdatasync'd";
        m_info.counting = "file bytes written once per sample, durable (fdatasync) before the sample ends";
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        const GpuSide g = prepare_gpu_side(ctx, p);
        return std::make_unique<FromGpuCase>(g.path, p.get_uint("size"), p.get_uint("chunk"), g.ring, g.threads, g.device);
    }
};

} // namespace

void register_storage_gpu(Registry& r) {
    r.add(std::make_unique<StorageToGpu>());
    r.add(std::make_unique<GpuToStorage>());
}

} // namespace interopbench
