#pragma once
/// Files in and out: the one reader of every file the tool reads (reports, baselines,
/// profiles, recorded topologies and their sidecars, plugin manifests), and the test of
/// whether two paths name the same file.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

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
/// The same for a file already opened (for reading) as `fd`, named `path` in messages: read from
/// where the descriptor stands, the descriptor left open.
std::string read_input_file(int fd, const std::string& path, std::string_view what, std::uint64_t max_bytes);

/// True when both paths name the same file: when both exist, the same device and inode (links
/// followed); when neither does, the same path once resolved (".." and "//" and links of the
/// folders). Compare outputs with it, never as strings.
bool same_file(const std::string& a, const std::string& b);

/// Deepest nesting of arrays and objects any JSON the tool reads may have: far beyond what it
/// writes (reports nest about 8 levels), far below what would exhaust the stack of code that
/// walks a document.
inline constexpr int k_max_json_depth = 256;

/// The one JSON parser of outside input (reports, profiles, plans, manifests, plugin replies,
/// configuration files): nlohmann's, after a scan that refuses more than k_max_json_depth
/// levels of nesting. Throws nlohmann::json::parse_error for bad or too deep text, or with
/// `allow_exceptions` false returns a discarded value.
nlohmann::json parse_json(std::string_view text, bool allow_exceptions = true, bool ignore_comments = false);

/// A copy of `doc` whose strings (and keys) are valid UTF-8: bytes that are not are kept as
/// the text "\xNN", so a report with such bytes (an argument, a path, a host name) is always
/// written. Nesting beyond k_max_json_depth is cut (replaced by null).
nlohmann::json valid_utf8(const nlohmann::json& doc);

} // namespace interopbench
