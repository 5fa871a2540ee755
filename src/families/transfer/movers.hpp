#pragma once
// The transfer family's movers: what moves one transfer's bytes (a copy engine or SM kernel on a
// stream, CPU threads, a file reader or writer through a pinned ring), each able to run its
// operations at the same time as the set's other transfers and to keep its path busy until they
// have all finished theirs.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "families/transfer/spec.hpp"
#include "hostio/storage_io.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench::transfer {

/// The transfers of one sample: each says when its timed operations are done; those that repeat
/// keep going until every transfer is done, so that each timed part runs beside all the others.
class Gate {
public:
    /// `expected_s`: the longest transfer's one operation in the set's untimed round (0: not known yet).
    explicit Gate(std::size_t transfers, double expected_s = 0)
        : m_left(static_cast<long>(transfers)), m_alone(transfers == 1), m_expected(expected_s) {}
    void done() { m_left.fetch_sub(1); }
    /// Every transfer has finished its timed operations (or one failed: stop).
    bool all_done() const { return m_left.load() <= 0; }
    /// A set of one: nothing to keep busy for.
    bool alone() const { return m_alone; }
    /// A transfer failed: the others stop keeping busy.
    void abort() { m_left.store(0); }
    double expected_s() const { return m_expected; }

private:
    std::atomic<long> m_left;
    bool m_alone;
    double m_expected;
};

/// One transfer of a prepared set.
class Mover {
public:
    virtual ~Mover() = default;
    /// Untimed, before every sample, on the measuring thread: a file's cache state.
    virtual void before_sample() {}
    /// Whether operations repeat within a sample (a file is read or written once per sample).
    virtual bool repeats() const { return true; }
    /// Runs `ops` operations from now (on its own thread, beside the others), calls gate.done()
    /// once they are complete, then (when it repeats and has company) keeps its path busy until
    /// gate.all_done(); returns the seconds of the `ops` operations.
    virtual double run(int ops, Gate& gate) = 0;
    /// Bytes one operation moves.
    virtual std::uint64_t bytes() const = 0;
    /// After sampling: throws CheckFailed when the destination's data is wrong.
    virtual void check() = 0;
    /// Facts for the report: the path, who drives it, the timer, how data is checked.
    virtual nlohmann::json details() const = 0;
};

/// What a mover is made with.
struct MoverSetup {
    const CaseContext* ctx = nullptr;
    storage::Site* site = nullptr; ///< the run's storage site (file endpoints)
    unsigned index = 0;            ///< the transfer's place in its set: its pattern seed
    unsigned file_copy = 0;        ///< a file read: which copy of its size it reads (pattern_file)
};

/// The mover of `t`: allocates and fills its buffers, opens its files, places its host side
/// (the NUMA node named, else near its GPU). Throws ConfigError, Unsupported.
std::unique_ptr<Mover> make_mover(const Transfer& t, const MoverSetup& setup);

} // namespace interopbench::transfer
