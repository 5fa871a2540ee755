#pragma once
/// Merging the results of the ranks of a multi-process (MPI) run into one list, so that
/// rank 0 writes one report with every rank's figures.
#include <string>
#include <vector>

#include "interopbench/runner.hpp"

namespace interopbench {

/// The process that produced a list of results.
struct RankIdentity {
    int rank = 0;
    int local_rank = 0;
    std::string host;   ///< host name
    std::string device; ///< the rank's GPU (PCI bus id or ordinal); empty when it has none
};

/// One rank's identity and results as one string, to be sent with World::gather.
std::string encode_rank_results(const RankIdentity& who, const std::vector<Result>& results);

/// Merges the strings gathered at rank 0 (one per rank, rank order) into one result per
/// configuration key, keys in first-seen order (rank 0's first). For each key:
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
std::vector<Result> merge_rank_results(const std::vector<std::string>& gathered);

} // namespace interopbench
