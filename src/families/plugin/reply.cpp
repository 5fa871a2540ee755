// A plugin's replies read into interopbench's terms (reply.hpp). Plugin code is outside
// input: every field's form is checked here, and nothing is trusted beyond it.
#include "families/plugin/reply.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "interopbench/file_io.hpp"
#include "interopbench/params.hpp"

namespace interopbench::plugin {
namespace {

/// Refuses a reply nesting past k_max_json_depth, found without recursion. Replies read by
/// parse_json cannot, but one built in memory has no parser's bound, and what follows walks
/// values recursively (value_text's dump, copies of details).
void check_depth(const nlohmann::json& reply, const char* op) {
    std::vector<std::pair<const nlohmann::json*, int>> todo{{&reply, 1}};
    while (!todo.empty()) {
        const auto [v, depth] = todo.back();
        todo.pop_back();
        if (!v->is_structured()) continue;
        if (depth > k_max_json_depth)
            throw BadReply(fmt::format("its {} reply nests deeper than {} levels", op, k_max_json_depth));
        for (const auto& child : *v) todo.emplace_back(&child, depth + 1);
    }
}

} // namespace

bool is_id(const std::string& s) {
    if (s.empty() || s.size() > 64 || !(std::islower(static_cast<unsigned char>(s[0])))) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
    });
}

std::string value_text(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
    // Bytes that are not UTF-8 (a reply built in memory can hold them) are replaced, not thrown.
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void throw_if_error(const nlohmann::json& reply, const std::string& op) {
    if (reply.contains("error"))
        throw ConfigError(fmt::format("the plugin's {} failed: {}", op, value_text(reply["error"])));
}

ScenarioInfo parse_describe_reply(const nlohmann::json& d, const Manifest& m) {
    check_depth(d, "describe");
    auto bad = [&](const std::string& what) { return BadReply(fmt::format("its describe reply {}", what)); };
    // An optional text field: absent gives `fallback`, another type is refused (not a json
    // type_error: the reason must say which field).
    auto text = [&](const nlohmann::json& obj, const char* key, const std::string& fallback, const std::string& path) {
        if (!obj.contains(key)) return fallback;
        if (!obj[key].is_string()) throw bad(fmt::format("has a '{}' that is not a string", path));
        return obj[key].get<std::string>();
    };
    // An optional list: absent gives [], another type is refused.
    auto list = [&](const nlohmann::json& obj, const char* key, const std::string& path) {
        if (!obj.contains(key)) return nlohmann::json::array();
        if (!obj[key].is_array()) throw bad(fmt::format("has a '{}' that is not a list", path));
        return obj[key];
    };
    if (!d.is_object()) throw bad("is not a JSON object");
    if (d.contains("error")) throw ConfigError(fmt::format("describe failed: {}", value_text(d["error"])));
    if (!d.contains("protocol") || !d["protocol"].is_number_integer())
        throw bad("has no integer 'protocol'");
    if (d["protocol"].get<long long>() != k_protocol)
        throw ConfigError(fmt::format("it speaks protocol {} and this interopbench speaks protocol {}: use a "
                                      "plugin and an interopbench of the same protocol",
                                      d["protocol"].dump(), k_protocol));
    ScenarioInfo info;
    info.id = m.id;
    info.family = "plugin";
    info.needs_gpu = m.needs_gpu;
    info.summary = text(d, "summary", "", "summary");
    if (info.summary.empty()) info.summary = fmt::format("plugin {}", m.id);
    info.counting = text(d, "counting", "as the plugin counts (it does not say)", "counting");
    if (!d.contains("metrics") || !d["metrics"].is_array() || d["metrics"].empty())
        throw bad("has no 'metrics' list (at least one metric: name, unit, better)");
    std::set<std::string> names;
    for (const auto& mj : d["metrics"]) {
        if (!mj.is_object() || !mj.contains("name") || !mj["name"].is_string() || !mj.contains("unit") || !mj["unit"].is_string())
            throw bad("has a metric without a string 'name' and 'unit'");
        MetricInfo mi;
        mi.name = mj["name"].get<std::string>();
        mi.unit = mj["unit"].get<std::string>();
        if (!is_id(mi.name)) throw bad(fmt::format("names a metric '{}' (use lower case letters, digits and _)", mi.name));
        if (!names.insert(mi.name).second) throw bad(fmt::format("names metric '{}' twice", mi.name));
        const std::string better = text(mj, "better", "higher", fmt::format("metrics.{}.better", mi.name));
        if (better != "higher" && better != "lower") throw bad(fmt::format("says metric '{}' is better '{}' (higher or lower)", mi.name, better));
        mi.better = better == "higher" ? Better::higher : Better::lower;
        mi.help = text(mj, "help", "", fmt::format("metrics.{}.help", mi.name));
        info.metrics.push_back(std::move(mi));
    }
    names.clear();
    for (const auto& aj : list(d, "axes", "axes")) {
        if (!aj.is_object() || !aj.contains("name") || !aj["name"].is_string()) throw bad("has an axis without a string 'name'");
        Axis a;
        a.name = aj["name"].get<std::string>();
        if (!is_id(a.name)) throw bad(fmt::format("names an axis '{}' (use lower case letters, digits and _)", a.name));
        if (!names.insert(a.name).second) throw bad(fmt::format("names axis '{}' twice", a.name));
        a.help = text(aj, "help", "", fmt::format("axes.{}.help", a.name));
        const std::string kind = text(aj, "kind", "choice", fmt::format("axes.{}.kind", a.name));
        if (kind == "choice") a.kind = AxisKind::choice;
        else if (kind == "size") a.kind = AxisKind::size;
        else if (kind == "integer") a.kind = AxisKind::integer;
        else if (kind == "device") a.kind = AxisKind::device;
        else throw bad(fmt::format("gives axis '{}' the kind '{}' (choice, size, integer or device)", a.name, kind));
        const auto values = list(aj, "values", fmt::format("axes.{}.values", a.name));
        if (values.empty() && a.kind != AxisKind::device)
            throw bad(fmt::format("gives axis '{}' no 'values' list", a.name));
        for (const auto& v : values) a.defaults.push_back(value_text(v));
        for (const auto& v : list(aj, "choices", fmt::format("axes.{}.choices", a.name))) a.choices.push_back(value_text(v));
        try {
            if (a.kind == AxisKind::choice) {
                if (a.choices.empty()) a.choices = a.defaults;
                // Axis values travel as comma-separated lists: a choice holding a comma, or
                // blanks at its ends, would come back as other values.
                for (const auto& v : a.choices)
                    if (v.empty() || v.find(',') != std::string::npos || v.front() == ' ' || v.back() == ' ')
                        throw bad(fmt::format("gives axis '{}' the choice '{}' (empty, a comma, or blanks at its ends)",
                                              a.name, v));
                for (const auto& v : a.defaults)
                    if (std::find(a.choices.begin(), a.choices.end(), v) == a.choices.end())
                        throw bad(fmt::format("gives axis '{}' the value '{}' that is not among its choices", a.name, v));
            } else if (a.kind == AxisKind::size) {
                for (const auto& v : a.defaults) (void)parse_size_list(v);
            } else if (a.kind == AxisKind::integer) {
                for (const auto& v : a.defaults) (void)parse_uint(v, "integer axis value");
            }
        } catch (const UsageError& e) {
            throw bad(fmt::format("gives axis '{}' a bad value: {}", a.name, e.what()));
        }
        info.axes.push_back(std::move(a));
    }
    return info;
}

std::optional<std::string> describe_difference(const ScenarioInfo& before, const ScenarioInfo& now, std::string_view where) {
    auto kind = [](AxisKind k) {
        switch (k) {
        case AxisKind::size: return "size";
        case AxisKind::integer: return "integer";
        case AxisKind::device: return "device";
        case AxisKind::choice: return "choice";
        case AxisKind::device_pair: return "device_pair";
        case AxisKind::text: return "text";
        }
        return "?";
    };
    auto words = [](const std::vector<std::string>& v) { return v.empty() ? std::string("none") : fmt::format("{}", fmt::join(v, ",")); };
    // "<what> is <now>, not <before> as <where>", each value quoted where it is free text.
    auto differ = [&](const std::string& what, const std::string& was, const std::string& is) {
        return fmt::format("{} {}, not {} as {}", what, is, was, where);
    };
    auto quoted = [](const std::string& t) { return fmt::format("'{}'", t); };
    if (before.summary != now.summary) return differ("its summary is", quoted(before.summary), quoted(now.summary));
    if (before.counting != now.counting) return differ("its counting is", quoted(before.counting), quoted(now.counting));
    auto names = [&](const auto& items) {
        std::vector<std::string> out;
        for (const auto& i : items) out.push_back(i.name);
        return out;
    };
    if (names(before.axes) != names(now.axes)) return differ("its axes are", words(names(before.axes)), words(names(now.axes)));
    for (std::size_t i = 0; i < now.axes.size(); ++i) {
        const Axis &a = before.axes[i], &b = now.axes[i];
        const std::string axis = fmt::format("axis '{}'", b.name);
        if (a.kind != b.kind) return differ(axis + " is of kind", kind(a.kind), kind(b.kind));
        if (a.defaults != b.defaults) return differ(axis + " has the values", words(a.defaults), words(b.defaults));
        if (a.choices != b.choices) return differ(axis + " has the choices", words(a.choices), words(b.choices));
        if (a.help != b.help) return differ(axis + " has the help", quoted(a.help), quoted(b.help));
    }
    if (names(before.metrics) != names(now.metrics))
        return differ("its metrics are", words(names(before.metrics)), words(names(now.metrics)));
    for (std::size_t i = 0; i < now.metrics.size(); ++i) {
        const MetricInfo &a = before.metrics[i], &b = now.metrics[i];
        const std::string metric = fmt::format("metric '{}'", b.name);
        if (a.unit != b.unit) return differ(metric + " has the unit", quoted(a.unit), quoted(b.unit));
        if (a.better != b.better)
            return differ(metric + " is better", a.better == Better::higher ? "higher" : "lower",
                          b.better == Better::higher ? "higher" : "lower");
        if (a.help != b.help) return differ(metric + " has the help", quoted(a.help), quoted(b.help));
    }
    return std::nullopt;
}

MeasureReply parse_measure_reply(const nlohmann::json& reply, const std::vector<MetricInfo>& metrics) {
    check_depth(reply, "measure");
    if (!reply.is_object()) throw BadReply("its measure reply is not a JSON object");
    throw_if_error(reply, "measure");
    if (!reply.contains("values") || !reply["values"].is_object())
        throw BadReply("its measure reply has no 'values' object (metric name -> number)");
    if (!reply.contains("clock") || !reply["clock"].is_string() || reply["clock"].get<std::string>().empty())
        throw BadReply("its measure reply does not say which 'clock' it used (e.g. \"host_monotonic\", \"cuda_event\")");
    MeasureReply out;
    out.values.assign(metrics.size(), std::numeric_limits<double>::quiet_NaN());
    for (const auto& item : reply["values"].items()) {
        const std::string& name = item.key(); // named, not bound: clang before 16 cannot capture bindings
        const nlohmann::json& v = item.value();
        const auto it = std::find_if(metrics.begin(), metrics.end(), [&](const MetricInfo& m) { return m.name == name; });
        if (it == metrics.end()) throw BadReply(fmt::format("its measure reply has a value for '{}', which it did not describe", name));
        if (v.is_null()) continue; // not produced by this configuration
        if (!v.is_number() || !std::isfinite(v.get<double>()))
            throw BadReply(fmt::format("its measure reply gives '{}' the value {}, not a finite number", name, v.dump()));
        out.values[static_cast<std::size_t>(it - metrics.begin())] = v.get<double>();
    }
    out.clock = reply["clock"].get<std::string>();
    if (reply.contains("elapsed_s") && reply["elapsed_s"].is_number()) out.elapsed_s = reply["elapsed_s"].get<double>();
    return out;
}

nlohmann::json parse_details_reply(const nlohmann::json& reply) {
    check_depth(reply, "details");
    if (!reply.is_object()) throw BadReply("its details reply is not a JSON object");
    throw_if_error(reply, "details");
    if (!reply.contains("details")) return nlohmann::json::object();
    if (!reply["details"].is_object()) throw BadReply("its details reply's 'details' is not an object");
    return reply["details"];
}

} // namespace interopbench::plugin
