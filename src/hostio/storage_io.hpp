#pragma once
/// Storage on the host, shared by the storage and pipeline families: the storage site (one or
/// several directories, their checks, the tool's files), pattern files striped over the
/// directories, page-cache control and proof (fadvise, drop_caches, mincore), the byte
/// accounting (/proc/self/io, the block devices' sector counters) and CPU time. The readers
/// are in readers.hpp. No CUDA here: tests use it all without a GPU.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/cleanup.hpp"
#include "interopbench/family.hpp"
#include "interopbench/private_dir.hpp"
#include "interopbench/runner.hpp"
#include "topology/storage_devices.hpp"

namespace interopbench::storage {

/// Names of the files this tool creates in a storage directory. Everything a run does not keep
/// (temporaries, write targets, files without --keep-files) lives in the run's own folder
/// there, `.ib-run-<pid>-XXXXXX` (a RunFolder: mode 0700, no other process can plant or take a
/// name in it, two runs on one directory never touch each other's files, and its lock keeps
/// a live run's folder from any sweep); only files
/// kept with --keep-files sit at the top, named by size, created in the run's folder and
/// renamed into place.
/// "ib-storage-v1-1073741824.dat"; copy k > 0 (a second file of the same size, whose cache
/// state is its own): "ib-storage-v1-1073741824-copy1.dat".
std::string pattern_file_name(std::uint64_t size, unsigned copy = 0);
std::string temp_file_name(int pid, const std::string& what); ///< ".ib-storage-<pid>-<what>.tmp"
/// Removes what runs that are gone (kill -9) left in `dir`: their run folders (this user's,
/// whose lock no live run holds: remove_ended_run_folder) and temporaries of older versions;
/// returns how many were removed.
int remove_stale_files(const std::string& dir);
/// Whether a file found at `path` may be trusted and reused (TrustRule::storage_file: a regular
/// file, not a link, of root or this user that nobody else may write, in folders likewise up
/// to /); the reason when not.
std::optional<std::string> untrusted_file(const std::string& path);

/// Page-cache residency of a file from mincore: pages resident / pages.
struct Residency {
    std::uint64_t resident = 0, pages = 0;
    double fraction() const { return pages ? static_cast<double>(resident) / static_cast<double>(pages) : 0; }
};
/// Residency of the first `size` bytes of `fd` (size 0: nothing resident, 0 pages).
Residency residency(int fd, std::uint64_t size);

/// How the pages were dropped.
struct DropOutcome {
    Residency after;
    std::string method; ///< "fadvise" or "fadvise+drop_caches"
};
/// Flushes `fd`, drops its pages (POSIX_FADV_DONTNEED), and where pages remain and this
/// process may, drops the clean page cache (drop_caches = 1). Reports residency after.
DropOutcome drop_pages(int fd, std::uint64_t size, bool allow_drop_caches);

/// The process's I/O counters from /proc/self/io (all threads, io_uring workers included).
struct IoCounters {
    std::uint64_t read_bytes = 0, write_bytes = 0, rchar = 0, wchar = 0;
    bool valid = false;
};
IoCounters read_io_counters();
/// Sectors (512 B) read and written by block device `disk` (/sys/block/DISK/stat), whole
/// device, every process; nothing when unreadable.
struct DiskCounters {
    std::uint64_t sectors_read = 0, sectors_written = 0;
};
std::optional<DiskCounters> read_disk_counters(const std::string& disk);
/// User + system CPU time of this process (every thread), seconds.
double process_cpu_seconds();

/// The counters around one sample, as deltas; the block counters summed over `disks`.
class Accounting {
public:
    explicit Accounting(std::vector<std::string> disks) : m_disks(std::move(disks)) {}
    void start();
    void stop();
    double device_read_bytes() const;   ///< /proc/self/io read_bytes delta; NaN when unreadable
    double device_write_bytes() const;  ///< write_bytes delta
    double disk_read_bytes() const;     ///< block devices' sectors read * 512; NaN when unreadable
    double disk_write_bytes() const;
    double cpu_seconds() const { return m_cpu1 - m_cpu0; }

private:
    std::optional<DiskCounters> disks_now() const;
    std::vector<std::string> m_disks;
    IoCounters m_io0, m_io1;
    std::optional<DiskCounters> m_d0, m_d1;
    double m_cpu0 = 0, m_cpu1 = 0;
};

/// One file of a logical file striped over directories: its bytes are the logical bytes
/// [offset, offset + bytes).
struct Segment {
    std::string path;
    std::uint64_t offset = 0, bytes = 0;
};
/// The stripes of a logical file of `size` bytes over `n` files: equal shares rounded up to
/// `align` (the last one takes the rest; fewer segments when the size is small).
std::vector<std::pair<std::uint64_t, std::uint64_t>> stripe(std::uint64_t size, std::size_t n, std::uint64_t align);

/// A file of the tool holding the pattern of `seed` (hostio::pattern_word, word = logical
/// byte offset / 8), striped over the site's directories: one directory, one file.
class PatternFile {
public:
    /// Creates (or reuses complete ones of the same names) `size` bytes over `dirs`: each
    /// segment written to a temporary, fsync'd, then renamed. Final names are guarded unless
    /// `keep`. Throws ConfigError on I/O errors (disk full: partial file removed, the message
    /// says so).
    /// `temp_dirs` (the run's folders, one per directory) hold the temporaries; the files are
    /// named in `dirs`. `copy` > 0 names another file of the same size and content
    /// (pattern_file_name).
    PatternFile(const std::vector<std::string>& dirs, const std::vector<std::string>& temp_dirs, std::uint64_t size, bool keep,
                unsigned copy = 0);
    /// The first segment's file (the file, with one directory).
    const std::string& path() const { return m_segments.front().path; }
    const std::vector<Segment>& segments() const { return m_segments; }
    /// "PATH" or "N files: PATH, PATH..." (details).
    std::string describe() const;
    std::uint64_t size() const { return m_size; }
    bool reused() const { return m_reused; }
    /// What was found and done (a damaged kept file made again), for the details.
    const std::vector<std::string>& notes() const { return m_notes; }
    static constexpr std::uint64_t k_seed = 0x5354; ///< "ST"
    /// Stripes are multiples of this (every O_DIRECT alignment divides it).
    static constexpr std::uint64_t k_stripe_align = 1ull << 20;

private:
    void make_segment(const Segment& s, const std::string& temp_dir, bool keep);
    std::vector<Segment> m_segments;
    std::uint64_t m_size = 0;
    bool m_reused = true;
    std::vector<std::string> m_notes;
    std::vector<cleanup::Guard> m_guards;
};

/// Writes the pattern for bytes [offset, offset + bytes) of a file into `dst` (host).
void fill_file_pattern(void* dst, std::uint64_t offset, std::uint64_t bytes);
/// Counts 8-byte words of `src` (holding file bytes from `offset`) that differ from the pattern.
std::uint64_t count_file_pattern_mismatches(const void* src, std::uint64_t offset, std::uint64_t bytes);
/// The same for the file at `path` (never through a link), whose bytes are the pattern's from
/// `offset`, read in blocks of k_check_block. With `first_bad_at`, stops at the first block
/// that differs and sets its offset in the file.
inline constexpr std::uint64_t k_check_block = 16ull << 20;
std::uint64_t count_file_pattern_mismatches_in(const std::string& path, std::uint64_t offset, std::uint64_t bytes,
                                              std::uint64_t* first_bad_at = nullptr);

/// The cache state of one configuration, put in place and proven before every sample.
/// Cold: the file's pages are dropped (fadvise; drop_caches where permitted) and mincore must
/// show none resident; warm: an untimed buffered pass, and mincore must show all resident.
/// Throws ConfigError when the state cannot be reached (the sample would not be what it says).
class CacheState {
public:
    CacheState(std::string path, std::uint64_t size, bool cold) : m_files{{std::move(path), 0, size}}, m_cold(cold) {}
    /// Every segment of a striped file.
    CacheState(std::vector<Segment> files, bool cold) : m_files(std::move(files)), m_cold(cold) {}
    /// Returns the residency checked before the sample (summed over the files).
    Residency prepare_sample();
    bool cold() const { return m_cold; }
    const std::string& method() const { return m_method; }

private:
    Residency prepare_file(const Segment& f);
    std::vector<Segment> m_files; ///< path and bytes (the offset is not used)
    bool m_cold;
    std::string m_method;
};

/// The storage site of a run: the directories, their facts, the files shared by
/// configurations (one pattern file per size), probe results. Made from the run's options
/// (run_site) and held by the scenarios that keep files there; nothing is checked or created
/// before the first use or claim. Its run folders and files not kept are removed when the last
/// holder lets it go (and on a caught signal).
class Site {
public:
    /// A site over `dirs` (none: the default scratch directory under TMPDIR).
    explicit Site(std::vector<std::string> dirs = {}, bool keep_files = false);
    Site(const Site&) = delete;
    Site& operator=(const Site&) = delete;
    /// Adds `bytes` to what the run's families claimed and validates the directories for the
    /// total: UsageError (one line, with the fix) for a missing, non-directory, untrusted
    /// (TrustRule::storage_folder; the default's TMPDIR too), unwritable or full directory and
    /// for a directory named twice; the bytes are spread evenly over the directories. The
    /// first validation removes what ended runs left (remove_stale_files).
    void claim(std::uint64_t bytes);
    /// The directories as the options name them (the default one where none is named), before
    /// any check: what a pre-flight looks in for kept files.
    std::vector<std::string> named_dirs() const;
    /// The directories, in the order given (the first is dir()), validated.
    const std::vector<std::string>& dirs();
    const std::string& dir();
    /// The run's own folder in each directory (created on first use, removed with the site).
    const std::vector<std::string>& run_dirs();
    /// Where the run's files go: the directories with --keep-files, else the run's folders.
    std::vector<std::string> file_dirs();
    bool keep_files() const { return m_keep; }
    /// Facts of the first directory; facts_all() of each.
    const StorageDirFacts& facts();
    const std::vector<StorageDirFacts>& facts_all();
    /// The distinct block devices under the directories (for the sector counters).
    std::vector<std::string> disks();
    /// Why cold cannot be reached in a directory, or nothing (probed once with a small file).
    std::optional<std::string> cold_unreachable();
    /// Why O_DIRECT cannot be used in a directory, or nothing.
    std::optional<std::string> odirect_unsupported();
    /// The direct-I/O alignment (offset and size) of every directory, at least 512.
    std::uint64_t dio_alignment();
    /// The pattern file of `size` bytes, created on first use, shared for the run: striped over
    /// every directory, or in directory `dir` alone (its index; ConfigError past the last); `copy`
    /// > 0 is another file of the same size and content, for a reader whose cache state must not
    /// be another's.
    std::shared_ptr<PatternFile> pattern_file(std::uint64_t size, unsigned copy = 0, int dir = -1);

private:
    void configure(std::uint64_t bytes_needed); ///< validates for `bytes_needed`, adopts the facts
    void ensure_configured();
    std::string run_dir_locked(std::size_t i); ///< with m_mutex held
    std::mutex m_mutex;
    bool m_configured = false, m_keep = false;
    std::uint64_t m_claimed = 0;
    std::vector<std::string> m_given; ///< as named by the options (empty: the default)
    std::vector<std::string> m_dirs, m_run_dirs;
    std::vector<StorageDirFacts> m_facts;
    std::optional<std::optional<std::string>> m_cold;
    cleanup::Guard m_dir_guard;
    std::vector<RunFolder> m_run_guards; ///< destroyed before m_dir_guard: the folders are inside
    /// By size, copy and directory (-1: striped over all); destroyed first: inside the folders.
    std::map<std::tuple<std::uint64_t, unsigned, int>, std::shared_ptr<PatternFile>> m_files;
};

/// The run's storage site, one per registry: made from `options` (`--storage-dir`,
/// `--keep-files`) by the first family that asks, shared with the next (storage, pipeline).
std::shared_ptr<Site> run_site(Registry& registry, const FamilyOptions& options);

/// A scenario that keeps its files on the run's site; a family's pre-flight reaches the site
/// through its selected configurations (site_of).
class SiteScenario : public Scenario {
public:
    explicit SiteScenario(std::shared_ptr<Site> site) : m_site(std::move(site)) {}
    Site& site() const { return *m_site; }

private:
    std::shared_ptr<Site> m_site;
};

/// The site of a family's selected configurations: that of the first SiteScenario among them
/// (a std::logic_error when there is none: a programming error).
Site& site_of(const std::vector<Config>& configs);

/// The run options of the storage site (`--storage-dir`, `--keep-files`), declared by every
/// family that keeps files there (family.hpp).
const std::vector<FamilyOption>& site_options();

/// The bytes a family's files take in the run's storage site: `bytes`, and the pattern files of
/// `read_sizes`, each unless a kept file of that size is already there. What its pre-flight
/// claims (claim_site) and `run --dry-run` says (Family::file_bytes).
std::uint64_t site_file_bytes(const Site& site, std::uint64_t bytes, const std::set<std::uint64_t>& read_sizes = {});

/// A family's pre-flight claim on the run's storage site: validates its directories and their
/// free space for everything claimed so far plus site_file_bytes (UsageError, before measuring).
void claim_site(Site& site, std::uint64_t bytes, const std::set<std::uint64_t>& read_sizes = {});

/// pread loop over [offset, offset + bytes) of `fd`; throws ConfigError (the offset named) on
/// an error or EOF.
void pread_all(int fd, void* dst, std::uint64_t bytes, std::uint64_t offset, const std::string& path);
/// pwrite loop; throws ConfigError (disk full named) on error.
void pwrite_all(int fd, const void* src, std::uint64_t bytes, std::uint64_t offset, const std::string& path);

/// Details of the path: file system, block device and queue, alignment, cache method (of the
/// first directory; with several, "storage_dirs" lists each one's).
nlohmann::json path_details(const std::vector<StorageDirFacts>& dirs);

/// An aligned host allocation (for O_DIRECT), freed on destruction; pages touched.
class AlignedBuffer {
public:
    AlignedBuffer() = default;
    AlignedBuffer(std::uint64_t bytes, std::uint64_t align);
    ~AlignedBuffer();
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    void* get() const { return m_ptr; }

private:
    void* m_ptr = nullptr;
};

/// An fd closed on destruction.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : m_fd(fd) {}
    ~Fd();
    Fd(Fd&& o) noexcept : m_fd(o.m_fd) { o.m_fd = -1; }
    Fd& operator=(Fd&& o) noexcept;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return m_fd; }

private:
    int m_fd = -1;
};
/// Opens `path` with `flags`; throws ConfigError naming the file and errno.
Fd open_file(const std::string& path, int flags, int mode = 0600);

} // namespace interopbench::storage
