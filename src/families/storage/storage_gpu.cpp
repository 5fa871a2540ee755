// storage_to_gpu and gpu_to_storage: files to and from device memory.
//
// What: a whole file of `size` bytes into device memory (storage_to_gpu) by
//  - pageable: pread into malloc'd memory, then cudaMemcpy (the two copies a user writes first);
//  - pinned: pread into pinned memory, then one copy;
//  - pipelined: each reader thread a ring of `ring` pinned chunk buffers, one stream each:
//    chunk i+1 is read while chunk i is copied (odirect_pipelined: the same with O_DIRECT);
//  - io_uring_pipelined: O_DIRECT reads through io_uring, `qd` in flight per reader, straight
//    into the reader's ring (registered with io_uring), each chunk handed to the copy engine
//    as it completes;
//  - mmap: cudaMemcpy straight from a mapping of the file;
//  - cufile / cufile_registered: cuFileRead into device memory, the device buffer
//    unregistered or registered (cuFileBufRegister).
// Every path reads on `threads` threads (0: the CPUs near the GPU, at most 16), each a
// contiguous share of the file; a file striped over several --storage-dir directories is
// shared out stripe by stripe, so readers spread over the drives. The readers and their
// methods are hostio/readers (the same as storage_read's and the pipeline's).
// gpu_to_storage is the reverse (a checkpoint being saved): device memory -> file by
// pageable, pinned, pipelined and cufile writes on `threads` writers, fdatasync'd before the
// sample ends.
// How: host steady_clock from the start of the first read to the completion of the last
// copy (the data is usable on the GPU) or of fdatasync. Time to the first chunk on the GPU
// comes from CUDA events (pipelined paths: the first reader's first chunk) or the host clock.
// Before each read sample the cache state is put in place and proven with mincore (see
// storage_read); every sample records device and cache bytes and CPU time. Data is verified
// after sampling: on the GPU against the file's pattern (a checksum kernel), or for writes by
// reading the file back. cuFile's mode (gds, p2pdma, compat) comes from its statistics and
// the kernel, never from speed. After the run each storage_to_gpu result gets its efficiency
// against the same run's ceiling (storage_roofline.cpp).
// Caveats: the pageable and mmap paths have no first-chunk point before the end; the
// cuFile statistics are switched on (level 3) for the cufile configurations; io_uring falls
// back to unregistered reads where registration is refused (details "registered_buffers").
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/text.hpp"
#include "families/storage/storage_common.hpp"
#include "gpu/cuda_util.hpp"
#include "gpu/cufile_loader.hpp"
#include "gpu/pinned_ring.hpp"
#include "gpu/registered_mapping.hpp"
#include "topology/topology.hpp"

namespace interopbench {
namespace {

using namespace storage;
using clock_type = std::chrono::steady_clock;

enum class GpuPath {
    pageable, pinned, pipelined, odirect_pipelined, io_uring_pipelined, mmap, cufile, cufile_registered, mmap_registered,
    mmap_resident
};

/// Each path: its name, how it moves the bytes (details), the read method of its reads.
struct PathInfo {
    GpuPath path;
    const char* name;
    const char* via;
    const char* method; ///< the read method (readers.hpp) of the host reads; "" for none
};
const std::vector<PathInfo>& path_table() {
    static const std::vector<PathInfo> t{
        {GpuPath::pageable, "pageable", "pageable bounce buffer", "buffered"},
        {GpuPath::pinned, "pinned", "pinned bounce buffer", "buffered"},
        {GpuPath::pipelined, "pipelined", "pinned ring", "buffered"},
        {GpuPath::odirect_pipelined, "odirect_pipelined", "O_DIRECT into a pinned ring", "odirect"},
        {GpuPath::io_uring_pipelined, "io_uring_pipelined", "io_uring (O_DIRECT, registered pinned ring)", "io_uring"},
        {GpuPath::mmap, "mmap", "mapping", "mmap"},
        {GpuPath::cufile, "cufile", "cuFile", ""},
        {GpuPath::cufile_registered, "cufile_registered", "cuFile, registered buffer", ""},
        {GpuPath::mmap_registered, "mmap_registered", "mapping registered read-only (per sample)", "mmap"},
        {GpuPath::mmap_resident, "mmap_resident", "mapping registered read-only (once)", "mmap"},
    };
    return t;
}
const PathInfo& path_info(GpuPath p) { return path_table()[static_cast<std::size_t>(p)]; }
GpuPath parse_gpu_path(const std::string& s) {
    for (const PathInfo& i : path_table())
        if (s == i.name) return i.path;
    throw ConfigError(fmt::format("unknown path '{}'", s));
}
bool is_cufile(GpuPath p) { return p == GpuPath::cufile || p == GpuPath::cufile_registered; }
bool is_pipelined(GpuPath p) {
    return p == GpuPath::pipelined || p == GpuPath::odirect_pipelined || p == GpuPath::io_uring_pipelined;
}
bool is_direct(GpuPath p) { return p == GpuPath::odirect_pipelined || p == GpuPath::io_uring_pipelined; }
bool is_registered_mapping(GpuPath p) { return p == GpuPath::mmap_registered || p == GpuPath::mmap_resident; }

/// io_uring_pipelined's reads in flight per thread when qd is 0.
constexpr unsigned k_default_qd = 4;

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

/// The files of a case (one per stripe) opened with `flags`.
std::vector<Fd> open_all(const std::vector<Segment>& files, int flags) {
    std::vector<Fd> out;
    for (const Segment& s : files) out.push_back(open_file(s.path, flags));
    return out;
}

/// The whole logical file as slices of its stripes; `base` is where logical byte 0 goes.
std::vector<FileSlice> slices_of(const std::vector<Segment>& files, const std::vector<Fd>& fds, void* base) {
    std::vector<FileSlice> out;
    for (std::size_t i = 0; i < files.size(); ++i)
        out.push_back({fds[i].get(), &files[i].path, 0, files[i].bytes, static_cast<char*>(base) + files[i].offset, files[i].bytes});
    return out;
}

/// Which file of `fds` a slice reads (cuFile needs the file's handle).
std::size_t file_index(const std::vector<Fd>& fds, int fd) {
    for (std::size_t i = 0; i < fds.size(); ++i)
        if (fds[i].get() == fd) return i;
    return 0;
}

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
        if (e.err != 0) {
            const std::string log = gpu::cufile_log_reason();
            throw Unsupported(fmt::format("cuFile does not take {} on this machine: cuFileHandleRegister returned {}{}",
                                          path, gpu::cufile_error_name(e.err),
                                          log.empty() ? std::string() : "; cuFile's log: " + display_text(log)));
        }
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

/// cuFile for one case (reads or writes): the driver, its statistics, a handle per file (one
/// per stripe) and, for cufile_registered, the device buffer registered with cuFile
/// (deregistered before the handles go).
class CufileSide {
public:
    CufileSide(bool reads, bool register_buffer, const std::vector<Fd>& fds, const std::vector<Segment>& files, void* dev,
               std::uint64_t size)
        : m_reads(reads) {
        std::string why;
        m_api = gpu::cufile_driver(&why);
        if (!m_api) throw ConfigError(why);
        m_stats = gpu::cufile_stats_begin(&m_stats_note);
        for (std::size_t i = 0; i < fds.size(); ++i)
            m_handles.push_back(std::make_unique<CufileHandle>(m_api, fds[i].get(), files[i].path));
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
    gpu::cufile::Handle handle(std::size_t file) const { return m_handles[file]->get(); }
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
    std::vector<std::unique_ptr<CufileHandle>> m_handles;
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

/// cuFile I/O of each thread's share in chunks, the device buffer's base `dev` (registered
/// or not); returns seconds to thread 0's first chunk.
double cufile_io(ThreadPool& pool, const CufileSide& cf, const std::vector<Fd>& fds,
                 const std::vector<std::vector<FileSlice>>& shares, char* dev, std::uint64_t chunk, int device, bool read) {
    const auto t0 = clock_type::now();
    std::atomic<double> first{-1};
    pool.run([&](unsigned t) {
        if (t >= shares.size()) return;
        gpu::set_device(device);
        for (const FileSlice& s : shares[t]) {
            const gpu::cufile::Handle h = cf.handle(file_index(fds, s.fd));
            const std::uint64_t dev_base = static_cast<std::uint64_t>(static_cast<char*>(s.dst) - dev);
            for (std::uint64_t done = 0; done < s.bytes; done += chunk) {
                const std::uint64_t n = std::min(chunk, s.bytes - done);
                const auto file_off = static_cast<off_t>(s.offset + done), dev_off = static_cast<off_t>(dev_base + done);
                const ssize_t got = read ? cf.api()->read(h, dev, n, file_off, dev_off) : cf.api()->write(h, dev, n, file_off, dev_off);
                if (got < 0)
                    throw ConfigError(fmt::format("{} on {} at byte {} failed: {}", read ? "cuFileRead" : "cuFileWrite", *s.path,
                                                  file_off, gpu::cufile_error_name(got == -1 ? -errno : static_cast<int>(got))));
                if (static_cast<std::uint64_t>(got) != n)
                    throw ConfigError(fmt::format("{} on {} at byte {} moved {} of {} bytes: the file was truncated or "
                                                  "replaced while measuring",
                                                  read ? "cuFileRead" : "cuFileWrite", *s.path, file_off, got, n));
                if (t == 0 && first.load() < 0) first = since(t0);
            }
        }
    });
    return first.load();
}

/// Shared by both directions: the device buffer and the stream.
struct GpuSide {
    int device;
    gpu::DeviceBuffer dev;
    gpu::Stream stream;
    GpuSide(int d, std::uint64_t size) : device(d), dev(d, size), stream(d) {}
};

/// What a case of either direction is given: path, chunk, ring slots, threads, queue depth.
struct PathSpec {
    GpuPath path;
    std::uint64_t chunk;
    unsigned ring, threads, qd;
    bool pin = true; ///< reader threads on fixed CPUs (ThreadPool)
};

/// Threads that get a share: no more than the chunks of the file.
unsigned useful_threads(const PathSpec& s, std::uint64_t size) {
    const std::uint64_t chunk = std::max<std::uint64_t>(1, std::min(s.chunk, size));
    return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(s.threads, (size + chunk - 1) / chunk)));
}

// ---- storage_to_gpu ----------------------------------------------------------------------------

class ToGpuCase final : public Case {
public:
    ToGpuCase(Site& site, std::uint64_t size, PathSpec spec, int device, bool cold)
        : m_site(site), m_file(site.pattern_file(size)), m_spec(spec), m_size(m_file->size()), m_chunk(std::min(spec.chunk, m_size)),
          m_cache(m_file->segments(), cold), m_gpu(device, m_size), m_acct(site.disks()), m_pool(useful_threads(spec, m_size), spec.pin),
          m_start(gpu::EventUse::timing), m_first(gpu::EventUse::timing) {
        IB_CUDA_CHECK(cudaMemsetAsync(m_gpu.dev.get(), 0, m_size, m_gpu.stream.get())); // poison the destination
        IB_CUDA_CHECK(cudaStreamSynchronize(m_gpu.stream.get()));
        m_host = host_buffer_for(spec.path, m_size);
        const bool direct = is_direct(spec.path) || (is_cufile(spec.path) && !site.odirect_unsupported());
        m_fds = open_all(m_file->segments(), O_RDONLY | (direct ? O_DIRECT : 0));
        m_shares = share_slices(slices_of(m_file->segments(), m_fds, dest()), spec.threads, m_chunk);
        // One ring per share: a small file has fewer shares than threads.
        // One ring per share: a small file has fewer shares than threads. Each slice's reader is
        // made here, outside the timed samples: io_uring's set-up and the registration of the
        // ring's buffers (which pins them) are paid once, not in every sample.
        if (is_pipelined(spec.path)) {
            const ReadMethod& method = read_method(path_info(spec.path).method);
            m_readers.resize(m_shares.size());
            for (std::size_t t = 0; t < m_shares.size(); ++t) {
                m_rings.push_back(std::make_unique<gpu::PinnedRing>(device, spec.ring, m_chunk));
                for (const FileSlice& sl : m_shares[t]) {
                    m_readers[t].push_back(std::make_unique<ChunkReader>(method, sl.fd, *sl.path, std::min(spec.qd, spec.ring),
                                                                         sl.file_size, m_rings[t]->regions()));
                    if (method.uring) m_fixed = m_readers[t].back()->fixed_buffers();
                }
            }
        }
        if (is_cufile(spec.path))
            m_cufile = std::make_unique<CufileSide>(true, spec.path == GpuPath::cufile_registered, m_fds, m_file->segments(),
                                                    m_gpu.dev.get(), m_size);
        if (is_registered_mapping(spec.path)) {
            if (auto why = gpu::registered_mapping_unsupported(device, m_size)) throw Unsupported(*why);
            if (spec.path == GpuPath::mmap_resident) {
                // Registered once, as a loader keeps a cached dataset registered across epochs:
                // the costs of registering and unregistering are measured here, once each.
                auto t0 = clock_type::now();
                m_resident = std::make_unique<gpu::RegisteredMapping>(mapped_files());
                m_register_s = since(t0);
                t0 = clock_type::now();
                m_resident->unregister();
                m_unregister_s = since(t0);
                m_resident = std::make_unique<gpu::RegisteredMapping>(mapped_files());
            }
        }
    }

    Sample measure() override {
        const Residency before = m_cache.prepare_sample();
        double register_s = std::numeric_limits<double>::quiet_NaN(), unregister_s = register_s;
        if (!is_cufile(m_spec.path) && !is_direct(m_spec.path))
            for (const Fd& fd : m_fds) ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
        m_acct.start();
        const auto t0 = clock_type::now();
        double first = -1;
        char* dev = static_cast<char*>(m_gpu.dev.get());
        const cudaStream_t s = m_gpu.stream.get();
        switch (m_spec.path) {
        case GpuPath::pageable:
        case GpuPath::pinned:
            read_slices(m_pool, read_method("buffered"), slices_of(m_file->segments(), m_fds, m_host.get()), m_chunk, 1);
            if (m_spec.path == GpuPath::pageable) {
                IB_CUDA_CHECK(cudaMemcpy(dev, m_host.get(), m_size, cudaMemcpyHostToDevice));
            } else {
                IB_CUDA_CHECK(cudaMemcpyAsync(dev, m_host.get(), m_size, cudaMemcpyHostToDevice, s));
                IB_CUDA_CHECK(cudaStreamSynchronize(s));
            }
            break;
        case GpuPath::pipelined:
        case GpuPath::odirect_pipelined:
        case GpuPath::io_uring_pipelined:
            IB_CUDA_CHECK(cudaEventRecord(m_start.get(), m_rings[0]->streams[0]->get()));
            m_pool.run([&](unsigned t) {
                if (t < m_shares.size()) pipelined_thread(t);
            });
            first = gpu::elapsed_s(m_start, m_first);
            break;
        case GpuPath::mmap:
            m_pool.run([&](unsigned t) {
                if (t >= m_shares.size()) return;
                gpu::set_device(m_gpu.device);
                for (const FileSlice& sl : m_shares[t]) {
                    void* map = ::mmap(nullptr, sl.bytes, PROT_READ, MAP_SHARED, sl.fd, static_cast<off_t>(sl.offset));
                    if (map == MAP_FAILED)
                        throw ConfigError(fmt::format("mmap of {} at byte {} failed: {}", *sl.path, sl.offset, std::strerror(errno)));
                    ::madvise(map, sl.bytes, MADV_SEQUENTIAL);
                    const cudaError_t err = cudaMemcpy(sl.dst, map, sl.bytes, cudaMemcpyHostToDevice);
                    ::munmap(map, sl.bytes);
                    IB_CUDA_CHECK(err);
                }
            });
            break;
        case GpuPath::cufile:
        case GpuPath::cufile_registered:
            first = cufile_io(m_pool, *m_cufile, m_fds, m_shares, dev, m_chunk, m_gpu.device, true);
            break;
        case GpuPath::mmap_registered: {
            // One pass of a loader that registers the cached file for this pass only.
            auto t1 = clock_type::now();
            gpu::RegisteredMapping mapping(mapped_files());
            register_s = since(t1);
            copy_mapping(mapping, dev, s);
            mapping.check_unchanged(); // a file changed under its pinned pages fails the configuration
            t1 = clock_type::now();
            mapping.unregister();
            unregister_s = since(t1);
            break;
        }
        case GpuPath::mmap_resident:
            copy_mapping(*m_resident, dev, s);
            break;
        }
        const double t = since(t0);
        m_acct.stop();
        if (m_resident) m_resident->check_unchanged(); // outside the timed copies
        const double per_gib = static_cast<double>(1ull << 30) / static_cast<double>(m_size);
        Sample out{static_cast<double>(m_size) / t, first >= 0 ? first : t, register_s * per_gib, unregister_s * per_gib};
        push_accounting(out, m_acct, m_size, m_acct.cpu_seconds(), before, true);
        return out;
    }

    void check() override {
        gpu::set_device(m_gpu.device);
        if (const auto bad = gpu::count_pattern_mismatches_device(m_gpu.dev.get(), m_size, PatternFile::k_seed, m_gpu.stream.get()))
            throw CheckFailed(fmt::format("{} of {} words on the GPU differ from the file's pattern", bad, (m_size + 7) / 8));
    }

    nlohmann::json details() const override {
        nlohmann::json j = path_details(m_site.facts_all());
        j["path"] = fmt::format("file ({}) -> {} -> GPU{}", j["file_system"].get<std::string>(), path_info(m_spec.path).via,
                                m_gpu.device);
        j["file"] = m_file->describe();
        j["file_reused"] = m_file->reused();
        if (!m_file->notes().empty()) j["file_notes"] = m_file->notes();
        j["bytes_per_op"] = m_size;
        j["ops_per_sample"] = 1;
        j["chunk"] = m_chunk;
        j["threads_used"] = m_shares.size();
        if (!m_pool.cpus().empty()) j["reader_cpus"] = m_pool.cpus();
        if (!m_rings.empty()) j["ring"] = m_spec.ring;
        if (m_spec.path == GpuPath::io_uring_pipelined) {
            j["queue_depth"] = std::min(m_spec.qd, m_spec.ring);
            j["registered_buffers"] = m_fixed.load();
        }
        if (is_cufile(m_spec.path)) m_cufile->describe(j);
        if (is_registered_mapping(m_spec.path)) {
            j["threads_used"] = 1; // one copy per stripe, by the copy engine from the registered pages
            j["registration"] = "mmap + cudaHostRegister(cudaHostRegisterReadOnly): the copy engine reads the page cache";
            if (m_spec.path == GpuPath::mmap_resident) {
                j["register_s"] = m_register_s;
                j["unregister_s"] = m_unregister_s;
                j["timed"] = "the copies only: registered once when the configuration was set up";
            }
        }
        j["cache_method"] = m_cache.method();
        j["timer"] = "host steady_clock to the last copy's completion; first chunk by CUDA events (pipelined) or host clock";
        j["verification"] = "device buffer checked against the file's pattern by a GPU kernel after sampling";
        return j;
    }

private:
    void* dest() const {
        return is_cufile(m_spec.path) || is_pipelined(m_spec.path) || m_spec.path == GpuPath::mmap ||
                       is_registered_mapping(m_spec.path)
                   ? m_gpu.dev.get()
                   : m_host.get();
    }

    /// The file's stripes as the registered mapping takes them.
    std::vector<gpu::MappedFile> mapped_files() const {
        std::vector<gpu::MappedFile> out;
        for (std::size_t i = 0; i < m_file->segments().size(); ++i)
            out.push_back({m_file->segments()[i].path, m_fds[i].get(), m_file->segments()[i].bytes});
        return out;
    }

    /// Each stripe copied by the copy engine from its registered mapping to its place on the GPU.
    void copy_mapping(const gpu::RegisteredMapping& mapping, char* dev, cudaStream_t s) {
        const auto& segments = m_file->segments();
        for (std::size_t i = 0; i < segments.size(); ++i)
            if (segments[i].bytes > 0)
                IB_CUDA_CHECK(cudaMemcpyAsync(dev + segments[i].offset, mapping.data(i), segments[i].bytes,
                                              cudaMemcpyHostToDevice, s));
        IB_CUDA_CHECK(cudaStreamSynchronize(s));
    }

    /// One reader thread of a pipelined path (gpu/pinned_ring): its share read chunk by chunk
    /// into its ring, each chunk copied to the GPU as soon as it is read; thread 0 marks the first.
    void pipelined_thread(unsigned t) {
        gpu::set_device(m_gpu.device);
        gpu::read_share_to_device(*m_rings[t], m_shares[t], m_readers[t], m_chunk, t == 0 ? &m_first : nullptr);
    }

    Site& m_site;
    std::shared_ptr<PatternFile> m_file;
    PathSpec m_spec;
    std::uint64_t m_size, m_chunk;
    CacheState m_cache;
    GpuSide m_gpu;
    Accounting m_acct;
    ThreadPool m_pool;
    gpu::Event m_start, m_first;
    gpu::HostBuffer m_host;
    std::vector<std::unique_ptr<gpu::PinnedRing>> m_rings;
    std::vector<Fd> m_fds;
    std::vector<std::vector<FileSlice>> m_shares;
    std::vector<std::vector<std::unique_ptr<ChunkReader>>> m_readers; ///< per thread, per slice: before the rings and fds go
    std::unique_ptr<CufileSide> m_cufile; // before m_fds go
    std::unique_ptr<gpu::RegisteredMapping> m_resident; // mmap_resident: unregistered before m_fds go
    double m_register_s = 0, m_unregister_s = 0;
    std::atomic<bool> m_fixed{false};
};

// ---- gpu_to_storage ----------------------------------------------------------------------------

class FromGpuCase final : public Case {
public:
    FromGpuCase(Site& site, PathSpec spec, std::uint64_t size, int device)
        : m_site(site), m_spec(spec), m_size(size), m_chunk(std::min(spec.chunk, size)), m_gpu(device, size),
          m_acct(site.disks()), m_pool(useful_threads(spec, size), spec.pin) {
        // One target per directory (stripes of the device buffer, as the pattern files are).
        const auto& dirs = site.run_dirs();
        const auto parts = stripe(size, dirs.size(), PatternFile::k_stripe_align);
        for (std::size_t i = 0; i < parts.size(); ++i) {
            m_targets.push_back({dirs[i] + "/" + temp_file_name(::getpid(), fmt::format("write-{}-{}", size, i)), parts[i].first,
                                 parts[i].second});
            m_guards.emplace_back(m_targets.back().path);
        }
        const bool direct = is_cufile(spec.path) && !site.odirect_unsupported();
        m_fds = open_all_create(direct);
        gpu::fill_pattern_device(m_gpu.dev.get(), size, PatternFile::k_seed, m_gpu.stream.get());
        m_host = host_buffer_for(spec.path, size);
        void* src = spec.path == GpuPath::pageable || spec.path == GpuPath::pinned ? m_host.get() : m_gpu.dev.get();
        m_shares = share_slices(slices_of(m_targets, m_fds, src), spec.threads, m_chunk);
        if (spec.path == GpuPath::pipelined)
            for (std::size_t t = 0; t < m_shares.size(); ++t) m_rings.push_back(std::make_unique<gpu::PinnedRing>(device, spec.ring, m_chunk));
        if (is_cufile(spec.path))
            m_cufile = std::make_unique<CufileSide>(false, spec.path == GpuPath::cufile_registered, m_fds, m_targets,
                                                    m_gpu.dev.get(), size);
    }

    Sample measure() override {
        m_acct.start();
        const auto t0 = clock_type::now();
        char* dev = static_cast<char*>(m_gpu.dev.get());
        const cudaStream_t s = m_gpu.stream.get();
        switch (m_spec.path) {
        case GpuPath::pageable:
        case GpuPath::pinned:
            if (m_spec.path == GpuPath::pageable) {
                IB_CUDA_CHECK(cudaMemcpy(m_host.get(), dev, m_size, cudaMemcpyDeviceToHost));
            } else {
                IB_CUDA_CHECK(cudaMemcpyAsync(m_host.get(), dev, m_size, cudaMemcpyDeviceToHost, s));
                IB_CUDA_CHECK(cudaStreamSynchronize(s));
            }
            m_pool.run([&](unsigned t) {
                if (t >= m_shares.size()) return;
                for (const FileSlice& sl : m_shares[t])
                    for (std::uint64_t done = 0; done < sl.bytes; done += m_chunk)
                        pwrite_all(sl.fd, static_cast<char*>(sl.dst) + done, std::min(m_chunk, sl.bytes - done), sl.offset + done,
                                   *sl.path);
            });
            break;
        case GpuPath::pipelined:
            m_pool.run([&](unsigned t) {
                if (t < m_shares.size()) pipelined_thread(t);
            });
            break;
        case GpuPath::cufile:
        case GpuPath::cufile_registered:
            cufile_io(m_pool, *m_cufile, m_fds, m_shares, dev, m_chunk, m_gpu.device, false);
            break;
        default: throw ConfigError("path not available for writes");
        }
        for (std::size_t i = 0; i < m_fds.size(); ++i)
            if (::fdatasync(m_fds[i].get()) != 0)
                throw ConfigError(fmt::format("fdatasync of {} failed: {}", m_targets[i].path, std::strerror(errno)));
        const double t = since(t0);
        m_acct.stop();
        Sample out{static_cast<double>(m_size) / t, t};
        push_accounting(out, m_acct, m_size, m_acct.cpu_seconds(), Residency{}, false);
        return out;
    }

    void check() override {
        std::uint64_t bad = 0;
        for (const Segment& seg : m_targets) bad += count_file_pattern_mismatches_in(seg.path, seg.offset, seg.bytes);
        if (bad) throw CheckFailed(fmt::format("{} of {} words in the written file differ from the device's data", bad, m_size / 8));
    }

    nlohmann::json details() const override {
        nlohmann::json j = path_details(m_site.facts_all());
        j["path"] = fmt::format("GPU{} -> {} -> file ({})", m_gpu.device, path_info(m_spec.path).via,
                                j["file_system"].get<std::string>());
        std::string files;
        for (const Segment& seg : m_targets) files += (files.empty() ? "" : " ") + seg.path;
        j["file"] = files;
        j["bytes_per_op"] = m_size;
        j["ops_per_sample"] = 1;
        j["chunk"] = m_chunk;
        j["threads_used"] = m_shares.size();
        if (!m_pool.cpus().empty()) j["reader_cpus"] = m_pool.cpus();
        j["durability"] = "fdatasync before the sample ends";
        if (!m_rings.empty()) j["ring"] = m_spec.ring;
        if (is_cufile(m_spec.path)) m_cufile->describe(j);
        j["timer"] = "host steady_clock, fdatasync included";
        j["verification"] = "the file read back and compared with the device's pattern after sampling";
        return j;
    }

private:
    std::vector<Fd> open_all_create(bool direct) {
        std::vector<Fd> out;
        for (const Segment& seg : m_targets) {
            out.push_back(open_file(seg.path, O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR | (direct ? O_DIRECT : 0)));
            if (const int rc = ::posix_fallocate(out.back().get(), 0, static_cast<off_t>(seg.bytes)); rc != 0)
                throw ConfigError(fmt::format("cannot allocate {} for {}: {}", format_size(seg.bytes), seg.path, std::strerror(rc)));
        }
        return out;
    }

    /// One writer thread of the pipelined path (gpu/pinned_ring): its share copied chunk by
    /// chunk into its ring (up to K copies ahead) and each chunk written once its copy is done.
    void pipelined_thread(unsigned t) {
        gpu::set_device(m_gpu.device);
        gpu::write_share_from_device(*m_rings[t], m_shares[t], m_chunk);
    }

    Site& m_site;
    PathSpec m_spec;
    std::uint64_t m_size, m_chunk;
    GpuSide m_gpu;
    Accounting m_acct;
    ThreadPool m_pool;
    std::vector<Segment> m_targets;
    std::vector<cleanup::Guard> m_guards;
    std::vector<Fd> m_fds;
    gpu::HostBuffer m_host;
    std::vector<std::unique_ptr<gpu::PinnedRing>> m_rings;
    std::vector<std::vector<FileSlice>> m_shares;
    std::unique_ptr<CufileSide> m_cufile; // before m_fds and the files go
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

std::optional<std::string> path_axes_unsupported(const Machine& m, GpuPath path, const Params& p) {
    if (!is_pipelined(path) && p.get_uint("ring") != 0) return std::string("ring applies to the pipelined paths only");
    if (auto why = readers_unsupported(m, p, path == GpuPath::io_uring_pipelined)) return why;
    if (path == GpuPath::io_uring_pipelined) {
        if (auto why = read_method_unavailable(read_method("io_uring"))) return why;
    }
    if (is_cufile(path)) {
        std::string why;
        if (!gpu::cufile_driver(&why)) return "cuFile: " + why;
    }
    if (path == GpuPath::mmap_resident && p.get("cache") == "cold")
        return std::string("a mapping registered once keeps its pages in memory: cold cannot be reached (mmap_registered "
                           "registers in every sample)");
    return std::nullopt;
}

Axis ring_axis() {
    return {"ring",
            "pinned chunk buffers (and streams) in each reader's ring; 0 = the default: 4, or qd + 2 for "
            "io_uring_pipelined (pipelined paths only)",
            AxisKind::integer, {"0"}, {}, 0, 64};
}

/// storage_to_gpu and gpu_to_storage: a file and one GPU, moved by a `path`, with the pipeline
/// ring and the cuFile threads; `reads` says which way.
class GpuPathScenario : public SiteScenario {
public:
    const ScenarioInfo& info() const override { return m_info; }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        const GpuPath path = parse_gpu_path(p.get("path"));
        if (auto why = gpu_side_unsupported(m, p, 1)) return why;
        if (auto why = path_axes_unsupported(m, path, p)) return why;
        return storage_unsupported(site(), p, m_reads && is_direct(path), m_reads);
    }
    std::vector<PathUse> paths(const Params& p) const override {
        const int dev = static_cast<int>(p.get_uint("device"));
        if (!m_reads) return {{PathKind::host_link, dev, -1, "d2h"}, {PathKind::storage}};
        // Warm buffered reads come from the page cache; O_DIRECT and cuFile reads from the drive.
        // A registered mapping of cached pages is read by the copy engine itself: the host link.
        const GpuPath path = parse_gpu_path(p.get("path"));
        if (is_registered_mapping(path) && p.get("cache") == "warm") return {{PathKind::host_link, dev, -1, "h2d"}};
        const bool drive = p.get("cache") == "cold" || is_direct(path) || is_cufile(path);
        return {{drive ? PathKind::storage : PathKind::page_cache}, {PathKind::host_link, dev, -1, "h2d"}};
    }

protected:
    /// Axes size, `path_axis`, cache (reads only), chunk, ring, threads (`threads_help`), qd
    /// (reads only), device; `metrics`, then the accounting metrics.
    GpuPathScenario(std::shared_ptr<Site> site, bool reads, Axis path_axis, const char* threads_help,
                    std::vector<MetricInfo> metrics)
        : SiteScenario(std::move(site)), m_reads(reads) {
        m_info.family = "storage";
        m_info.axes = {size_axis(), std::move(path_axis)};
        if (reads) m_info.axes.push_back(cache_axis());
        m_info.axes.insert(m_info.axes.end(), {chunk_axis(), ring_axis(), threads_axis(threads_help, "0", 0)});
        if (reads) m_info.axes.push_back(qd_axis("io_uring_pipelined", k_default_qd));
        m_info.axes.push_back(device_axis());
        m_info.metrics = std::move(metrics);
        for (auto& m : accounting_metrics(reads)) m_info.metrics.push_back(m);
    }

    /// What prepare() reads and does first: the GPU current, the host side near it (so that
    /// automatic threads count the CPUs near the GPU), the defaults resolved.
    static PathSpec prepare_gpu_side(const CaseContext& ctx, const Params& p) {
        const int dev = static_cast<int>(p.get_uint("device"));
        gpu::set_device(dev);
        place_host_side(ctx, dev);
        PathSpec s{parse_gpu_path(p.get("path")), p.get_uint("chunk"), static_cast<unsigned>(p.get_uint("ring")),
                   static_cast<unsigned>(p.get_uint("threads")), 0, ctx.bind_numa};
        const auto qd = p.find("qd");
        s.qd = qd && std::stoull(*qd) ? static_cast<unsigned>(std::stoull(*qd)) : k_default_qd;
        if (s.ring == 0) s.ring = s.path == GpuPath::io_uring_pipelined ? s.qd + 2 : 4;
        if (s.path != GpuPath::io_uring_pipelined) s.qd = 1;
        if (s.threads == 0) s.threads = auto_reader_threads();
        return s;
    }

    ScenarioInfo m_info;

private:
    bool m_reads;
};

class StorageToGpu final : public GpuPathScenario {
public:
    explicit StorageToGpu(std::shared_ptr<Site> site)
        : GpuPathScenario(std::move(site), true,
                          choice_axis("path",
                                      "pageable: pread into malloc'd memory + cudaMemcpy; pinned: pread into pinned "
                                      "memory + copy; pipelined: each reader a ring of pinned chunks, read i+1 while "
                                      "copying i; odirect_pipelined: the same with O_DIRECT; io_uring_pipelined: O_DIRECT "
                                      "reads through io_uring, qd in flight, into the registered ring, each chunk copied "
                                      "as it completes; mmap: cudaMemcpy from a mapping; cufile / cufile_registered: "
                                      "cuFileRead; mmap_registered: the mapping registered read-only with CUDA, copied "
                                      "by the copy engine straight from the page cache, registered and unregistered in "
                                      "every sample; mmap_resident: the same registered once, only the copies timed (a "
                                      "cached dataset kept registered across epochs)",
                                      {"pageable", "pinned", "pipelined", "odirect_pipelined", "io_uring_pipelined", "mmap",
                                       "cufile", "cufile_registered", "mmap_registered", "mmap_resident"}),
                          "reader threads, each a contiguous share of the file (of its stripes over several "
                          "--storage-dir); 0 = the CPUs near the GPU, at most 16",
                          {{"bandwidth", "B/s", Better::higher, "file bytes over the time until the last byte is on the GPU"},
                           {"first_chunk_time", "s", Better::lower, "time until the first chunk is usable on the GPU"},
                           {"register_time", "s", Better::lower,
                            "mmap_registered: cudaHostRegister of the mapping, seconds per GiB"},
                           {"unregister_time", "s", Better::lower,
                            "mmap_registered: cudaHostUnregister of the mapping, seconds per GiB"}}) {
        m_info.id = "storage_to_gpu";
        m_info.summary = "file -> device memory: pageable, pinned, pipelined, O_DIRECT and io_uring pipelined, mmap and cuFile paths, on parallel readers";
        m_info.counting = "file bytes moved once per sample, to data usable on the GPU; device and cache bytes beside them";
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        const PathSpec spec = prepare_gpu_side(ctx, p);
        return std::make_unique<ToGpuCase>(site(), p.get_uint("size"), spec, static_cast<int>(p.get_uint("device")),
                                           p.get("cache") == "cold");
    }
};

class GpuToStorage final : public GpuPathScenario {
public:
    explicit GpuToStorage(std::shared_ptr<Site> site)
        : GpuPathScenario(std::move(site), false,
                          choice_axis("path",
                                      "pageable: cudaMemcpy to malloc'd memory + pwrite; pinned: the same through pinned "
                                      "memory; pipelined: a ring of pinned chunks, copy i+1 while writing i; cufile / "
                                      "cufile_registered: cuFileWrite",
                                      {"pageable", "pinned", "pipelined", "cufile", "cufile_registered"}),
                          "writer threads, each a contiguous share of the file (of its stripes over several "
                          "--storage-dir); 0 = the CPUs near the GPU, at most 16",
                          {{"bandwidth", "B/s", Better::higher, "file bytes over the time until they are durable"},
                           {"time", "s", Better::lower, "time to write and flush the whole file"}}) {
        m_info.id = "gpu_to_storage";
        m_info.summary = "device memory -> file (a checkpoint save): pageable, pinned, pipelined and cuFile writes, fdatasync'd";
        m_info.counting = "file bytes written once per sample, durable (fdatasync) before the sample ends";
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        const PathSpec spec = prepare_gpu_side(ctx, p);
        return std::make_unique<FromGpuCase>(site(), spec, p.get_uint("size"), static_cast<int>(p.get_uint("device")));
    }
};

} // namespace

void register_storage_gpu(Registry& r, const std::shared_ptr<Site>& site) {
    r.add(std::make_unique<StorageToGpu>(site));
    r.add(std::make_unique<GpuToStorage>(site));
}

} // namespace interopbench
