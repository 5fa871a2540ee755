#pragma once
/// splitmix64's finaliser: a cheap, fully specified, well-mixed 64-bit hash. The one copy
/// used for test patterns (host and device), random fills and the compare bootstrap, so the
/// same seed gives the same words everywhere (std distributions are implementation-defined).
#include <cstdint>

#if defined(__CUDACC__)
#define INTEROPBENCH_HOST_DEVICE __host__ __device__
#else
#define INTEROPBENCH_HOST_DEVICE
#endif

namespace interopbench {

inline constexpr std::uint64_t k_splitmix_gamma = 0x9E3779B97F4A7C15ull;

/// splitmix64 of `x`: (x + gamma) through the two multiply-xorshift rounds.
INTEROPBENCH_HOST_DEVICE constexpr std::uint64_t splitmix64(std::uint64_t x) {
    x += k_splitmix_gamma;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

} // namespace interopbench
