#pragma once
/// The JSON report: building, atomic writing, loading with validation.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
/// Software and devices blocks from the machine.
nlohmann::json software_json(const Machine& machine);
nlohmann::json devices_json(const Machine& machine);

/// The whole run, as it goes into the report.
struct RunRecord {
    std::vector<std::string> argv;
    RunPlan plan;
    std::string started, finished; ///< ISO-8601 UTC
    std::string status = "complete"; ///< complete | interrupted | aborted
    std::vector<Result> results;
    std::vector<std::string> warnings;
    nlohmann::json topology = nullptr; ///< from topology discovery, or null
};

/// Assembles the report document.
nlohmann::json build_report(const RunRecord& run, const Machine& machine);

/// Writes `doc` to `path` atomically: a temporary file in the same directory, flushed and
/// fsync'd, then renamed over the target. Throws UsageError when the directory is missing
/// or not writable.
void write_file_atomic(const std::string& path, const std::string& content);

/// Throws UsageError when `path` cannot be written later (directory missing, not a
/// directory, not writable). Used before any measuring.
void check_output_path(const std::string& path);

/// Loads and checks a report: exists, non-empty, valid JSON, our schema name, a major
/// version we read, results an array of objects with key/scenario/status. Throws
/// UsageError naming the file and the problem.
nlohmann::json load_report(const std::string& path);

/// Removes what identifies a machine or a person, for reports shared outside a company:
/// host names (dropped, the ranks' hosts of multi-process results too), UUIDs and serial
/// numbers (emptied: devices keep their required fields), and home directories in every
/// string (argv, paths, notes) become "~". Keeps
/// hardware models, PCI bus ids (the topology needs them), versions, settings and
/// results. Sets invocation.anonymized = true. Idempotent.
void anonymize_report(nlohmann::json& report);

/// Results of a loaded report.
std::vector<Result> report_results(const nlohmann::json& report);

/// Current UTC time as ISO-8601 with seconds.
std::string now_iso8601();

} // namespace interopbench
