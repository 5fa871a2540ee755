#include "interopbench/family.hpp"
#include "interopbench/file_io.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace interopbench {

// ---- option values ------------------------------------------------------------------------

bool FamilyOptions::flag(std::string_view name) const {
    const auto it = m_values.find(std::string(name));
    return it != m_values.end() && it->is_boolean() && it->get<bool>();
}

std::string FamilyOptions::text(std::string_view name) const {
    const auto it = m_values.find(std::string(name));
    return it != m_values.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> FamilyOptions::texts(std::string_view name) const {
    std::vector<std::string> out;
    const auto it = m_values.find(std::string(name));
    if (it == m_values.end()) return out;
    if (it->is_string()) return {it->get<std::string>()}; // one value given as text
    if (!it->is_array()) return out;
    for (const auto& v : *it)
        if (v.is_string()) out.push_back(v.get<std::string>());
    return out;
}

std::optional<double> FamilyOptions::number(std::string_view name) const {
    const auto it = m_values.find(std::string(name));
    if (it == m_values.end() || !it->is_number() || !std::isfinite(it->get<double>())) return std::nullopt;
    return it->get<double>();
}

void FamilyOptions::set_flag(const std::string& name, bool value) { m_values[name] = value; }
void FamilyOptions::set_text(const std::string& name, std::string value) { m_values[name] = std::move(value); }
void FamilyOptions::set_texts(const std::string& name, std::vector<std::string> values) { m_values[name] = std::move(values); }
void FamilyOptions::set_number(const std::string& name, double value) { m_values[name] = value; }

FamilyOptions FamilyOptions::from_json(const nlohmann::json& j) {
    FamilyOptions o;
    if (j.is_object()) o.m_values = j;
    return o;
}

// ---- the list -----------------------------------------------------------------------------

namespace {

[[noreturn]] void bad_list(const std::string& what) { throw std::logic_error("family list: " + what); }

bool same_declaration(const FamilyOption& a, const FamilyOption& b) {
    return a.kind == b.kind && a.help == b.help && a.on_list == b.on_list;
}

nlohmann::json parse_entries(const Family& f, const ProfileEntries& p) {
    nlohmann::json j = parse_json(p.entries, false);
    if (!j.is_array())
        bad_list(fmt::format("family '{}': its entries for profile '{}' are not a JSON array", f.name, p.profile));
    return j;
}

} // namespace

Families::Families(std::vector<Family> families) : m_families(std::move(families)) {
    for (std::size_t i = 0; i < m_families.size(); ++i) {
        const Family& f = m_families[i];
        if (f.name.empty() || !f.add_scenarios) bad_list(fmt::format("entry {} has no name or no scenarios to add", i));
        for (std::size_t k = 0; k < i; ++k)
            if (m_families[k].name == f.name) bad_list(fmt::format("family '{}' is listed twice", f.name));
        if (f.profiles.empty() == f.no_profiles.empty())
            bad_list(fmt::format("family '{}' must give either its profile entries or why it adds none", f.name));
        auto& entries = m_entries.emplace_back();
        for (const auto& p : f.profiles) entries.emplace_back(p.profile, parse_entries(f, p));
        for (const FamilyOption& o : f.options) {
            const auto same = std::find_if(m_options.begin(), m_options.end(), [&](const FamilyOption& x) { return x.name == o.name; });
            if (same == m_options.end()) m_options.push_back(o);
            else if (!same_declaration(*same, o))
                bad_list(fmt::format("option '--{}' of family '{}' is declared differently by another family", o.name, f.name));
        }
    }
}

const Family* Families::find(std::string_view name) const {
    for (const Family& f : m_families)
        if (f.name == name) return &f;
    return nullptr;
}

Registry Families::registry(const FamilyOptions& options, std::vector<std::string>& warnings,
                            const std::vector<std::string>& only) const {
    Registry r;
    for (std::size_t i = 0; i < m_families.size(); ++i) {
        const Family& f = m_families[i];
        if (!only.empty() && std::find(only.begin(), only.end(), f.name) == only.end()) continue;
        f.add_scenarios(r, options, warnings);
        for (const auto& [profile, entries] : m_entries[i]) r.add_profile_entries(profile, entries);
    }
    return r;
}

namespace {

/// The configurations of `configs` that belong to family `f`.
std::vector<Config> configs_of(const Family& f, const std::vector<Config>& configs) {
    std::vector<Config> mine;
    for (const Config& c : configs)
        if (c.scenario && c.scenario->info().family == f.name) mine.push_back(c);
    return mine;
}

} // namespace

void Families::preflight(const RunSettings& settings, const std::vector<Config>& configs) const {
    for (const Family& f : m_families) {
        if (!f.preflight) continue;
        if (const auto mine = configs_of(f, configs); !mine.empty()) f.preflight(settings, mine);
    }
}

std::uint64_t Families::file_bytes(const std::vector<Config>& configs) const {
    std::uint64_t bytes = 0;
    for (const Family& f : m_families) {
        if (!f.file_bytes) continue;
        if (const auto mine = configs_of(f, configs); !mine.empty()) bytes += f.file_bytes(mine);
    }
    return bytes;
}

void Families::annotate(std::vector<Result>& results) const {
    for (const Family& f : m_families)
        if (f.annotate) f.annotate(results);
}

} // namespace interopbench
