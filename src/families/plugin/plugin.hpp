#pragma once
// External scenarios (docs/PLUGINS.md): manifests, where they are looked for, and the
// registration of each plugin as a scenario of the registry.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/trust.hpp"

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
    std::vector<std::string> command; ///< argv; command[0] an absolute path (found in PATH), or relative to `dir`
    bool needs_gpu = true;
    int protocol = k_protocol;
    double timeout_s = k_default_timeout_s;
    /// What the manifest's "describe" says the plugin offers (its describe reply, read as the
    /// plugin's would be): `list` and the expansion of a plan read it without starting the
    /// plugin, and a run checks it against the plugin's own description (check_described).
    /// Nothing when the manifest has none: the plugin is then started to describe itself.
    std::optional<ScenarioInfo> declared;
    /// Held once trusted (hold_plugin): the manifest's folder, where the plugin runs (fchdir),
    /// and its program, run from this descriptor (execveat): a folder or program swapped after
    /// the check changes nothing that runs.
    std::shared_ptr<const TrustedPath> folder, program;
    /// The program is a script (#!): it runs by its path, because its interpreter reads its name
    /// ($0: wrappers such as pyenv's shims look at it), which a descriptor would make /dev/fd/N.
    /// Its interpreter was checked with it.
    bool script = false;
};

/// Reads and checks one manifest, `text` read from the file `path`. Throws UsageError naming
/// the file, the problem and the fix: not JSON, a missing or mistyped field, an unknown field,
/// a bad id, another protocol version, a command that is not found or not executable, a
/// "describe" that is not a describe reply.
Manifest load_manifest(const std::string& path, const std::string& text);

/// Holds what a manifest runs once it may be trusted (trust.hpp, TrustRule::plugin_program):
/// its program (and a script's interpreter), and the files its arguments name (its script),
/// each checked from / down; `folder` is the manifest's folder, already held. Returns why not,
/// or nothing.
std::optional<std::string> hold_plugin(Manifest& m, std::shared_ptr<const TrustedPath> folder);

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

/// Before a run measures (the plugin family's preflight): starts each plugin among `configs`
/// whose manifest declares its description and checks that the plugin describes itself alike.
/// Throws UsageError naming the plugin, the first difference and the fix. A plugin that cannot
/// describe itself is not an error here: its configurations are skipped with the reason.
void check_described(const std::vector<Config>& configs);

/// Registers the plugins of `folders` (search_path order) after the scenarios in `r`, each
/// manifest in a folder in name order; `timeout_s` replaces the manifests' deadlines. What
/// register_plugins does with the folders it finds.
void register_from(Registry& r, const std::vector<SearchPath>& folders, std::optional<double> timeout_s,
                   std::vector<std::string>& warnings);

} // namespace interopbench::plugin
