#pragma once
// External scenarios (docs/PLUGINS.md): manifests, where they are looked for, and the
// registration of each plugin as a scenario of the registry.
#include <optional>
#include <string>
#include <vector>

#include "interopbench/registry.hpp"

namespace interopbench {

/// Where plugins are looked for, and their deadline (the command line's plugin options).
struct PluginOptions {
    std::vector<std::string> paths;  ///< --plugin-path folders, searched first, in order
    std::optional<double> timeout_s; ///< --plugin-timeout: replaces every manifest's timeout_s
    bool defaults = true;            ///< also search the shipped plugins folder
};

/// Registers every plugin found after the scenarios already in `r`. A bad manifest in a
/// folder given by --plugin-path or INTEROPBENCH_PLUGIN_PATH is a UsageError; in the shipped
/// folder it is a warning (added to `warnings`) and the plugin is left out. A plugin that
/// cannot describe itself is listed, and its configurations skipped, with the reason.
void register_plugins(Registry& r, const PluginOptions& options, std::vector<std::string>& warnings);


} // namespace interopbench

namespace interopbench::plugin {

/// The protocol version this interopbench speaks.
inline constexpr int k_protocol = 1;
/// Default deadline of one reply, seconds (a manifest's timeout_s or --plugin-timeout change it).
inline constexpr double k_default_timeout_s = 30;

/// One `plugins/NAME.json`.
struct Manifest {
    std::string path;                 ///< the manifest file, as found
    std::string dir;                  ///< its directory (absolute): the plugin's working directory
    std::string id;                   ///< the scenario id
    std::vector<std::string> command; ///< argv; command[0] resolved to an absolute path
    bool needs_gpu = true;
    int protocol = k_protocol;
    double timeout_s = k_default_timeout_s;
};

/// Reads and checks one manifest. Throws UsageError naming the file, the problem and the fix:
/// unreadable, not JSON, a missing or mistyped field, an unknown field, a bad id, another
/// protocol version, a command that is not found or not executable.
Manifest load_manifest(const std::string& path);

/// Why a plugin folder, manifest or program may not be trusted, or nothing: like sudo and
/// git's safe.directory, it must belong to this user or root and no other user may write it
/// (a group may when it is this user's or root's group). Links are followed to what runs.
std::optional<std::string> untrusted(const std::string& path);
/// The same for a loaded manifest: the file, its program and the files its arguments name.
std::optional<std::string> untrusted_manifest(const Manifest& m);

/// Where plugins are looked for, in order (the first plugin of an id wins).
struct SearchPath {
    std::string dir;
    bool explicit_dir = false; ///< named by --plugin-path or INTEROPBENCH_PLUGIN_PATH
};

/// The folders searched: each `--plugin-path` (in order), then INTEROPBENCH_PLUGIN_PATH
/// (colon separated), then, unless `defaults` is false, the shipped plugins folder
/// (`<prefix>/share/interopbench/plugins` beside an installed binary, and the source tree's
/// `plugins/` of a binary run from its build tree), each existing folder once. An explicit
/// folder that does not exist is a UsageError.
std::vector<SearchPath> search_path(const std::vector<std::string>& cli_dirs, bool defaults = true);

/// Registers the plugins of `folders` (search_path order) after the scenarios in `r`, each
/// manifest in a folder in name order; `timeout_s` replaces the manifests' deadlines. What
/// register_plugins does with the folders it finds.
void register_from(Registry& r, const std::vector<SearchPath>& folders, std::optional<double> timeout_s,
                   std::vector<std::string>& warnings);

} // namespace interopbench::plugin
