#pragma once
/// The explicit list of scenarios, and selection by name or glob.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "interopbench/scenario.hpp"

namespace interopbench {

/// Throws UsageError unless `text` is a comma list of GPU ordinals or PCI bus ids
/// ("0000:1b:00.0", "1b:00.0"): the syntax of --devices, checked whatever devices exist.
void check_device_list_syntax(std::string_view text);

class Registry {
public:
    /// Adds a scenario; throws std::logic_error on a duplicate id.
    void add(std::unique_ptr<Scenario> scenario);
    /// Scenarios in registration order (the `list` order).
    const std::vector<std::unique_ptr<Scenario>>& all() const { return m_scenarios; }
    /// The scenario with this id, or nullptr.
    const Scenario* find(std::string_view id) const;
    /// Scenarios matching any of the comma-separated globs, in registry order, each once.
    /// Throws UsageError for a pattern that matches nothing, suggesting close names.
    std::vector<const Scenario*> select(std::string_view patterns) const;
    /// Up to three ids closest to `name`, for "did you mean".
    std::vector<std::string> suggest(std::string_view name) const;

    /// Appends plan entries (a JSON array of {"pattern", "axes"}) to what the families add
    /// to the built-in profile `profile` (family.hpp); profile.hpp reads them back.
    void add_profile_entries(const std::string& profile, const nlohmann::json& entries);
    /// The entries the families add to `profile`, in family order (an empty array for none).
    nlohmann::json profile_entries(std::string_view profile) const;

    /// What several families' scenarios share for the registry's life (the storage and
    /// pipeline families: the run's storage site): made by `make` for the first family that
    /// asks for `key`, the same object for the next. A key always names one type.
    template <class T, class Make>
    std::shared_ptr<T> shared(const std::string& key, Make make) {
        std::shared_ptr<void>& slot = m_shared[key];
        if (!slot) slot = std::shared_ptr<T>(make());
        return std::static_pointer_cast<T>(slot);
    }

private:
    std::vector<std::unique_ptr<Scenario>> m_scenarios;
    std::vector<std::pair<std::string, nlohmann::json>> m_profile_entries;
    std::map<std::string, std::shared_ptr<void>> m_shared;
};

} // namespace interopbench
