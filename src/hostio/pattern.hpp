#pragma once
/// The data pattern every scenario writes and checks: word i (8 bytes) of a buffer or file
/// holds a hash of (seed, i), never a run of zeros. The GPU kernels (gpu/common_kernels.cu)
/// write and check the same words; these are the host's copies, used with or without a GPU.
#include <cstddef>
#include <cstdint>

#include "interopbench/splitmix.hpp"

namespace interopbench::hostio {

/// The pattern's value for word `index` (host and device agree).
constexpr std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index) { return splitmix64(seed ^ splitmix64(index)); }

/// Fills `bytes` at `dst` with the pattern of `seed` (large buffers on several threads).
void fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed);
/// Counts the words at `src` that differ from the pattern of `seed` (a trailing partial word
/// counts its differing bytes); 0 means correct.
std::uint64_t count_pattern_mismatches(const void* src, std::size_t bytes, std::uint64_t seed);

} // namespace interopbench::hostio
