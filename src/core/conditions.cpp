// The "conditions" block of a report: written from two snapshots, read back leniently, and
// said in one line.
#include "interopbench/conditions.hpp"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "interopbench/text.hpp"

namespace interopbench {
namespace {

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json gpu_json(const GpuConditions* start, const GpuConditions& last, bool ended) {
    nlohmann::json g;
    g["ordinal"] = last.ordinal;
    g["pci_bus_id"] = last.pci_bus_id;
    const GpuConditions* end = ended ? &last : nullptr;
    const auto pair = [&](auto member) -> nlohmann::json {
        const auto s = start ? start->*member : decltype(last.*member){};
        const auto e = end ? end->*member : decltype(last.*member){};
        if (!s && !e) return nullptr;
        return {{"start", or_null(s)}, {"end", or_null(e)}};
    };
    g["other_processes"] = pair(&GpuConditions::other_processes);
    g["clock_event_reasons"] = pair(&GpuConditions::clock_reasons);
    if (g["clock_event_reasons"].is_object()) {
        std::vector<std::string> names;
        for (const GpuConditions* s : {start, end})
            if (s)
                for (const auto& n : s->clock_reason_names)
                    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
        g["clock_event_reasons"]["names"] = names;
    }
    if (last.pcie)
        g["pcie"] = {{"gen_current", last.pcie->gen_current},
                     {"width_current", last.pcie->width_current},
                     {"gen_max", last.pcie->gen_max},
                     {"width_max", last.pcie->width_max}};
    else
        g["pcie"] = nullptr;
    g["nvlinks_up"] = or_null(last.nvlinks_up);
    g["nvlinks_down"] = or_null(last.nvlinks_down);
    g["ecc_uncorrected_volatile"] = or_null(last.ecc_uncorrected_volatile);
    g["temperature_c"] = or_null(last.temperature_c);
    g["local_cpus_allowed"] = or_null(last.local_cpus_allowed);
    const bool some_null = std::any_of(g.begin(), g.end(), [](const nlohmann::json& v) { return v.is_null(); });
    if (some_null) {
        std::string reason = last.reason;
        if (reason.empty() && start) reason = start->reason;
        g["reason"] = reason.empty() ? "not known on this machine" : reason;
    }
    return g;
}

// Lenient readers: nothing where the field is missing or of another type.
const nlohmann::json& at(const nlohmann::json& obj, const char* key) {
    static const nlohmann::json k_null;
    if (!obj.is_object()) return k_null;
    const auto it = obj.find(key);
    return it == obj.end() ? k_null : *it;
}

std::optional<std::uint64_t> u64_at(const nlohmann::json& obj, const char* key) {
    const auto& v = at(obj, key);
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    return std::nullopt;
}

std::optional<int> int_at(const nlohmann::json& obj, const char* key) {
    const auto& v = at(obj, key);
    if (v.is_number_integer() && v.get<std::int64_t>() >= INT_MIN && v.get<std::int64_t>() <= INT_MAX)
        return static_cast<int>(v.get<std::int64_t>());
    if (v.is_number_unsigned() && v.get<std::uint64_t>() <= INT_MAX) return static_cast<int>(v.get<std::uint64_t>());
    return std::nullopt;
}

std::optional<double> double_at(const nlohmann::json& obj, const char* key) {
    const auto& v = at(obj, key);
    if (v.is_number()) return v.get<double>();
    return std::nullopt;
}

std::optional<bool> bool_at(const nlohmann::json& obj, const char* key) {
    const auto& v = at(obj, key);
    if (v.is_boolean()) return v.get<bool>();
    return std::nullopt;
}

std::string text_at(const nlohmann::json& obj, const char* key) {
    const auto& v = at(obj, key);
    return v.is_string() ? v.get<std::string>() : std::string{};
}

std::string plural(std::uint64_t n, const char* one, const char* many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

} // namespace

nlohmann::json conditions_json(const ConditionsSnapshot& start, const std::optional<ConditionsSnapshot>& end) {
    const ConditionsSnapshot& last = end ? *end : start;
    nlohmann::json j;
    j["start"] = start.time;
    j["end"] = end ? nlohmann::json(end->time) : nlohmann::json(nullptr);
    nlohmann::json limits = nlohmann::json::array();
    for (const auto& l : last.cgroup.io_limits)
        limits.push_back({{"device", l.device}, {"kind", l.kind}, {"value", l.value}, {"source", l.source}});
    j["process"] = {
        {"cpus_allowed", or_null(last.cpus_allowed)},
        {"cpus_allowed_count", or_null(last.cpus_allowed_count)},
        {"numa_nodes_allowed", or_null(last.numa_nodes_allowed)},
        {"cgroup",
         {{"io_limits", limits},
          {"cpu_quota_cpus", or_null(last.cgroup.cpu_quota_cpus)},
          {"memory_limit_bytes", or_null(last.cgroup.memory_limit_bytes)}}}};
    j["load_average"] = {{"start", or_null(start.load_average)},
                         {"end", end ? or_null(end->load_average) : nlohmann::json(nullptr)}};
    j["logical_cpus"] = last.logical_cpus > 0 ? nlohmann::json(last.logical_cpus) : nlohmann::json(nullptr);
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& g : last.gpus) {
        const auto s = std::find_if(start.gpus.begin(), start.gpus.end(),
                                    [&](const GpuConditions& x) { return x.pci_bus_id == g.pci_bus_id; });
        gpus.push_back(gpu_json(s == start.gpus.end() ? nullptr : &*s, g, end.has_value()));
    }
    j["gpus"] = std::move(gpus);
    return j;
}

std::optional<ReportConditions> read_conditions(const nlohmann::json& block) {
    if (!block.is_object()) return std::nullopt;
    ReportConditions c;
    c.start = text_at(block, "start");
    c.end = text_at(block, "end");
    const auto& process = at(block, "process");
    if (const auto& v = at(process, "cpus_allowed"); v.is_string()) c.cpus_allowed = v.get<std::string>();
    c.cpus_allowed_count = int_at(process, "cpus_allowed_count");
    if (const auto& v = at(process, "numa_nodes_allowed"); v.is_array()) {
        std::vector<unsigned> nodes;
        for (const auto& n : v)
            if (n.is_number_unsigned() && n.get<std::uint64_t>() <= UINT_MAX) nodes.push_back(n.get<unsigned>());
        c.numa_nodes_allowed = nodes;
    }
    const auto& cgroup = at(process, "cgroup");
    if (const auto& v = at(cgroup, "io_limits"); v.is_array())
        for (const auto& l : v)
            if (const auto value = u64_at(l, "value"); value && !text_at(l, "device").empty() && !text_at(l, "kind").empty())
                c.io_limits.push_back({text_at(l, "device"), text_at(l, "kind"), *value, text_at(l, "source")});
    c.cpu_quota_cpus = double_at(cgroup, "cpu_quota_cpus");
    c.memory_limit_bytes = u64_at(cgroup, "memory_limit_bytes");
    const auto& load = at(block, "load_average");
    c.load_average_start = double_at(load, "start");
    c.load_average_end = double_at(load, "end");
    c.logical_cpus = int_at(block, "logical_cpus");
    if (const auto& v = at(block, "gpus"); v.is_array())
        for (const auto& g : v) {
            if (!g.is_object()) continue;
            ReportConditions::Gpu r;
            r.ordinal = int_at(g, "ordinal");
            r.pci_bus_id = text_at(g, "pci_bus_id");
            const auto& procs = at(g, "other_processes");
            r.other_processes_start = int_at(procs, "start");
            r.other_processes_end = int_at(procs, "end");
            const auto& clocks = at(g, "clock_event_reasons");
            r.clock_reasons_start = u64_at(clocks, "start");
            r.clock_reasons_end = u64_at(clocks, "end");
            if (const auto& names = at(clocks, "names"); names.is_array())
                for (const auto& n : names)
                    if (n.is_string()) r.clock_reason_names.push_back(n.get<std::string>());
            if (const auto& p = at(g, "pcie"); p.is_object())
                r.pcie = PcieState{int_at(p, "gen_current").value_or(0), int_at(p, "width_current").value_or(0),
                                   int_at(p, "gen_max").value_or(0), int_at(p, "width_max").value_or(0)};
            r.nvlinks_up = int_at(g, "nvlinks_up");
            r.nvlinks_down = int_at(g, "nvlinks_down");
            r.ecc_uncorrected_volatile = u64_at(g, "ecc_uncorrected_volatile");
            r.temperature_c = int_at(g, "temperature_c");
            r.local_cpus_allowed = bool_at(g, "local_cpus_allowed");
            r.reason = text_at(g, "reason");
            c.gpus.push_back(std::move(r));
        }
    return c;
}

std::string conditions_note(const ReportConditions& c) {
    std::vector<std::string> parts;
    for (const auto& l : c.io_limits) {
        const bool read = l.kind.rfind("read", 0) == 0;
        const bool bps = l.kind.size() > 4 && l.kind.compare(l.kind.size() - 4, 4, "_bps") == 0;
        parts.push_back(fmt::format("{} limited to {} by a cgroup on {}", read ? "reads" : "writes",
                                    bps ? format_value(static_cast<double>(l.value), "B/s") : fmt::format("{} IOPS", l.value),
                                    l.device));
    }
    if (c.cpu_quota_cpus)
        parts.push_back(fmt::format("a cgroup CPU quota of {:g} CPUs{}", *c.cpu_quota_cpus,
                                    c.logical_cpus ? fmt::format(" of {}", *c.logical_cpus) : std::string{}));
    if (c.memory_limit_bytes)
        parts.push_back(fmt::format("memory limited to {} by a cgroup", format_value(static_cast<double>(*c.memory_limit_bytes), "B")));
    for (const auto& g : c.gpus) {
        const std::string gpu = g.ordinal ? fmt::format("GPU{}", *g.ordinal) : g.pci_bus_id;
        const int others = std::max(g.other_processes_start.value_or(0), g.other_processes_end.value_or(0));
        if (others > 0) parts.push_back(fmt::format("{} on {}", plural(static_cast<std::uint64_t>(others), "other process", "other processes"), gpu));
        if (!g.clock_reason_names.empty()) {
            std::string names;
            for (const auto& n : g.clock_reason_names) names += (names.empty() ? "" : ", ") + n;
            parts.push_back(fmt::format("{} clocks slowed ({})", gpu, names));
        }
        if (g.nvlinks_down.value_or(0) > 0)
            parts.push_back(fmt::format("{} down on {}", plural(static_cast<std::uint64_t>(*g.nvlinks_down), "NVLink", "NVLinks"), gpu));
        if (g.ecc_uncorrected_volatile.value_or(0) > 0)
            parts.push_back(fmt::format("{} on {}", plural(*g.ecc_uncorrected_volatile, "uncorrected ECC error", "uncorrected ECC errors"), gpu));
        if (g.local_cpus_allowed == false) parts.push_back(fmt::format("no allowed CPU is local to {}", gpu));
    }
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
}

} // namespace interopbench
