#pragma once
/// The file readers every storage path and the pipeline use: one table of read methods
/// (buffered pread, O_DIRECT pread, io_uring at a queue depth, memcpy from a mapping), a
/// reader of one file that keeps up to `qd` reads in flight and hands back each completed
/// chunk (the pipelined GPU paths copy it while the next ones are read), and parallel readers:
/// a pool of threads that read slices of files, each thread a contiguous share. No CUDA here.
#include <sys/uio.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace interopbench::storage {

/// One read method: how a file's bytes reach host memory.
struct ReadMethod {
    const char* name;
    const char* help;
    bool direct = false; ///< opens with O_DIRECT: aligned sizes and offsets, no warm state
    bool uring = false;  ///< io_uring: reads in flight up to the queue depth
    bool mapped = false; ///< memcpy from a mapping of the file
    bool populate = false; ///< mapped with MAP_POPULATE (everything faulted in at map time)
};
/// The table, in axis order: buffered, odirect, io_uring, mmap, mmap_populate.
const std::vector<ReadMethod>& read_methods();
/// The method named `name`; throws ConfigError naming the choices.
const ReadMethod& read_method(const std::string& name);
/// The axis help of the methods in `names` (the table's help, "name: help; ...").
std::string read_methods_help(const std::vector<std::string>& names);
/// Why `m` cannot run in this build (io_uring without liburing), or nothing.
std::optional<std::string> read_method_unavailable(const ReadMethod& m);
/// The open(2) flags of a method (O_RDONLY, with O_DIRECT for the direct ones).
int read_open_flags(const ReadMethod& m);
/// Whether this build has io_uring (liburing found at configure time), and why not.
bool io_uring_built(std::string* why);

/// Bounds on the parallel readers: at most 4 threads per hardware thread and 1024 in all;
/// a queue depth of 1 to 4096. Return the one-line reason a value is refused.
std::optional<std::string> threads_refused(std::uint64_t threads, unsigned hardware_threads);
std::optional<std::string> queue_depth_refused(std::uint64_t qd);

/// Reads of one open file by one method, up to `depth` in flight (1 for the synchronous
/// methods, which read when waited on). The caller submits while can_submit() and waits for
/// completions, which come back in any order with the tag given at submit. Errors (EIO, a
/// short file) throw ConfigError naming the file and the byte offset.
class ChunkReader {
public:
    /// `file_size` is needed by the mapped methods (the mapping); `fixed` are the buffers
    /// reads land in, registered with io_uring when it takes them (at most 1 GiB each).
    ChunkReader(const ReadMethod& m, int fd, std::string path, unsigned depth, std::uint64_t file_size,
                const std::vector<iovec>& fixed = {});
    ~ChunkReader();
    ChunkReader(const ChunkReader&) = delete;
    ChunkReader& operator=(const ChunkReader&) = delete;

    bool can_submit() const { return m_in_flight < m_depth; }
    unsigned in_flight() const { return m_in_flight; }
    void submit(void* dst, std::uint64_t offset, std::uint64_t bytes, std::uint64_t tag);
    struct Done {
        std::uint64_t tag, offset, bytes;
    };
    Done wait();
    /// io_uring read into registered buffers (false: plain reads, registration refused).
    bool fixed_buffers() const { return m_fixed; }

private:
    struct Pending {
        void* dst;
        std::uint64_t offset, bytes, tag;
    };
    const ReadMethod& m_method;
    int m_fd;
    std::string m_path;
    unsigned m_depth, m_in_flight = 0;
    std::uint64_t m_file_size;
    std::deque<Pending> m_pending; ///< synchronous methods: submitted, not yet read
    const char* m_map = nullptr;
    std::vector<iovec> m_regions;
    bool m_fixed = false;
    struct Uring;
    std::unique_ptr<Uring> m_uring;
};

/// Reader threads when the user leaves it to the tool: the CPUs the calling thread may run on
/// (near the GPU once a case placed its host side there), at most 16.
unsigned auto_reader_threads();

/// A fixed set of threads that run a function of the thread number; one call at a time.
/// The pipeline keeps one for its passes, so threads are not started per batch.
class ThreadPool {
public:
    /// With `pin`, thread t runs on one fixed CPU: the t-th (round robin) of the CPUs the
    /// calling thread may use now (near the GPU once a case placed its host side there), so
    /// that readers are not moved between samples or processes; the caller's own thread is
    /// pinned only while it runs its share.
    explicit ThreadPool(unsigned threads, bool pin = false);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;
    unsigned size() const { return m_size; }
    /// The CPU of each thread, in thread order; empty when not pinned.
    const std::vector<int>& cpus() const { return m_cpus; }
    /// Runs f(0..size-1), one per thread (f(0) on the caller's thread), and waits; rethrows
    /// the first error.
    void run(const std::function<void(unsigned)>& f);

private:
    void loop(unsigned t);
    unsigned m_size;
    std::vector<int> m_cpus;
    std::vector<std::thread> m_threads;
    std::mutex m_mutex;
    std::condition_variable m_cv, m_done_cv;
    const std::function<void(unsigned)>* m_job = nullptr;
    std::uint64_t m_generation = 0;
    unsigned m_running = 0;
    bool m_stop = false;
    std::vector<std::exception_ptr> m_errors;
};

/// A slice of an open file to read into `dst`.
struct FileSlice {
    int fd;
    const std::string* path; ///< for messages
    std::uint64_t offset, bytes;
    void* dst;
    std::uint64_t file_size = 0; ///< the whole file's size (mapped methods)
};
/// Contiguous shares of `slices` (split at multiples of `align`), one list per thread, as
/// equal in bytes as the alignment allows; fewer lists when there is too little to share.
std::vector<std::vector<FileSlice>> share_slices(const std::vector<FileSlice>& slices, unsigned threads, std::uint64_t align);
/// Reads `slices` by `m` on the pool's threads, each its share in `chunk`-byte reads with up
/// to `qd` in flight (io_uring); returns the bytes read. Throws ConfigError on an error or a
/// short file (the offset named); the other threads finish their share first.
std::uint64_t read_slices(ThreadPool& pool, const ReadMethod& m, const std::vector<FileSlice>& slices, std::uint64_t chunk,
                          unsigned qd);

} // namespace interopbench::storage
