// Storage on the host (storage and pipeline families). See storage_io.hpp.
#include "hostio/storage_io.hpp"

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

#include <fmt/format.h>

#include "hostio/pattern.hpp"
#include "interopbench/private_dir.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/runner.hpp"
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

} // namespace

// ---- names and stale files ------------------------------------------------------------

std::string pattern_file_name(std::uint64_t size, unsigned copy) {
    return copy ? fmt::format("ib-storage-v1-{}-copy{}.dat", size, copy) : fmt::format("ib-storage-v1-{}.dat", size);
}
std::string temp_file_name(int pid, const std::string& what) { return fmt::format(".ib-storage-{}-{}.tmp", pid, what); }

int remove_stale_files(const std::string& dir) {
    int removed = 0;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return 0;
    while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name.rfind(".ib-run-", 0) == 0) { // a run folder (.ib-run-<pid>-XXXXXX)
            removed += remove_ended_run_folder(dir + "/" + name);
            continue;
        }
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

std::optional<std::string> untrusted_file(const std::string& path) {
    if (const TrustedPath held = open_trusted(path, TrustRule::storage_file); !held) return held.problem();
    return std::nullopt;
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

std::optional<DiskCounters> Accounting::disks_now() const {
    if (m_disks.empty()) return std::nullopt;
    DiskCounters sum;
    for (const std::string& d : m_disks) {
        const auto c = read_disk_counters(d);
        if (!c) return std::nullopt;
        sum.sectors_read += c->sectors_read;
        sum.sectors_written += c->sectors_written;
    }
    return sum;
}

void Accounting::start() {
    m_d0 = disks_now();
    m_io0 = read_io_counters();
    m_cpu0 = process_cpu_seconds();
}
void Accounting::stop() {
    m_cpu1 = process_cpu_seconds();
    m_io1 = read_io_counters();
    m_d1 = disks_now();
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
    for (std::uint64_t i = 0; i < words; ++i) w[i] = hostio::pattern_word(PatternFile::k_seed, first + i);
    const std::uint64_t tail = hostio::pattern_word(PatternFile::k_seed, first + words);
    auto* t = reinterpret_cast<unsigned char*>(w + words);
    for (std::uint64_t b = 0; b < bytes % 8; ++b) t[b] = static_cast<unsigned char>(tail >> (8 * b));
}

std::uint64_t count_file_pattern_mismatches(const void* src, std::uint64_t offset, std::uint64_t bytes) {
    if (offset == 0) return hostio::count_pattern_mismatches(src, bytes, PatternFile::k_seed);
    const std::uint64_t first = offset / 8;
    const auto* w = static_cast<const std::uint64_t*>(src);
    std::uint64_t bad = 0;
    for (std::uint64_t i = 0; i < bytes / 8; ++i) bad += w[i] != hostio::pattern_word(PatternFile::k_seed, first + i);
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
            throw ConfigError(fmt::format("read failed on {} at byte {}: {}", path, offset, errno_text(errno)));
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

std::uint64_t count_file_pattern_mismatches_in(const std::string& path, std::uint64_t offset, std::uint64_t bytes,
                                              std::uint64_t* first_bad_at) {
    Fd fd = open_file(path, O_RDONLY | O_NOFOLLOW);
    std::vector<std::uint64_t> buf(k_check_block / 8 + 1);
    std::uint64_t bad = 0;
    for (std::uint64_t off = 0; off < bytes && (bad == 0 || !first_bad_at); off += k_check_block) {
        const std::uint64_t n = std::min(k_check_block, bytes - off);
        pread_all(fd.get(), buf.data(), n, off, path);
        const std::uint64_t here = count_file_pattern_mismatches(buf.data(), offset + off, n / 8 * 8);
        if (here && !bad && first_bad_at) *first_bad_at = off;
        bad += here;
    }
    return bad;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> stripe(std::uint64_t size, std::size_t n, std::uint64_t align) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    n = std::max<std::size_t>(1, n);
    align = std::max<std::uint64_t>(1, align);
    std::uint64_t per = (size / n + align - 1) / align * align;
    per = std::max(per, align);
    for (std::uint64_t b = 0; b < size && out.size() < n; b += per) out.emplace_back(b, out.size() + 1 == n ? size - b : std::min(per, size - b));
    if (out.empty()) out.emplace_back(0, size);
    return out;
}

PatternFile::PatternFile(const std::vector<std::string>& dirs, const std::vector<std::string>& temp_dirs, std::uint64_t size,
                         bool keep, unsigned copy)
    : m_size(size) {
    const auto parts = stripe(size, dirs.size(), k_stripe_align);
    for (std::size_t i = 0; i < parts.size(); ++i) {
        // One directory: the one file of the size; several: one stripe each, named by its place.
        const std::string name = parts.size() == 1 && dirs.size() == 1
                                     ? pattern_file_name(size, copy)
                                     : fmt::format("ib-storage-v1-{}{}-{}of{}.dat", size,
                                                   copy ? fmt::format("-copy{}", copy) : std::string(), i + 1, dirs.size());
        m_segments.push_back({dirs[i] + "/" + name, parts[i].first, parts[i].second});
    }
    for (std::size_t i = 0; i < m_segments.size(); ++i) make_segment(m_segments[i], temp_dirs[i], keep);
}

std::string PatternFile::describe() const {
    if (m_segments.size() == 1) return m_segments[0].path;
    std::string out = fmt::format("{} files:", m_segments.size());
    for (const Segment& s : m_segments) out += " " + s.path;
    return out;
}

void PatternFile::make_segment(const Segment& seg, const std::string& temp_dir, bool keep) {
    const std::string& path = seg.path;
    const std::uint64_t size = seg.bytes, base = seg.offset;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        // Something is there: only a file of this user that nobody else may write is read.
        if (auto why = untrusted_file(path))
            throw ConfigError(fmt::format("will not use {}: {}; remove it or give another --storage-dir", path, *why));
    }
    if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == size) {
        // A complete file from an earlier run (renamed into place only when complete): every
        // word is checked before it is trusted; a damaged one is made again, and the details
        // say so (a file damaged between runs must not fail every later run).
        std::uint64_t bad_at = 0;
        const std::uint64_t bad = count_file_pattern_mismatches_in(path, base, size, &bad_at);
        if (bad == 0) {
            if (!keep) m_guards.emplace_back(path);
            return;
        }
        m_notes.push_back(fmt::format("the kept file {} differed from its pattern (in the {} from byte {}): made again",
                                      path, format_size(k_check_block), bad_at));
        ::unlink(path.c_str());
    }
    m_reused = false;
    const std::string tmp = temp_dir + "/" + temp_file_name(::getpid(), fmt::format("create-{}-{}", m_size, base));
    cleanup::Guard tmp_guard(tmp);
    {
        Fd fd = open_file(tmp, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY);
        constexpr std::uint64_t k_block = 8ull << 20;
        std::vector<std::uint64_t> buf(k_block / 8 + 1);
        for (std::uint64_t off = 0; off < size; off += k_block) {
            if (g_interrupted) { // Ctrl-C is honoured between blocks, not after the whole file
                tmp_guard.remove();
                throw Interrupted(fmt::format("interrupted while creating {} of {}; the partial file was removed",
                                              format_size(size), path));
            }
            const std::uint64_t n = std::min(k_block, size - off);
            fill_file_pattern(buf.data(), base + off, n);
            try {
                pwrite_all(fd.get(), buf.data(), n, off, tmp);
            } catch (const ConfigError& e) {
                tmp_guard.remove();
                throw ConfigError(fmt::format("creating {} of {}: {}; the partial file was removed", format_size(size),
                                              path, e.what()));
            }
        }
        if (::fsync(fd.get()) != 0) {
            const int err = errno;
            tmp_guard.remove();
            io_error("fsync failed on", tmp, err);
        }
    }
    // Guard the final name before the temporary stops being guarded: no moment unguarded.
    if (!keep) m_guards.emplace_back(path);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        tmp_guard.remove();
        io_error("cannot rename into", path, err);
    }
    tmp_guard.release();
}

// ---- cache state ----------------------------------------------------------------------------------

Residency CacheState::prepare_file(const Segment& f) {
    Fd fd = open_file(f.path, O_RDONLY);
    if (m_cold) {
        const DropOutcome d = drop_pages(fd.get(), f.bytes, ::geteuid() == 0);
        m_method = d.method;
        if (d.after.resident > 0)
            throw ConfigError(fmt::format("cold not reached: {} of {} pages of {} still cached after {} (another process "
                                          "may be reading the same file or holding its pages: a concurrent run on this "
                                          "storage directory, or a mapping)",
                                          d.after.resident, d.after.pages, f.path, d.method));
        return d.after;
    }
    Residency r = residency(fd.get(), f.bytes);
    m_method = "untimed buffered pass";
    if (r.resident < r.pages) {
        std::vector<char> buf(16u << 20);
        for (std::uint64_t off = 0; off < f.bytes; off += buf.size())
            pread_all(fd.get(), buf.data(), std::min<std::uint64_t>(buf.size(), f.bytes - off), off, f.path);
        r = residency(fd.get(), f.bytes);
        if (r.resident < r.pages)
            throw ConfigError(fmt::format("warm not reached: only {} of {} pages of {} stay cached (memory pressure?); "
                                          "use a smaller size",
                                          r.resident, r.pages, f.path));
    }
    return r;
}

Residency CacheState::prepare_sample() {
    Residency sum;
    for (const Segment& f : m_files) {
        const Residency r = prepare_file(f);
        sum.resident += r.resident;
        sum.pages += r.pages;
    }
    return sum;
}

// ---- the site ---------------------------------------------------------------------------------

Site::Site(std::vector<std::string> dirs, bool keep_files) : m_keep(keep_files), m_given(std::move(dirs)) {}

std::vector<std::string> Site::named_dirs() const {
    return m_given.empty() ? std::vector<std::string>{default_storage_dir()} : m_given;
}

void Site::configure(std::uint64_t bytes_needed) {
    std::lock_guard<std::mutex> lock(m_mutex);
    const bool is_default = m_given.empty();
    const bool keep_files = m_keep;
    std::vector<std::string> dirs = named_dirs();
    for (std::string& dir : dirs) {
        if (dir.empty())
            throw UsageError("--storage-dir was given an empty directory name", "name a directory, e.g. --storage-dir /mnt/nvme0");
        while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    }
    if (is_default) {
        (void)temp_folder(); // a TMPDIR another user may change is refused before anything is made in it
        if (::mkdir(dirs[0].c_str(), 0700) == 0) {
            if (!keep_files) m_dir_guard = cleanup::Guard(dirs[0], true);
        } else if (errno != EEXIST) {
            throw UsageError(fmt::format("cannot create the default storage directory {}: {}", dirs[0], errno_text(errno)),
                             "set TMPDIR to a writable directory or give --storage-dir DIR");
        } else {
            // Made earlier by this user: it must still be this user's alone (not a link, nobody
            // else may write it), or another user could plant files or links in it.
            struct stat st {};
            if (::lstat(dirs[0].c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022))
                throw UsageError(fmt::format("the default storage directory {} is not this user's alone (a link, another "
                                             "owner, or writable by others)",
                                             dirs[0]),
                                 "remove it, or give --storage-dir DIR");
        }
    }
    std::vector<StorageDirFacts> facts;
    std::set<std::pair<dev_t, ino_t>> seen;
    const std::uint64_t share = (bytes_needed + dirs.size() - 1) / dirs.size() + (dirs.size() > 1 ? (1ull << 20) : 0);
    for (const std::string& dir : dirs) {
        const StorageDirFacts f = storage_dir_facts(dir, true);
        if (!f.exists)
            throw UsageError(fmt::format("--storage-dir {} does not exist", dir), "create it first or name an existing directory");
        if (!f.is_directory)
            throw UsageError(fmt::format("--storage-dir {} is not a directory", dir), "name a directory, not a file");
        if (const TrustedPath held = open_trusted(dir, TrustRule::storage_folder); !held)
            throw UsageError(fmt::format("{} {}", is_default ? "the default storage directory" : "--storage-dir", held.problem()),
                             held.fix());
        struct stat st {};
        if (::stat(dir.c_str(), &st) == 0 && !seen.insert({st.st_dev, st.st_ino}).second)
            throw UsageError(fmt::format("--storage-dir {} is named twice (the same directory, perhaps by another path)", dir),
                             "give each directory once: one per drive or mount");
        if (!f.writable)
            throw UsageError(fmt::format("--storage-dir {} is not writable by this user", dir),
                             "give a directory you can write to, or change its permissions");
        const std::uint64_t margin = 64ull << 20;
        if (f.free_bytes < margin || f.free_bytes - margin < share)
            throw UsageError(fmt::format("--storage-dir {} has {} free but the selected storage configurations need {} there "
                                         "(plus 64 MiB to spare)",
                                         dir, format_size(f.free_bytes), format_size(share)),
                             "free space there, choose smaller sizes with --size, or another --storage-dir");
        facts.push_back(f);
    }
    if (!m_configured)
        for (const std::string& dir : dirs) remove_stale_files(dir);
    m_dirs = dirs;
    m_facts = facts;
    m_cold.reset();
    m_configured = true;
}

void Site::claim(std::uint64_t bytes) {
    configure(m_claimed + bytes);
    m_claimed += bytes;
}

void Site::ensure_configured() {
    if (!m_configured) configure(0);
}

const std::vector<std::string>& Site::dirs() {
    ensure_configured();
    return m_dirs;
}

const std::string& Site::dir() { return dirs().front(); }

const StorageDirFacts& Site::facts() { return facts_all().front(); }

const std::vector<StorageDirFacts>& Site::facts_all() {
    ensure_configured();
    return m_facts;
}

std::vector<std::string> Site::disks() {
    std::vector<std::string> out;
    for (const StorageDirFacts& f : facts_all())
        if (!f.device.empty() && std::find(out.begin(), out.end(), f.device) == out.end()) out.push_back(f.device);
    return out;
}

std::optional<std::string> Site::odirect_unsupported() {
    for (const StorageDirFacts& f : facts_all()) {
        if (f.odirect && *f.odirect) continue;
        return fmt::format("the file system of {} ({}) does not support O_DIRECT ({}); use --storage-dir on a disk file "
                           "system for the direct-I/O paths",
                           f.dir, f.fs_type, f.odirect_note.empty() ? "not probed" : f.odirect_note);
    }
    return std::nullopt;
}

std::uint64_t Site::dio_alignment() {
    std::uint64_t a = 512;
    for (const StorageDirFacts& f : facts_all()) a = std::max<std::uint64_t>({a, f.dio_offset_align, f.dio_mem_align});
    return a;
}

std::optional<std::string> Site::cold_unreachable() {
    ensure_configured();
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_cold) return *m_cold;
    std::optional<std::string> why;
    for (std::size_t i = 0; i < m_dirs.size() && !why; ++i) {
        const StorageDirFacts& f = m_facts[i];
        if (f.memory_backed) {
            why = fmt::format("{} is on {}: the page cache is the storage, so cold cannot be reached; use --storage-dir on a "
                              "disk",
                              f.dir, f.fs_type);
            break;
        }
        // Probe: a small file written, flushed and dropped must show no resident page.
        const std::string probe = run_dir_locked(i) + "/" + temp_file_name(::getpid(), "cold-probe");
        cleanup::Guard guard(probe);
        try {
            Fd fd = open_file(probe, O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR);
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
    }
    m_cold = why;
    return why;
}

std::shared_ptr<PatternFile> Site::pattern_file(std::uint64_t size, unsigned copy, int dir) {
    ensure_configured();
    std::lock_guard<std::mutex> lock(m_mutex);
    if (dir >= static_cast<int>(m_dirs.size()))
        throw ConfigError(fmt::format("the storage site has {} director{}: there is no directory {}", m_dirs.size(),
                                      m_dirs.size() == 1 ? "y" : "ies", dir));
    auto& slot = m_files[{size, copy, dir}];
    if (!slot) {
        std::vector<std::string> temps, dirs;
        for (std::size_t i = 0; i < m_dirs.size(); ++i)
            if (dir < 0 || static_cast<int>(i) == dir) {
                temps.push_back(run_dir_locked(i));
                dirs.push_back(m_dirs[i]);
            }
        slot = std::make_shared<PatternFile>(m_keep ? dirs : temps, temps, size, m_keep, copy);
    }
    return slot;
}

std::string Site::run_dir_locked(std::size_t i) {
    if (m_run_dirs.size() != m_dirs.size()) {
        m_run_guards.clear();
        m_run_dirs.assign(m_dirs.size(), std::string());
    }
    if (m_run_dirs[i].empty()) {
        try {
            m_run_guards.emplace_back(m_dirs[i], ".ib-run-");
        } catch (const WriteError& e) {
            throw ConfigError(fmt::format("cannot create the run's folder in {}: {}", m_dirs[i], e.what()));
        }
        m_run_dirs[i] = m_run_guards.back().path();
    }
    return m_run_dirs[i];
}

const std::vector<std::string>& Site::run_dirs() {
    ensure_configured();
    std::lock_guard<std::mutex> lock(m_mutex);
    for (std::size_t i = 0; i < m_dirs.size(); ++i) run_dir_locked(i);
    return m_run_dirs;
}

std::vector<std::string> Site::file_dirs() {
    const std::vector<std::string>& runs = run_dirs();
    return m_keep ? m_dirs : runs;
}

std::shared_ptr<Site> run_site(Registry& registry, const FamilyOptions& options) {
    return registry.shared<Site>("storage site",
                                 [&] { return new Site(options.texts("storage-dir"), options.flag("keep-files")); });
}

Site& site_of(const std::vector<Config>& configs) {
    for (const Config& c : configs)
        if (const auto* s = dynamic_cast<const SiteScenario*>(c.scenario)) return s->site();
    throw std::logic_error("site_of: no configuration of a scenario on the storage site");
}

const std::vector<FamilyOption>& site_options() {
    static const std::vector<FamilyOption> options{
        {"storage-dir", OptionKind::texts,
         "directory for the storage and pipeline files (default: a scratch directory under TMPDIR); give it once per "
         "drive or mount to spread files and readers over several"},
        {"keep-files", OptionKind::flag, "keep the storage and pipeline files for the next run"},
    };
    return options;
}

std::uint64_t site_file_bytes(const Site& site, std::uint64_t bytes, const std::set<std::uint64_t>& read_sizes) {
    // Pattern files that already exist (kept from an earlier run) need no new space.
    const std::vector<std::string> dirs = site.named_dirs();
    for (std::uint64_t s : read_sizes) {
        struct stat st {};
        if (dirs.size() == 1 && ::stat((dirs[0] + "/" + pattern_file_name(s)).c_str(), &st) == 0 &&
            static_cast<std::uint64_t>(st.st_size) == s)
            continue;
        bytes += s;
    }
    return bytes;
}

void claim_site(Site& site, std::uint64_t bytes, const std::set<std::uint64_t>& read_sizes) {
    site.claim(site_file_bytes(site, bytes, read_sizes));
}

namespace {

nlohmann::json dir_details(const StorageDirFacts& f) {
    return {{"storage_dir", f.dir},
            {"file_system", f.fs_type},
            {"block_device", f.device},
            {"partition", f.partition},
            {"device_number", f.device_number},
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

} // namespace

nlohmann::json path_details(const std::vector<StorageDirFacts>& dirs) {
    nlohmann::json j = dir_details(dirs.front());
    if (dirs.size() > 1) {
        j["storage_dirs"] = nlohmann::json::array();
        for (const StorageDirFacts& f : dirs) j["storage_dirs"].push_back(dir_details(f));
    }
    return j;
}


} // namespace interopbench::storage
