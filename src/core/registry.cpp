#include "interopbench/registry.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <fmt/format.h>

#include "interopbench/errors.hpp"

namespace interopbench {

const DeviceInfo* Machine::device(int ordinal) const {
    for (const auto& d : devices)
        if (d.ordinal == ordinal) return &d;
    return nullptr;
}

const RuntimeLibrary* Machine::library(std::string_view name) const {
    for (const auto& l : libraries)
        if (l.name == name) return &l;
    return nullptr;
}

void Machine::set_library(RuntimeLibrary lib) {
    for (auto& l : libraries)
        if (l.name == lib.name) {
            l = std::move(lib);
            return;
        }
    libraries.push_back(std::move(lib));
}

namespace {

bool all_of_class(std::string_view s, int (*pred)(int)) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)) != 0; });
}

// "dddd:bb:dd.f" (domain of 4 to 8 hex digits) or "bb:dd.f": bus 2 hex digits, device up to
// 0x1f, function 0 to 7.
bool is_pci_bus_id(std::string_view s) {
    const auto dot = s.rfind('.');
    const auto c2 = s.rfind(':');
    if (dot == std::string_view::npos || c2 == std::string_view::npos || dot < c2) return false;
    const auto c1 = c2 == 0 ? std::string_view::npos : s.rfind(':', c2 - 1);
    const std::string_view domain = c1 == std::string_view::npos ? std::string_view{} : s.substr(0, c1);
    const std::string_view bus = s.substr(c1 == std::string_view::npos ? 0 : c1 + 1, c2 - (c1 == std::string_view::npos ? 0 : c1 + 1));
    const std::string_view dev = s.substr(c2 + 1, dot - c2 - 1), func = s.substr(dot + 1);
    if (c1 != std::string_view::npos && (domain.size() < 1 || domain.size() > 8 || !all_of_class(domain, ::isxdigit)))
        return false;
    if (bus.size() != 2 || !all_of_class(bus, ::isxdigit)) return false;
    if (dev.size() != 2 || !all_of_class(dev, ::isxdigit) || std::stoul(std::string(dev), nullptr, 16) > 0x1f) return false;
    return func.size() == 1 && func[0] >= '0' && func[0] <= '7';
}

} // namespace

void check_device_list_syntax(std::string_view text) {
    const std::string hint = "give GPU ordinals (0,1) or PCI bus ids (0000:1b:00.0 or 1b:00.0), comma separated";
    const auto items = split_list(text);
    if (items.empty()) throw UsageError(fmt::format("device list '{}' names no GPU", text), hint);
    for (const auto& item : items) {
        if (all_of_class(item, ::isdigit)) {
            const std::uint64_t ordinal = parse_uint(item, "device");
            if (ordinal > 65535) throw UsageError(fmt::format("GPU ordinal {} is out of range", item), hint);
            continue;
        }
        if (!is_pci_bus_id(item))
            throw UsageError(fmt::format("'{}' in --devices is neither a GPU ordinal nor a PCI bus id", item), hint);
    }
}

std::vector<int> parse_device_list(std::string_view text, const std::vector<DeviceInfo>& devices) {
    check_device_list_syntax(text); // the same syntax everywhere, with or without a GPU
    const std::string hint = devices.empty() ? std::string("this machine has no usable GPU")
                                             : fmt::format("use ordinals 0 to {} or PCI bus ids such as {}",
                                                           devices.size() - 1, devices[0].pci_bus_id);
    auto lower = [](std::string s) {
        for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    };
    std::vector<int> out;
    for (const auto& item : split_list(text)) {
        int found = -1;
        if (std::all_of(item.begin(), item.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
            const std::uint64_t ordinal = parse_uint(item, "device");
            for (const auto& d : devices)
                if (d.ordinal >= 0 && static_cast<std::uint64_t>(d.ordinal) == ordinal) found = d.ordinal;
            if (found < 0)
                throw UsageError(fmt::format("GPU {} does not exist: this machine has {} GPU(s)", ordinal, devices.size()),
                                 hint);
        } else {
            // A PCI bus id, full ("0000:1b:00.0") or without the domain ("1b:00.0").
            const std::string want = lower(item);
            for (const auto& d : devices) {
                const std::string id = lower(d.pci_bus_id);
                if (id == want || (id.size() > want.size() && id.ends_with(want) && id[id.size() - want.size() - 1] == ':')) {
                    found = d.ordinal;
                    break;
                }
            }
            if (found < 0) throw UsageError(fmt::format("no GPU with PCI bus id '{}'", item), hint);
        }
        if (std::find(out.begin(), out.end(), found) == out.end()) out.push_back(found);
    }
    if (out.empty()) throw UsageError(fmt::format("device list '{}' names no GPU", text), hint);
    return out;
}

std::optional<std::string> gpu_unavailable_reason(const Machine& machine) {
    if (machine.cuda_available) return std::nullopt;
    return machine.cuda_note.empty() ? std::string("no usable CUDA device") : machine.cuda_note;
}

void Registry::add(std::unique_ptr<Scenario> scenario) {
    if (find(scenario->id())) throw std::logic_error(fmt::format("duplicate scenario id {}", scenario->id()));
    m_scenarios.push_back(std::move(scenario));
}

void Registry::add_profile_entries(const std::string& profile, const nlohmann::json& entries) {
    for (auto& [name, list] : m_profile_entries)
        if (name == profile) {
            for (const auto& e : entries) list.push_back(e);
            return;
        }
    m_profile_entries.emplace_back(profile, entries);
}

nlohmann::json Registry::profile_entries(std::string_view profile) const {
    for (const auto& [name, list] : m_profile_entries)
        if (name == profile) return list;
    return nlohmann::json::array();
}

const Scenario* Registry::find(std::string_view id) const {
    for (const auto& s : m_scenarios)
        if (s->id() == id) return s.get();
    return nullptr;
}

std::vector<std::string> Registry::suggest(std::string_view name) const {
    std::vector<std::pair<std::size_t, std::string>> scored;
    for (const auto& s : m_scenarios) {
        const auto& id = s->id();
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
            if (!glob_match(pattern, s->id())) continue;
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
