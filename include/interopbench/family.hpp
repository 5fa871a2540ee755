#pragma once
/// A scenario family as the framework sees it: a name, a function that adds its scenarios to
/// the registry, the run options it reads, optional hooks around a run, and what it adds to
/// the built-in profiles. The command line hands the list of families (families/builtin.cpp)
/// to the core; the core knows no family's name, option or field.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {

/// The value type of a family option; decides how the command line parses it.
enum class OptionKind {
    flag,   ///< present or not: `--keep-files`
    text,   ///< one string: `--storage-dir DIR`
    texts,  ///< a repeatable string: `--plugin-path DIR` (each occurrence kept, in order)
    number, ///< a finite number: `--plugin-timeout 5`
};

/// One command-line option a family reads, e.g. the storage directory. The same option may be
/// declared by several families (storage and pipeline share the storage directory) when
/// every declaration is the same.
struct FamilyOption {
    std::string name; ///< long name without dashes, "storage-dir": also its key in FamilyOptions
    OptionKind kind = OptionKind::text;
    std::string help;
    bool on_list = false; ///< also an option of `list` (where scenarios come from: plugin folders)
};

/// The plan entries a family adds to one built-in profile: the profile's name and a JSON
/// array text of {"pattern", "axes"} entries, as in a profile file's "scenarios".
struct ProfileEntries {
    std::string profile;
    std::string entries;
};

/// One family: its folder under src/families/ and the descriptor defined there.
struct Family {
    std::string name;    ///< the folder name; ScenarioInfo::family of its scenarios
    std::string summary; ///< one line: what the family measures (`list --families`)
    /// Adds the family's scenarios to `r` in `list` order. `warnings` collects what the user
    /// should hear (a plugin manifest left out) without failing the command.
    std::function<void(Registry& r, const FamilyOptions& options, std::vector<std::string>& warnings)> add_scenarios;
    std::vector<FamilyOption> options;
    /// Optional, before anything is measured (every process of a run calls it): checks input
    /// that only this family can judge and claims what it needs (space in the storage
    /// directory). `configs` are this family's selected configurations, never empty. Throws
    /// UsageError.
    std::function<void(const RunSettings& settings, const std::vector<Config>& configs)> preflight;
    /// Optional: the bytes of the files this family's selected configurations create (pattern
    /// files, datasets, written files; kept files already there not counted), as its preflight
    /// claims them; `run --dry-run` says their sum. `configs` as for preflight. Throws
    /// UsageError for input only this family can judge, as its preflight does.
    std::function<std::uint64_t(const std::vector<Config>& configs)> file_bytes;
    /// Optional, after the run: annotations that need the whole run's results (efficiency
    /// against the run's own standalone measurements).
    std::function<void(std::vector<Result>& results)> annotate;
    /// What the family adds to the built-in profiles (quick, ci, full)...
    std::vector<ProfileEntries> profiles;
    /// ...or, when it adds to none of them, why not. One of the two is required.
    std::string no_profiles;
};

/// The families of the tool, in `list` order: the one explicit list is built by
/// families/builtin.cpp. The constructor checks the list: unique names, every family with
/// scenarios to add, profiles or a reason for none, profile entries that parse, an option
/// declared twice declared alike; it throws std::logic_error otherwise (a programming error).
class Families {
public:
    explicit Families(std::vector<Family> families);
    const std::vector<Family>& all() const { return m_families; }
    const Family* find(std::string_view name) const;
    /// Every family option, each once, in list order.
    const std::vector<FamilyOption>& options() const { return m_options; }
    /// A registry of the scenarios (in list order) and profile entries of every family, or of
    /// the families named in `only` when it is not empty.
    Registry registry(const FamilyOptions& options, std::vector<std::string>& warnings,
                      const std::vector<std::string>& only = {}) const;
    /// Calls the preflight of each family that has selected configurations, with them.
    void preflight(const RunSettings& settings, const std::vector<Config>& configs) const;
    /// The sum of the file_bytes of each family that has selected configurations.
    std::uint64_t file_bytes(const std::vector<Config>& configs) const;
    /// Calls every family's annotate hook, in list order.
    void annotate(std::vector<Result>& results) const;

private:
    std::vector<Family> m_families;
    std::vector<FamilyOption> m_options;
    /// Each family's profile entries, parsed once when the list is checked (same order).
    std::vector<std::vector<std::pair<std::string, nlohmann::json>>> m_entries;
};

} // namespace interopbench
