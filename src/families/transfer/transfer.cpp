// transfer: any set of transfers that run at the same time, written in the transfer language
// (spec.hpp, docs/TRANSFERS.md), measured together and, as configurations of their own, each
// by itself.
//
// What: per transfer, its bandwidth while every other transfer of the set runs (a broadcast's
// bytes counted once per destination); for the set, the sum of those. A set of several
// transfers expands to the set and each of its transfers alone (unless --no-alone), so that the
// annotation (annotate.cpp) can say what sharing cost and which shared path limited whom.
// How: each transfer has its own mover (movers.cpp) and thread; before a sample every file's cache
// state is put in place (cold ones first: dropping pages must not undo a warm file's pass), then
// every thread starts at once. A transfer times its own `ops` operations (CUDA events on its
// stream, or the host clock for CPU threads and files) and then, when it repeats, keeps its path
// busy until every other transfer's timed part is over, so each figure is taken under the whole
// set's load. `ops` per transfer is set once, from an untimed concurrent round of one operation
// each: enough to last as long as the longest transfer's operation, and at least the sample time.
// Files are read or written once per sample. Data is verified after sampling by each mover.
// Caveats: a transfer much shorter than the others is timed over fewer, repeated operations; its
// path may be idle for a moment between the end of its timed part and the others' ends, which
// lowers their contention slightly. Beside others a stream transfer queues one operation at a time
// (movers.cpp says why), which costs it the host's turnaround between operations. Sets run in one
// process: under mpirun they are skipped.
#include <algorithm>
#include <cmath>
#include <exception>
#include <latch>
#include <limits>
#include <map>
#include <thread>
#include <tuple>

#include <unistd.h>

#include <fmt/format.h>

#include "families/transfer/movers.hpp"
#include "families/transfer/spec.hpp"
#include "families/transfer/transfer.hpp"
#include "hostio/readers.hpp"
#include "interopbench/errors.hpp"
#include "topology/topology.hpp"

namespace interopbench::transfer {

std::string transfer_metric(std::size_t index) { return fmt::format("bandwidth_{}", index); }

namespace {

/// Most operations one transfer times in a sample.
constexpr int k_max_ops = 1 << 16;
/// The default set: both directions of GPU 0's host link at once.
constexpr const char* k_default_set = "host:pinned -> gpu0 via ce 64M; gpu0 -> host:pinned via ce 64M";

/// A prepared set: its movers, each run on its own thread.
class SetCase final : public Case {
public:
    SetCase(const CaseContext& ctx, storage::Site& site, TransferSet set) : m_set(std::move(set)) {
        // Two reads of files of one size and directory get two files: their cache states are their own.
        std::map<std::pair<std::uint64_t, int>, unsigned> copies;
        for (std::size_t i = 0; i < m_set.transfers.size(); ++i) {
            const Transfer& t = m_set.transfers[i];
            MoverSetup setup{&ctx, &site, static_cast<unsigned>(i), 0};
            if (t.src.where == Where::file) setup.file_copy = copies[{t.size, t.src.dir}]++;
            m_movers.push_back(make_mover(t, setup));
        }
        // An untimed round of one operation each, all at once, sets how many each times per
        // sample (the runner's warm-up samples come after it).
        const std::vector<double> once = round(std::vector<int>(m_movers.size(), 1));
        const double longest = *std::max_element(once.begin(), once.end());
        const double target = std::max(ctx.sample_time_s, longest);
        m_expected_s = longest;
        for (std::size_t i = 0; i < m_movers.size(); ++i)
            m_ops.push_back(m_movers[i]->repeats() && once[i] > 0
                                ? static_cast<int>(std::clamp(std::llround(target / once[i]), 1LL, static_cast<long long>(k_max_ops)))
                                : 1);
    }

    Sample measure() override {
        const std::vector<double> secs = round(m_ops);
        Sample s(1 + k_max_transfers, std::numeric_limits<double>::quiet_NaN());
        double sum = 0;
        for (std::size_t i = 0; i < m_movers.size(); ++i) {
            const double bw = secs[i] > 0 ? static_cast<double>(m_movers[i]->bytes()) * m_ops[i] / secs[i]
                                          : std::numeric_limits<double>::quiet_NaN();
            s[1 + i] = bw;
            sum += bw;
        }
        s[0] = sum;
        return s;
    }

    void check() override {
        for (std::size_t i = 0; i < m_movers.size(); ++i) {
            try {
                m_movers[i]->check();
            } catch (const CheckFailed& e) {
                throw CheckFailed(fmt::format("transfer {} ({}): {}", i + 1, m_set.transfers[i].words(), e.what()));
            }
        }
    }

    nlohmann::json details() const override {
        nlohmann::json transfers = nlohmann::json::array();
        for (std::size_t i = 0; i < m_movers.size(); ++i) {
            nlohmann::json j = m_movers[i]->details();
            j["index"] = i + 1;
            j["transfer"] = m_set.transfers[i].text();
            j["words"] = m_set.transfers[i].words();
            j["metric"] = transfer_metric(i + 1);
            j["bytes_per_op"] = m_movers[i]->bytes();
            j["ops_per_sample"] = m_ops[i];
            transfers.push_back(std::move(j));
        }
        nlohmann::json j{{"transfers", std::move(transfers)},
                         {"concurrent", m_movers.size()},
                         {"set", m_set.words()},
                         {"verification", "every transfer's destination checked after sampling (see each transfer)"}};
        if (m_movers.size() > 1)
            j["timing"] = "all transfers start together; each is timed over its own operations while every other one "
                          "keeps running, and bandwidth sums their bandwidths";
        return j;
    }

private:
    /// Runs `ops[i]` operations of every mover at once; returns each one's seconds.
    std::vector<double> round(const std::vector<int>& ops) {
        for (const bool cold : {true, false})
            for (std::size_t i = 0; i < m_movers.size(); ++i)
                if ((m_set.transfers[i].src.cache == Cache::cold) == cold) m_movers[i]->before_sample();
        const std::size_t n = m_movers.size();
        Gate gate(n, m_expected_s);
        std::vector<double> secs(n, 0);
        if (n == 1) {
            secs[0] = m_movers[0]->run(ops[0], gate);
            return secs;
        }
        std::vector<std::exception_ptr> errors(n);
        std::latch go(1);
        std::vector<std::thread> threads;
        threads.reserve(n);
        for (std::size_t i = 0; i < n; ++i)
            threads.emplace_back([&, i] {
                go.wait();
                try {
                    secs[i] = m_movers[i]->run(ops[i], gate);
                } catch (...) {
                    errors[i] = std::current_exception();
                    gate.abort();
                }
            });
        go.count_down();
        for (auto& t : threads) t.join();
        for (const auto& e : errors)
            if (e) std::rethrow_exception(e);
        return secs;
    }

    TransferSet m_set;
    std::vector<std::unique_ptr<Mover>> m_movers;
    std::vector<int> m_ops;
    double m_expected_s = 0; ///< the longest transfer's one operation in the untimed round
};

/// Why GPU `g` cannot take part: it does not exist, or it is not selected.
std::optional<std::string> gpu_missing(const Machine& m, int g) {
    if (!m.device(g)) return fmt::format("GPU {} does not exist: {} GPU(s) visible", g, m.devices.size());
    if (std::find(m.selected.begin(), m.selected.end(), g) == m.selected.end())
        return fmt::format("GPU {} is not among the selected GPUs (--devices)", g);
    return std::nullopt;
}

/// Whether `t` needs CUDA: a GPU, or host memory that CUDA pins.
bool needs_cuda(const Transfer& t) {
    const auto pinned = [](const Endpoint& e) { return e.where == Where::host && e.host != HostKind::pageable; };
    return t.driver() >= 0 || pinned(t.src) || pinned(t.dst);
}

class TransferScenario final : public storage::SiteScenario {
public:
    TransferScenario(std::shared_ptr<storage::Site> site, bool alone) : SiteScenario(std::move(site)), m_alone(alone) {
        m_info.id = k_scenario;
        m_info.family = "transfer";
        m_info.summary = "any set of transfers at once (host, GPU, file and null endpoints; copy engine, SM kernel, CPU "
                         "threads, file readers), each also alone: per-transfer and summed bandwidth, what sharing costs";
        m_info.axes = {{k_axis,
                        "transfers that run at once: SRC -> DST [via EXECUTOR] [SIZE] joined by ';' (docs/TRANSFERS.md; "
                        "run -t SET); a set of several also measures each transfer alone unless --no-alone",
                        AxisKind::text,
                        {k_default_set},
                        {}}};
        m_info.metrics = {{"bandwidth", "B/s", Better::higher,
                           "the set's transfers' bandwidths summed, each timed while all the others run"}};
        for (std::size_t i = 1; i <= k_max_transfers; ++i)
            m_info.metrics.push_back({transfer_metric(i), "B/s", Better::higher,
                                      fmt::format("transfer {} of the set: its bytes over its own timed operations", i)});
        m_info.needs_gpu = true;
        m_info.counting = "bytes counted once per transfer operation (a copy, a file read or written, a read or write of "
                          "null), a broadcast's once per destination (bytes written: size x destinations; its source is "
                          "read once); bandwidth sums the transfers' own bandwidths, each timed while every other transfer "
                          "of the set keeps running";
    }

    const ScenarioInfo& info() const override { return m_info; }

    std::vector<std::string> expand_text(const Axis&, const std::string& text, const Machine& machine) const override {
        return expand(text, scope_of(machine, site().named_dirs()), m_alone);
    }

    std::vector<PathUse> paths(const Params& p) const override { return set_paths(parse_set(p.get(k_axis))); }

    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        TransferSet set;
        try {
            set = parse_set(p.get(k_axis));
        } catch (const UsageError& e) {
            return fmt::format("the set cannot be read: {}", e.what());
        }
        const bool cuda = std::any_of(set.transfers.begin(), set.transfers.end(), needs_cuda);
        if (cuda)
            if (auto why = gpu_unavailable_reason(m)) return why;
        if (m.world && m.world->size() > 1)
            return std::string("a transfer set runs in one process that drives every GPU it names; under mpirun each rank has "
                               "its own GPU (run it without mpirun)");
        std::map<int, std::uint64_t> device_bytes;
        std::uint64_t host_bytes = 0, warm_bytes = 0;
        for (const Transfer& t : set.transfers) {
            for (int g : t.gpus())
                if (auto why = gpu_missing(m, g)) return why;
            std::vector<Endpoint> ends = t.destinations();
            ends.insert(ends.begin(), t.src);
            for (const Endpoint& e : ends) {
                if (e.where == Where::gpu) device_bytes[e.gpu] += t.size;
                if (e.where == Where::host) {
                    host_bytes += t.size;
                    if (e.numa >= 0 && !numa_node_exists(static_cast<unsigned>(e.numa)))
                        return fmt::format("NUMA node {} does not exist here ({} node(s))", e.numa, numa_node_count());
                }
            }
            if (t.exec.engine != Engine::ce && t.exec.engine != Engine::sm)
                if (auto why = storage::threads_refused(t.exec.threads, m.host_cores)) return why;
            if (t.src.where == Where::file || t.dst.where == Where::file) {
                const Endpoint& f = t.src.where == Where::file ? t.src : t.dst;
                const std::size_t dirs = site().named_dirs().size();
                if (f.dir >= 0 && static_cast<std::size_t>(f.dir) >= dirs)
                    return fmt::format("file{} names storage directory {}: the run has {} (--storage-dir)", f.dir, f.dir, dirs);
                if (f.cache == Cache::cold)
                    if (auto why = site().cold_unreachable()) return why;
                if (f.cache == Cache::warm) warm_bytes += t.size;
                if (t.exec.engine == Engine::pinned) host_bytes += t.size; // the pinned buffer
                if (t.exec.engine == Engine::pipelined) host_bytes += std::min<std::uint64_t>(t.size, std::uint64_t{t.exec.threads} * t.exec.ring * t.exec.chunk);
            }
        }
        for (const auto& [g, bytes] : device_bytes)
            if (const DeviceInfo* d = m.device(g); d && bytes > d->free_memory)
                return fmt::format("the set's {} on GPU {} do not fit in its free memory ({})", format_size(bytes), g,
                                   format_size(d->free_memory));
        const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
        const double mem = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
        if (warm_bytes > 0 && mem > 0 && 1.25 * static_cast<double>(warm_bytes) + static_cast<double>(host_bytes) > mem)
            return fmt::format("warm files need their pages in memory: {} of warm files and {} of host buffers do not fit "
                               "in {} of RAM",
                               format_size(warm_bytes), format_size(host_bytes), format_size(static_cast<std::uint64_t>(mem)));
        return host_memory_shortfall(host_bytes);
    }

    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        return std::make_unique<SetCase>(ctx, site(), parse_set(p.get(k_axis)));
    }

private:
    bool m_alone;
    ScenarioInfo m_info;
};

} // namespace

void register_transfer(Registry& r, std::shared_ptr<storage::Site> site, bool alone) {
    r.add(std::make_unique<TransferScenario>(std::move(site), alone));
}

std::optional<SiteClaim> site_claim(const std::vector<Config>& configs, std::size_t dirs) {
    SiteClaim claim;
    bool files = false;
    std::set<std::tuple<std::uint64_t, unsigned, int>> read;
    std::uint64_t most_written = 0;
    for (const Config& c : configs) {
        if (c.scenario->id() != k_scenario) continue;
        TransferSet set;
        try {
            set = parse_set(c.params.get(k_axis));
        } catch (const UsageError&) {
            continue; // unsupported() says so for the configuration
        }
        std::map<std::pair<std::uint64_t, int>, unsigned> copies;
        std::uint64_t written = 0;
        for (const Transfer& t : set.transfers) {
            if (t.src.where == Where::file) {
                files = true;
                const unsigned copy = copies[{t.size, t.src.dir}]++;
                if (!read.insert({t.size, copy, t.src.dir}).second) continue;
                if (copy == 0 && t.src.dir < 0) claim.read_sizes.insert(t.size);
                else claim.bytes += t.src.dir < 0 ? t.size : t.size * std::max<std::size_t>(1, dirs);
            }
            if (t.dst.where == Where::file) {
                files = true;
                written += t.dst.dir < 0 ? t.size : t.size * std::max<std::size_t>(1, dirs);
            }
        }
        most_written = std::max(most_written, written);
    }
    if (!files) return std::nullopt;
    claim.bytes += most_written;
    return claim;
}

} // namespace interopbench::transfer
