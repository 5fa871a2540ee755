// The read methods, the one-file chunk reader and the parallel readers. See readers.hpp.
#include "hostio/readers.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#if INTEROPBENCH_WITH_URING
#include <liburing.h>
#endif

#include <fmt/format.h>

#include "hostio/storage_io.hpp"
#include "interopbench/errors.hpp"

namespace interopbench::storage {

// ---- the table ------------------------------------------------------------------------------

const std::vector<ReadMethod>& read_methods() {
    static const std::vector<ReadMethod> table{
        {"buffered", "pread through the page cache", false, false, false, false},
        {"odirect", "O_DIRECT pread, bypassing the page cache (aligned sizes and offsets)", true, false, false, false},
        {"io_uring", "O_DIRECT reads through io_uring, qd in flight per thread, into registered buffers", true, true, false,
         false},
        {"mmap", "memcpy from a mapping of the file (MADV_SEQUENTIAL)", false, false, true, false},
        {"mmap_populate", "memcpy from a mapping made with MAP_POPULATE (faulted in at map time)", false, false, true, true},
    };
    return table;
}

const ReadMethod& read_method(const std::string& name) {
    for (const ReadMethod& m : read_methods())
        if (name == m.name) return m;
    throw ConfigError(fmt::format("unknown read method '{}' (buffered, odirect, io_uring, mmap or mmap_populate)", name));
}

std::string read_methods_help(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", n, read_method(n).help);
    return out;
}

bool io_uring_built(std::string* why) {
#if INTEROPBENCH_WITH_URING
    (void)why;
    return true;
#else
    if (why) *why = "built without io_uring (liburing-dev was not found at configure time; install it and reconfigure)";
    return false;
#endif
}

std::optional<std::string> read_method_unavailable(const ReadMethod& m) {
    std::string why;
    if (m.uring && !io_uring_built(&why)) return why;
    return std::nullopt;
}

int read_open_flags(const ReadMethod& m) { return O_RDONLY | (m.direct ? O_DIRECT : 0); }

std::optional<std::string> threads_refused(std::uint64_t threads, unsigned hardware_threads) {
    const std::uint64_t cap = std::min<std::uint64_t>(1024, 4ull * std::max(1u, hardware_threads));
    if (threads == 0) return std::string("threads 0 reads nothing: give at least 1");
    if (threads > cap)
        return fmt::format("{} threads is more than 4 per hardware thread ({} here): give at most {}", threads,
                           hardware_threads, cap);
    return std::nullopt;
}

std::optional<std::string> queue_depth_refused(std::uint64_t qd) {
    if (qd == 0 || qd > 4096) return fmt::format("queue depth {} is outside 1 to 4096", qd);
    return std::nullopt;
}

// ---- the chunk reader -----------------------------------------------------------------------

namespace {

[[noreturn]] void read_error(const std::string& path, std::uint64_t offset, int err) {
    throw ConfigError(fmt::format("read failed on {} at byte {}: {}", path, offset, std::strerror(err)));
}
[[noreturn]] void short_file(const std::string& path, std::uint64_t offset) {
    throw ConfigError(fmt::format("{} ended at byte {}: the file was truncated or replaced while measuring", path, offset));
}

} // namespace

#if INTEROPBENCH_WITH_URING
struct ChunkReader::Uring {
    io_uring ring{};
    bool ok = false;
    std::vector<Pending> slots; ///< in flight, indexed by the sqe's user data
    std::vector<std::size_t> free;
    ~Uring() {
        if (ok) io_uring_queue_exit(&ring);
    }
};
#else
struct ChunkReader::Uring {};
#endif

ChunkReader::ChunkReader(const ReadMethod& m, int fd, std::string path, unsigned depth, std::uint64_t file_size,
                         const std::vector<iovec>& fixed)
    : m_method(m), m_fd(fd), m_path(std::move(path)), m_depth(m.uring ? std::max(1u, depth) : 1u), m_file_size(file_size) {
    if (m.mapped) {
        if (file_size == 0) return;
        const int flags = MAP_SHARED | (m.populate ? MAP_POPULATE : 0);
        void* map = ::mmap(nullptr, file_size, PROT_READ, flags, fd, 0);
        if (map == MAP_FAILED)
            throw ConfigError(fmt::format("mmap failed on {}: {}", m_path, std::strerror(errno)));
        if (!m.populate) ::madvise(map, file_size, MADV_SEQUENTIAL);
        m_map = static_cast<const char*>(map);
        return;
    }
    if (!m.uring) return;
#if INTEROPBENCH_WITH_URING
    m_uring = std::make_unique<Uring>();
    if (const int rc = io_uring_queue_init(m_depth, &m_uring->ring, 0); rc < 0)
        throw ConfigError(fmt::format("io_uring_queue_init failed: {}", std::strerror(-rc)));
    m_uring->ok = true;
    m_uring->slots.resize(m_depth);
    for (std::size_t i = m_depth; i-- > 0;) m_uring->free.push_back(i);
    // Registration pins the pages once instead of per read; a memlock limit or a buffer the
    // kernel refuses makes it fail: plain reads then (details say which).
    for (const iovec& v : fixed) {
        for (std::uint64_t b = 0; b < v.iov_len; b += 1ull << 30)
            m_regions.push_back({static_cast<char*>(v.iov_base) + b, std::min<std::uint64_t>(1ull << 30, v.iov_len - b)});
    }
    if (!m_regions.empty() && m_regions.size() <= 1024)
        m_fixed = io_uring_register_buffers(&m_uring->ring, m_regions.data(), static_cast<unsigned>(m_regions.size())) == 0;
#else
    throw ConfigError("built without io_uring");
#endif
}

ChunkReader::~ChunkReader() {
#if INTEROPBENCH_WITH_URING
    // Reads still in flight (an error elsewhere) must land before their buffers go.
    if (m_uring && m_uring->ok)
        while (m_in_flight > 0) {
            io_uring_cqe* cqe = nullptr;
            if (io_uring_wait_cqe(&m_uring->ring, &cqe) < 0) break;
            io_uring_cqe_seen(&m_uring->ring, cqe);
            --m_in_flight;
        }
#endif
    if (m_map) ::munmap(const_cast<char*>(m_map), m_file_size);
}

void ChunkReader::submit(void* dst, std::uint64_t offset, std::uint64_t bytes, std::uint64_t tag) {
    if (!can_submit()) throw ConfigError("internal: read submitted beyond the queue depth");
    ++m_in_flight;
#if INTEROPBENCH_WITH_URING
    if (m_uring) {
        const std::size_t slot = m_uring->free.back();
        m_uring->free.pop_back();
        m_uring->slots[slot] = {dst, offset, bytes, tag};
        io_uring_sqe* sqe = io_uring_get_sqe(&m_uring->ring);
        int index = -1;
        if (m_fixed)
            for (std::size_t i = 0; i < m_regions.size(); ++i) {
                const char* b = static_cast<const char*>(m_regions[i].iov_base);
                if (static_cast<const char*>(dst) >= b && static_cast<const char*>(dst) + bytes <= b + m_regions[i].iov_len) {
                    index = static_cast<int>(i);
                    break;
                }
            }
        if (index >= 0) io_uring_prep_read_fixed(sqe, m_fd, dst, static_cast<unsigned>(bytes), offset, index);
        else io_uring_prep_read(sqe, m_fd, dst, static_cast<unsigned>(bytes), offset);
        io_uring_sqe_set_data64(sqe, slot);
        return;
    }
#endif
    m_pending.push_back({dst, offset, bytes, tag});
}

ChunkReader::Done ChunkReader::wait() {
    if (m_in_flight == 0) throw ConfigError("internal: wait with no read in flight");
#if INTEROPBENCH_WITH_URING
    if (m_uring) {
        if (const int rc = io_uring_submit(&m_uring->ring); rc < 0)
            throw ConfigError(fmt::format("io_uring_submit failed on {}: {}", m_path, std::strerror(-rc)));
        io_uring_cqe* cqe = nullptr;
        int rc = 0;
        while ((rc = io_uring_wait_cqe(&m_uring->ring, &cqe)) == -EINTR) {
        }
        if (rc < 0) throw ConfigError(fmt::format("io_uring_wait_cqe failed on {}: {}", m_path, std::strerror(-rc)));
        const int res = cqe->res;
        const std::size_t slot = static_cast<std::size_t>(io_uring_cqe_get_data64(cqe));
        io_uring_cqe_seen(&m_uring->ring, cqe);
        --m_in_flight;
        const Pending p = m_uring->slots[slot];
        m_uring->free.push_back(slot);
        if (res < 0) read_error(m_path, p.offset, -res);
        if (static_cast<std::uint64_t>(res) != p.bytes) {
            if (res == 0) short_file(m_path, p.offset);
            // A short read (rare with O_DIRECT): the rest synchronously.
            pread_all(m_fd, static_cast<char*>(p.dst) + res, p.bytes - static_cast<std::uint64_t>(res),
                      p.offset + static_cast<std::uint64_t>(res), m_path);
        }
        return {p.tag, p.offset, p.bytes};
    }
#endif
    const Pending p = m_pending.front();
    m_pending.pop_front();
    --m_in_flight;
    if (m_method.mapped) {
        if (p.offset + p.bytes > m_file_size) short_file(m_path, m_file_size);
        std::memcpy(p.dst, m_map + p.offset, p.bytes);
    } else {
        pread_all(m_fd, p.dst, p.bytes, p.offset, m_path);
    }
    return {p.tag, p.offset, p.bytes};
}

unsigned auto_reader_threads() {
    cpu_set_t set;
    CPU_ZERO(&set);
    const int n = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    return static_cast<unsigned>(std::clamp(n, 1, 16));
}

// ---- the pool -------------------------------------------------------------------------------

namespace {

/// Pins the calling thread to `cpu`; false where the system refuses (the thread runs anywhere).
bool pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set) == 0;
}

} // namespace

ThreadPool::ThreadPool(unsigned threads, bool pin) : m_size(std::max(1u, threads)), m_errors(m_size) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (pin && ::sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
        std::vector<int> cpus;
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
        for (unsigned t = 0; t < m_size && !cpus.empty(); ++t) m_cpus.push_back(cpus[t % cpus.size()]);
    }
    for (unsigned t = 1; t < m_size; ++t) m_threads.emplace_back([this, t] { loop(t); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> l(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    for (auto& t : m_threads) t.join();
}

void ThreadPool::loop(unsigned t) {
    if (!m_cpus.empty()) pin_to(m_cpus[t]);
    std::uint64_t seen = 0;
    for (;;) {
        const std::function<void(unsigned)>* job = nullptr;
        {
            std::unique_lock<std::mutex> l(m_mutex);
            m_cv.wait(l, [&] { return m_stop || m_generation != seen; });
            if (m_stop) return;
            seen = m_generation;
            job = m_job;
        }
        try {
            (*job)(t);
        } catch (...) {
            m_errors[t] = std::current_exception();
        }
        {
            std::lock_guard<std::mutex> l(m_mutex);
            --m_running;
        }
        m_done_cv.notify_all();
    }
}

void ThreadPool::run(const std::function<void(unsigned)>& f) {
    std::fill(m_errors.begin(), m_errors.end(), nullptr);
    {
        std::lock_guard<std::mutex> l(m_mutex);
        m_job = &f;
        m_running = m_size - 1;
        ++m_generation;
    }
    m_cv.notify_all();
    cpu_set_t before;
    const bool pinned = !m_cpus.empty() && ::pthread_getaffinity_np(::pthread_self(), sizeof(before), &before) == 0 &&
                        pin_to(m_cpus[0]);
    try {
        f(0);
    } catch (...) {
        m_errors[0] = std::current_exception();
    }
    if (pinned) ::pthread_setaffinity_np(::pthread_self(), sizeof(before), &before);
    {
        std::unique_lock<std::mutex> l(m_mutex);
        m_done_cv.wait(l, [&] { return m_running == 0; });
        m_job = nullptr;
    }
    for (auto& e : m_errors)
        if (e) std::rethrow_exception(e);
}

// ---- parallel reads -------------------------------------------------------------------------

std::vector<std::vector<FileSlice>> share_slices(const std::vector<FileSlice>& slices, unsigned threads, std::uint64_t align) {
    std::uint64_t total = 0;
    for (const FileSlice& s : slices) total += s.bytes;
    align = std::max<std::uint64_t>(1, align);
    threads = std::max(1u, threads);
    std::uint64_t per = (total / threads + align - 1) / align * align;
    per = std::max(per, align);
    std::vector<std::vector<FileSlice>> out;
    std::uint64_t room = 0;
    for (const FileSlice& s : slices) {
        std::uint64_t done = 0;
        while (done < s.bytes) {
            if (room == 0) {
                out.emplace_back();
                room = out.size() == threads ? ~0ull : per;
            }
            const std::uint64_t n = std::min(room, s.bytes - done);
            FileSlice part = s;
            part.offset = s.offset + done;
            part.bytes = n;
            part.dst = static_cast<char*>(s.dst) + done;
            out.back().push_back(part);
            done += n;
            room -= room == ~0ull ? 0 : n;
        }
    }
    return out;
}

std::uint64_t read_slices(ThreadPool& pool, const ReadMethod& m, const std::vector<FileSlice>& slices, std::uint64_t chunk,
                          unsigned qd) {
    chunk = std::max<std::uint64_t>(1, chunk);
    const auto shares = share_slices(slices, pool.size(), m.direct ? chunk : 1);
    std::uint64_t total = 0;
    for (const FileSlice& s : slices) total += s.bytes;
    pool.run([&](unsigned t) {
        if (t >= shares.size()) return;
        for (const FileSlice& s : shares[t]) {
            std::vector<iovec> fixed;
            if (m.uring) fixed.push_back({s.dst, s.bytes});
            ChunkReader reader(m, s.fd, *s.path, qd, s.file_size, fixed);
            std::uint64_t next = 0, done = 0;
            while (done < s.bytes) {
                while (reader.can_submit() && next < s.bytes) {
                    const std::uint64_t n = std::min(chunk, s.bytes - next);
                    reader.submit(static_cast<char*>(s.dst) + next, s.offset + next, n, 0);
                    next += n;
                }
                done += reader.wait().bytes;
            }
        }
    });
    return total;
}

} // namespace interopbench::storage
