#include "interopbench/registry.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "interopbench/errors.hpp"

namespace interopbench {

const DeviceInfo* Machine::device(int ordinal) const {
    for (const auto& d : devices)
        if (d.ordinal == ordinal) return &d;
    return nullptr;
}

std::optional<std::string> gpu_unavailable_reason(const Machine& machine) {
    if (machine.cuda_available) return std::nullopt;
    return machine.cuda_note.empty() ? std::string("no usable CUDA device") : machine.cuda_note;
}

void Registry::add(std::unique_ptr<Scenario> scenario) {
    if (find(scenario->info().id))
        throw std::logic_error("duplicate scenario id " + scenario->info().id);
    m_scenarios.push_back(std::move(scenario));
}

const Scenario* Registry::find(std::string_view id) const {
    for (const auto& s : m_scenarios)
        if (s->info().id == id) return s.get();
    return nullptr;
}

std::vector<std::string> Registry::suggest(std::string_view name) const {
    std::vector<std::pair<std::size_t, std::string>> scored;
    for (const auto& s : m_scenarios) {
        const auto& id = s->info().id;
        std::size_t d = edit_distance(name, id);
        if (id.find(name) != std::string::npos || name.find(id) != std::string_view::npos) d = std::min<std::size_t>(d, 1);
        scored.emplace_back(d, id);
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    const std::size_t limit = std::max<std::size_t>(3, name.size() / 2);
    for (const auto& [d, id] : scored)
        if (d <= limit && out.size() < 3) out.push_back(id);
    return out;
}

std::vector<const Scenario*> Registry::select(std::string_view patterns) const {
    std::vector<const Scenario*> out;
    for (const auto& pattern : split_list(patterns)) {
        bool matched = false;
        for (const auto& s : m_scenarios) {
            if (!glob_match(pattern, s->info().id)) continue;
            matched = true;
            if (std::find(out.begin(), out.end(), s.get()) == out.end()) out.push_back(s.get());
        }
        if (!matched) {
            const auto close = suggest(pattern);
            std::string hint = close.empty() ? std::string("run 'interopbench list' to see the scenarios")
                                             : fmt::format("did you mean {}? ('interopbench list' shows all)",
                                                           fmt::join(close, ", "));
            throw UsageError(fmt::format("unknown scenario '{}'", pattern), hint);
        }
    }
    return out;
}

} // namespace interopbench
