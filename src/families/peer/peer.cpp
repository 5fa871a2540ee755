// Peer family: data movement between GPUs of one process, and access latency across links.
//
// Measured: peer_copy (one ordered pair, one direction), peer_bidir (both directions of a
// pair at once), peer_staged (the same copy staged through pinned host memory, which is what
// an application does without peer access), peer_one_to_all / peer_all_to_one (a root GPU
// and every other selected GPU at once), latency (one thread chasing pointers through
// local, pinned host or peer GPU memory).
// How: every copy runs on its own non-blocking stream of the GPU that drives it (write: the
// source pushes, read: the destination pulls); the streams are held by a spin kernel while
// a sample's copies are enqueued and timed with CUDA events. The copy engine path is
// cudaMemcpyPeerAsync; the SM path is a kernel with 16-byte loads, eight in flight per
// thread. Peer access is enabled both ways before timing.
// Reports: bandwidth in bytes per second (bytes counted once per copy), time per copy, and
// for latency seconds per dependent load. details() names the GPUs, the driving GPU,
// whether the copy really went peer to peer, operations per sample and how data was checked.
// Caveats: without peer access a copy-engine peer copy still works but the driver stages it
// through host memory; the result says so (details.p2p = false). Peer scenarios need one
// process that sees every GPU: under MPI they are skipped. peer_one_to_all and
// peer_all_to_one run from two GPUs on: with two they equal peer_copy, a cross-check.
#include "families/peer/peer.hpp"

#include <algorithm>
#include <charconv>
#include <memory>
#include <numeric>
#include <random>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpu/cuda_util.hpp"
#include "interopbench/errors.hpp"
#include "families/peer/peer_kernels.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {

namespace peer {

std::optional<std::string> device_unavailable(const Machine& machine, int ordinal) {
    if (!machine.device(ordinal))
        return fmt::format("GPU {} does not exist: {} GPU(s) visible", ordinal,
                           machine.devices.size());
    if (std::find(machine.selected.begin(), machine.selected.end(), ordinal) ==
        machine.selected.end())
        return fmt::format("GPU {} is not among the selected GPUs ({})", ordinal,
                           fmt::join(machine.selected, ","));
    return std::nullopt;
}

std::optional<std::string> peer_unavailable(const Machine& machine) {
    if (auto reason = gpu_unavailable_reason(machine)) return reason;
    if (machine.world && machine.world->size() > 1)
        return "peer scenarios need one process that drives every GPU; under MPI each rank "
               "has its own GPU (run without mpirun)";
    return std::nullopt;
}

std::vector<std::uint32_t> chase_order(std::uint32_t nodes, std::uint64_t seed) {
    std::vector<std::uint32_t> order(nodes);
    std::iota(order.begin(), order.end(), 0u);
    std::mt19937_64 rng(seed);
    if (nodes > 2) std::shuffle(order.begin() + 1, order.end(), rng);
    return order;
}

std::vector<std::uint32_t> chase_next(const std::vector<std::uint32_t>& order) {
    std::vector<std::uint32_t> next(order.size());
    for (std::size_t k = 0; k < order.size(); ++k)
        next[order[k]] = order[(k + 1) % order.size()];
    return next;
}

} // namespace peer

namespace {

using gpu::DeviceBuffer;
using gpu::HostBuffer;
using gpu::HostMem;
using gpu::Stream;
using gpu::TimedRegion;

/// Operations one timed region may queue behind its spin kernels. Far deeper queues can
/// block the enqueueing thread, which then never releases the spin kernels in time.
constexpr int k_max_held_ops = 256;
/// Pattern seeds: each source gets its own; destinations start with a different pattern.
constexpr std::uint64_t k_seed = 0x5eed0000;
constexpr std::uint64_t k_poison = 0xbad0000000000000ull;
/// Pointer-chase nodes sit one per 128-byte line, so no two hops share a cache line.
constexpr std::uint64_t k_chase_stride = 128;
constexpr std::uint64_t k_chase_calibration_hops = 2000;
constexpr std::uint64_t k_chase_min_hops = 1000;
constexpr std::uint64_t k_chase_max_hops = 100'000'000;
/// Pinned staging slots of peer_staged: a chunk can be in D2H, in H2D and waiting.
constexpr int k_staging_slots = 4;

enum class Engine { ce, sm };
enum class Mode { write, read };

Engine parse_engine(const std::string& s) { return s == "sm" ? Engine::sm : Engine::ce; }
Mode parse_mode(const std::string& s) { return s == "read" ? Mode::read : Mode::write; }

std::vector<std::string> sizes_mib(std::initializer_list<std::uint64_t> mib) {
    std::vector<std::string> out;
    for (auto m : mib) out.push_back(std::to_string(m << 20));
    return out;
}

Axis pair_axis() {
    return {"pair", "ordered GPU pair SOURCE>DESTINATION, e.g. 0>1", AxisKind::device_pair,
            {}, {}};
}
Axis engine_axis() {
    return choice_axis("engine",
                       "ce: copy engine (cudaMemcpyPeerAsync); sm: SM copy kernel (16-byte loads, 8 in "
                       "flight per thread, 2 blocks of 512 threads per SM)",
                       {"ce", "sm"});
}
Axis mode_axis() {
    return choice_axis("mode",
                       "which GPU drives the copy: write = the source GPU pushes, read = the destination "
                       "GPU pulls",
                       {"write", "read"});
}
Axis size_axis(std::vector<std::string> defaults) {
    return {"size", "bytes per copy", AxisKind::size, std::move(defaults), {}};
}

MetricInfo bandwidth_metric(std::string help) {
    return {"bandwidth", "B/s", Better::higher, std::move(help)};
}
MetricInfo time_metric() { return {"time", "s", Better::lower, "elapsed time per copy"}; }

/// Why `from` cannot load and store `to`'s memory, or nothing when it can.
std::optional<std::string> peer_access_missing(int from, int to) {
    int can = 0;
    const cudaError_t err = cudaDeviceCanAccessPeer(&can, from, to);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return fmt::format("cudaDeviceCanAccessPeer({}, {}) failed: {}", from, to,
                           cudaGetErrorString(err));
    }
    if (!can)
        return fmt::format("GPU {} cannot access GPU {}'s memory (no peer access): a kernel "
                           "cannot reach it; peer_staged shows the copy through host memory",
                           from, to);
    return std::nullopt;
}

int sm_count(const CaseContext& ctx, int ordinal) {
    const DeviceInfo* d = ctx.machine ? ctx.machine->device(ordinal) : nullptr;
    return d && d->sm_count > 0 ? d->sm_count : 1;
}

/// Fills `bytes` at `ptr` on `device` with the pattern of `seed` and waits for it.
void fill_device(int device, void* ptr, std::size_t bytes, std::uint64_t seed) {
    gpu::set_device(device);
    gpu::fill_pattern_device(ptr, bytes, seed, nullptr);
}

/// Throws CheckFailed when `bytes` at `ptr` on `device` differ from the pattern of `seed`.
void verify_device(int device, const void* ptr, std::size_t bytes, std::uint64_t seed,
                   const std::string& what) {
    gpu::set_device(device);
    const std::uint64_t bad = gpu::count_pattern_mismatches_device(ptr, bytes, seed, nullptr);
    if (bad)
        throw CheckFailed(fmt::format("{}: {} of {} 8-byte words on GPU {} differ from the "
                                      "source pattern",
                                      what, bad, (bytes + 7) / 8, device));
}

// ---- concurrent GPU-to-GPU copies ---------------------------------------------------------

/// One copy of a transfer set: source and destination GPU, and the GPU whose stream runs it.
struct Route {
    int src = 0;
    int dst = 0;
    int driver = 0;
};

/// How per-stream times become the sample's metrics.
enum class Shape {
    single, ///< bandwidth, time
    bidir,  ///< bandwidth (per direction), bandwidth_sum, bandwidth_fwd, bandwidth_rev
    fan,    ///< bandwidth (aggregate), bandwidth_slowest, time
};

class TransferCase final : public Case {
public:
    TransferCase(const CaseContext& ctx, Engine engine, std::uint64_t bytes,
                 const std::vector<Route>& routes, Shape shape)
        : m_engine(engine), m_bytes(bytes), m_shape(shape) {
        for (std::size_t i = 0; i < routes.size(); ++i) {
            const Route& r = routes[i];
            Copy c;
            c.route = r;
            const int other = r.driver == r.src ? r.dst : r.src;
            gpu::enable_peer_access(other, r.driver);
            c.p2p = gpu::enable_peer_access(r.driver, other);
            if (m_engine == Engine::sm && !c.p2p)
                throw ConfigError(*peer_access_missing(r.driver, other));
            IB_CUDA_CHECK(cudaDeviceGetP2PAttribute(&c.rank, cudaDevP2PAttrPerformanceRank,
                                                    r.src, r.dst));
            c.seed = k_seed + i;
            c.src = DeviceBuffer(r.src, bytes);
            c.dst = DeviceBuffer(r.dst, bytes);
            fill_device(r.src, c.src.get(), bytes, c.seed);
            fill_device(r.dst, c.dst.get(), bytes, c.seed ^ k_poison);
            c.stream = std::make_unique<Stream>(r.driver);
            c.sm_count = sm_count(ctx, r.driver);
            m_copies.push_back(std::move(c));
        }
        std::vector<const Stream*> streams;
        for (const Copy& c : m_copies) streams.push_back(c.stream.get());
        m_region = std::make_unique<TimedRegion>(streams, true);
        run(1, nullptr); // first use maps the peer memory and loads the kernel: untimed
        const int cap = std::max(1, k_max_held_ops / static_cast<int>(m_copies.size()));
        m_reps = gpu::reps_for(run(1, nullptr), ctx.sample_time_s, cap);
    }

    Sample measure() override {
        std::vector<double> per;
        const double span = run(m_reps, &per);
        const double bytes = static_cast<double>(m_bytes) * m_reps;
        switch (m_shape) {
        case Shape::single:
            return {bytes / span, span / m_reps};
        case Shape::bidir:
            return {bytes / span, 2 * bytes / span, bytes / per.at(0), bytes / per.at(1)};
        case Shape::fan:
            return {bytes * static_cast<double>(m_copies.size()) / span,
                    bytes / *std::max_element(per.begin(), per.end()), span / m_reps};
        }
        return {};
    }

    void check() override {
        for (const Copy& c : m_copies)
            verify_device(c.route.dst, c.dst.get(), m_bytes, c.seed,
                          fmt::format("copy GPU {} -> GPU {}", c.route.src, c.route.dst));
    }

    nlohmann::json details() const override {
        nlohmann::json copies = nlohmann::json::array();
        for (const Copy& c : m_copies) {
            nlohmann::json j = {{"src_gpu", c.route.src},
                                {"dst_gpu", c.route.dst},
                                {"driver_gpu", c.route.driver},
                                {"p2p", c.p2p},
                                {"p2p_performance_rank", c.rank},
                                {"path", c.p2p ? "direct peer access"
                                               : "staged through host memory by the driver: "
                                                 "no peer access between these GPUs"}};
            if (m_engine == Engine::sm)
                j["grid_blocks"] = kernels::peer_copy_blocks(m_bytes, c.sm_count);
            copies.push_back(std::move(j));
        }
        const bool p2p = std::all_of(m_copies.begin(), m_copies.end(),
                                     [](const Copy& c) { return c.p2p; });
        nlohmann::json j = {
            {"engine", m_engine == Engine::ce
                           ? "copy engine: cudaMemcpyPeerAsync on the driving GPU's stream"
                           : fmt::format("SM copy kernel on the driving GPU: {} threads per "
                                         "block, 16-byte loads, {} in flight per thread",
                                         kernels::k_peer_copy_threads,
                                         kernels::k_peer_copy_unroll)},
            {"bytes_per_op", m_bytes},
            {"ops_per_sample", m_reps},
            {"concurrent_copies", m_copies.size()},
            {"p2p", p2p},
            {"copies", std::move(copies)},
            {"verification", "each destination is filled with a different pattern before "
                             "timing; after sampling it must equal its source's hash pattern "
                             "(8-byte words, checked on the destination GPU)"}};
        // Without peer access the link between the GPUs was not used: say so, so the report
        // does not name the pair's direct path.
        if (!p2p) j["path"] = "staged through host memory by the driver (no peer access)";
        return j;
    }

private:
    struct Copy {
        Route route;
        bool p2p = false;
        int rank = 0;
        int sm_count = 1;
        std::uint64_t seed = 0;
        DeviceBuffer src, dst;
        std::unique_ptr<Stream> stream;
    };

    void enqueue(const Copy& c) {
        gpu::set_device(c.route.driver);
        if (m_engine == Engine::ce)
            IB_CUDA_CHECK(cudaMemcpyPeerAsync(c.dst.get(), c.route.dst, c.src.get(), c.route.src,
                                              m_bytes, c.stream->get()));
        else
            IB_CUDA_CHECK(kernels::launch_peer_copy(c.dst.get(), c.src.get(), m_bytes,
                                                    c.sm_count, c.stream->get()));
    }

    /// Runs `reps` copies on every stream at once; returns the span, per-stream times in
    /// `per_stream`.
    double run(int reps, std::vector<double>* per_stream) {
        m_region->begin();
        for (int r = 0; r < reps; ++r)
            for (const Copy& c : m_copies) enqueue(c);
        return m_region->end(per_stream);
    }

    Engine m_engine;
    std::uint64_t m_bytes;
    Shape m_shape;
    std::vector<Copy> m_copies;
    std::unique_ptr<TimedRegion> m_region;
    int m_reps = 1;
};

std::vector<Route> pair_routes(const DevicePair& p, Mode mode, bool both_ways) {
    std::vector<Route> routes{{p.src, p.dst, mode == Mode::write ? p.src : p.dst}};
    if (both_ways) routes.push_back({p.dst, p.src, mode == Mode::write ? p.dst : p.src});
    return routes;
}

/// GPUs other than `root` among the selected ones, in selection order.
std::vector<int> peers_of(const Machine& machine, int root) {
    std::vector<int> out;
    for (int d : machine.selected)
        if (d != root && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    return out;
}

/// Skip reason for the SM engine when a driving GPU cannot reach the other GPU's memory.
std::optional<std::string> routes_unsupported(Engine engine, const std::vector<Route>& routes) {
    if (engine != Engine::sm) return std::nullopt;
    for (const Route& r : routes)
        if (auto why = peer_access_missing(r.driver, r.driver == r.src ? r.dst : r.src))
            return why;
    return std::nullopt;
}

class PeerScenario : public Scenario {
public:
    explicit PeerScenario(ScenarioInfo info) : m_info(std::move(info)) {}
    const ScenarioInfo& info() const override { return m_info; }

private:
    ScenarioInfo m_info;
};

/// peer_copy and peer_bidir: copies over one GPU pair, one way or both ways at once.
class PairScenario : public PeerScenario {
public:
    PairScenario(ScenarioInfo info, bool both_ways) : PeerScenario(std::move(info)), m_both_ways(both_ways) {}

    std::optional<std::string> unsupported(const Machine& machine,
                                           const Params& params) const override {
        if (auto why = peer::peer_unavailable(machine)) return why;
        const DevicePair p = params.pair("pair");
        if (auto why = peer::device_unavailable(machine, p.src)) return why;
        if (auto why = peer::device_unavailable(machine, p.dst)) return why;
        if (m_both_ways && p.src > p.dst)
            return fmt::format("both directions are measured under pair {}>{}", p.dst, p.src);
        return routes_unsupported(parse_engine(params.get("engine")),
                                  pair_routes(p, parse_mode(params.get("mode")), m_both_ways));
    }

    std::vector<PathUse> paths(const Params& params) const override {
        // peer_bidir's primary figure is per direction: each direction against its link.
        const DevicePair p = params.pair("pair");
        return {{PathKind::peer_link, p.src, p.dst}};
    }

    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& params) const override {
        const DevicePair p = params.pair("pair");
        return std::make_unique<TransferCase>(
            ctx, parse_engine(params.get("engine")), params.get_uint("size"),
            pair_routes(p, parse_mode(params.get("mode")), m_both_ways),
            m_both_ways ? Shape::bidir : Shape::single);
    }

private:
    bool m_both_ways;
};

class PeerCopy final : public PairScenario {
public:
    PeerCopy()
        : PairScenario({"peer_copy",
                        "peer",
                        "GPU to GPU copy, one direction, copy engine or SM kernel",
                        {pair_axis(), engine_axis(), mode_axis(),
                         size_axis(sizes_mib({1, 4, 16, 64, 256, 1024}))},
                        {bandwidth_metric("bytes copied per second"), time_metric()},
                        true,
                        "size bytes per copy, counted once (not read + write); bandwidth = "
                        "size x copies / elapsed time of the copies"},
                       false) {}
};

class PeerBidir final : public PairScenario {
public:
    PeerBidir()
        : PairScenario(
              {"peer_bidir",
               "peer",
               "GPU to GPU copies in both directions at once",
               {pair_axis(), engine_axis(), mode_axis(),
                size_axis(sizes_mib({1, 4, 16, 64, 256, 1024}))},
               {bandwidth_metric("per direction: half the bytes moved both ways / time from "
                                 "the first start to the last finish"),
                {"bandwidth_sum", "B/s", Better::higher,
                 "sum of both directions: bytes moved both ways / the same time"},
                {"bandwidth_fwd", "B/s", Better::higher,
                 "direction SOURCE -> DESTINATION of the pair, over its own elapsed time"},
                {"bandwidth_rev", "B/s", Better::higher,
                 "direction DESTINATION -> SOURCE of the pair, over its own elapsed time"}},
               true,
               "size bytes per copy and direction, counted once; bandwidth is per direction "
               "(size x copies / span), bandwidth_sum is both directions (2 x size x copies / "
               "span), bandwidth_fwd and bandwidth_rev are one direction each (size x copies / "
               "that direction's own elapsed time)"},
              true) {}
};

/// peer_one_to_all (root sends to every other GPU) and peer_all_to_one (root receives).
class PeerFan final : public PeerScenario {
public:
    explicit PeerFan(bool to_all)
        : PeerScenario(
              {to_all ? "peer_one_to_all" : "peer_all_to_one",
               "peer",
               to_all ? "one GPU copies to every other selected GPU at once"
                      : "every other selected GPU copies to one GPU at once",
               {{"root", to_all ? "the GPU that sends" : "the GPU that receives",
                 AxisKind::device, {}, {}},
                engine_axis(), mode_axis(), size_axis(sizes_mib({64, 1024}))},
               {bandwidth_metric("aggregate: bytes of all copies / time from the first start "
                                 "to the last finish"),
                {"bandwidth_slowest", "B/s", Better::higher,
                 "the slowest single copy: size x copies / its own elapsed time"},
                time_metric()},
               true,
               "size bytes per copy and peer, counted once; bandwidth sums every peer's "
               "copies over the span (peers x size x copies / span)"}),
          m_to_all(to_all) {}

    std::optional<std::string> unsupported(const Machine& machine,
                                           const Params& params) const override {
        if (auto why = peer::peer_unavailable(machine)) return why;
        const int root = static_cast<int>(params.get_uint("root"));
        if (auto why = peer::device_unavailable(machine, root)) return why;
        if (peers_of(machine, root).empty())
            return std::string("needs at least two selected GPUs (the root and a peer)");
        return routes_unsupported(parse_engine(params.get("engine")),
                                  routes(machine, root, parse_mode(params.get("mode"))));
    }

    std::vector<PathUse> paths(const Params& params) const override {
        // The aggregate crosses the root's link to every peer: their limits summed.
        const int root = static_cast<int>(params.get_uint("root"));
        if (m_to_all) return {{PathKind::peer_link, root, k_every_gpu}};
        return {{PathKind::peer_link, k_every_gpu, root}};
    }

    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& params) const override {
        const int root = static_cast<int>(params.get_uint("root"));
        return std::make_unique<TransferCase>(
            ctx, parse_engine(params.get("engine")), params.get_uint("size"),
            routes(*ctx.machine, root, parse_mode(params.get("mode"))), Shape::fan);
    }

private:
    std::vector<Route> routes(const Machine& machine, int root, Mode mode) const {
        std::vector<Route> out;
        for (int other : peers_of(machine, root)) {
            const int src = m_to_all ? root : other;
            const int dst = m_to_all ? other : root;
            out.push_back({src, dst, mode == Mode::write ? src : dst});
        }
        return out;
    }

    bool m_to_all;
};

// ---- staged through pinned host memory -------------------------------------------------------

class StagedCase final : public Case {
public:
    StagedCase(const CaseContext& ctx, const DevicePair& p, std::uint64_t bytes,
               std::uint64_t chunk)
        : m_pair(p), m_bytes(bytes), m_chunk(std::min(chunk, bytes)),
          m_src(p.src, bytes), m_dst(p.dst, bytes),
          m_staging(HostMem::pinned, m_chunk * k_staging_slots), m_src_stream(p.src),
          m_dst_stream(p.dst) {
        fill_device(p.src, m_src.get(), bytes, k_seed);
        fill_device(p.dst, m_dst.get(), bytes, k_seed ^ k_poison);
        for (int s = 0; s < k_staging_slots; ++s) {
            m_d2h_done.push_back(std::make_unique<gpu::Event>(p.src, gpu::EventUse::sync));
            m_h2d_done.push_back(std::make_unique<gpu::Event>(p.dst, gpu::EventUse::sync));
        }
        m_region = std::make_unique<TimedRegion>(
            std::vector<const Stream*>{&m_src_stream, &m_dst_stream}, true);
        run(1);
        // Each chunk is two copies, one per stream.
        const std::uint64_t copies = 2 * ((bytes + m_chunk - 1) / m_chunk);
        const auto cap = static_cast<int>(std::max<std::uint64_t>(1, k_max_held_ops / copies));
        m_reps = gpu::reps_for(run(1), ctx.sample_time_s, cap);
    }

    Sample measure() override {
        const double span = run(m_reps);
        return {static_cast<double>(m_bytes) * m_reps / span, span / m_reps};
    }

    void check() override {
        verify_device(m_pair.dst, m_dst.get(), m_bytes, k_seed,
                      fmt::format("staged copy GPU {} -> GPU {}", m_pair.src, m_pair.dst));
    }

    nlohmann::json details() const override {
        return {{"src_gpu", m_pair.src},
                {"dst_gpu", m_pair.dst},
                {"p2p", false},
                {"path", fmt::format("GPU {0} -> pinned host memory (D2H on GPU {0}'s copy "
                                     "engine) -> GPU {1} (H2D on GPU {1}'s copy engine)",
                                     m_pair.src, m_pair.dst)},
                {"chunk_bytes", m_chunk},
                {"staging_slots", k_staging_slots},
                {"chunks_per_op", (m_bytes + m_chunk - 1) / m_chunk},
                {"bytes_per_op", m_bytes},
                {"ops_per_sample", m_reps},
                {"verification", "the destination is filled with a different pattern before "
                                 "timing; after sampling it must equal the source's hash "
                                 "pattern (checked on the destination GPU)"}};
    }

private:
    // Chunk k goes D2H into staging slot k % slots on the source GPU's stream, then H2D on
    // the destination GPU's stream once that D2H is done; a slot is refilled only after its
    // previous H2D finished. The two copy engines overlap on different chunks.
    void enqueue_op() {
        auto* staging = static_cast<unsigned char*>(m_staging.get());
        const auto* src = static_cast<const unsigned char*>(m_src.get());
        auto* dst = static_cast<unsigned char*>(m_dst.get());
        for (std::uint64_t off = 0; off < m_bytes; off += m_chunk, ++m_issued) {
            const std::uint64_t n = std::min(m_chunk, m_bytes - off);
            const auto slot = static_cast<std::size_t>(m_issued % k_staging_slots);
            unsigned char* host = staging + slot * m_chunk;
            gpu::set_device(m_pair.src);
            if (m_issued >= k_staging_slots)
                IB_CUDA_CHECK(cudaStreamWaitEvent(m_src_stream.get(), m_h2d_done[slot]->get(), 0));
            IB_CUDA_CHECK(cudaMemcpyAsync(host, src + off, n, cudaMemcpyDeviceToHost,
                                          m_src_stream.get()));
            IB_CUDA_CHECK(cudaEventRecord(m_d2h_done[slot]->get(), m_src_stream.get()));
            gpu::set_device(m_pair.dst);
            IB_CUDA_CHECK(cudaStreamWaitEvent(m_dst_stream.get(), m_d2h_done[slot]->get(), 0));
            IB_CUDA_CHECK(cudaMemcpyAsync(dst + off, host, n, cudaMemcpyHostToDevice,
                                          m_dst_stream.get()));
            IB_CUDA_CHECK(cudaEventRecord(m_h2d_done[slot]->get(), m_dst_stream.get()));
        }
    }

    double run(int reps) {
        m_region->begin();
        for (int r = 0; r < reps; ++r) enqueue_op();
        return m_region->end();
    }

    DevicePair m_pair;
    std::uint64_t m_bytes;
    std::uint64_t m_chunk;
    DeviceBuffer m_src, m_dst;
    HostBuffer m_staging;
    Stream m_src_stream, m_dst_stream;
    std::vector<std::unique_ptr<gpu::Event>> m_d2h_done, m_h2d_done;
    std::unique_ptr<TimedRegion> m_region;
    std::uint64_t m_issued = 0;
    int m_reps = 1;
};

class PeerStaged final : public PeerScenario {
public:
    PeerStaged()
        : PeerScenario(
              {"peer_staged",
               "peer",
               "GPU to GPU copy staged through pinned host memory, as without peer access",
               {pair_axis(), size_axis(sizes_mib({1, 4, 16, 64, 256, 1024})),
                {"chunk", "bytes per staged chunk (D2H and H2D of successive chunks overlap)",
                 AxisKind::size, sizes_mib({8}), {}}},
               {bandwidth_metric("bytes delivered to the destination GPU per second"),
                time_metric()},
               true,
               "size bytes per copy, counted once (the host round trip is not counted "
               "twice); bandwidth = size x copies / elapsed time"}) {}

    std::optional<std::string> unsupported(const Machine& machine,
                                           const Params& params) const override {
        if (auto why = peer::peer_unavailable(machine)) return why;
        const DevicePair p = params.pair("pair");
        if (auto why = peer::device_unavailable(machine, p.src)) return why;
        return peer::device_unavailable(machine, p.dst);
    }

    std::vector<PathUse> paths(const Params& params) const override {
        const DevicePair p = params.pair("pair");
        return {{PathKind::host_link, p.src, -1, "d2h"}, {PathKind::host_link, p.dst, -1, "h2d"}};
    }

    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& params) const override {
        return std::make_unique<StagedCase>(ctx, params.pair("pair"),
                                            params.get_uint("size"), params.get_uint("chunk"));
    }
};

// ---- pointer-chase latency ----------------------------------------------------------------

enum class Target { local, host, peer };

Target parse_target(const std::string& s) {
    return s == "host" ? Target::host : s == "peer" ? Target::peer : Target::local;
}

class ChaseCase final : public Case {
public:
    ChaseCase(const CaseContext& ctx, int device, Target target, int peer_gpu,
              std::uint64_t footprint)
        : m_device(device), m_target(target), m_peer(peer_gpu), m_footprint(footprint),
          m_order(peer::chase_order(static_cast<std::uint32_t>(footprint / k_chase_stride),
                                    k_seed)),
          m_state(device, sizeof(std::uint64_t)), m_stream(device) {
        const std::vector<std::uint32_t> next = peer::chase_next(m_order);
        const std::uint64_t nodes = m_order.size();
        if (target == Target::host) {
            m_host = HostBuffer(HostMem::pinned, footprint);
            m_base = reinterpret_cast<std::uint64_t>(m_host.device_ptr());
            auto* words = static_cast<unsigned char*>(m_host.get());
            for (std::uint64_t i = 0; i < nodes; ++i)
                *reinterpret_cast<std::uint64_t*>(words + i * k_chase_stride) =
                    m_base + next[i] * k_chase_stride;
        } else {
            const int owner = target == Target::peer ? peer_gpu : device;
            if (target == Target::peer && !gpu::enable_peer_access(device, peer_gpu))
                throw ConfigError(*peer_access_missing(device, peer_gpu));
            m_memory = DeviceBuffer(owner, footprint);
            m_base = reinterpret_cast<std::uint64_t>(m_memory.get());
            DeviceBuffer next_dev(owner, nodes * sizeof(std::uint32_t));
            gpu::set_device(owner);
            IB_CUDA_CHECK(cudaMemcpy(next_dev.get(), next.data(), nodes * sizeof(std::uint32_t),
                                     cudaMemcpyHostToDevice));
            IB_CUDA_CHECK(kernels::launch_chain_build(
                m_memory.get(), static_cast<const std::uint32_t*>(next_dev.get()), nodes,
                k_chase_stride, nullptr));
            IB_CUDA_CHECK(cudaDeviceSynchronize());
        }
        gpu::set_device(device);
        IB_CUDA_CHECK(cudaMemcpy(m_state.get(), &m_base, sizeof m_base, cudaMemcpyHostToDevice));
        m_region = std::make_unique<TimedRegion>(std::vector<const Stream*>{&m_stream}, true);
        const double per_hop = run(k_chase_calibration_hops) / k_chase_calibration_hops;
        if (per_hop > 0)
            m_hops = std::clamp(static_cast<std::uint64_t>(ctx.sample_time_s / per_hop),
                                k_chase_min_hops, k_chase_max_hops);
    }

    Sample measure() override { return {run(m_hops) / static_cast<double>(m_hops)}; }

    void check() override {
        std::uint64_t at = 0;
        gpu::set_device(m_device);
        IB_CUDA_CHECK(cudaMemcpy(&at, m_state.get(), sizeof at, cudaMemcpyDeviceToHost));
        const std::uint64_t expected =
            m_base + m_order[m_total_hops % m_order.size()] * k_chase_stride;
        if (at != expected)
            throw CheckFailed(fmt::format(
                "pointer chase ended at {:#x} after {} hops, expected {:#x}: a load returned "
                "wrong data",
                at, m_total_hops, expected));
    }

    nlohmann::json details() const override {
        const int owner = m_target == Target::peer ? m_peer : m_device;
        int l2 = 0;
        if (m_target != Target::host &&
            cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, owner) != cudaSuccess) {
            cudaGetLastError();
            l2 = 0;
        }
        nlohmann::json j = {
            {"chasing_gpu", m_device},
            {"memory", m_target == Target::host   ? std::string("pinned host memory")
                       : m_target == Target::peer ? fmt::format("GPU {} memory", m_peer)
                                                  : fmt::format("GPU {} memory", m_device)},
            {"footprint_bytes", m_footprint},
            {"nodes", m_order.size()},
            {"node_stride_bytes", k_chase_stride},
            {"hops_per_sample", m_hops},
            {"load", "one thread, dependent 8-byte ld.global.cg loads (L1 bypassed), nodes "
                     "visited in a random cyclic order"},
            {"verification", "the address the chase ends on after all hops must be the node "
                             "the host computes from the same order"}};
        // Host memory is left to the report's host-path annotation; the others name their
        // own path, as the `device` axis alone would otherwise be read as host <-> device.
        if (m_target == Target::local) j["path"] = "local";
        if (m_target == Target::peer)
            j["path"] = fmt::format("GPU {} -> GPU {} (peer access)", m_device, m_peer);
        if (l2 > 0) {
            j["owner_l2_bytes"] = l2;
            j["fits_in_owner_l2"] = m_footprint <= static_cast<std::uint64_t>(l2);
        }
        return j;
    }

private:
    double run(std::uint64_t hops) {
        m_region->begin();
        gpu::set_device(m_device);
        IB_CUDA_CHECK(kernels::launch_pointer_chase(static_cast<std::uint64_t*>(m_state.get()),
                                                    hops, m_stream.get()));
        m_total_hops += hops;
        return m_region->end();
    }

    int m_device;
    Target m_target;
    int m_peer;
    std::uint64_t m_footprint;
    std::vector<std::uint32_t> m_order;
    DeviceBuffer m_memory;
    HostBuffer m_host;
    DeviceBuffer m_state;
    Stream m_stream;
    std::unique_ptr<TimedRegion> m_region;
    std::uint64_t m_base = 0;
    std::uint64_t m_hops = k_chase_min_hops;
    std::uint64_t m_total_hops = 0;
};

class Latency final : public PeerScenario {
public:
    Latency()
        : PeerScenario(
              {"latency",
               "peer",
               "pointer-chase latency from a GPU to local, pinned host or peer GPU memory",
               {choice_axis("target",
                            "memory the GPU reads: local (its own), host (pinned host memory), peer "
                            "(the memory of GPU `peer`)",
                            {"local", "host", "peer"}),
                {"device", "the GPU that chases the pointers", AxisKind::device, {}, {}},
                {"peer",
                 "the GPU whose memory is read for target=peer; local and host run once per "
                 "GPU, where peer equals device",
                 AxisKind::device, {}, {}},
                {"footprint",
                 "bytes the chain spans; 1 MiB stays in the owning side's L2 (the link's "
                 "own latency), 1 GiB mostly misses it (adds DRAM and TLB misses)",
                 AxisKind::size, sizes_mib({1, 1024}), {}}},
               {{"latency", "s", Better::lower, "time per dependent load"}},
               true,
               "one dependent 8-byte load per hop; latency = elapsed time / hops"}) {}

    std::optional<std::string> unsupported(const Machine& machine,
                                           const Params& params) const override {
        if (auto why = peer::peer_unavailable(machine)) return why;
        const auto target = parse_target(params.get("target"));
        const int device = static_cast<int>(params.get_uint("device"));
        const int peer_gpu = static_cast<int>(params.get_uint("peer"));
        if (auto why = peer::device_unavailable(machine, device)) return why;
        if (target != Target::peer && peer_gpu != device)
            return fmt::format("target={} does not read another GPU; it runs once per GPU, "
                               "under peer={}",
                               params.get("target"), device);
        if (target == Target::peer && peer_gpu == device)
            return std::string("target=peer needs a peer GPU different from device");
        const std::uint64_t nodes = params.get_uint("footprint") / k_chase_stride;
        if (nodes < 2 || nodes > UINT32_MAX)
            return fmt::format("footprint must hold 2 to 2^32-1 nodes of {} bytes",
                               k_chase_stride);
        if (target == Target::peer) {
            if (auto why = peer::device_unavailable(machine, peer_gpu)) return why;
            return peer_access_missing(device, peer_gpu);
        }
        return std::nullopt;
    }

    std::vector<PathUse> paths(const Params& params) const override {
        const int device = static_cast<int>(params.get_uint("device"));
        switch (parse_target(params.get("target"))) {
        case Target::local: return {{PathKind::gpu_memory, device}};
        case Target::host: return {{PathKind::host_link, device, -1, "h2d"}};
        case Target::peer: return {{PathKind::peer_link, static_cast<int>(params.get_uint("peer")), device}};
        }
        return {};
    }

    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& params) const override {
        return std::make_unique<ChaseCase>(ctx, static_cast<int>(params.get_uint("device")),
                                           parse_target(params.get("target")),
                                           static_cast<int>(params.get_uint("peer")),
                                           params.get_uint("footprint"));
    }
};

} // namespace

void register_peer(Registry& r) {
    r.add(std::make_unique<PeerCopy>());
    r.add(std::make_unique<PeerBidir>());
    r.add(std::make_unique<PeerStaged>());
    r.add(std::make_unique<PeerFan>(true));
    r.add(std::make_unique<PeerFan>(false));
    r.add(std::make_unique<Latency>());
}

} // namespace interopbench
