#pragma once
/// The transfer language (docs/TRANSFERS.md): a set of transfers that run at the same time, as
/// text. Parsed from the written form ("host:pinned -> gpu0 via ce 1G; gpu0 -> gpu1 via sm:16";
/// a broadcast "gpu0 -> {gpu1,host:pinned} via sm 1G") or the canonical one
/// ("host:pinned->gpu0_ce_1GiB+gpu0->gpu1_sm:16_256MiB", "gpu0->gpu1&host:pinned_sm_1GiB": what
/// result keys hold), its GPU selectors expanded over the machine's GPUs, written back
/// canonically, and the paths each transfer crosses (limits.hpp). Host-only: no CUDA, tests use
/// all of it without a GPU.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "interopbench/limits.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench::transfer {

/// What an endpoint is.
enum class Where { host, gpu, file, null };
/// Host memory kinds of an endpoint (gpu::HostMem has the same names).
enum class HostKind { pageable, pinned, registered, write_combined };
/// A file read's cache state before each sample (none for a file written).
enum class Cache { none, warm, cold };

struct Endpoint {
    Where where = Where::null;
    HostKind host = HostKind::pinned;
    int numa = -1;          ///< host: the NUMA node (OS index); -1: near the transfer's GPU
    int gpu = -1;           ///< gpu: the CUDA ordinal
    int dir = -1;           ///< file: the storage directory's index; -1: every one (striped)
    Cache cache = Cache::none;
    bool operator==(const Endpoint&) const = default;
    /// Canonical text: "host:pinned", "host:pageable@numa1", "gpu3", "file:warm", "file1", "null".
    std::string text() const;
};

/// What moves the bytes.
enum class Engine { ce, sm, cpu, pipelined, pinned, read };

struct Executor {
    Engine engine = Engine::ce;
    unsigned blocks = 0;     ///< sm: thread blocks of the copy kernel; 0: sized for every SM
    unsigned threads = 0;    ///< cpu, pipelined, pinned, read: threads
    std::uint64_t chunk = 0; ///< pipelined, pinned, read: bytes per I/O and per ring slot
    unsigned ring = 0;       ///< pipelined: pinned chunk buffers per thread
    bool pull = false;       ///< GPU to GPU: the destination GPU drives the copy (else the source)
    bool operator==(const Executor&) const = default;
    /// Canonical text, options at their defaults left out: "ce", "sm:16", "pipelined:threads=8".
    std::string text() const;
};

/// Defaults of the executors' options and of a transfer's size.
inline constexpr unsigned k_default_threads = 4;
inline constexpr std::uint64_t k_default_chunk = 16ull << 20;
inline constexpr unsigned k_default_ring = 4;
inline constexpr std::uint64_t k_default_size = 256ull << 20;
/// Most transfers one set may hold after its selectors are expanded.
inline constexpr std::size_t k_max_transfers = 16;
/// Most destinations one broadcast writes (the kernel's pointers, transfer_kernels.hpp).
inline constexpr std::size_t k_max_destinations = 8;

struct Transfer {
    Endpoint src, dst;
    Executor exec;
    std::uint64_t size = 0;
    /// A broadcast's further destinations, after `dst`: the source (a GPU) is read once and
    /// every destination written by one SM kernel. Empty for any other transfer.
    std::vector<Endpoint> also;
    bool operator==(const Transfer&) const = default;
    /// Canonical text: "host:pinned->gpu0_ce_1GiB", "gpu0->gpu1&host:pinned_sm_1GiB" (only
    /// letters, digits and : @ = . - > _ &).
    std::string text() const;
    /// For people: "host:pinned -> gpu0 via ce 1GiB", "gpu0 -> {gpu1,host:pinned} via sm 1GiB".
    std::string words() const;
    /// Whether it writes several destinations from one read.
    bool broadcast() const { return !also.empty(); }
    /// Every destination: `dst`, then `also`.
    std::vector<Endpoint> destinations() const;
    /// The destinations' canonical text: "gpu1", "gpu1&host:pinned".
    std::string destinations_text() const;
    /// The bytes one operation counts: the size, once per destination (a broadcast's bytes
    /// written; its source is read once).
    std::uint64_t counted_bytes() const { return size * (1 + also.size()); }
    /// The paths its bytes cross, each with the bytes that cross it per byte counted.
    std::vector<PathUse> paths() const;
    /// The GPU whose stream or kernel moves the bytes, or -1 (CPU threads).
    int driver() const;
    /// The GPUs it touches, each once.
    std::vector<int> gpus() const;
};

struct TransferSet {
    std::vector<Transfer> transfers;
    /// Canonical text: the transfers' joined by '+'.
    std::string text() const;
    /// For people: the transfers' joined by "; ".
    std::string words() const;
};

/// What expanding a set needs to know of the run.
struct Scope {
    bool gpus_known = false;   ///< CUDA sees GPUs: named ones are checked, wildcards expand over `selected`
    std::size_t gpus = 0;      ///< GPUs visible
    std::vector<int> selected; ///< GPUs of the run (--devices)
    /// The run's storage directories as named (--storage-dir, or the default): `file:DIR` must be
    /// one of them. Empty: a directory name is refused.
    std::vector<std::string> storage_dirs;
};
/// The scope of a run on `machine` with the storage site's directories `storage_dirs`.
Scope scope_of(const Machine& machine, std::vector<std::string> storage_dirs = {});

/// Parses a set in either form and expands its GPU selectors over `scope`: `gpu*` is every
/// selected GPU (when no GPU is known: gpu0, or gpu0 and gpu1 between GPUs, as device and pair
/// axes default without GPUs), `gpu[0..3]` and `gpu[0,2]` the GPUs named; a
/// transfer with such a selector becomes one per GPU (per pair of GPUs), leaving out copies of
/// a GPU to itself. In a broadcast's destination list a selector names every GPU it holds but
/// the source, all in the one transfer. Throws UsageError, one line naming the token and the
/// fix, for anything else: an unknown endpoint or executor (with the near word), a GPU this
/// machine lacks, a size of 0, a file endpoint that is no directory of the run, an executor
/// that cannot move between the two endpoints, a broadcast that is not a GPU's by `sm` to GPU
/// memory and pinned or registered host memory, more than k_max_destinations destinations or one
/// named twice, more than k_max_transfers transfers.
TransferSet parse_set(std::string_view text, const Scope& scope = {});

/// The configurations one written set stands for, in canonical text: the set, then (with
/// `alone`, when it holds more than one transfer) each of its transfers by itself, each once. A
/// set given in its canonical text (as a result key holds it) stands for itself only.
std::vector<std::string> expand(std::string_view text, const Scope& scope, bool alone);

/// The paths the set's summed bandwidth crosses as a whole: those every transfer crosses (its
/// least traffic), a GPU's host link crossed both ways counted as "both", or one host link per
/// transfer on as many GPUs all one way, each at 1/n of the bytes (set against their sum where
/// the links are alike). None otherwise (each transfer's own are in the annotation).
std::vector<PathUse> set_paths(const TransferSet& set);

/// What two transfers must both name to share path `p`: its id, and for storage the directory
/// (two directories may be two drives).
std::string share_key(const Transfer& t, const PathUse& p);

} // namespace interopbench::transfer
