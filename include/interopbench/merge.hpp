#pragma once
/// Merging the results of the ranks of a multi-process (MPI) run into one list, so that
/// rank 0 writes one report with every rank's figures.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/runner.hpp"

namespace interopbench {

/// The process that produced a list of results.
struct RankIdentity {
    int rank = 0;
    int local_rank = 0;
    std::string host;   ///< host name
    std::string device; ///< the rank's GPU (PCI bus id or ordinal); empty when it has none
    nlohmann::json fingerprint = nullptr; ///< what it ran on: host_fingerprint (report.hpp)
};

/// One rank's identity and results as one string, to be sent with World::gather.
std::string encode_rank_results(const RankIdentity& who, const std::vector<Result>& results);

/// What rank 0 writes for the whole world.
struct MergedRanks {
    std::vector<Result> results;
    /// The report's "hosts": one entry per rank, rank order: rank, local_rank, device and the
    /// rank's fingerprint (host, software, devices, topology_hash, conditions).
    nlohmann::json hosts = nlohmann::json::array();
};

/// Merges the strings gathered at rank 0 (one per rank, rank order): every rank's fingerprint
/// into `hosts`, and the results into one result per configuration key, keys in first-seen
/// order (rank 0's first). For each key:
///  - status: failed when any rank failed or has no result for it; else interrupted when
///    any rank was; else skipped when any rank skipped; else ok;
///  - reason: the reason shared by all ranks concerned, or each one as "rank N: reason";
///  - metrics (statistics and samples), stop reason and details come from the slowest
///    rank: among the ranks that are ok and have primary samples (metrics[0]), the one
///    with the highest median when lower is better, the lowest median when higher is
///    better (ties: the lower rank); otherwise from the first rank that has the result;
///  - details gain "world_size", "slowest_rank" (when one was found) and "ranks": one
///    entry per rank with rank, local_rank, host, device, status, reason, stop_reason and
///    per metric n, median, mean, min and max;
///  - wall_time_s is the longest of the ranks'.
/// Throws std::runtime_error naming the rank whose string is not an encoded result list.
MergedRanks merge_rank_results(const std::vector<std::string>& gathered);

/// Of a merged result's details, the slowest rank in words: "rank 1 on node2 (GPU
/// 0000:1b:00.0)" (without the host in an anonymized report, without the GPU for a rank that
/// had none); empty when the details name no slowest rank of several.
std::string slowest_rank_words(const nlohmann::json& details);

} // namespace interopbench
