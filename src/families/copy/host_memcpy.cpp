// host_memcpy: host-to-host copy bandwidth (memcpy), single-threaded and with every core.
//
// What: the host-side ceiling of the pageable path (the driver stages pageable copies
// through its own pinned buffers with memcpy) and a real measurement on machines
// without a GPU. How: a source filled with a pattern is copied into a destination that
// was written once beforehand (no page faults in the timed window); `threads=all` splits
// the buffer into one contiguous chunk per hardware thread. Host clock (steady_clock).
// Reports bandwidth (bytes counted once per copy) and time per copy. Caveat: sizes
// that fit in the CPU caches report cache bandwidth, not memory bandwidth.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "gpu/cuda_util.hpp"
#include "hostio/pattern.hpp"
#include "topology/topology.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {
namespace {

class HostMemcpyCase final : public Case {
public:
    HostMemcpyCase(const CaseContext& ctx, std::size_t bytes, unsigned threads)
        : m_ctx(ctx), m_bytes(bytes), m_threads(threads), m_src(gpu::HostMem::pageable, bytes),
          m_dst(gpu::HostMem::pageable, bytes) {
        hostio::fill_pattern(m_src.get(), bytes, k_seed);
        std::memset(m_dst.get(), 0, bytes);
        m_reps = 1;
        const double t = timed_copies(1);
        m_reps = gpu::reps_for(t, ctx.sample_time_s, 100000);
    }

    Sample measure() override {
        const double t = timed_copies(m_reps);
        return {static_cast<double>(m_bytes) * m_reps / t, t / m_reps};
    }

    void check() override {
        if (const auto bad = hostio::count_pattern_mismatches(m_dst.get(), m_bytes, k_seed))
            throw CheckFailed(fmt::format("{} of {} words differ from the source", bad, (m_bytes + 7) / 8));
    }

    nlohmann::json details() const override {
        return {{"bytes_per_op", m_bytes}, {"ops_per_sample", m_reps}, {"threads_used", m_threads},
                {"timer", "host steady_clock"}, {"verification", "pattern compared word by word"}};
    }

private:
    static constexpr std::uint64_t k_seed = 0x1b05;

    double timed_copies(int reps) {
        auto* dst = static_cast<char*>(m_dst.get());
        const auto* src = static_cast<const char*>(m_src.get());
        const auto t0 = std::chrono::steady_clock::now();
        if (m_threads <= 1) {
            for (int r = 0; r < reps; ++r) {
                std::memcpy(dst, src, m_bytes);
                asm volatile("" ::: "memory"); // keep every copy
            }
        } else {
            std::vector<std::thread> pool;
            // Round each thread's share up (never down: the last bytes must have a thread),
            // then to whole cache lines.
            const std::size_t share = m_bytes / m_threads + (m_bytes % m_threads != 0);
            const std::size_t chunk = (share + 63) / 64 * 64;
            for (unsigned t = 0; t < m_threads; ++t) {
                const std::size_t b = std::min(m_bytes, t * chunk), e = std::min(m_bytes, b + chunk);
                if (b >= e) break;
                pool.emplace_back([=] {
                    for (int r = 0; r < reps; ++r) {
                        std::memcpy(dst + b, src + b, e - b);
                        asm volatile("" ::: "memory");
                    }
                });
            }
            for (auto& th : pool) th.join();
        }
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }

    CaseContext m_ctx;
    std::size_t m_bytes;
    unsigned m_threads;
    gpu::HostBuffer m_src, m_dst;
    int m_reps = 1;
};

class HostMemcpy final : public Scenario {
public:
    HostMemcpy() {
        m_info.id = "host_memcpy";
        m_info.family = "copy";
        m_info.summary = "host-to-host memcpy bandwidth, one thread and all threads (runs without a GPU)";
        m_info.needs_gpu = false;
        m_info.counting = "bytes copied once per copy (not read + write)";
        m_info.axes = {
            {"size", "bytes per copy", AxisKind::size, {"4K:1G:x4"}, {}},
            choice_axis("threads", "single: one thread; multi: one per hardware thread", {"single", "multi"}),
        };
        m_info.metrics = {
            {"bandwidth", "B/s", Better::higher, "bytes per copy over time per copy"},
            {"time", "s", Better::lower, "time per copy"},
        };
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params&) const override {
        return {{PathKind::host_memory, -1, -1, "", 2}}; // read and written
    }
    std::optional<std::string> unsupported(const Machine&, const Params& p) const override {
        const std::uint64_t size = p.get_uint("size");
        if (size > std::numeric_limits<std::uint64_t>::max() / 2) return host_memory_shortfall(size);
        return host_memory_shortfall(2 * size); // source and destination
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        // Undo any placement near a GPU: this scenario measures the whole host.
        reset_placement();
        const unsigned threads = p.get("threads") == "multi" ? std::max(1u, ctx.machine->host_cores) : 1u;
        return std::make_unique<HostMemcpyCase>(ctx, p.get_uint("size"), threads);
    }

private:
    ScenarioInfo m_info;
};

} // namespace

void register_host_memcpy(Registry& r) { r.add(std::make_unique<HostMemcpy>()); }

} // namespace interopbench
