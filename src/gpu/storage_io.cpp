// Storage on the host (storage and pipeline families). See storage_io.hpp.
#include "gpu/storage_io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <thread>

#if INTEROPBENCH_WITH_URING
#include <liburing.h>
#endif

#include <fmt/format.h>

#include "gpu/cuda_util.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/params.hpp"

namespace interopbench::storage {
namespace {

constexpr std::uint64_t k_page = 4096;

std::string errno_text(int err) { return std::strerror(err); }

[[noreturn]] void io_error(const std::string& what, const std::string& path, int err) {
    if (err == ENOSPC)
        throw ConfigError(fmt::format("{} {}: disk full (No space left on device)", what, path));
    throw ConfigError(fmt::format("{} {}: {}", what, path, errno_text(err)));
}

bool pid_alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

/// Splits [0, size) into `n` contiguous ranges whose starts are multiples of `align`.
std::vector<std::pair<std::uint64_t, std::uint64_t>> split_ranges(std::uint64_t size, unsigned n, std::uint64_t align) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    n = std::max(1u, n);
    std::uint64_t per = (size / n + align - 1) / align * align;
    per = std::max(per, align);
    for (std::uint64_t b = 0; b < size; b += per) out.emplace_back(b, std::min(size, b + per));
    return out;
}

/// Runs f(begin, end) on one thread per range; rethrows the first error.
template <class F> void on_threads(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges, F&& f) {
    if (ranges.size() == 1) {
        f(ranges[0].first, ranges[0].second);
        return;
    }
    std::vector<std::thread> pool;
    std::vector<std::exception_ptr> errors(ranges.size());
    for (std::size_t i = 0; i < ranges.size(); ++i)
        pool.emplace_back([&, i] {
            try {
                f(ranges[i].first, ranges[i].second);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
    for (auto& t : pool) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
}

} // namespace

// ---- names and stale files ------------------------------------------------------------

std::string pattern_file_name(std::uint64_t size) { return fmt::format("ib-storage-v1-{}.dat", size); }
std::string temp_file_name(int pid, const std::string& what) { return fmt::format(".ib-storage-{}-{}.tmp", pid, what); }

int remove_stale_files(const std::string& dir) {
    int removed = 0;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return 0;
    while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        const std::string prefix = ".ib-storage-";
        if (name.rfind(prefix, 0) != 0 || name.size() < prefix.size() + 5 || name.substr(name.size() - 4) != ".tmp") continue;
        const std::string rest = name.substr(prefix.size());
        const auto dash = rest.find('-');
        if (dash == std::string::npos) continue;
        int pid = 0;
        try {
            pid = std::stoi(rest.substr(0, dash));
        } catch (...) {
            continue;
        }
        if (pid == ::getpid() || pid_alive(pid)) continue;
        if (::unlink((dir + "/" + name).c_str()) == 0) ++removed;
    }
    ::closedir(d);
    return removed;
}

// ---- residency, dropping, counters ------------------------------------------------------

Residency residency(int fd, std::uint64_t size) {
    Residency r;
    if (size == 0) return r;
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) throw ConfigError(fmt::format("mmap for mincore failed: {}", errno_text(errno)));
    const std::uint64_t pages = (size + k_page - 1) / k_page;
    std::vector<unsigned char> vec(pages);
    const int rc = ::mincore(map, size, vec.data());
    const int err = errno;
    ::munmap(map, size);
    if (rc != 0) throw ConfigError(fmt::format("mincore failed: {}", errno_text(err)));
    r.pages = pages;
    for (unsigned char v : vec) r.resident += v & 1;
    return r;
}

DropOutcome drop_pages(int fd, std::uint64_t size, bool allow_drop_caches) {
    DropOutcome out;
    ::fdatasync(fd); // dirty pages cannot be dropped
    ::posix_fadvise(fd, 0, static_cast<off_t>(size), POSIX_FADV_DONTNEED);
    out.method = "fadvise";
    out.after = residency(fd, size);
    if (out.after.resident > 0 && allow_drop_caches) {
        std::ofstream dc("/proc/sys/vm/drop_caches");
        if (dc) {
            dc << "1\n";
            dc.close();
            if (dc) {
                out.method = "fadvise+drop_caches";
                out.after = residency(fd, size);
            }
        }
    }
    return out;
}

IoCounters read_io_counters() {
    IoCounters c;
    std::ifstream in("/proc/self/io");
    std::string key;
    std::uint64_t value = 0;
    int seen = 0;
    while (in >> key >> value) {
        if (key == "read_bytes:") c.read_bytes = value, ++seen;
        else if (key == "write_bytes:") c.write_bytes = value, ++seen;
        else if (key == "rchar:") c.rchar = value;
        else if (key == "wchar:") c.wchar = value;
    }
    c.valid = seen == 2;
    return c;
}

std::optional<DiskCounters> read_disk_counters(const std::string& disk) {
    if (disk.empty()) return std::nullopt;
    std::ifstream in("/sys/block/" + disk + "/stat");
    std::uint64_t f[7] = {};
    for (auto& v : f)
        if (!(in >> v)) return std::nullopt;
    return DiskCounters{f[2], f[6]};
}

double process_cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
    return s(u.ru_utime) + s(u.ru_stime);
}

void Accounting::start() {
    m_d0 = read_disk_counters(m_disk);
    m_io0 = read_io_counters();
    m_cpu0 = process_cpu_seconds();
}
void Accounting::stop() {
    m_cpu1 = process_cpu_seconds();
    m_io1 = read_io_counters();
    m_d1 = read_disk_counters(m_disk);
}
double Accounting::device_read_bytes() const {
    if (!m_io0.valid || !m_io1.valid) return std::nan("");
    return static_cast<double>(m_io1.read_bytes - m_io0.read_bytes);
}
double Accounting::device_write_bytes() const {
    if (!m_io0.valid || !m_io1.valid) return std::nan("");
    return static_cast<double>(m_io1.write_bytes - m_io0.write_bytes);
}
double Accounting::disk_read_bytes() const {
    if (!m_d0 || !m_d1) return std::nan("");
    return static_cast<double>(m_d1->sectors_read - m_d0->sectors_read) * 512;
}
double Accounting::disk_write_bytes() const {
    if (!m_d0 || !m_d1) return std::nan("");
    return static_cast<double>(m_d1->sectors_written - m_d0->sectors_written) * 512;
}

// ---- patterns and files ---------------------------------------------------------------------

void fill_file_pattern(void* dst, std::uint64_t offset, std::uint64_t bytes) {
    const std::uint64_t first = offset / 8;
    auto* w = static_cast<std::uint64_t*>(dst);
    const std::uint64_t words = bytes / 8;
    for (std::uint64_t i = 0; i < words; ++i) w[i] = gpu::pattern_word(PatternFile::k_seed, first + i);
    const std::uint64_t tail = gpu::pattern_word(PatternFile::k_seed, first + words);
    auto* t = reinterpret_cast<unsigned char*>(w + words);
    for (std::uint64_t b = 0; b < bytes % 8; ++b) t[b] = static_cast<unsigned char>(tail >> (8 * b));
}

std::uint64_t count_file_pattern_mismatches(const void* src, std::uint64_t offset, std::uint64_t bytes) {
    if (offset == 0) return gpu::count_pattern_mismatches_host(src, bytes, PatternFile::k_seed);
    const std::uint64_t first = offset / 8;
    const auto* w = static_cast<const std::uint64_t*>(src);
    std::uint64_t bad = 0;
    for (std::uint64_t i = 0; i < bytes / 8; ++i) bad += w[i] != gpu::pattern_word(PatternFile::k_seed, first + i);
    return bad;
}

Fd::~Fd() {
    if (m_fd >= 0) ::close(m_fd);
}
Fd& Fd::operator=(Fd&& o) noexcept {
    if (this != &o) {
        if (m_fd >= 0) ::close(m_fd);
        m_fd = o.m_fd;
        o.m_fd = -1;
    }
    return *this;
}
Fd open_file(const std::string& path, int flags, int mode) {
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    if (fd < 0) io_error("cannot open", path, errno);
    return Fd(fd);
}

void pread_all(int fd, void* dst, std::uint64_t bytes, std::uint64_t offset, const std::string& path) {
    auto* p = static_cast<char*>(dst);
    while (bytes > 0) {
        const ssize_t n = ::pread(fd, p, std::min<std::uint64_t>(bytes, 1ull << 30), static_cast<off_t>(offset));
        if (n < 0) {
            if (errno == EINTR) continue;
            io_error("read failed on", path, errno);
        }
        if (n == 0)
            throw ConfigError(fmt::format("{} ended at byte {}: the file was truncated or replaced while measuring", path, offset));
        p += n;
        offset += static_cast<std::uint64_t>(n);
        bytes -= static_cast<std::uint64_t>(n);
    }
}

void pwrite_all(int fd, const void* src, std::uint64_t bytes, std::uint64_t offset, const std::string& path) {
    const auto* p = static_cast<const char*>(src);
    while (bytes > 0) {
        const ssize_t n = ::pwrite(fd, p, std::min<std::uint64_t>(bytes, 1ull << 30), static_cast<off_t>(offset));
        if (n < 0) {
            if (errno == EINTR) continue;
            io_error("write failed on", path, errno);
        }
        p += n;
        offset += static_cast<std::uint64_t>(n);
        bytes -= static_cast<std::uint64_t>(n);
    }
}

AlignedBuffer::AlignedBuffer(std::uint64_t bytes, std::uint64_t align) {
    const std::uint64_t a = std::max<std::uint64_t>(align, k_page);
    const std::uint64_t rounded = std::max<std::uint64_t>(a, (bytes + a - 1) / a * a);
    if (::posix_memalign(&m_ptr, a, rounded) != 0) {
        m_ptr = nullptr;
        throw ConfigError(fmt::format("cannot allocate {} of aligned host memory", format_size(rounded)));
    }
    std::memset(m_ptr, 0, rounded); // first-touch out of the timed window
}
AlignedBuffer::~AlignedBuffer() { std::free(m_ptr); }

PatternFile::PatternFile(const std::string& dir, std::uint64_t size, bool keep) : m_size(size) {
    m_path = dir + "/" + pattern_file_name(size);
    struct stat st {};
    if (::stat(m_path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == size) {
        // A complete file from an earlier run (renamed into place only when complete): check
        // its first and last words before trusting it.
        Fd fd = open_file(m_path, O_RDONLY);
        const std::uint64_t n = std::min<std::uint64_t>(size, 1 << 16);
        std::vector<std::uint64_t> buf((n + 7) / 8 + 1);
        pread_all(fd.get(), buf.data(), n, 0, m_path);
        bool ok = count_file_pattern_mismatches(buf.data(), 0, n) == 0;
        if (ok && size > n) {
            const std::uint64_t off = (size - n) / 8 * 8;
            pread_all(fd.get(), buf.data(), size - off, off, m_path);
            ok = count_file_pattern_mismatches(buf.data(), off, (size - off) / 8 * 8) == 0;
        }
        if (ok) {
            m_reused = true;
            if (!keep) m_guard = cleanup::Guard(m_path);
            return;
        }
        ::unlink(m_path.c_str());
    }
    const std::string tmp = dir + "/" + temp_file_name(::getpid(), fmt::format("create-{}", size));
    cleanup::Guard tmp_guard(tmp);
    {
        Fd fd = open_file(tmp, O_CREAT | O_TRUNC | O_WRONLY);
        constexpr std::uint64_t k_block = 8ull << 20;
        std::vector<std::uint64_t> buf(k_block / 8 + 1);
        for (std::uint64_t off = 0; off < size; off += k_block) {
            const std::uint64_t n = std::min(k_block, size - off);
            fill_file_pattern(buf.data(), off, n);
            try {
                pwrite_all(fd.get(), buf.data(), n, off, tmp);
            } catch (const ConfigError& e) {
                tmp_guard.remove();
                throw ConfigError(fmt::format("creating {} of {}: {}; the partial file was removed", format_size(size),
                                              m_path, e.what()));
            }
        }
        if (::fsync(fd.get()) != 0) {
            const int err = errno;
            tmp_guard.remove();
            io_error("fsync failed on", tmp, err);
        }
    }
    // Guard the final name before the temporary stops being guarded: no moment unguarded.
    if (!keep) m_guard = cleanup::Guard(m_path);
    if (::rename(tmp.c_str(), m_path.c_str()) != 0) {
        const int err = errno;
        tmp_guard.remove();
        io_error("cannot rename into", m_path, err);
    }
    tmp_guard.release();
}

// ---- cache state ----------------------------------------------------------------------------------

void CacheState::warm_pass() {
    Fd fd = open_file(m_path, O_RDONLY);
    std::vector<char> buf(16u << 20);
    for (std::uint64_t off = 0; off < m_size; off += buf.size())
        pread_all(fd.get(), buf.data(), std::min<std::uint64_t>(buf.size(), m_size - off), off, m_path);
}

Residency CacheState::prepare_sample() {
    Fd fd = open_file(m_path, O_RDONLY);
    if (m_cold) {
        const DropOutcome d = drop_pages(fd.get(), m_size, ::geteuid() == 0);
        m_method = d.method;
        if (d.after.resident > 0)
            throw ConfigError(fmt::format("cold not reached: {} of {} pages of {} still cached after {}", d.after.resident,
                                          d.after.pages, m_path, d.method));
        return d.after;
    }
    Residency r = residency(fd.get(), m_size);
    m_method = "untimed buffered pass";
    if (r.resident < r.pages) {
        warm_pass();
        r = residency(fd.get(), m_size);
        if (r.resident < r.pages)
            throw ConfigError(fmt::format("warm not reached: only {} of {} pages of {} stay cached (memory pressure?); "
                                          "use a smaller size",
                                          r.resident, r.pages, m_path));
    }
    return r;
}

// ---- the site ---------------------------------------------------------------------------------

Site& Site::instance() {
    static Site s;
    return s;
}

void Site::configure(const std::string& dir_in, bool keep_files, std::uint64_t bytes_needed) {
    std::lock_guard<std::mutex> lock(m_mutex);
    const bool is_default = dir_in.empty();
    std::string dir = is_default ? default_storage_dir() : dir_in;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (is_default) {
        if (::mkdir(dir.c_str(), 0700) == 0) {
            if (!keep_files) m_dir_guard = cleanup::Guard(dir, true);
        } else if (errno != EEXIST) {
            throw UsageError(fmt::format("cannot create the default storage directory {}: {}", dir, errno_text(errno)),
                             "set TMPDIR to a writable directory or give --storage-dir DIR");
        }
    }
    const StorageDirFacts f = storage_dir_facts(dir, true);
    if (!f.exists)
        throw UsageError(fmt::format("--storage-dir {} does not exist", dir), "create it first or name an existing directory");
    if (!f.is_directory)
        throw UsageError(fmt::format("--storage-dir {} is not a directory", dir), "name a directory, not a file");
    if (!f.writable)
        throw UsageError(fmt::format("--storage-dir {} is not writable by this user", dir),
                         "give a directory you can write to, or change its permissions");
    const std::uint64_t margin = 64ull << 20;
    if (f.free_bytes < margin || f.free_bytes - margin < bytes_needed)
        throw UsageError(fmt::format("--storage-dir {} has {} free but the selected storage configurations need {} "
                                     "(plus 64 MiB to spare)",
                                     dir, format_size(f.free_bytes), format_size(bytes_needed)),
                         "free space there, choose smaller sizes with --size, or another --storage-dir");
    remove_stale_files(dir);
    m_dir = dir;
    m_keep = keep_files;
    m_facts = f;
    m_cold.reset();
    m_configured = true;
}

void Site::claim(const std::string& dir, bool keep_files, std::uint64_t bytes) {
    configure(dir, keep_files, m_claimed + bytes);
    m_claimed += bytes;
}

void Site::ensure_configured() {
    if (!m_configured) configure("", false, 0);
}

const std::string& Site::dir() {
    ensure_configured();
    return m_dir;
}

const StorageDirFacts& Site::facts() {
    ensure_configured();
    return *m_facts;
}

std::optional<std::string> Site::odirect_unsupported() {
    const StorageDirFacts& f = facts();
    if (f.odirect && *f.odirect) return std::nullopt;
    return fmt::format("the file system of {} ({}) does not support O_DIRECT ({}); use --storage-dir on a disk file "
                       "system for the direct-I/O paths",
                       f.dir, f.fs_type, f.odirect_note.empty() ? "not probed" : f.odirect_note);
}

std::uint64_t Site::dio_alignment() {
    const StorageDirFacts& f = facts();
    return std::max<std::uint64_t>({512, f.dio_offset_align, f.dio_mem_align});
}

std::optional<std::string> Site::cold_unreachable() {
    ensure_configured();
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_cold) return *m_cold;
    const StorageDirFacts& f = *m_facts;
    if (f.memory_backed) {
        m_cold = std::optional<std::string>(fmt::format(
            "{} is on {}: the page cache is the storage, so cold cannot be reached; use --storage-dir on a disk", f.dir,
            f.fs_type));
        return *m_cold;
    }
    // Probe: a small file written, flushed and dropped must show no resident page.
    const std::string probe = m_dir + "/" + temp_file_name(::getpid(), "cold-probe");
    cleanup::Guard guard(probe);
    std::optional<std::string> why;
    try {
        Fd fd = open_file(probe, O_CREAT | O_TRUNC | O_RDWR);
        std::vector<std::uint64_t> buf(1 << 17);
        fill_file_pattern(buf.data(), 0, buf.size() * 8);
        pwrite_all(fd.get(), buf.data(), buf.size() * 8, 0, probe);
        const DropOutcome d = drop_pages(fd.get(), buf.size() * 8, ::geteuid() == 0);
        if (d.after.resident > 0)
            why = fmt::format("pages of a flushed file in {} stay cached after {} ({} of {} resident): cold cannot be "
                              "reached here{}",
                              f.dir, d.method, d.after.resident, d.after.pages,
                              ::geteuid() == 0 ? "" : " (drop_caches needs root)");
    } catch (const ConfigError& e) {
        why = fmt::format("cold cannot be checked in {}: {}", f.dir, e.what());
    }
    m_cold = why;
    return why;
}

std::shared_ptr<PatternFile> Site::pattern_file(std::uint64_t size) {
    ensure_configured();
    std::lock_guard<std::mutex> lock(m_mutex);
    auto& slot = m_files[size];
    if (!slot) slot = std::make_shared<PatternFile>(m_dir, size, m_keep);
    return slot;
}

void Site::reset() {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_files.clear();
    m_facts.reset();
    m_cold.reset();
    m_configured = false;
    m_claimed = 0;
    m_dir_guard.remove();
}

const std::vector<FamilyOption>& site_options() {
    static const std::vector<FamilyOption> options{
        {"storage-dir", OptionKind::text,
         "directory for the storage and pipeline files (default: a scratch directory under TMPDIR)"},
        {"keep-files", OptionKind::flag, "keep the storage and pipeline files for the next run"},
    };
    return options;
}

void claim_site(const FamilyOptions& options, std::uint64_t bytes, const std::set<std::uint64_t>& read_sizes) {
    const std::string given = options.text("storage-dir");
    // Pattern files that already exist (kept from an earlier run) need no new space.
    const std::string dir = given.empty() ? default_storage_dir() : given;
    for (std::uint64_t s : read_sizes) {
        struct stat st {};
        if (::stat((dir + "/" + pattern_file_name(s)).c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) == s)
            continue;
        bytes += s;
    }
    Site::instance().claim(given, options.flag("keep-files"), bytes);
}

// ---- readers -------------------------------------------------------------------------------------

ReadPath parse_read_path(const std::string& s) {
    if (s == "buffered") return ReadPath::buffered;
    if (s == "odirect") return ReadPath::odirect;
    if (s == "io_uring") return ReadPath::io_uring;
    if (s == "mmap") return ReadPath::mmap;
    if (s == "mmap_populate") return ReadPath::mmap_populate;
    throw ConfigError(fmt::format("unknown read path '{}'", s));
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

namespace {

void read_range_sync(int fd, char* dst, std::uint64_t b, std::uint64_t e, std::uint64_t chunk, const std::string& path) {
    for (std::uint64_t off = b; off < e; off += chunk) pread_all(fd, dst + off, std::min(chunk, e - off), off, path);
}

#if INTEROPBENCH_WITH_URING
/// O_DIRECT reads of [b, e) with `qd` reads in flight into a registered (fixed) buffer: the
/// destination itself is registered, so the kernel maps it once, not per read.
void read_range_uring(int fd, char* dst, std::uint64_t b, std::uint64_t e, std::uint64_t chunk, unsigned qd,
                      const std::string& path) {
    io_uring ring{};
    if (const int rc = io_uring_queue_init(std::max(1u, qd), &ring, 0); rc < 0)
        throw ConfigError(fmt::format("io_uring_queue_init failed: {}", errno_text(-rc)));
    struct RingCloser {
        io_uring* r;
        ~RingCloser() { io_uring_queue_exit(r); }
    } closer{&ring};
    iovec iov{dst + b, e - b};
    // Registration pins the pages; a limit (memlock) makes it fail: fall back to plain reads.
    const bool fixed = io_uring_register_buffers(&ring, &iov, 1) == 0;
    std::uint64_t next = b, done = b;
    unsigned inflight = 0;
    std::uint64_t completed = 0;
    const std::uint64_t total = e - b;
    while (completed < total) {
        while (inflight < qd && next < e) {
            io_uring_sqe* sqe = io_uring_get_sqe(&ring);
            if (!sqe) break;
            const auto n = static_cast<unsigned>(std::min(chunk, e - next));
            if (fixed) io_uring_prep_read_fixed(sqe, fd, dst + next, n, next, 0);
            else io_uring_prep_read(sqe, fd, dst + next, n, next);
            io_uring_sqe_set_data64(sqe, (next << 0));
            next += n;
            ++inflight;
        }
        if (const int rc = io_uring_submit(&ring); rc < 0)
            throw ConfigError(fmt::format("io_uring_submit failed: {}", errno_text(-rc)));
        io_uring_cqe* cqe = nullptr;
        if (const int rc = io_uring_wait_cqe(&ring, &cqe); rc < 0)
            throw ConfigError(fmt::format("io_uring_wait_cqe failed: {}", errno_text(-rc)));
        const int res = cqe->res;
        const std::uint64_t at = io_uring_cqe_get_data64(cqe);
        io_uring_cqe_seen(&ring, cqe);
        --inflight;
        const auto want = std::min(chunk, e - at);
        if (res < 0) io_error("io_uring read failed on", path, -res);
        if (static_cast<std::uint64_t>(res) != want) {
            if (res == 0)
                throw ConfigError(fmt::format("{} ended at byte {}: the file was truncated or replaced while measuring", path, at));
            // A short read: finish the rest synchronously (rare; O_DIRECT reads are whole).
            pread_all(fd, dst + at + res, want - static_cast<std::uint64_t>(res), at + static_cast<std::uint64_t>(res), path);
        }
        completed += want;
        done = std::max(done, at + want);
    }
    (void)done;
}
#endif

} // namespace

std::uint64_t read_file(const std::string& file, void* dst_v, const ReadSpec& spec) {
    char* dst = static_cast<char*>(dst_v);
    const std::uint64_t size = spec.size;
    const std::uint64_t chunk = std::max<std::uint64_t>(1, std::min(spec.chunk, size));
    switch (spec.path) {
    case ReadPath::buffered:
    case ReadPath::odirect: {
        Fd fd = open_file(file, O_RDONLY | (spec.path == ReadPath::odirect ? O_DIRECT : 0));
        if (spec.path == ReadPath::buffered) ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
        on_threads(split_ranges(size, spec.threads, chunk),
                   [&](std::uint64_t b, std::uint64_t e) { read_range_sync(fd.get(), dst, b, e, chunk, file); });
        return size;
    }
    case ReadPath::io_uring: {
#if INTEROPBENCH_WITH_URING
        Fd fd = open_file(file, O_RDONLY | O_DIRECT);
        const unsigned qd = std::max(1u, spec.queue_depth);
        on_threads(split_ranges(size, spec.threads, chunk),
                   [&](std::uint64_t b, std::uint64_t e) { read_range_uring(fd.get(), dst, b, e, chunk, qd, file); });
        return size;
#else
        throw ConfigError("built without io_uring");
#endif
    }
    case ReadPath::mmap:
    case ReadPath::mmap_populate: {
        Fd fd = open_file(file, O_RDONLY);
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) < size)
            throw ConfigError(fmt::format("{} is shorter than {}: truncated or replaced while measuring", file, format_size(size)));
        const int flags = MAP_SHARED | (spec.path == ReadPath::mmap_populate ? MAP_POPULATE : 0);
        void* map = ::mmap(nullptr, size, PROT_READ, flags, fd.get(), 0);
        if (map == MAP_FAILED) io_error("mmap failed on", file, errno);
        if (spec.path == ReadPath::mmap) ::madvise(map, size, MADV_SEQUENTIAL);
        const char* src = static_cast<const char*>(map);
        try {
            on_threads(split_ranges(size, spec.threads, chunk), [&](std::uint64_t b, std::uint64_t e) {
                for (std::uint64_t off = b; off < e; off += chunk) std::memcpy(dst + off, src + off, std::min(chunk, e - off));
            });
        } catch (...) {
            ::munmap(map, size);
            throw;
        }
        ::munmap(map, size);
        return size;
    }
    }
    return 0;
}

nlohmann::json path_details(const StorageDirFacts& f) {
    return {{"storage_dir", f.dir},
            {"file_system", f.fs_type},
            {"block_device", f.device},
            {"partition", f.partition},
            {"block_device_pci_bus_id", f.device_pci_bus_id},
            {"block_device_numa_node", f.device_numa_node},
            {"queue",
             {{"logical_block_size", f.queue.logical_block_size},
              {"max_sectors_kb", f.queue.max_sectors_kb},
              {"read_ahead_kb", f.queue.read_ahead_kb},
              {"rotational", f.queue.rotational},
              {"scheduler", f.queue.scheduler}}},
            {"dio_alignment", {{"memory", f.dio_mem_align}, {"offset", f.dio_offset_align}}},
            {"odirect", f.odirect ? nlohmann::json(*f.odirect) : nlohmann::json(nullptr)}};
}

} // namespace interopbench::storage
