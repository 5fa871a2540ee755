#include "interopbench/profile.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "interopbench/errors.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/fnv1a.hpp"
#include "interopbench/report.hpp"
#include "interopbench/params.hpp"

namespace interopbench {

std::vector<std::string> builtin_profile_names() {
    std::vector<std::string> names;
    for (const auto& [name, text] : builtin_profile_texts()) names.emplace_back(name);
    return names;
}

std::string default_profile_name() { return "quick"; }

namespace {

namespace fs = std::filesystem;

// A built-in profile file holds settings only (its scenarios come from the families), so the
// hints show a whole profile instead of pointing at one.
const std::string k_profile_hint =
    R"(a profile is a JSON object such as {"extends": "quick", "scenarios": [{"pattern": "h2d_copy", "axes": {"size": ["1G"]}}]})";

// One profile document before `extends` is applied, with where it came from.
struct Source {
    std::string identity; ///< built-in name or canonical path: detects cycles
    std::string origin;   ///< for messages: "profile 'ci' (built-in)" or "profile file 'x.json'"
    std::string stem;     ///< default name
    fs::path dir;         ///< where relative `extends` paths start; empty for built-ins
    nlohmann::json doc;
};

const std::string_view* find_builtin(std::string_view name) {
    for (const auto& entry : builtin_profile_texts())
        if (entry.first == name) return &entry.second;
    return nullptr;
}

std::string known_profiles_hint(std::string_view name) {
    const auto names = builtin_profile_names();
    const auto close = closest_match(name, names);
    return fmt::format("{}built-in profiles: {}; or give the path of a profile file",
                       close ? fmt::format("did you mean {}? ", *close) : "", fmt::join(names, ", "));
}

nlohmann::json parse_text(const std::string& text, const std::string& origin) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw UsageError(fmt::format("{} is empty", origin), k_profile_hint);
    try {
        auto doc = parse_json(text);
        if (!doc.is_object())
            throw UsageError(fmt::format("{} is not a JSON object", origin), k_profile_hint);
        return doc;
    } catch (const nlohmann::json::parse_error& e) {
        throw UsageError(fmt::format("{} is not valid JSON (at byte {})", origin, e.byte),
                         "fix the syntax; " + k_profile_hint);
    } catch (const nlohmann::json::exception& e) { // e.g. a number beyond a double's range
        throw UsageError(fmt::format("{} is not valid JSON: {}", origin, json_error_text(e)),
                         "fix the syntax; " + k_profile_hint);
    }
}

// `name` is a built-in name or a path, relative to `dir` when not absolute. A built-in
// profile's file gives its description and settings; its scenarios are what the families add
// to it (family.hpp), read from the registry.
Source read_source(const std::string& name, const fs::path& dir, const Registry& registry) {
    if (const auto* text = find_builtin(name)) {
        const std::string origin = fmt::format("profile '{}' (built-in)", name);
        nlohmann::json doc = parse_text(std::string(*text), origin);
        if (!doc.contains("scenarios")) doc["scenarios"] = registry.profile_entries(name);
        return {name, origin, name, {}, std::move(doc)};
    }
    fs::path path = name;
    if (path.is_relative() && !dir.empty()) path = dir / path;
    std::error_code ec;
    const bool looks_like_file = name.find('/') != std::string::npos || fs::path(name).has_extension();
    // Nothing at all at that path (not even a dangling link): a mistyped built-in name, or a
    // missing file. Everything else is read, and explained, by the one file reader.
    if (fs::symlink_status(path, ec).type() == fs::file_type::not_found) {
        if (looks_like_file)
            throw UsageError(fmt::format("profile file '{}' does not exist", path.string()), known_profiles_hint(name));
        throw UsageError(fmt::format("unknown profile '{}'", name), known_profiles_hint(name));
    }
    const std::string text = read_input_file(path.string(), "profile file", k_max_profile_bytes);
    const std::string origin = fmt::format("profile file '{}'", path.string());
    const auto canonical = fs::weakly_canonical(path, ec);
    return {ec ? path.string() : canonical.string(), origin, path.stem().string(), path.parent_path(),
            parse_text(text, origin)};
}

void check_keys(const nlohmann::json& obj, std::initializer_list<const char*> known, const std::string& where) {
    for (const auto& item : obj.items()) {
        const std::string& key = item.key(); // named, not bound: clang before 16 cannot capture bindings
        if (std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) continue;
        const auto best = closest_match(key, std::vector<std::string>(known.begin(), known.end()));
        throw UsageError(fmt::format("{}: unknown key '{}'", where, key),
                         best ? fmt::format("did you mean '{}'? known keys: {}", *best, fmt::join(known, ", "))
                              : fmt::format("known keys: {}", fmt::join(known, ", ")));
    }
}

void want(bool ok, const std::string& where, const std::string& what, const char* example) {
    if (!ok) throw UsageError(fmt::format("{}: '{}' has the wrong type", where, what), fmt::format("write e.g. {}", example));
}

// Checks one document's shape; returns its scenarios with axis values as strings.
void check_document(const Source& s) {
    const auto& d = s.doc;
    check_keys(d, {"name", "description", "extends", "settings", "scenarios"}, s.origin);
    for (const char* k : {"name", "description", "extends"})
        if (d.contains(k)) want(d[k].is_string(), s.origin, k, "\"name\": \"ci\"");
    if (d.contains("settings")) {
        want(d["settings"].is_object(), s.origin, "settings", "\"settings\": {\"min_samples\": 20}");
        RunSettings scratch; // types and names only; ranges are checked on the merged result
        scratch.apply_json(d["settings"], s.origin);
    }
    if (!d.contains("scenarios")) return;
    want(d["scenarios"].is_array(), s.origin, "scenarios", "\"scenarios\": [{\"pattern\": \"h2d_copy\"}]");
    for (std::size_t i = 0; i < d["scenarios"].size(); ++i) {
        const auto& e = d["scenarios"][i];
        const std::string where = fmt::format("{}, scenarios[{}]", s.origin, i);
        want(e.is_object(), where, "entry", "{\"pattern\": \"h2d_copy\", \"axes\": {\"size\": [\"1G\"]}}");
        check_keys(e, {"pattern", "axes"}, where);
        if (!e.contains("pattern"))
            throw UsageError(fmt::format("{}: 'pattern' is missing", where), "write e.g. \"pattern\": \"h2d_copy\"");
        want(e["pattern"].is_string() && !e["pattern"].get<std::string>().empty(), where, "pattern",
             "\"pattern\": \"h2d_copy\" (a scenario id or glob)");
        if (!e.contains("axes")) continue;
        want(e["axes"].is_object(), where, "axes", "\"axes\": {\"size\": [\"64M\", \"1G\"]}");
        for (const auto& [axis, values] : e["axes"].items()) {
            const bool ok = values.is_array() && !values.empty() &&
                            std::all_of(values.begin(), values.end(), [](const nlohmann::json& v) {
                                return v.is_string() || v.is_number_unsigned();
                            });
            want(ok, where, "axes." + axis, "\"size\": [\"64M\", \"1G\"] (a non-empty list of strings)");
        }
    }
}

nlohmann::json entries_json(const std::vector<PlanEntry>& entries) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : entries) out.push_back({{"pattern", e.pattern}, {"axes", e.axes}});
    return out;
}

} // namespace

nlohmann::json resolve_profile(const std::string& name_or_path, const Registry& registry) {
    std::vector<Source> chain{read_source(name_or_path, {}, registry)};
    while (true) {
        check_document(chain.back());
        const auto& doc = chain.back().doc;
        if (!doc.contains("extends")) break;
        const std::string parent = doc["extends"].get<std::string>();
        Source next;
        try {
            next = read_source(parent, chain.back().dir, registry);
        } catch (const UsageError& e) {
            throw UsageError(fmt::format("{}: 'extends': {}", chain.back().origin, e.what()), e.hint());
        }
        const bool cycle = std::any_of(chain.begin(), chain.end(), [&](const Source& s) { return s.identity == next.identity; });
        if (cycle) {
            std::vector<std::string> names;
            for (const auto& s : chain) names.push_back(s.identity);
            names.push_back(next.identity);
            throw UsageError(fmt::format("{}: 'extends' forms a cycle: {}", chain.front().origin, fmt::join(names, " -> ")),
                             "remove one of the 'extends' keys in that chain");
        }
        chain.push_back(std::move(next));
    }
    // Apply from the root parent down to the named profile.
    nlohmann::json resolved = {{"name", chain.front().stem}, {"description", ""}, {"settings", nlohmann::json::object()},
                               {"scenarios", nlohmann::json::array()}, {"sources", nlohmann::json::array()}};
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        const auto& d = it->doc;
        if (d.contains("description")) resolved["description"] = d["description"];
        if (d.contains("settings"))
            for (const auto& [k, v] : d["settings"].items()) resolved["settings"][k] = v;
        if (d.contains("scenarios")) {
            nlohmann::json entries = nlohmann::json::array();
            for (const auto& e : d["scenarios"]) {
                nlohmann::json axes = nlohmann::json::object();
                if (e.contains("axes"))
                    for (const auto& [axis, values] : e["axes"].items()) {
                        nlohmann::json texts = nlohmann::json::array();
                        for (const auto& v : values) texts.push_back(v.is_string() ? v.get<std::string>() : v.dump());
                        axes[axis] = texts;
                    }
                entries.push_back({{"pattern", e["pattern"]}, {"axes", axes}});
            }
            resolved["scenarios"] = entries;
        }
    }
    if (chain.front().doc.contains("name")) resolved["name"] = chain.front().doc["name"];
    for (const auto& s : chain) resolved["sources"].push_back(s.origin);
    return resolved;
}

RunPlan plan_from_profile(const nlohmann::json& resolved, const std::string& origin, const Registry& registry) {
    RunPlan plan;
    plan.profile = resolved.value("name", std::string{});
    auto with_origin = [&](const UsageError& e, const std::string& where) {
        return UsageError(fmt::format("{}: {}", where, e.what()), e.hint());
    };
    try {
        plan.settings.apply_json(resolved.value("settings", nlohmann::json::object()), origin);
        plan.settings.validate();
    } catch (const UsageError& e) {
        if (std::string(e.what()).rfind(origin, 0) == 0) throw;
        throw with_origin(e, origin);
    }
    const auto& scenarios = resolved.value("scenarios", nlohmann::json::array());
    if (scenarios.empty())
        throw UsageError(fmt::format("{} names no scenarios", origin), "add a \"scenarios\" list such as [{\"pattern\": \"h2d_copy\", \"axes\": {\"size\": [\"1G\"]}}]");
    const Machine no_gpu; // values are checked without a machine: device ordinals are checked at run time
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
        PlanEntry entry;
        entry.pattern = scenarios[i].at("pattern").get<std::string>();
        const nlohmann::json axes = scenarios[i].value("axes", nlohmann::json::object());
        for (const auto& [axis, values] : axes.items()) entry.axes[axis] = values.get<std::vector<std::string>>();
        RunPlan one;
        one.entries.push_back(entry);
        try {
            (void)expand_plan(registry, one, no_gpu);
        } catch (const UsageError& e) {
            throw with_origin(e, fmt::format("{}, scenarios[{}] ('{}')", origin, i, entry.pattern));
        }
        plan.entries.push_back(std::move(entry));
    }
    plan.profile_resolved = resolved;
    record_profile(plan);
    return plan;
}

RunPlan load_profile(const std::string& name_or_path, const Registry& registry) {
    const auto resolved = resolve_profile(name_or_path, registry);
    const std::string origin = resolved["sources"].empty() ? name_or_path : resolved["sources"][0].get<std::string>();
    return plan_from_profile(resolved, origin, registry);
}

void override_axis(RunPlan& plan, const Registry& registry, const std::string& axis,
                   const std::vector<std::string>& values) {
    bool applied = false;
    std::vector<std::string> names; // every axis of the plan, for "did you mean"
    for (auto& entry : plan.entries) {
        const auto selected = registry.select(entry.pattern);
        bool has = false;
        for (const Scenario* s : selected)
            for (const Axis& a : s->info().axes) {
                has = has || a.name == axis;
                if (std::find(names.begin(), names.end(), a.name) == names.end()) names.push_back(a.name);
            }
        if (!has) continue;
        entry.axes[axis] = values;
        applied = true;
    }
    if (!applied) {
        const auto close = closest_match(axis, names);
        throw UsageError(fmt::format("no scenario of the plan has an axis named '{}'{}", axis,
                                     close ? fmt::format("; did you mean '{}'?", *close) : ""),
                         "run 'interopbench list' to see each scenario's axes");
    }
}

void record_profile(RunPlan& plan) {
    nlohmann::json doc = plan.profile_resolved.is_object() ? plan.profile_resolved : nlohmann::json::object();
    if (!doc.contains("name")) doc["name"] = plan.profile;
    doc["settings"] = plan.settings.to_json();
    doc["scenarios"] = entries_json(plan.entries);
    plan.profile_hash = profile_hash(doc);
    plan.profile_resolved = std::move(doc);
}

std::string profile_hash(const nlohmann::json& resolved) {
    const nlohmann::json what = {{"settings", resolved.value("settings", nlohmann::json::object())},
                                 {"scenarios", resolved.value("scenarios", nlohmann::json::array())}};
    return fmt::format("{:016x}", fnv1a(what.dump()));
}

} // namespace interopbench
