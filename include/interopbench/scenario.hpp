#pragma once
/// The scenario abstraction: static metadata, a support check, and a measured case.
///
/// A scenario family (say `h2d_copy`) declares axes and metrics. The runner expands the
/// axes into configurations (Params), asks `unsupported()` for each, then `prepare()`s a
/// Case and takes samples from it. No CUDA type appears here: the core stays host-only.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/limits.hpp"
#include "interopbench/params.hpp"

namespace interopbench {

/// How axis values are interpreted; decides default expansion and validation.
enum class AxisKind {
    size,        ///< byte sizes; values accept parse_size_list expressions
    integer,     ///< unsigned integers
    choice,      ///< one of `choices`
    device,      ///< a GPU ordinal; defaults to every selected GPU
    device_pair, ///< "A>B" ordered GPU pair; defaults to every ordered pair of selected GPUs
    text,        ///< free text the scenario reads itself (Scenario::expand_text): one value per
                 ///< given text, never split at commas
};

struct Axis {
    std::string name;
    std::string help;
    AxisKind kind = AxisKind::choice;
    /// Default values (canonical strings). Ignored for device and device_pair axes.
    std::vector<std::string> defaults;
    /// Allowed values for choice axes (defaults must be among them).
    std::vector<std::string> choices;
    /// Integer axes: the smallest and largest accepted value; expand_plan rejects others
    /// as usage errors.
    std::uint64_t min_value = 0;
    std::uint64_t max_value = std::numeric_limits<std::uint64_t>::max();
};

/// A choice axis that runs every one of its `values` by default: the list, written once, is
/// both its choices and its defaults, in that order.
inline Axis choice_axis(std::string name, std::string help, std::vector<std::string> values) {
    return {std::move(name), std::move(help), AxisKind::choice, values, values};
}

/// The `device` axis of a scenario that runs on one GPU: every selected GPU by default.
inline Axis device_axis() { return {"device", "GPU ordinal", AxisKind::device, {}, {}}; }

enum class Better { higher, lower };

struct MetricInfo {
    std::string name; ///< public id, e.g. "bandwidth"
    std::string unit; ///< SI base unit: "B/s", "s", "ratio", "1"
    Better better = Better::higher;
    std::string help;
};

/// Static description of a scenario family: no CUDA call is needed to produce it.
struct ScenarioInfo {
    std::string id;      ///< public id, e.g. "h2d_copy"
    std::string family;  ///< group for summaries, e.g. "copy", "alloc"
    std::string summary; ///< one line
    std::vector<Axis> axes;
    std::vector<MetricInfo> metrics; ///< metrics[0] is the primary one (stopping rule)
    bool needs_gpu = true;
    /// How bytes (or operations) are counted, in words, recorded in every result.
    std::string counting;
    /// The metric set against the limit of the paths the scenario declares (Scenario::paths);
    /// empty: the primary metric, when it is a bandwidth.
    std::string limited_metric;
};

/// One GPU as seen by the CUDA runtime (and NVML where present).
struct DeviceInfo {
    int ordinal = 0;
    std::string name;
    std::string uuid;
    std::string pci_bus_id; ///< "0000:1b:00.0", lower case
    int sm_count = 0;
    int cc_major = 0, cc_minor = 0;
    std::uint64_t total_memory = 0;
    std::uint64_t free_memory = 0;
    int clock_khz = 0;        ///< SM clock (max)
    int memory_clock_khz = 0; ///< memory clock (max)
    int memory_bus_width = 0; ///< bits
    int pcie_gen_current = 0, pcie_width_current = 0; ///< 0 when unknown
    int pcie_gen_max = 0, pcie_width_max = 0;
    int async_engines = 0;
    bool unified_addressing = false;
};

/// The processes of a multi-process run (MPI), as the core sees them. Absent (nullptr in
/// Machine) for a single-process run. Every rank calls every method in the same order.
class World {
public:
    virtual ~World() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    /// Rank within this node; selects the rank's GPU.
    virtual int local_rank() const = 0;
    virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
    virtual void barrier() = 0;
    /// Gathers one string from every rank at `root` (rank order); others get an empty list.
    virtual std::vector<std::string> gather(const std::string& mine, int root) = 0;
};

/// A library loaded at run time (NCCL, NVML, cuFile): its version when it loaded, else why
/// not. Families look theirs up by name; the report lists them all.
struct RuntimeLibrary {
    std::string name;    ///< "nccl", "nvml", "cufile"
    std::string version; ///< e.g. "2.28.3"; empty when it could not be loaded
    std::string note;    ///< why not loaded, or a remark (mode, path); may be empty
    bool loaded() const { return !version.empty(); }
};

/// What the machine offers. Filled by the GPU library (probe) or by tests.
struct Machine {
    bool cuda_available = false; ///< driver present and at least one device
    std::string cuda_note;       ///< why not, when not available
    int driver_version = 0;      ///< CUDA driver API version, e.g. 13000
    int runtime_version = 0;
    std::string driver_release;  ///< NVIDIA driver release (NVML), e.g. "580.159.04"
    std::vector<DeviceInfo> devices;  ///< every visible GPU
    std::vector<int> selected;        ///< ordinals chosen by --devices (default all)
    std::vector<RuntimeLibrary> libraries; ///< run-time loaded libraries, in probe order
    unsigned host_cores = 1;          ///< hardware threads usable by this process
    /// The multi-process world under MPI, or nullptr for a single process.
    World* world = nullptr;

    const DeviceInfo* device(int ordinal) const;
    /// The library named `name`, or nullptr when it was never probed.
    const RuntimeLibrary* library(std::string_view name) const;
    /// Adds or replaces the entry of `lib.name`.
    void set_library(RuntimeLibrary lib);
};

/// Resolves a `--devices` list against `devices`: comma-separated CUDA ordinals or PCI bus
/// ids, full ("0000:1b:00.0") or without the domain ("1b:00.0"), in any case. Returns the
/// ordinals in the order given, each once. Throws UsageError for an item that names no
/// device of `devices`, and for a list that names none.
std::vector<int> parse_device_list(std::string_view text, const std::vector<DeviceInfo>& devices);

/// The values of the family options of one run (family.hpp), by option name. Unset options read as
/// false, "", {} or nothing. Carried to round processes as JSON.
class FamilyOptions {
public:
    bool flag(std::string_view name) const;
    std::string text(std::string_view name) const;
    std::vector<std::string> texts(std::string_view name) const;
    std::optional<double> number(std::string_view name) const;

    void set_flag(const std::string& name, bool value);
    void set_text(const std::string& name, std::string value);
    void set_texts(const std::string& name, std::vector<std::string> values);
    void set_number(const std::string& name, double value);

    nlohmann::json to_json() const { return m_values; }
    /// Reads what to_json wrote; anything else is ignored value by value (a missing or
    /// mistyped value reads as unset).
    static FamilyOptions from_json(const nlohmann::json& j);

private:
    nlohmann::json m_values = nlohmann::json::object();
};

/// Settings a Case may consult (sampling is the runner's business, not the case's).
struct CaseContext {
    const Machine* machine = nullptr;
    /// Target wall time of one sample; cases that repeat an operation inside a sample
    /// choose their repetition count to reach about this long.
    double sample_time_s = 0.01;
    bool bind_numa = true; ///< place host memory and threads near the GPU
};

/// Values of one sample, one per metric in ScenarioInfo::metrics order. A metric that a
/// configuration does not produce is NaN and is left out of the statistics.
using Sample = std::vector<double>;

/// One prepared configuration. Constructed by Scenario::prepare (the setup: allocate,
/// fill, enable peers); destroyed by the runner (teardown). Throws ConfigError (or a
/// FatalDeviceError) on failure.
class Case {
public:
    virtual ~Case() = default;
    /// One timed sample (may repeat the operation inside and report per-operation values).
    virtual Sample measure() = 0;
    /// Untimed verification after sampling; throws CheckFailed on wrong data.
    virtual void check() {}
    /// Facts about this configuration for the report: path crossed, operations per sample,
    /// bytes per operation, verification method. Called after sampling.
    virtual nlohmann::json details() const { return nlohmann::json::object(); }
};

class Scenario {
public:
    virtual ~Scenario() = default;
    /// Static metadata; no CUDA call, so `list` works anywhere.
    virtual const ScenarioInfo& info() const = 0;
    /// The id alone: what selection, lookup and suggestions need. A scenario whose info is
    /// costly to get (a plugin describes itself by starting its program) answers it without.
    virtual const std::string& id() const { return info().id; }
    /// Why this configuration cannot run on this machine, or nothing when it can.
    virtual std::optional<std::string> unsupported(const Machine& machine,
                                                   const Params& params) const = 0;
    /// Sets up a case for `params`; throws ConfigError on failure.
    virtual std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& params) const = 0;
    /// Where the scenario comes from when not built in (a plugin's manifest), else empty.
    virtual std::string origin() const { return {}; }
    /// The paths the counted bytes of configuration `params` cross (limits.hpp): what its
    /// "of limit" is measured against. Every scenario that moves bytes on a GPU path declares
    /// them; none means no limit is shown.
    virtual std::vector<PathUse> paths(const Params& params) const {
        (void)params;
        return {};
    }
    /// The values one given text of a `text` axis stands for, each in its canonical text (what
    /// the result key holds, and what this scenario reads back from a report or a round
    /// process): the expansion of a plan calls it with the machine. A value may stand for
    /// several (a written form with wildcards, or one that brings its parts along). Throws
    /// UsageError for text the scenario cannot read. By default the text itself.
    virtual std::vector<std::string> expand_text(const Axis& axis, const std::string& text, const Machine& machine) const {
        (void)axis;
        (void)machine;
        return {text};
    }
};

/// Reason used by every GPU scenario when CUDA is not usable.
std::optional<std::string> gpu_unavailable_reason(const Machine& machine);

} // namespace interopbench
