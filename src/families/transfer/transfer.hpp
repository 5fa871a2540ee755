#pragma once
// The transfer family's pieces that its descriptor and the tests name.
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hostio/storage_io.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"

namespace interopbench::transfer {

/// The scenario's id and the name of its one axis.
inline constexpr const char* k_scenario = "transfer";
inline constexpr const char* k_axis = "set";
/// Per-transfer metrics are "bandwidth_1" to "bandwidth_16" (k_max_transfers).
std::string transfer_metric(std::size_t index);

/// Adds the `transfer` scenario, its files on `site`; `alone`: a set of several transfers
/// expands to the set and each transfer by itself (--no-alone turns it off).
void register_transfer(Registry& r, std::shared_ptr<storage::Site> site, bool alone);

/// After the run (family.hpp's annotate): for every set of several transfers, each transfer's
/// bandwidth together against its own alone in the same results, the paths two or more of them
/// share (their declared paths, limits.hpp) with each one's load on it against the path's limit
/// (the machine's, as apply_limits left it on the results) or else the most this run saw on it,
/// the path that limited each slowed transfer, and the cost of sharing: details "sharing" and a
/// one-sentence "diagnosis". For every broadcast (of any set), the rate its source was read at,
/// its bandwidth over its destinations: its details' "source_read_bandwidth".
void annotate_transfer_results(std::vector<Result>& results);

/// What the selected configurations claim on the storage site (pre-flight, storage::claim_site):
/// the files read striped over every directory by size (`read_sizes`: a kept one is reused), and
/// `bytes` for the rest: other copies of a size, files in one directory (counted once per
/// directory, as a claim is spread evenly over them) and the most one set writes at once.
/// Nothing when no configuration has a file endpoint.
struct SiteClaim {
    std::uint64_t bytes = 0;
    std::set<std::uint64_t> read_sizes;
};
std::optional<SiteClaim> site_claim(const std::vector<Config>& configs, std::size_t dirs);

} // namespace interopbench::transfer
