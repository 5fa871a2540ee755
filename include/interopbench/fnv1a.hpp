#pragma once
/// FNV-1a 64: the one copy of the byte-string hash behind the profile digest (profile_hash,
/// recorded in reports), the topology hash of multi-process reports, the names of report
/// temporaries and the compare bootstrap's seeds.
/// Fully specified, so a digest recorded in one report is reproduced by any later build on any
/// machine; not meant to resist deliberate collisions.
#include <cstdint>
#include <string_view>

namespace interopbench {

inline constexpr std::uint64_t k_fnv1a_offset_basis = 0xcbf29ce484222325ULL;
inline constexpr std::uint64_t k_fnv1a_prime = 0x100000001b3ULL;

/// FNV-1a 64 of the bytes of `text`, continuing from `h`: the offset basis by default, so
/// fnv1a(b, fnv1a(a)) == fnv1a(a + b).
constexpr std::uint64_t fnv1a(std::string_view text, std::uint64_t h = k_fnv1a_offset_basis) {
    for (const char c : text) {
        h ^= static_cast<unsigned char>(c);
        h *= k_fnv1a_prime;
    }
    return h;
}

// The published test vectors of FNV-1a 64.
static_assert(fnv1a("") == 0xcbf29ce484222325ULL);
static_assert(fnv1a("a") == 0xaf63dc4c8601ec8cULL);
static_assert(fnv1a("foobar") == 0x85944171f73967e8ULL);

} // namespace interopbench
