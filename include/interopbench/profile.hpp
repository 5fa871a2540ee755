#pragma once
/// Named run presets: which scenarios, which axis values, how to sample.
///
/// A profile is a JSON document:
///   {"name": "ci", "description": "...", "extends": "quick",
///    "settings": {"warmup": 3, "min_samples": 20, ...},          (RunSettings keys)
///    "scenarios": [{"pattern": "h2d_copy", "axes": {"size": ["256M", "1G"]}}, ...]}
/// Every key is optional. `extends` names a built-in profile or a file (relative to the
/// extending file); the child's settings override the parent's key by key, and the child's
/// `scenarios`, when present, replace the parent's. The built-in profiles (quick, ci, full)
/// are compiled into the binary from profiles/*.json, which give their descriptions and
/// settings; their scenarios are what each family's descriptor adds (family.hpp).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {

/// Built-in profile texts, name -> JSON text, generated at build time from profiles/*.json.
const std::vector<std::pair<std::string_view, std::string_view>>& builtin_profile_texts();

/// Names of the built-in profiles, in build order (quick, ci, full).
std::vector<std::string> builtin_profile_names();

/// The profile `interopbench run` uses when given no scenario and no profile: "quick".
std::string default_profile_name();

/// Reads a profile by built-in name or file path and applies `extends`, checking keys and
/// types at every level. Returns {"name", "description", "sources" (the chain, child
/// first), "settings" (merged, only the keys given), "scenarios"}. Throws UsageError
/// naming the file for: a missing or unreadable file, bad JSON, an unknown key (with the
/// nearest known one), a wrong type, a cycle in `extends` (naming the chain), an unknown
/// profile name. A built-in profile's scenarios are the entries the families add to it
/// (`registry.profile_entries`, family.hpp) unless its file lists its own.
nlohmann::json resolve_profile(const std::string& name_or_path, const Registry& registry);

/// Builds a plan from a resolved profile. Settings start from RunSettings' defaults.
/// Each entry is checked against the registry: unknown scenario names (with close names),
/// axes no selected scenario has, invalid axis values. Throws UsageError naming `origin`.
/// Fills profile, profile_resolved and profile_hash (see record_profile).
RunPlan plan_from_profile(const nlohmann::json& resolved, const std::string& origin, const Registry& registry);

/// resolve_profile + plan_from_profile.
RunPlan load_profile(const std::string& name_or_path, const Registry& registry);

/// Replaces the values of `axis` in every entry that selects a scenario having that axis
/// (the command line's --size and --axis). Throws UsageError when no entry has it.
void override_axis(RunPlan& plan, const Registry& registry, const std::string& axis,
                   const std::vector<std::string>& values);

/// Rewrites plan.profile_resolved from the plan as it will run (settings in full, entries)
/// keeping name, description and sources, and sets plan.profile_hash. Call again after
/// command-line overrides so the report records what really ran.
void record_profile(RunPlan& plan);

/// Stable digest of what a resolved profile runs: FNV-1a 64 over the canonical JSON text
/// of its "settings" and "scenarios" (keys sorted), as 16 hex digits. Name and
/// description do not change it.
std::string profile_hash(const nlohmann::json& resolved);

} // namespace interopbench
