#pragma once
// A plugin's replies read into interopbench's terms: pure functions of one reply (a JSON
// object, as Process::request returns it from parse_json), so the fuzz target and the tests
// reach them without a process, and without CUDA (docs/PLUGINS.md, the protocol).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "families/plugin/plugin.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench::plugin {

/// A reply of the wrong form (a missing or mistyped field, an undescribed metric, nesting
/// past k_max_json_depth): the plugin's state is unknown, so its process is not trusted
/// further. The message starts "its <op> reply ...".
class BadReply : public ConfigError {
public:
    using ConfigError::ConfigError;
};

/// A plugin or metric id: lower case letters, digits and _, starting with a letter, at most
/// 64 characters.
bool is_id(const std::string& s);

/// A reply value as text: a string as it is, an unsigned number in full, anything else as JSON.
std::string value_text(const nlohmann::json& v);

/// Throws ConfigError "the plugin's <op> failed: ..." when the reply holds an 'error'.
void throw_if_error(const nlohmann::json& reply, const std::string& op);

/// The scenario described by a describe reply, for manifest `m`. Throws ConfigError for an
/// 'error' reply ("describe failed: ...") and for another protocol version, BadReply for the rest.
ScenarioInfo parse_describe_reply(const nlohmann::json& reply, const Manifest& m);

/// How `now` (a plugin's description) differs from `before` (what its manifest declares, or
/// its first description), in words: "axis 'size' has the values 4K,1M, not 4K as <where>"
/// with `where` saying where `before` comes from ("in its manifest"); nothing when they are
/// the same: summary, counting, every axis (name, kind, values, choices, help) and metric
/// (name, unit, better, help), in order.
std::optional<std::string> describe_difference(const ScenarioInfo& before, const ScenarioInfo& now, std::string_view where);

/// One measure reply.
struct MeasureReply {
    Sample values;                   ///< one per described metric; NaN where the reply has none (or null)
    std::string clock;               ///< the clock the plugin says it used
    std::optional<double> elapsed_s; ///< the time the plugin says it spent, when it says
};

/// A measure reply against the described `metrics`. Throws ConfigError for an 'error' reply,
/// BadReply for a reply of the wrong form.
MeasureReply parse_measure_reply(const nlohmann::json& reply, const std::vector<MetricInfo>& metrics);

/// The 'details' object of a details reply (an empty object when it has none). Throws
/// ConfigError for an 'error' reply, BadReply for a reply of the wrong form.
nlohmann::json parse_details_reply(const nlohmann::json& reply);

} // namespace interopbench::plugin
