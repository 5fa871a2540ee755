#pragma once
/// Host-only helpers of the peer scenarios, exposed for the tests.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "interopbench/scenario.hpp"

namespace interopbench::peer {

/// Why GPU `ordinal` cannot take part in this run, or nothing: it does not exist on this
/// machine, or it is not among the selected GPUs.
std::optional<std::string> device_unavailable(const Machine& machine, int ordinal);

/// Why a peer configuration cannot run at all here, or nothing: no usable CUDA, or a
/// multi-process run (peer copies need one process driving every GPU).
std::optional<std::string> peer_unavailable(const Machine& machine);

/// The order in which a pointer chase over `nodes` nodes visits them: a permutation of
/// 0..nodes-1 that starts at node 0, shuffled by `seed`. Following it and wrapping around
/// gives one cycle through every node, so no hop can be predicted from the last.
std::vector<std::uint32_t> chase_order(std::uint32_t nodes, std::uint64_t seed);

/// The successor table of `order`: next[order[k]] = order[(k + 1) % n].
std::vector<std::uint32_t> chase_next(const std::vector<std::uint32_t>& order);

} // namespace interopbench::peer
