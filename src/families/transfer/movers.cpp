// The transfer family's movers (movers.hpp).
//
// Stream movers (a copy engine or an SM kernel: host <-> GPU, GPU -> GPU, null <-> GPU, one
// GPU's broadcast to several destinations) run on a non-blocking stream of their driving GPU: alone,
// up to k_depth operations are queued ahead, so the stream never waits for the host; beside other
// transfers, one at a time, so that other streams' copies get their turn on the copy engine. CUDA
// events around the `ops` timed operations give their time; after those, the mover keeps queueing
// operations while another transfer of the set is still in its timed part (within a bound: a set
// whose transfers starve one another fails its configuration rather than hang). CPU movers (host <->
// host, host <-> null) and file movers (a file read into a GPU through a pinned ring, into host
// memory, a GPU written to a file) run on their own thread pools and are timed by the host clock.
// A file is read or written once per sample: its cache state is put in place (and proven) before
// the sample, and a second read would not be in that state.
#include "families/transfer/movers.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "families/transfer/transfer_kernels.hpp"
#include "gpu/cuda_util.hpp"
#include "gpu/kernels.hpp"
#include "gpu/pinned_ring.hpp"
#include "hostio/pattern.hpp"
#include "hostio/readers.hpp"
#include "interopbench/errors.hpp"
#include "topology/topology.hpp"

namespace interopbench::transfer {
namespace {

using clock_type = std::chrono::steady_clock;

/// Operations a stream mover keeps queued ahead of the GPU when it runs alone.
constexpr std::size_t k_depth = 3;
/// How long a stream mover keeps its path busy after its own timed part while the others have
/// not finished theirs: at least this many seconds, and this many times its own timed part or
/// the longest one expected, whichever is longer.
constexpr double k_keep_busy_min_s = 60;
constexpr double k_keep_busy_factor = 20;
/// Each transfer's source pattern: this seed plus its place in the set.
constexpr std::uint64_t k_seed = 0x7452616e73000000ull;
/// The byte a write from null puts everywhere, and its 8-byte word.
constexpr unsigned char k_null_byte = 0xa5;
constexpr std::uint64_t k_null_word = 0xa5a5a5a5a5a5a5a5ull;

double since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

gpu::HostMem host_mem(HostKind k) {
    switch (k) {
    case HostKind::pageable: return gpu::HostMem::pageable;
    case HostKind::pinned: return gpu::HostMem::pinned;
    case HostKind::registered: return gpu::HostMem::registered;
    case HostKind::write_combined: return gpu::HostMem::write_combined;
    }
    return gpu::HostMem::pinned;
}

/// Where a transfer's host side goes while it is set up: the NUMA node its host endpoint names,
/// else near its GPU (with --numa-bind, the default); undone when the mover is made.
class Placement {
public:
    Placement(const CaseContext& ctx, int numa, int gpu) {
        if (numa >= 0) {
            m_bound = place_on_numa_node(static_cast<unsigned>(numa));
            m_where = m_bound ? fmt::format("NUMA node {}", numa) : fmt::format("NUMA node {} (the only one)", numa);
        } else if (gpu >= 0) {
            m_bound = place_host_side(ctx, gpu);
            m_where = m_bound ? fmt::format("near GPU {}", gpu) : "not bound";
        } else {
            m_where = "not bound";
        }
    }
    ~Placement() {
        if (m_bound) reset_placement();
    }
    Placement(const Placement&) = delete;
    Placement& operator=(const Placement&) = delete;
    const std::string& where() const { return m_where; }

private:
    bool m_bound = false;
    std::string m_where;
};

/// The host endpoint of `t` (its source, else its destination), or nullptr.
const Endpoint* host_end(const Transfer& t) {
    if (t.src.where == Where::host) return &t.src;
    if (t.dst.where == Where::host) return &t.dst;
    return nullptr;
}

std::string kind_words(const Endpoint& e) {
    switch (e.where) {
    case Where::host: return e.text().substr(5) + " host memory";
    case Where::gpu: return fmt::format("GPU {}", e.gpu);
    case Where::file: return "file";
    case Where::null: return "null";
    }
    return "?";
}

bool finished(const gpu::Event& e) {
    const cudaError_t q = cudaEventQuery(e.get());
    if (q == cudaErrorNotReady) return false;
    IB_CUDA_CHECK(q);
    return true;
}

int sm_count(const CaseContext& ctx, int gpu) {
    const DeviceInfo* d = ctx.machine ? ctx.machine->device(gpu) : nullptr;
    return d && d->sm_count > 0 ? d->sm_count : 1;
}

// ---- stream movers ---------------------------------------------------------------------------

class StreamMover : public Mover {
public:
    double run(int ops, Gate& gate) override {
        gpu::set_device(m_driver);
        const cudaStream_t s = m_stream.get();
        // Alone, operations are queued k_depth ahead; beside others, one at a time: a stream
        // kept fed ahead holds the copy engine, and another stream's copies on it wait until it
        // runs dry (a file read's chunk copies waited for minutes behind a 3-deep queue of H2D
        // copies on an H100), so that a gap between operations is what lets them take turns.
        m_depth = gate.alone() ? k_depth : 1;
        const auto t0 = clock_type::now();
        IB_CUDA_CHECK(cudaEventRecord(m_start.get(), s));
        for (int i = 0; i < ops; ++i) issue(m_depth);
        IB_CUDA_CHECK(cudaEventRecord(m_stop.get(), s));
        bool counted = false;
        if (!gate.alone()) {
            // Beside the others: keep the path busy until every transfer's timed part is over,
            // within a bound, so that a transfer the others starve fails its configuration
            // instead of hanging the run.
            double own = 0, allowed = 0;
            clock_type::time_point own_end{};
            while (true) {
                if (!counted && finished(m_stop)) {
                    gate.done();
                    counted = true;
                    own_end = clock_type::now();
                    own = std::chrono::duration<double>(own_end - t0).count();
                    allowed = std::max(k_keep_busy_min_s, k_keep_busy_factor * std::max(own, gate.expected_s()));
                }
                if (gate.all_done()) break;
                if (counted && since(own_end) > allowed) {
                    gate.abort();
                    IB_CUDA_CHECK(cudaStreamSynchronize(s));
                    throw ConfigError(fmt::format(
                        "the other transfers of the set had not finished their timed part {:.1f} s after this one's "
                        "({:.2f} s): starved by this transfer's operations on a path they share, or far slower than "
                        "their untimed operation ({:.2f} s)",
                        since(own_end), own, gate.expected_s()));
                }
                issue(1);
            }
        }
        IB_CUDA_CHECK(cudaEventSynchronize(m_stop.get()));
        if (!counted) gate.done();
        IB_CUDA_CHECK(cudaStreamSynchronize(s));
        return gpu::elapsed_s(m_start, m_stop);
    }

protected:
    explicit StreamMover(int driver)
        : m_driver(driver), m_stream(driver), m_start(driver, gpu::EventUse::timing), m_stop(driver, gpu::EventUse::timing) {
        for (std::size_t i = 0; i < k_depth; ++i) m_slots.emplace_back(driver, gpu::EventUse::sync);
    }
    /// One operation on the stream (the driving GPU is current).
    virtual void enqueue() = 0;

    nlohmann::json stream_details() const {
        return {{"driver_gpu", m_driver},
                {"timer", "CUDA events on the transfer's stream around its timed operations"},
                {"queued_ahead", m_depth},
                {"queueing", fmt::format("alone: operations queued {} ahead; beside other transfers: one at a time, so "
                                         "that other streams' copies take turns on the copy engine (a stream kept fed "
                                         "ahead holds it)",
                                         k_depth)}};
    }

    int m_driver;
    gpu::Stream m_stream;

private:
    /// Queues one operation once the one `depth` back is done (the GPU paces the host).
    void issue(std::size_t depth) {
        if (m_issued >= depth) IB_CUDA_CHECK(cudaEventSynchronize(m_slots[(m_issued - depth) % k_depth].get()));
        enqueue();
        IB_CUDA_CHECK(cudaEventRecord(m_slots[m_issued % k_depth].get(), m_stream.get()));
        ++m_issued;
    }

    gpu::Event m_start, m_stop;
    std::vector<gpu::Event> m_slots;
    std::size_t m_issued = 0, m_depth = k_depth;
};

/// Host <-> GPU and GPU -> GPU by the copy engine or the SM copy kernel.
class CopyMover final : public StreamMover {
public:
    CopyMover(const Transfer& t, const MoverSetup& setup)
        : StreamMover(t.driver()), m_t(t), m_seed(k_seed + setup.index), m_bytes(t.size) {
        const CaseContext& ctx = *setup.ctx;
        const Endpoint* h = host_end(t);
        const Placement place(ctx, h ? h->numa : -1, m_driver);
        m_placed = place.where();
        m_sm = t.exec.engine == Engine::sm;
        m_blocks = t.exec.blocks ? t.exec.blocks : static_cast<unsigned>(sm_count(ctx, m_driver) * 4);
        if (t.src.where == Where::gpu && t.dst.where == Where::gpu && t.src.gpu != t.dst.gpu) {
            const int other = m_driver == t.src.gpu ? t.dst.gpu : t.src.gpu;
            gpu::enable_peer_access(other, m_driver);
            m_p2p = gpu::enable_peer_access(m_driver, other);
            if (m_sm && !m_p2p)
                throw Unsupported(fmt::format("GPU {} cannot access GPU {}'s memory (no peer access): an SM kernel cannot "
                                              "reach it; via ce copies through host memory",
                                              m_driver, other));
        }
        const cudaStream_t s = m_stream.get();
        if (t.src.where == Where::host) {
            m_src_host = gpu::HostBuffer(host_mem(t.src.host), m_bytes);
            hostio::fill_pattern(m_src_host.get(), m_bytes, m_seed);
        } else {
            m_src_dev = gpu::DeviceBuffer(t.src.gpu, m_bytes);
            gpu::set_device(t.src.gpu);
            gpu::fill_pattern_device(m_src_dev.get(), m_bytes, m_seed, nullptr);
        }
        if (t.dst.where == Where::host) {
            m_dst_host = gpu::HostBuffer(host_mem(t.dst.host), m_bytes);
            std::memset(m_dst_host.get(), 0, m_bytes);
        } else {
            m_dst_dev = gpu::DeviceBuffer(t.dst.gpu, m_bytes);
            gpu::set_device(t.dst.gpu);
            IB_CUDA_CHECK(cudaMemset(m_dst_dev.get(), 0, m_bytes)); // poison the destination
            IB_CUDA_CHECK(cudaDeviceSynchronize()); // the memset's stream does not order the transfer's
        }
        gpu::set_device(m_driver);
        IB_CUDA_CHECK(cudaStreamSynchronize(s));
    }

    std::uint64_t bytes() const override { return m_bytes; }

    void check() override {
        std::uint64_t bad = 0;
        if (m_t.dst.where == Where::gpu) {
            gpu::set_device(m_t.dst.gpu);
            bad = gpu::count_pattern_mismatches_device(m_dst_dev.get(), m_bytes, m_seed, nullptr);
        } else {
            bad = hostio::count_pattern_mismatches(m_dst_host.get(), m_bytes, m_seed);
        }
        if (bad) throw CheckFailed(fmt::format("{} of {} 8-byte words at the destination differ from the source", bad, (m_bytes + 7) / 8));
    }

    nlohmann::json details() const override {
        nlohmann::json j = stream_details();
        j["engine"] = m_sm ? fmt::format("SM copy kernel, at most {} blocks of 512 threads, 16-byte accesses", m_blocks)
                           : std::string(peer() ? "copy engine: cudaMemcpyPeerAsync" : "copy engine: cudaMemcpyAsync");
        j["path"] = fmt::format("{} -> {}", kind_words(m_t.src), kind_words(m_t.dst));
        if (host_end(m_t)) j["host_placement"] = m_placed;
        if (peer()) {
            j["p2p"] = m_p2p;
            if (!m_p2p) j["path"] = fmt::format("GPU {} -> GPU {}, staged through host memory by the driver (no peer access)",
                                               m_t.src.gpu, m_t.dst.gpu);
        }
        j["verification"] = "the destination, poisoned before timing, must hold the source's pattern after sampling";
        return j;
    }

private:
    bool peer() const { return m_t.src.where == Where::gpu && m_t.dst.where == Where::gpu && m_t.src.gpu != m_t.dst.gpu; }

    void enqueue() override {
        const cudaStream_t s = m_stream.get();
        void* dst = m_t.dst.where == Where::host ? (m_sm ? m_dst_host.device_ptr() : m_dst_host.get()) : m_dst_dev.get();
        const void* src = m_t.src.where == Where::host ? (m_sm ? m_src_host.device_ptr() : m_src_host.get()) : m_src_dev.get();
        if (m_sm) IB_CUDA_CHECK(kernels::launch_sm_copy_blocks(dst, src, m_bytes, m_blocks, s));
        else if (peer()) IB_CUDA_CHECK(cudaMemcpyPeerAsync(dst, m_t.dst.gpu, src, m_t.src.gpu, m_bytes, s));
        else if (m_t.src.where == Where::host) IB_CUDA_CHECK(cudaMemcpyAsync(dst, src, m_bytes, cudaMemcpyHostToDevice, s));
        else if (m_t.dst.where == Where::host) IB_CUDA_CHECK(cudaMemcpyAsync(dst, src, m_bytes, cudaMemcpyDeviceToHost, s));
        else IB_CUDA_CHECK(cudaMemcpyAsync(dst, src, m_bytes, cudaMemcpyDeviceToDevice, s));
    }

    Transfer m_t;
    std::uint64_t m_seed, m_bytes;
    bool m_sm = false, m_p2p = false;
    unsigned m_blocks = 0;
    std::string m_placed;
    gpu::HostBuffer m_src_host, m_dst_host;
    gpu::DeviceBuffer m_src_dev, m_dst_dev;
};

/// A broadcast: one SM kernel on the source GPU reads its memory once and writes every
/// destination (its own memory, a peer's through peer access, mapped pinned or registered host
/// memory). One operation counts the size once per destination.
class BroadcastMover final : public StreamMover {
public:
    BroadcastMover(const Transfer& t, const MoverSetup& setup)
        : StreamMover(t.src.gpu), m_t(t), m_seed(k_seed + setup.index), m_bytes(t.size), m_src(t.src.gpu, t.size) {
        static_assert(k_max_destinations == kernels::k_max_broadcast, "the parser's limit is the kernel's");
        const CaseContext& ctx = *setup.ctx;
        m_blocks = t.exec.blocks ? t.exec.blocks : static_cast<unsigned>(sm_count(ctx, m_driver) * 4);
        gpu::set_device(m_driver);
        gpu::fill_pattern_device(m_src.get(), m_bytes, m_seed, nullptr);
        for (const Endpoint& d : t.destinations()) {
            Target out{d};
            if (d.where == Where::host) {
                // Each host buffer on its own NUMA node where one is named, else near the source.
                const Placement place(ctx, d.numa, m_driver);
                gpu::set_device(m_driver); // mapped for the kernel's GPU
                out.host = gpu::HostBuffer(host_mem(d.host), m_bytes);
                std::memset(out.host.get(), 0, m_bytes);
                out.placed = place.where();
                out.ptr = out.host.device_ptr();
            } else {
                if (d.gpu != m_driver && !gpu::enable_peer_access(m_driver, d.gpu))
                    throw Unsupported(fmt::format("GPU {} cannot access GPU {}'s memory (no peer access): its broadcast "
                                                  "kernel cannot write there",
                                                  m_driver, d.gpu));
                out.dev = gpu::DeviceBuffer(d.gpu, m_bytes);
                gpu::set_device(d.gpu);
                IB_CUDA_CHECK(cudaMemset(out.dev.get(), 0, m_bytes)); // poison the destination
                IB_CUDA_CHECK(cudaDeviceSynchronize()); // the memset's stream does not order the transfer's
                out.ptr = out.dev.get();
            }
            m_to.dst[m_to.count++] = out.ptr;
            m_targets.push_back(std::move(out));
        }
        gpu::set_device(m_driver);
        IB_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
    }

    std::uint64_t bytes() const override { return m_t.counted_bytes(); }

    void check() override {
        std::string wrong;
        for (std::size_t k = 0; k < m_targets.size(); ++k) {
            const Target& d = m_targets[k];
            std::uint64_t bad = 0;
            if (d.end.where == Where::gpu) {
                gpu::set_device(d.end.gpu);
                bad = gpu::count_pattern_mismatches_device(d.dev.get(), m_bytes, m_seed, nullptr);
            } else {
                bad = hostio::count_pattern_mismatches(d.host.get(), m_bytes, m_seed);
            }
            if (bad)
                wrong += fmt::format("{}destination {} ({}): {} of {} 8-byte words", wrong.empty() ? "" : "; ", k + 1,
                                     d.end.text(), bad, (m_bytes + 7) / 8);
        }
        if (!wrong.empty()) throw CheckFailed("broadcast destinations differ from the source: " + wrong);
    }

    nlohmann::json details() const override {
        nlohmann::json j = stream_details();
        const std::size_t n = m_targets.size();
        j["engine"] = fmt::format("SM broadcast kernel on GPU {}, at most {} blocks of 512 threads: each 16-byte load of the "
                                  "source stored to all {} destinations",
                                  m_driver, m_blocks, n);
        std::string to;
        nlohmann::json dests = nlohmann::json::array();
        for (const Target& d : m_targets) {
            to += (to.empty() ? "" : ", ") + kind_words(d.end);
            nlohmann::json e{{"destination", d.end.text()}};
            if (d.end.where == Where::host) e["host_placement"] = d.placed;
            else if (d.end.gpu != m_driver) e["p2p"] = true;
            dests.push_back(std::move(e));
        }
        j["path"] = fmt::format("GPU {} (read once) -> {}", m_driver, to);
        j["destinations"] = std::move(dests);
        j["source_bytes_per_op"] = m_bytes;
        j["counting"] = fmt::format("bytes written, counted once per destination: {} x {} per operation; the source is read "
                                    "once per operation, at this transfer's bandwidth / {}",
                                    format_size(m_bytes), n, n);
        j["verification"] = "every destination, poisoned before timing, must hold the source's pattern after sampling";
        return j;
    }

private:
    struct Target {
        Endpoint end;
        gpu::DeviceBuffer dev;
        gpu::HostBuffer host;
        void* ptr = nullptr; ///< what the kernel writes: device memory, or the host buffer's mapped address
        std::string placed;
    };

    void enqueue() override {
        IB_CUDA_CHECK(kernels::launch_broadcast(m_src.get(), m_to, m_bytes, m_blocks, m_stream.get()));
    }

    Transfer m_t;
    std::uint64_t m_seed, m_bytes;
    unsigned m_blocks = 0;
    gpu::DeviceBuffer m_src;
    std::vector<Target> m_targets;
    kernels::BroadcastTargets m_to;
};

/// GPU memory read into nothing (SM kernel) or written from nothing (copy engine memset, or
/// SM kernel).
class NullMover final : public StreamMover {
public:
    NullMover(const Transfer& t, const MoverSetup& setup)
        : StreamMover(t.driver()), m_read(t.dst.where == Where::null), m_sm(t.exec.engine == Engine::sm),
          m_seed(k_seed + setup.index), m_bytes(t.size), m_buffer(m_driver, t.size), m_fold(m_driver, sizeof(std::uint64_t)) {
        m_blocks = t.exec.blocks ? t.exec.blocks : static_cast<unsigned>(sm_count(*setup.ctx, m_driver) * 4);
        gpu::set_device(m_driver);
        if (m_read) gpu::fill_pattern_device(m_buffer.get(), m_bytes, m_seed, nullptr);
        else IB_CUDA_CHECK(cudaMemset(m_buffer.get(), 0, m_bytes));
        IB_CUDA_CHECK(cudaMemset(m_fold.get(), 0, sizeof(std::uint64_t)));
        IB_CUDA_CHECK(cudaDeviceSynchronize()); // the memsets' stream does not order the transfer's
    }

    std::uint64_t bytes() const override { return m_bytes; }

    void check() override {
        gpu::set_device(m_driver);
        const cudaStream_t s = m_stream.get();
        if (m_read) {
            // One more read, folded from zero: the fold of every word the kernel loaded.
            IB_CUDA_CHECK(cudaMemsetAsync(m_fold.get(), 0, sizeof(std::uint64_t), s));
            IB_CUDA_CHECK(kernels::launch_read_fold(m_buffer.get(), m_bytes, m_blocks, static_cast<unsigned long long*>(m_fold.get()), s));
            std::uint64_t got = 0;
            IB_CUDA_CHECK(cudaMemcpyAsync(&got, m_fold.get(), sizeof got, cudaMemcpyDeviceToHost, s));
            IB_CUDA_CHECK(cudaStreamSynchronize(s));
            std::uint64_t want = 0;
            for (std::uint64_t i = 0; i < m_bytes / 8; ++i) want ^= hostio::pattern_word(m_seed, i);
            if (got != want)
                throw CheckFailed(fmt::format("the XOR of the {} words read is {:#x}, the source's is {:#x}: a load returned "
                                              "wrong data",
                                              m_bytes / 8, got, want));
            return;
        }
        // Every word written from null must hold the null word: read back in pieces.
        IB_CUDA_CHECK(cudaStreamSynchronize(s));
        constexpr std::uint64_t piece = 64ull << 20;
        std::vector<std::uint64_t> host(std::min(piece, m_bytes) / 8);
        std::uint64_t bad = 0;
        for (std::uint64_t off = 0; off < m_bytes; off += piece) {
            const std::uint64_t n = std::min(piece, m_bytes - off);
            IB_CUDA_CHECK(cudaMemcpy(host.data(), static_cast<char*>(m_buffer.get()) + off, n, cudaMemcpyDeviceToHost));
            bad += static_cast<std::uint64_t>(std::count_if(host.begin(), host.begin() + static_cast<std::ptrdiff_t>(n / 8),
                                                            [](std::uint64_t w) { return w != k_null_word; }));
        }
        if (bad) throw CheckFailed(fmt::format("{} of {} 8-byte words written from null differ from {:#x}", bad, m_bytes / 8, k_null_word));
    }

    nlohmann::json details() const override {
        nlohmann::json j = stream_details();
        j["engine"] = !m_sm ? std::string("copy engine: cudaMemsetAsync")
                            : fmt::format("SM kernel, at most {} blocks of 512 threads, 16-byte {}", m_blocks, m_read ? "loads" : "stores");
        j["path"] = m_read ? fmt::format("GPU {} memory read into nothing", m_driver) : fmt::format("GPU {} memory written from nothing", m_driver);
        j["verification"] = m_read ? "one more read after sampling: the XOR of every word loaded must equal the host's of the pattern"
                                   : "every word written must hold the null word, read back after sampling";
        return j;
    }

private:
    void enqueue() override {
        const cudaStream_t s = m_stream.get();
        if (m_read)
            IB_CUDA_CHECK(kernels::launch_read_fold(m_buffer.get(), m_bytes, m_blocks, static_cast<unsigned long long*>(m_fold.get()), s));
        else if (m_sm) IB_CUDA_CHECK(kernels::launch_write_words(m_buffer.get(), m_bytes, m_blocks, k_null_word, s));
        else IB_CUDA_CHECK(cudaMemsetAsync(m_buffer.get(), k_null_byte, m_bytes, s));
    }

    bool m_read, m_sm;
    std::uint64_t m_seed, m_bytes;
    unsigned m_blocks = 0;
    gpu::DeviceBuffer m_buffer, m_fold;
};

// ---- host-clock movers -----------------------------------------------------------------------

/// A mover timed by the host clock: `op()` is one operation on its threads.
class HostMover : public Mover {
public:
    double run(int ops, Gate& gate) override {
        const auto t0 = clock_type::now();
        for (int i = 0; i < ops; ++i) op();
        const double t = since(t0);
        gate.done();
        if (repeats() && !gate.alone())
            while (!gate.all_done()) op(); // beside the others until every timed part is over
        return t;
    }

protected:
    virtual void op() = 0;
};

/// Contiguous shares of `bytes` for `threads` threads, multiples of 4 KiB but the last.
std::vector<std::pair<std::uint64_t, std::uint64_t>> shares(std::uint64_t bytes, unsigned threads) {
    return storage::stripe(bytes, threads, 4096);
}

/// Host -> host (copy), host -> null (read), null -> host (write) on CPU threads.
class CpuMover final : public HostMover {
public:
    CpuMover(const Transfer& t, const MoverSetup& setup)
        : m_t(t), m_seed(k_seed + setup.index), m_bytes(t.size), m_parts(shares(t.size, t.exec.threads)),
          m_folds(m_parts.size(), 0) {
        // Each buffer on its own NUMA node where one is named; the threads on the source's.
        if (t.dst.where == Where::host) {
            const Placement place(*setup.ctx, t.dst.numa, -1);
            m_dst = gpu::HostBuffer(host_mem(t.dst.host), m_bytes);
            std::memset(m_dst.get(), 0, m_bytes);
            m_placed = "destination " + place.where();
        }
        const Endpoint& first = t.src.where == Where::host ? t.src : t.dst;
        const Placement place(*setup.ctx, first.numa, -1);
        m_pool = std::make_unique<storage::ThreadPool>(static_cast<unsigned>(m_parts.size()), setup.ctx->bind_numa);
        if (t.src.where == Where::host) {
            m_src = gpu::HostBuffer(host_mem(t.src.host), m_bytes);
            hostio::fill_pattern(m_src.get(), m_bytes, m_seed);
            m_placed = "source and threads " + place.where() + (m_placed.empty() ? "" : ", " + m_placed);
        } else {
            m_placed = "threads " + place.where() + ", " + m_placed;
        }
    }

    std::uint64_t bytes() const override { return m_bytes; }

    void check() override {
        if (m_t.dst.where == Where::host && m_t.src.where == Where::host) {
            if (const auto bad = hostio::count_pattern_mismatches(m_dst.get(), m_bytes, m_seed))
                throw CheckFailed(fmt::format("{} of {} 8-byte words at the destination differ from the source", bad, m_bytes / 8));
        } else if (m_t.dst.where == Where::host) {
            const auto* w = static_cast<const std::uint64_t*>(m_dst.get());
            const auto bad = std::count_if(w, w + m_bytes / 8, [](std::uint64_t x) { return x != k_null_word; });
            if (bad) throw CheckFailed(fmt::format("{} of {} 8-byte words written from null differ from {:#x}", bad, m_bytes / 8, k_null_word));
        } else {
            std::uint64_t got = 0, want = 0;
            for (std::uint64_t f : m_folds) got ^= f;
            for (std::uint64_t i = 0; i < m_bytes / 8; ++i) want ^= hostio::pattern_word(m_seed, i);
            if (got != want)
                throw CheckFailed(fmt::format("the XOR of the {} words read is {:#x}, the source's is {:#x}", m_bytes / 8, got, want));
        }
    }

    nlohmann::json details() const override {
        return {{"engine", fmt::format("{} CPU thread(s), each a contiguous share: {}", m_parts.size(),
                                       m_t.src.where != Where::host ? "memset" : m_t.dst.where != Where::host ? "8-byte loads folded by XOR" : "memcpy")},
                {"path", fmt::format("{} -> {}", kind_words(m_t.src), kind_words(m_t.dst))},
                {"host_placement", m_placed},
                {"threads_cpus", m_pool->cpus()},
                {"timer", "host steady_clock around the timed operations"},
                {"verification", m_t.src.where == Where::host && m_t.dst.where == Where::host
                                     ? "the destination, zeroed before timing, must hold the source's pattern after sampling"
                                 : m_t.dst.where == Where::host ? "every word written must hold the null word after sampling"
                                                                : "the XOR of the last pass's words must equal the pattern's"}};
    }

private:
    void op() override {
        auto* src = static_cast<const char*>(m_src.get());
        auto* dst = static_cast<char*>(m_dst.get());
        m_pool->run([&](unsigned i) {
            const auto [off, n] = m_parts[i];
            if (m_t.src.where == Where::host && m_t.dst.where == Where::host) {
                std::memcpy(dst + off, src + off, n);
            } else if (m_t.dst.where == Where::host) {
                std::memset(dst + off, k_null_byte, n);
            } else {
                const auto* w = reinterpret_cast<const std::uint64_t*>(src + off);
                std::uint64_t acc = 0;
                for (std::uint64_t k = 0; k < n / 8; ++k) acc ^= w[k];
                m_folds[i] = acc;
            }
        });
    }

    Transfer m_t;
    std::uint64_t m_seed, m_bytes;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> m_parts;
    std::vector<std::uint64_t> m_folds;
    std::string m_placed;
    std::unique_ptr<storage::ThreadPool> m_pool;
    gpu::HostBuffer m_src, m_dst;
};

/// The whole logical file as slices of its stripes; `base` is where logical byte 0 goes.
std::vector<storage::FileSlice> slices_of(const std::vector<storage::Segment>& files, const std::vector<storage::Fd>& fds,
                                          void* base) {
    std::vector<storage::FileSlice> out;
    for (std::size_t i = 0; i < files.size(); ++i)
        out.push_back({fds[i].get(), &files[i].path, 0, files[i].bytes, static_cast<char*>(base) + files[i].offset, files[i].bytes});
    return out;
}

/// Threads that get a share: no more than the chunks of the file.
unsigned useful_threads(unsigned threads, std::uint64_t size, std::uint64_t chunk) {
    return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, (size + chunk - 1) / chunk)));
}

/// A file of the run's storage site read into a GPU through each reader's pinned ring
/// (pipelined), or into host memory (read); done once per sample, from its cache state.
class FileReadMover final : public HostMover {
public:
    FileReadMover(const Transfer& t, const MoverSetup& setup)
        : m_t(t), m_file(setup.site->pattern_file(t.size, setup.file_copy, t.src.dir)), m_bytes(m_file->size()),
          m_chunk(std::min(t.exec.chunk, m_bytes)), m_cache(m_file->segments(), t.src.cache == Cache::cold),
          m_facts(setup.site->facts_all()) {
        const int gpu_id = t.dst.where == Where::gpu ? t.dst.gpu : -1;
        const Placement place(*setup.ctx, t.dst.where == Where::host ? t.dst.numa : -1, gpu_id);
        m_placed = place.where();
        void* base = nullptr;
        if (gpu_id >= 0) {
            m_dev = gpu::DeviceBuffer(gpu_id, m_bytes);
            gpu::set_device(gpu_id);
            IB_CUDA_CHECK(cudaMemset(m_dev.get(), 0, m_bytes)); // poison the destination
            IB_CUDA_CHECK(cudaDeviceSynchronize());             // before the ring's streams write it
            base = m_dev.get();
        } else {
            m_host = gpu::HostBuffer(host_mem(t.dst.host), m_bytes);
            std::memset(m_host.get(), 0, m_bytes);
            base = m_host.get();
        }
        for (const storage::Segment& s : m_file->segments()) m_fds.push_back(storage::open_file(s.path, O_RDONLY));
        m_slices = slices_of(m_file->segments(), m_fds, base);
        m_shares = storage::share_slices(m_slices, useful_threads(t.exec.threads, m_bytes, m_chunk), m_chunk);
        m_pool = std::make_unique<storage::ThreadPool>(static_cast<unsigned>(m_shares.size()), setup.ctx->bind_numa);
        if (gpu_id >= 0) {
            const storage::ReadMethod& buffered = storage::read_method("buffered");
            m_readers.resize(m_shares.size());
            for (std::size_t i = 0; i < m_shares.size(); ++i) {
                m_rings.push_back(std::make_unique<gpu::PinnedRing>(gpu_id, t.exec.ring, m_chunk));
                for (const storage::FileSlice& sl : m_shares[i])
                    m_readers[i].push_back(std::make_unique<storage::ChunkReader>(buffered, sl.fd, *sl.path, 1, sl.file_size,
                                                                                   m_rings[i]->regions()));
            }
        }
    }

    bool repeats() const override { return false; }
    std::uint64_t bytes() const override { return m_bytes; }

    void before_sample() override {
        m_before = m_cache.prepare_sample();
        for (const storage::Fd& fd : m_fds) ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    }

    void check() override {
        std::uint64_t bad = 0;
        if (m_t.dst.where == Where::gpu) {
            gpu::set_device(m_t.dst.gpu);
            bad = gpu::count_pattern_mismatches_device(m_dev.get(), m_bytes, storage::PatternFile::k_seed, nullptr);
        } else {
            bad = storage::count_file_pattern_mismatches(m_host.get(), 0, m_bytes);
        }
        if (bad) throw CheckFailed(fmt::format("{} of {} words read differ from the file's pattern", bad, (m_bytes + 7) / 8));
    }

    nlohmann::json details() const override {
        nlohmann::json j = storage::path_details(m_facts);
        const bool to_gpu = m_t.dst.where == Where::gpu;
        j["path"] = to_gpu ? fmt::format("file -> pinned ring -> GPU {}", m_t.dst.gpu)
                           : fmt::format("file -> {}", kind_words(m_t.dst));
        j["engine"] = to_gpu ? fmt::format("{} reader thread(s), each a ring of {} pinned chunks: buffered reads, each chunk "
                                           "copied by the copy engine as soon as it is read",
                                           m_shares.size(), m_t.exec.ring)
                             : fmt::format("{} reader thread(s): buffered reads", m_shares.size());
        j["file"] = m_file->describe();
        j["file_reused"] = m_file->reused();
        j["chunk"] = m_chunk;
        j["cache"] = m_t.src.cache == Cache::cold ? "cold" : "warm";
        j["cache_method"] = m_cache.method();
        j["resident_before"] = m_before.fraction();
        j["host_placement"] = m_placed;
        if (!m_pool->cpus().empty()) j["reader_cpus"] = m_pool->cpus();
        j["timer"] = "host steady_clock from the first read to the last byte in place";
        j["verification"] = to_gpu ? "the device buffer checked against the file's pattern by a GPU kernel after sampling"
                                   : "the host buffer checked against the file's pattern after sampling";
        return j;
    }

private:
    void op() override {
        if (m_t.dst.where == Where::gpu) {
            const int gpu_id = m_t.dst.gpu;
            m_pool->run([&](unsigned i) {
                if (i >= m_shares.size()) return;
                gpu::set_device(gpu_id);
                gpu::read_share_to_device(*m_rings[i], m_shares[i], m_readers[i], m_chunk);
            });
        } else {
            storage::read_slices(*m_pool, storage::read_method("buffered"), m_slices, m_chunk, 1);
        }
    }

    Transfer m_t;
    std::shared_ptr<storage::PatternFile> m_file;
    std::uint64_t m_bytes, m_chunk;
    storage::CacheState m_cache;
    std::vector<StorageDirFacts> m_facts;
    storage::Residency m_before;
    std::string m_placed;
    gpu::DeviceBuffer m_dev;
    gpu::HostBuffer m_host;
    std::vector<storage::Fd> m_fds;
    std::vector<storage::FileSlice> m_slices;
    std::vector<std::vector<storage::FileSlice>> m_shares;
    std::unique_ptr<storage::ThreadPool> m_pool;
    std::vector<std::unique_ptr<gpu::PinnedRing>> m_rings;
    std::vector<std::vector<std::unique_ptr<storage::ChunkReader>>> m_readers; ///< before the rings and fds go
};

/// A GPU's memory written to a new file of the run (striped like the site's files): through one
/// pinned buffer (pinned) or each writer's ring (pipelined), fdatasync'd; once per sample.
class FileWriteMover final : public HostMover {
public:
    FileWriteMover(const Transfer& t, const MoverSetup& setup)
        : m_t(t), m_bytes(t.size), m_chunk(std::min(t.exec.chunk, t.size)), m_gpu(t.src.gpu), m_dev(t.src.gpu, t.size),
          m_facts(setup.site->facts_all()) {
        const Placement place(*setup.ctx, -1, m_gpu);
        m_placed = place.where();
        std::vector<std::string> dirs = setup.site->run_dirs();
        if (t.dst.dir >= 0) dirs = {dirs.at(static_cast<std::size_t>(t.dst.dir))};
        const auto parts = storage::stripe(m_bytes, dirs.size(), storage::PatternFile::k_stripe_align);
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const std::string path =
                dirs[i] + "/" + storage::temp_file_name(::getpid(), fmt::format("transfer-{}-{}-{}", setup.index, m_bytes, i));
            m_targets.push_back({path, parts[i].first, parts[i].second});
            m_guards.emplace_back(path);
            m_fds.push_back(storage::open_file(path, O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR));
            if (const int rc = ::posix_fallocate(m_fds.back().get(), 0, static_cast<off_t>(parts[i].second)); rc != 0)
                throw ConfigError(fmt::format("cannot allocate {} for {}: {}", format_size(parts[i].second), path, std::strerror(rc)));
        }
        gpu::set_device(m_gpu);
        gpu::fill_pattern_device(m_dev.get(), m_bytes, storage::PatternFile::k_seed, nullptr); // the file's pattern
        const bool pinned = t.exec.engine == Engine::pinned;
        if (pinned) m_host = gpu::HostBuffer(gpu::HostMem::pinned, m_bytes);
        std::vector<storage::FileSlice> slices;
        for (std::size_t i = 0; i < m_targets.size(); ++i)
            slices.push_back({m_fds[i].get(), &m_targets[i].path, 0, m_targets[i].bytes,
                              static_cast<char*>(pinned ? m_host.get() : m_dev.get()) + m_targets[i].offset, m_targets[i].bytes});
        m_shares = storage::share_slices(slices, useful_threads(t.exec.threads, m_bytes, m_chunk), m_chunk);
        m_pool = std::make_unique<storage::ThreadPool>(static_cast<unsigned>(m_shares.size()), setup.ctx->bind_numa);
        if (!pinned)
            for (std::size_t i = 0; i < m_shares.size(); ++i)
                m_rings.push_back(std::make_unique<gpu::PinnedRing>(m_gpu, t.exec.ring, m_chunk));
    }

    bool repeats() const override { return false; }
    std::uint64_t bytes() const override { return m_bytes; }

    void check() override {
        std::uint64_t bad = 0;
        for (const storage::Segment& seg : m_targets) bad += storage::count_file_pattern_mismatches_in(seg.path, seg.offset, seg.bytes);
        if (bad) throw CheckFailed(fmt::format("{} of {} words in the written file differ from the GPU's data", bad, m_bytes / 8));
    }

    nlohmann::json details() const override {
        nlohmann::json j = storage::path_details(m_facts);
        const bool pinned = m_t.exec.engine == Engine::pinned;
        j["path"] = fmt::format("GPU {} -> {} -> file", m_gpu, pinned ? "pinned buffer" : "pinned ring");
        j["engine"] = pinned ? fmt::format("the copy engine into one pinned buffer, then {} writer thread(s)", m_shares.size())
                             : fmt::format("{} writer thread(s), each a ring of {} pinned chunks copied ahead of its writes",
                                           m_shares.size(), m_t.exec.ring);
        std::string files;
        for (const storage::Segment& seg : m_targets) files += (files.empty() ? "" : " ") + seg.path;
        j["file"] = files;
        j["chunk"] = m_chunk;
        j["durability"] = "fdatasync before the operation ends";
        j["host_placement"] = m_placed;
        j["timer"] = "host steady_clock, fdatasync included";
        j["verification"] = "the file read back and compared with the GPU's pattern after sampling";
        return j;
    }

private:
    void op() override {
        if (m_t.exec.engine == Engine::pinned) {
            gpu::set_device(m_gpu);
            IB_CUDA_CHECK(cudaMemcpy(m_host.get(), m_dev.get(), m_bytes, cudaMemcpyDeviceToHost));
            m_pool->run([&](unsigned i) {
                if (i >= m_shares.size()) return;
                for (const storage::FileSlice& sl : m_shares[i])
                    for (std::uint64_t done = 0; done < sl.bytes; done += m_chunk)
                        storage::pwrite_all(sl.fd, static_cast<char*>(sl.dst) + done, std::min(m_chunk, sl.bytes - done),
                                            sl.offset + done, *sl.path);
            });
        } else {
            m_pool->run([&](unsigned i) {
                if (i >= m_shares.size()) return;
                gpu::set_device(m_gpu);
                gpu::write_share_from_device(*m_rings[i], m_shares[i], m_chunk);
            });
        }
        for (std::size_t i = 0; i < m_fds.size(); ++i)
            if (::fdatasync(m_fds[i].get()) != 0)
                throw ConfigError(fmt::format("fdatasync of {} failed: {}", m_targets[i].path, std::strerror(errno)));
    }

    Transfer m_t;
    std::uint64_t m_bytes, m_chunk;
    int m_gpu;
    gpu::DeviceBuffer m_dev;
    std::vector<StorageDirFacts> m_facts;
    std::string m_placed;
    std::vector<storage::Segment> m_targets;
    std::vector<cleanup::Guard> m_guards;
    std::vector<storage::Fd> m_fds;
    gpu::HostBuffer m_host;
    std::vector<std::vector<storage::FileSlice>> m_shares;
    std::unique_ptr<storage::ThreadPool> m_pool;
    std::vector<std::unique_ptr<gpu::PinnedRing>> m_rings;
};

} // namespace

std::unique_ptr<Mover> make_mover(const Transfer& t, const MoverSetup& setup) {
    if (t.broadcast()) return std::make_unique<BroadcastMover>(t, setup);
    if (t.src.where == Where::file) return std::make_unique<FileReadMover>(t, setup);
    if (t.dst.where == Where::file) return std::make_unique<FileWriteMover>(t, setup);
    if (t.exec.engine == Engine::cpu) return std::make_unique<CpuMover>(t, setup);
    if (t.src.where == Where::null || t.dst.where == Where::null) return std::make_unique<NullMover>(t, setup);
    return std::make_unique<CopyMover>(t, setup);
}

} // namespace interopbench::transfer
