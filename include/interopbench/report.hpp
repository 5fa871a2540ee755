#pragma once
/// The JSON report: building, atomic writing, loading with validation.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/conditions.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench {

/// Schema name and version written into every report. Readers accept the same major
/// version and any minor; unknown fields are ignored.
inline constexpr const char* k_schema_name = "interopbench.report";
inline constexpr int k_schema_major = 1;
inline constexpr int k_schema_minor = 1;

/// Tool version and git sha (set at build time).
const char* tool_version();
const char* tool_git_sha();

/// Host facts: OS, kernel, CPU model, cores, memory, hostname.
nlohmann::json host_json();
/// Allow-listed environment: only variables starting with CUDA_ or NCCL_ (and the few
/// others that change measurements: OMPI_COMM_WORLD_SIZE/RANK, HWLOC_*); never others.
nlohmann::json environment_json();
/// True for the names that environment_json keeps.
bool environment_allowed(const std::string& name);
/// Sets environment variable `name` to `value` as the tool's own setting (where NCCL writes
/// its debug log, for one): environment_json leaves it out, so that reports and comparisons
/// show the user's environment only. The names are listed in INTEROPBENCH_OWN_ENV, so that
/// the processes the tool starts (later rounds) know them as the tool's too.
void set_own_environment(const std::string& name, const std::string& value);
/// True when `name` was set by set_own_environment, here or in the process that started this one.
bool own_environment(const std::string& name);
/// Software and devices blocks from the machine.
nlohmann::json software_json(const Machine& machine);
nlohmann::json devices_json(const Machine& machine);

/// A hash of the topology block's wiring (GPUs and their PCIe paths, NVLinks, GPU pairs,
/// NUMA nodes, NICs and their paths), 16 hex digits: hosts wired alike share it, whatever
/// their names, serial numbers, free memory or link state. Empty for a null topology.
std::string topology_hash(const nlohmann::json& topology);

/// What one process of a multi-process run ran on, for the report's "hosts" array:
/// {"host": host_json(), "software": software_json, "devices": the selected GPUs as
/// devices_json writes them, "topology_hash", "conditions": null (the rank's run conditions
/// go there)}.
nlohmann::json host_fingerprint(const Machine& machine, const nlohmann::json& topology);

/// The whole run, as it goes into the report.
struct RunRecord {
    std::vector<std::string> argv; ///< as typed; the report records argv[0] by its base name
    RunPlan plan;
    std::string started, finished; ///< ISO-8601 UTC
    std::string status = "complete"; ///< complete | interrupted | aborted
    std::vector<Result> results;
    std::vector<std::string> warnings;
    nlohmann::json topology = nullptr; ///< from topology discovery, or null
    /// Multi-process runs: one entry per rank (merge_rank_results), written as "hosts"; null otherwise.
    nlohmann::json hosts = nullptr;
    /// The conditions when the first configuration started and after the last ended (the
    /// report's "conditions" block); nothing where no snapshot was taken.
    std::optional<ConditionsSnapshot> conditions_start, conditions_end;
};

/// Assembles the report document.
nlohmann::json build_report(const RunRecord& run, const Machine& machine);

/// The text `report` is written as (dump(1) and a newline), at most `limit` bytes, so that
/// read_report reads it back: a report that would be larger loses the samples of its results,
/// the largest first (each metric keeps its statistics and says how many it took:
/// "samples_taken"), then their details, then the reasons past 256 bytes, until it fits. Each
/// result says what it lost (its "cut"), the report's warnings how many lost what. Each result
/// was bounded already (to_json(Result)). Throws WriteError when even that does not fit.
std::string report_text(nlohmann::json& report, std::uint64_t limit = k_max_report_bytes);

/// Writes `content` to `path`. Symbolic links are followed (the link stays, its target is
/// written). A regular file, or a new one, is replaced atomically: a temporary with a short
/// name (".interopbench-<hash>-<pid>-XXXXXX") in the target's directory, guarded by
/// cleanup::Guard so that Ctrl-C never leaves it, fsync'd, given the replaced file's mode
/// and owner (a new file: 0666 less the umask), then renamed over the target. Temporaries
/// of earlier writes to the same path whose process is gone (kill -9) are removed first.
/// A target that is not a regular file (/dev/null, a terminal, a FIFO with a reader) is
/// written in place, never replaced. Throws UsageError for what check_output_path refuses,
/// and WriteError (path and OS error) when the system fails the write.
void write_file_atomic(const std::string& path, const std::string& content);

/// Throws UsageError when `path` cannot be written later: empty, a directory, a socket, a
/// loop of symbolic links, a missing, non-directory or unwritable directory, a read-only
/// file (refused, never replaced), a file name longer than the file system allows. Used
/// before any measuring.
void check_output_path(const std::string& path);

/// The message of a JSON library exception without its "[json.exception.x.N]" prefix.
std::string json_error_text(const nlohmann::json::exception& e);

/// Removes what identifies a machine or a person, for reports shared outside a company:
/// host names (dropped, the ranks' hosts of multi-process results and the "hosts" array's
/// too), UUIDs and serial numbers (emptied: devices keep their required fields), and in
/// every string (argv, details, reasons, warnings, notes) home directories become "~" and
/// every other absolute path "<path>/" and its last component ("--out=/data/r.json" -> "--out=<path>/r.json",
/// "/tmp/x/ib-storage.dat" -> "<path>/ib-storage.dat"): no absolute path is left. argv[0]
/// is its base name. Keeps hardware models, PCI bus ids (the topology needs them),
/// versions, settings and results. Sets invocation.anonymized = true. Idempotent.
void anonymize_report(nlohmann::json& report);

/// Everything a report says besides its results: the tool, the invocation, the machine.
/// Read once into Report::header (read_report); show, compare, fleet and the page take it
/// from there, never field by field.
struct ReportHeader {
    struct Tool {
        std::string name, version, git_sha;
    };
    struct Invocation {
        std::vector<std::string> argv;
        std::string profile, profile_hash; ///< empty: a plan without a profile
        std::string status;                ///< complete | running | interrupted | aborted
        std::string started, finished;     ///< ISO-8601 UTC
        nlohmann::json settings;           ///< as recorded (null when absent)
        bool anonymized = false;
    };
    struct Host {
        std::string hostname, os, kernel, arch, cpu;
        int logical_cpus = 0;
        std::uint64_t memory_bytes = 0;
    };
    struct Library {
        std::string name, version, note;
    };
    struct Software {
        std::string driver_release, cuda_driver, cuda_runtime, cuda_note;
        bool cuda_available = false;
        std::vector<Library> libraries; ///< schema 1.0 named NCCL alone ("nccl"): its entry "nccl"
        /// The version of the library named `name`, or empty.
        std::string version_of(const std::string& name) const;
    };
    struct Device {
        int ordinal = 0;
        std::string name, uuid, pci_bus_id, compute_capability;
        int sm_count = 0;
        std::uint64_t memory_bytes = 0;
        int pcie_gen_current = 0, pcie_width_current = 0, pcie_gen_max = 0, pcie_width_max = 0; ///< 0: unknown
    };
    /// A GPU of the topology block: its index there (-1: none), host path, CPUs near it and
    /// NVLinks (`nvlink_known`: NVML could tell).
    struct TopologyGpu {
        std::string label; ///< "GPU0"; empty when the block names none
        int index = -1;
        std::string cpus;            ///< "0-31"
        std::string host_path_class; ///< "PCIe", "C2C"
        std::optional<double> host_path_bandwidth; ///< B/s per direction, when recorded
        bool nvlink_known = false;
        int nvlinks = 0, nvlinks_active = 0;
    };
    /// The path between two GPUs (by their topology index, -1 when missing): "GPU0>GPU1", "NV18".
    struct TopologyPair {
        std::string label, path_class;
        int from = -1, to = -1;
    };
    struct Topology {
        nlohmann::json document; ///< the topology block as recorded; null without discovery
        std::vector<TopologyGpu> gpus;
        std::vector<TopologyPair> pairs;
    };
    /// One process of a multi-process run (the report's "hosts" array): where it ran, on what.
    struct RankHost {
        int rank = 0, local_rank = 0;
        std::string device;          ///< the rank's GPU (PCI bus id); empty when it had none
        Host host;
        Software software;
        std::vector<Device> devices; ///< the rank's GPU(s)
        std::string topology_hash;   ///< equal on hosts wired alike; empty without topology
        std::optional<ReportConditions> conditions; ///< the rank's "conditions"; nothing when absent
    };

    std::string schema_version; ///< "1.1"
    Tool tool;
    Invocation invocation;
    Host host;
    Software software;
    std::vector<Device> devices;
    Topology topology;
    /// A multi-process run: every rank's machine, in rank order (host, software and devices
    /// above are rank 0's). Empty for one process: host and devices are the one host.
    std::vector<RankHost> hosts;
    std::map<std::string, std::string> environment;
    std::vector<std::string> warnings;
    /// The conditions the run ran under (conditions.hpp); nothing in a report without them.
    using Conditions = ReportConditions;
    std::optional<Conditions> conditions;
};

/// The header of a report document. Never throws: a field that is missing or of another type
/// is empty (0, false, -1 for an index); load_report checks what must be there. Reads schema
/// 1.0 and 1.1. read_report calls it; tests of the header's leniency call it on documents.
ReportHeader read_header(const nlohmann::json& report);

/// A report read once: its header and results typed. Every consumer (show, compare, fleet,
/// the run's baseline and round processes, the output formats, the page) takes a Report or
/// its parts; this module alone reads a report's JSON.
struct Report {
    ReportHeader header;
    std::vector<Result> results;
    /// The document without its results (those are `results`). Kept because some things
    /// must go out as they came in: `show -f json`, --anonymize and the page's embedded copy
    /// (report_document puts the results back); and for the devices block that
    /// machine_limits reads.
    nlohmann::json document;
};

/// Loads and checks a report, read by read_input_file (an HTML page written by interopbench:
/// the report it embeds): non-empty, valid JSON, our schema name, a schema version "1.N" (a
/// string; N decimal without leading zeros), results an array of objects with
/// key/scenario/status whose fields have the types the reader needs, a well-formed "hosts"
/// array. Throws UsageError naming the file, the field and the problem. The document as
/// such, for tests of the document and its schema; consumers read through read_report.
nlohmann::json load_report(const std::string& path);

/// The report at `path` (see load_report), checked and read once: header and results.
/// Throws UsageError as load_report does.
Report read_report(const std::string& path);

/// The same for a document in memory (a run's report, just built): the same checks, their
/// messages naming `origin` where they name a file.
Report read_report_json(nlohmann::json document, const std::string& origin);

/// The report as one document again: `document` with `results` as they are now (after
/// limit_report, say).
nlohmann::json report_document(const Report& report);

/// anonymize_report over the whole report; header and results are read again from the
/// anonymized document.
void anonymize_report(Report& report);

/// Current UTC time as ISO-8601 with seconds.
std::string now_iso8601();

} // namespace interopbench
