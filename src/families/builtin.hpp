#pragma once
/// The built-in scenario families, handed by the command line (and the tests) to the core's
/// session: the core itself knows no family.
#include <cstdint>
#include <optional>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {

/// Every built-in scenario, in a fixed order (the `list` order): families/builtin.cpp.
Registry builtin_registry();

/// Each family's registration, defined in its folder; builtin_registry calls them in order.
void register_host_memcpy(Registry& r);      // families/copy
void register_host_device_copy(Registry& r); // families/copy
void register_alloc(Registry& r);            // families/alloc
void register_peer(Registry& r);             // families/peer
void register_nccl(Registry& r);             // families/nccl
void register_layout(Registry& r);           // families/layout
void register_handoff(Registry& r);          // families/handoff
void register_storage_read(Registry& r);     // families/storage
void register_storage_gpu(Registry& r);      // families/storage
void register_pipeline(Registry& r);         // families/pipeline

/// Family hooks around a run, called by the command line (families that need none do nothing):
/// before measuring, checks that only a family can make (the storage directory: a
/// UsageError for bad input, before anything is measured); after measuring, annotations
/// that need the whole run's results (storage efficiency against the run's roofline).
/// `other_bytes`: what other families will create in the storage directory (the pipeline's
/// dataset files), nothing when none of their configurations is selected.
void storage_preflight(const RunSettings& settings, const std::vector<Config>& configs,
                       std::optional<std::uint64_t> other_bytes = std::nullopt);
void annotate_storage_results(std::vector<Result>& results);
/// The pipeline's bad input (UsageError) and the bytes its dataset files need.
std::optional<std::uint64_t> pipeline_site_bytes(const std::vector<Config>& configs);
/// Speedup over naive, efficiency against the run's standalone stages, the diagnosis.
void annotate_pipeline_results(std::vector<Result>& results);
void before_run(const RunSettings& settings, const std::vector<Config>& configs);
void after_run(std::vector<Result>& results);

} // namespace interopbench
