#pragma once
/// Files in and out: the one reader of every file the tool reads (reports, baselines,
/// profiles, recorded topologies and their sidecars, plugin manifests), and the test of
/// whether two paths name the same file.
#include <cstdint>
#include <string>
#include <string_view>

namespace interopbench {

/// Size limits of the files the tool reads: far above what it writes, far below what would
/// exhaust memory when parsed.
inline constexpr std::uint64_t k_max_report_bytes = 512ull << 20;
inline constexpr std::uint64_t k_max_profile_bytes = 16ull << 20;
inline constexpr std::uint64_t k_max_topology_bytes = 512ull << 20;
inline constexpr std::uint64_t k_max_sidecar_bytes = 128ull << 20;

/// Reads the whole regular file at `path` (symbolic links followed). `what` names the file
/// in messages, which read "WHAT 'PATH': why" ("report", "profile file", "--from"). Opens without blocking (a FIFO never
/// blocks) and checks the opened file itself, so what was checked is what is read. Throws
/// UsageError, one line naming the file and a hint for the fix, when the path does not
/// exist, is a symbolic link loop, is a directory, is not a regular file (device, FIFO,
/// socket), cannot be read (permissions, I/O error), or holds more than `max_bytes`.
std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t max_bytes);

/// True when both paths exist and name the same file (device and inode, links followed).
bool same_file(const std::string& a, const std::string& b);

} // namespace interopbench
