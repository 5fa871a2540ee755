// Declared paths and their limits (limits.hpp): the one place "of limit" is computed.
#include "interopbench/limits.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/text.hpp"

namespace interopbench {

namespace {

constexpr std::pair<PathKind, const char*> k_kinds[] = {
    {PathKind::host_link, "host_link"},     {PathKind::gpu_memory, "gpu_memory"}, {PathKind::peer_link, "peer_link"},
    {PathKind::nccl_bus, "nccl_bus"},       {PathKind::host_memory, "host_memory"}, {PathKind::page_cache, "page_cache"},
    {PathKind::storage, "storage"},         {PathKind::nic, "nic"},
};

std::string gpu_words(int gpu) {
    return gpu == k_every_gpu ? std::string("every GPU") : gpu == k_first_gpu ? std::string("the first selected GPU") : fmt::format("GPU {}", gpu);
}

// The relative uncertainty above which no figure may sit over its limit: a figure more than
// this above is a defect of the limit, whatever its own noise.
constexpr double k_most_over_limit = 0.05;

} // namespace

const char* to_string(PathKind kind) {
    for (const auto& [k, name] : k_kinds)
        if (k == kind) return name;
    return "?";
}

std::optional<PathKind> path_kind_from_string(std::string_view text) {
    for (const auto& [k, name] : k_kinds)
        if (text == name) return k;
    return std::nullopt;
}

std::string PathUse::label() const {
    switch (kind) {
    case PathKind::host_link:
        return fmt::format("host link of {}{}", gpu_words(gpu), direction.empty() ? "" : " (" + direction + ")");
    case PathKind::gpu_memory: return fmt::format("memory of {}", gpu_words(gpu));
    case PathKind::peer_link:
        return fmt::format("peer link {} -> {}", gpu_words(gpu), peer == k_every_gpu ? "every other GPU" : gpu_words(peer));
    case PathKind::nccl_bus: return fmt::format("NCCL bus of {}", gpu == k_every_gpu ? "the selected GPUs" : gpu_words(gpu));
    case PathKind::host_memory: return "host memory";
    case PathKind::page_cache: return "page cache";
    case PathKind::storage: return "storage";
    case PathKind::nic: return "NIC";
    }
    return "?";
}

std::string PathUse::id() const {
    std::string id = to_string(kind);
    if (gpu != -1) id += ":" + (gpu == k_every_gpu ? std::string("*") : std::to_string(gpu));
    if (peer != -1) id += ">" + (peer == k_every_gpu ? std::string("*") : std::to_string(peer));
    if (!direction.empty()) id += ":" + direction;
    return id;
}

void to_json(nlohmann::json& j, const PathUse& p) {
    j = {{"kind", to_string(p.kind)}};
    if (p.gpu != -1) j["gpu"] = p.gpu == k_every_gpu ? nlohmann::json("*") : p.gpu == k_first_gpu ? nlohmann::json("first") : nlohmann::json(p.gpu);
    if (p.peer != -1) j["peer"] = p.peer == k_every_gpu ? nlohmann::json("*") : nlohmann::json(p.peer);
    if (!p.direction.empty()) j["direction"] = p.direction;
    if (p.traffic != 1) j["traffic"] = p.traffic;
}

void from_json(const nlohmann::json& j, PathUse& p) {
    if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string())
        throw std::invalid_argument("a declared path needs a \"kind\"");
    const auto kind = path_kind_from_string(j["kind"].get<std::string>());
    if (!kind) throw std::invalid_argument("unknown path kind '" + j["kind"].get<std::string>() + "'");
    p = PathUse{};
    p.kind = *kind;
    const auto gpu_field = [&j](const char* name) {
        if (!j.contains(name)) return -1;
        const auto& v = j[name];
        if (v.is_string() && v.get<std::string>() == "*") return k_every_gpu;
        if (v.is_string() && v.get<std::string>() == "first" && std::string_view(name) == "gpu") return k_first_gpu;
        if (v.is_number_integer() && v.get<long long>() >= 0 && v.get<long long>() < (1 << 20)) return v.get<int>();
        throw std::invalid_argument(std::string("a declared path's \"") + name + "\" is not a GPU ordinal or \"*\"");
    };
    p.gpu = gpu_field("gpu");
    p.peer = gpu_field("peer");
    if (j.contains("direction")) {
        if (!j["direction"].is_string()) throw std::invalid_argument("a declared path's \"direction\" is not text");
        p.direction = j["direction"].get<std::string>();
    }
    if (j.contains("traffic")) {
        if (!j["traffic"].is_number() || !(j["traffic"].get<double>() > 0) || j["traffic"].get<double>() > 1e6)
            throw std::invalid_argument("a declared path's \"traffic\" is not a positive number");
        p.traffic = j["traffic"].get<double>();
    }
}

double pcie_bandwidth(int gen, int width) {
    if (gen <= 0 || width <= 0)
        return 0;
    static const double k_gts[] = {2.5, 5, 8, 16, 32, 64, 128};
    const double gts = k_gts[std::min(gen, 7) - 1];
    const double efficiency = gen <= 2 ? 8.0 / 10 : gen <= 5 ? 128.0 / 130 : 242.0 / 256;
    return gts * 1e9 * efficiency / 8 * width;
}

double memory_bandwidth(double memory_clock_khz, double bus_width_bits) {
    if (!(memory_clock_khz > 0) || !(bus_width_bits > 0)) return 0;
    return 2 * memory_clock_khz * 1e3 * bus_width_bits / 8;
}

std::vector<PathUse> declared_paths(const Result& result) {
    std::vector<PathUse> out;
    const auto paths = result.details.find("paths");
    if (paths == result.details.end() || !paths->is_array()) return out;
    for (const auto& j : *paths) out.push_back(j.get<PathUse>());
    return out;
}

void declare_paths(std::vector<Result>& results, const Registry& registry) {
    for (Result& r : results) {
        if (r.details.contains("paths")) continue;
        const Scenario* s = registry.find(r.scenario);
        if (!s) continue;
        // A report's params are text: typed as the expansion types them. A configuration
        // today's scenario cannot read (an axis renamed, a hostile report) declares nothing.
        std::vector<PathUse> paths;
        try {
            paths = s->paths(typed_params(s->info(), r.params.items(), Machine{}));
        } catch (const std::exception&) {
            continue;
        }
        if (paths.empty()) continue;
        r.details["paths"] = paths;
        const ScenarioInfo& info = s->info();
        if (!info.limited_metric.empty()) r.details["limited_metric"] = info.limited_metric;
    }
}

void apply_limits(std::vector<Result>& results, const LimitLookup& machine) {
    for (Result& r : results) {
        for (const char* stale : {"efficiency", "path", "path_bandwidth", "limit_wrong", "limit_note"}) r.details.erase(stale);
        // (limited_metric stays: declare_paths wrote it with the paths.)
        std::vector<PathUse> declared;
        try {
            declared = declared_paths(r);
        } catch (const std::exception& e) {
            r.details["limit_note"] = fmt::format("no efficiency: {}", e.what());
            continue;
        }
        if (declared.empty()) continue;
        // Ceilings the same run measured, by path id (families' annotate hooks).
        std::map<std::string, PathLimit> measured;
        if (const auto m = r.details.find("measured_limits"); m != r.details.end() && m->is_array())
            for (const auto& e : *m)
                if (e.is_object() && e.contains("path") && e["path"].is_string() && e.contains("bandwidth") &&
                    e["bandwidth"].is_number() && e["bandwidth"].get<double>() > 0)
                    measured[e["path"].get<std::string>()] = {e["bandwidth"].get<double>(), e.value("source", "")};
        nlohmann::json out = nlohmann::json::array();
        std::optional<PathUse> narrowest;
        double narrowest_limit = 0;
        std::string narrowest_source;
        std::string missing;
        for (const PathUse& p : declared) {
            // A measured ceiling is already in the result's counted bytes; a machine's limit is
            // in the bytes that cross the path.
            std::optional<PathLimit> limit;
            bool is_measured = false;
            if (const auto it = measured.find(p.id()); it != measured.end()) limit = it->second, is_measured = true;
            else if (machine) limit = machine(p);
            nlohmann::json e = p;
            if (limit && limit->bandwidth > 0) {
                e["limit"] = limit->bandwidth;
                e["source"] = limit->source;
                if (is_measured) e["measured"] = true;
                const double per_counted = is_measured ? limit->bandwidth : limit->bandwidth / p.traffic;
                if (!narrowest || per_counted < narrowest_limit) {
                    narrowest = p;
                    narrowest_limit = per_counted;
                    narrowest_source = limit->source;
                }
            } else if (missing.empty()) {
                missing = p.label();
            }
            out.push_back(std::move(e));
        }
        r.details["paths"] = out;
        // The figure set against the limit: the scenario's limited metric, else the primary one.
        const MetricResult* bw = nullptr;
        if (const auto named = r.details.find("limited_metric"); named != r.details.end() && named->is_string())
            bw = r.metric(named->get<std::string>());
        else if (!r.metrics.empty())
            bw = &r.metrics[0];
        if (r.status != Status::ok || !bw || bw->info.unit != "B/s" || bw->stats.n == 0) continue;
        if (!missing.empty()) {
            r.details["limit_note"] = fmt::format("no efficiency: the {} has no known limit", missing);
            continue;
        }
        r.details["path"] = narrowest->label();
        r.details["path_bandwidth"] = narrowest_limit;
        const double efficiency = bw->stats.median / narrowest_limit;
        const double allowed = 1 + std::clamp(uncertainty(*bw).relative, 0.0, k_most_over_limit);
        if (efficiency > allowed) {
            r.details["limit_wrong"] =
                fmt::format("limit wrong: {} is {:.0f}% of the {}'s limit {} ({}); that limit is not this path's ceiling",
                            format_value(bw->stats.median, "B/s"), 100 * efficiency, narrowest->label(),
                            format_value(narrowest_limit, "B/s"), narrowest_source);
            continue;
        }
        r.details["efficiency"] = efficiency;
    }
}

LimitLookup machine_limits(const nlohmann::json& topology, const nlohmann::json& devices) {
    // The GPUs by CUDA ordinal: the topology's entry (host path, index for pairs) and the device's.
    struct Gpu {
        nlohmann::json topo, device;
    };
    auto gpus = std::make_shared<std::map<int, Gpu>>();
    std::vector<int> selected;
    if (devices.is_array())
        for (const auto& d : devices)
            if (d.is_object() && d.contains("ordinal") && d["ordinal"].is_number_integer()) {
                const int o = d["ordinal"].get<int>();
                (*gpus)[o].device = d;
                if (d.value("selected", true)) selected.push_back(o);
            }
    if (topology.is_object() && topology.contains("gpus") && topology["gpus"].is_array())
        for (const auto& g : topology["gpus"])
            if (g.is_object() && g.contains("cuda_ordinal") && g["cuda_ordinal"].is_number_integer())
                (*gpus)[g["cuda_ordinal"].get<int>()].topo = g;
    nlohmann::json pairs = topology.is_object() && topology.contains("pairs") && topology["pairs"].is_array()
                               ? topology["pairs"]
                               : nlohmann::json::array();
    const auto number = [](const nlohmann::json& j, const char* key) {
        return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
    };

    // One GPU's host link: the topology's host path (PCIe generation x width, or NVLink-C2C),
    // else the device's own PCIe reading.
    const auto host_link = [gpus, number](int o) -> std::optional<PathLimit> {
        const auto it = gpus->find(o);
        if (it == gpus->end()) return std::nullopt;
        const auto& t = it->second.topo;
        if (t.is_object() && t.contains("host_path")) {
            const double b = number(t["host_path"], "bandwidth");
            if (b > 0) {
                std::string how = t["host_path"].value("class", "host path");
                if (t.contains("pcie") && t["pcie"].is_object() && t["pcie"].contains("label") && t["pcie"]["label"].is_string())
                    how += " " + t["pcie"]["label"].get<std::string>();
                return PathLimit{b, how + ", from the topology"};
            }
        }
        const auto& d = it->second.device;
        if (d.is_object() && d.contains("pcie") && d["pcie"].is_object()) {
            const int gen = static_cast<int>(number(d["pcie"], "gen_max")), width = static_cast<int>(number(d["pcie"], "width_max"));
            if (const double b = pcie_bandwidth(gen, width); b > 0)
                return PathLimit{b, fmt::format("PCIe Gen{} x{}, from the device", gen, width)};
        }
        return std::nullopt;
    };
    const auto gpu_memory = [gpus, number](int o) -> std::optional<PathLimit> {
        const auto it = gpus->find(o);
        if (it == gpus->end()) return std::nullopt;
        const auto& d = it->second.device;
        const double clock = number(d, "memory_clock_khz"), width = number(d, "memory_bus_width_bits");
        const double b = memory_bandwidth(clock, width);
        if (b <= 0) return std::nullopt;
        return PathLimit{b, fmt::format("{:.0f} MHz x {:.0f} bit, double data rate, reads and writes together, from the device",
                                        clock / 1e3, width)};
    };
    const auto peer_link = [gpus, pairs, number](int a, int b) -> std::optional<PathLimit> {
        const auto ia = gpus->find(a), ib = gpus->find(b);
        if (ia == gpus->end() || ib == gpus->end() || !ia->second.topo.is_object() || !ib->second.topo.is_object())
            return std::nullopt;
        const auto from = ia->second.topo.value("index", -1), to = ib->second.topo.value("index", -1);
        for (const auto& p : pairs)
            if (p.is_object() && p.value("from", -2) == from && p.value("to", -2) == to && number(p, "bandwidth") > 0)
                return PathLimit{number(p, "bandwidth"), p.value("class", std::string("link")) + ", from the topology"};
        return std::nullopt;
    };
    // A path over several GPUs: the sum of their limits (each carries its share), or nothing
    // when one is unknown.
    const auto summed = [](const std::vector<std::optional<PathLimit>>& parts) -> std::optional<PathLimit> {
        if (parts.empty()) return std::nullopt;
        PathLimit total{0, ""};
        for (const auto& p : parts) {
            if (!p) return std::nullopt;
            total.bandwidth += p->bandwidth;
        }
        total.source = fmt::format("{} links, {} each, summed", parts.size(), parts.front()->source);
        return total;
    };
    return [=](PathUse p) -> std::optional<PathLimit> {
        if (p.gpu == k_first_gpu) {
            if (selected.empty()) return std::nullopt;
            p.gpu = selected.front();
        }
        const auto each = [&](auto&& one) {
            std::vector<std::optional<PathLimit>> parts;
            for (int o : selected) parts.push_back(one(o));
            return summed(parts);
        };
        switch (p.kind) {
        case PathKind::host_link: {
            auto limit = p.gpu == k_every_gpu ? each(host_link) : host_link(p.gpu);
            if (limit && p.direction == "both") {
                limit->bandwidth *= 2;
                limit->source += ", both directions";
            }
            return limit;
        }
        case PathKind::gpu_memory: return p.gpu == k_every_gpu ? each(gpu_memory) : gpu_memory(p.gpu);
        case PathKind::peer_link: {
            if (p.peer != k_every_gpu && p.gpu != k_every_gpu) return peer_link(p.gpu, p.peer);
            if (p.peer == k_every_gpu && p.gpu == k_every_gpu) return std::nullopt;
            std::vector<std::optional<PathLimit>> parts; // one GPU to every other, or every other to one
            for (int o : selected)
                if (o != p.gpu && o != p.peer)
                    parts.push_back(p.peer == k_every_gpu ? peer_link(p.gpu, o) : peer_link(o, p.peer));
            return summed(parts);
        }
        case PathKind::nccl_bus: {
            // Bus bandwidth is per link: the slowest link between two selected GPUs bounds it.
            std::optional<PathLimit> slowest;
            for (int a : selected)
                for (int b : selected) {
                    if (a == b) continue;
                    const auto l = peer_link(a, b);
                    if (!l) return std::nullopt;
                    if (!slowest || l->bandwidth < slowest->bandwidth) slowest = l;
                }
            if (slowest) slowest->source = "the slowest link between the selected GPUs: " + slowest->source;
            return slowest;
        }
        default: return std::nullopt; // host memory, page cache, storage, NIC: only measured ceilings
        }
    };
}

} // namespace interopbench
