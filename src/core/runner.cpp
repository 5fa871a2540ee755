#include "interopbench/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "interopbench/errors.hpp"

namespace interopbench {

std::atomic<bool> g_interrupted{false};

// ---- settings ---------------------------------------------------------------------------

nlohmann::json RunSettings::to_json() const {
    return {{"warmup", warmup},           {"min_samples", min_samples}, {"max_samples", max_samples},
            {"noise", noise},             {"max_time_s", max_time_s},   {"sample_time_s", sample_time_s},
            {"bind_numa", bind_numa},     {"rounds", rounds},           {"max_rounds", std::max(rounds, max_rounds)}};
}

void RunSettings::apply_json(const nlohmann::json& j, const std::string& origin) {
    if (!j.is_object())
        throw UsageError(fmt::format("{}: 'settings' must be an object", origin));
    for (const auto& item : j.items()) {
        const std::string& k = item.key(); // named, not bound: clang before 16 cannot capture bindings
        const nlohmann::json& v = item.value();
        auto want_number = [&](bool integer) {
            if (!v.is_number() || (integer && !v.is_number_integer()))
                throw UsageError(fmt::format("{}: setting '{}' must be {}", origin, k, integer ? "an integer" : "a number"),
                                 fmt::format("write e.g. \"{}\": {}", k, integer ? "10" : "0.01"));
            // Integers must fit an int (get<int> would wrap them); numbers must be finite.
            const bool fits = !integer || (v.is_number_unsigned() ? v.get<std::uint64_t>() <= 2147483647u
                                                                   : v.get<std::int64_t>() >= -2147483648LL &&
                                                                         v.get<std::int64_t>() <= 2147483647LL);
            if (!fits || !std::isfinite(v.get<double>()))
                throw UsageError(fmt::format("{}: setting '{}' is out of range ({})", origin, k, v.dump()),
                                 fmt::format("write e.g. \"{}\": {}", k, integer ? "10" : "0.01"));
        };
        if (k == "warmup") { want_number(true); warmup = v.get<int>(); }
        else if (k == "min_samples") { want_number(true); min_samples = v.get<int>(); }
        else if (k == "max_samples") { want_number(true); max_samples = v.get<int>(); }
        else if (k == "noise") { want_number(false); noise = v.get<double>(); }
        else if (k == "max_time_s") { want_number(false); max_time_s = v.get<double>(); }
        else if (k == "sample_time_s") { want_number(false); sample_time_s = v.get<double>(); }
        else if (k == "rounds") { want_number(true); rounds = v.get<int>(); }
        else if (k == "max_rounds") { want_number(true); max_rounds = v.get<int>(); }
        else if (k == "bind_numa") {
            if (!v.is_boolean()) throw UsageError(fmt::format("{}: setting 'bind_numa' must be true or false", origin));
            bind_numa = v.get<bool>();
        } else {
            throw UsageError(fmt::format("{}: unknown setting '{}'", origin, k),
                             "known settings: warmup, min_samples, max_samples, noise, max_time_s, sample_time_s, rounds, max_rounds, bind_numa");
        }
    }
}

void RunSettings::validate() const {
    // Every setting is written into the report and must satisfy its schema: finite numbers.
    for (const auto& [name, value] : {std::pair{"noise target", noise}, std::pair{"time budget (--max-time)", max_time_s},
                                      std::pair{"sample time (--sample-time)", sample_time_s}})
        if (!std::isfinite(value))
            throw UsageError(fmt::format("{} {} is not a finite number", name, value), "give a finite number such as 0.5");
    if (warmup < 0) throw UsageError(fmt::format("warm-up count {} is negative", warmup), "use 0 or more");
    if (min_samples < 1) throw UsageError(fmt::format("minimum samples {} must be at least 1", min_samples));
    if (max_samples < min_samples)
        throw UsageError(fmt::format("maximum samples {} is below the minimum {}", max_samples, min_samples),
                         "raise --max-samples or lower --min-samples");
    if (!(noise > 0) || noise >= 1)
        throw UsageError(fmt::format("noise target {} is out of range", noise), "give a fraction such as 0.005, or a percentage such as 0.5%");
    if (!(max_time_s > 0)) throw UsageError(fmt::format("time budget {} s must be positive", max_time_s));
    if (!(sample_time_s > 0) || sample_time_s > max_time_s)
        throw UsageError(fmt::format("sample time {} s must be positive and within the time budget", sample_time_s));
    if (rounds < 1 || rounds > 100)
        throw UsageError(fmt::format("rounds {} is out of range", rounds), "give 1 to 100 rounds (--rounds); 3 is typical");
    if (max_rounds < 0 || max_rounds > 100)
        throw UsageError(fmt::format("maximum rounds {} is out of range", max_rounds),
                         "give 0 (no extra rounds) to 100 (--max-rounds); twice --rounds is typical");
}

RunSettings RunSettings::per_round() const {
    RunSettings s = *this;
    s.rounds = 1;
    if (rounds <= 1) return s;
    auto share = [&](int n) { return std::max(3, (n + rounds - 1) / rounds); };
    s.min_samples = std::min(share(min_samples), std::max(min_samples, 3));
    s.max_samples = std::max(s.min_samples, share(max_samples));
    s.max_time_s = max_time_s / rounds;
    s.sample_time_s = std::min(sample_time_s, s.max_time_s);
    return s;
}

void pool_metric(MetricResult& into, const std::vector<const MetricResult*>& parts) {
    std::vector<double> all, medians;
    std::uint64_t taken = 0;
    bool thinned = false; // a part's report kept only some of its samples
    for (const MetricResult* p : parts) {
        taken += p->samples_taken ? p->samples_taken : p->samples.size();
        thinned = thinned || p->samples_taken > p->samples.size();
        if (p->round_medians.size() > 1) medians.insert(medians.end(), p->round_medians.begin(), p->round_medians.end());
        else if (const Stats st = compute_stats(p->samples); st.n > 0) medians.push_back(st.median);
        else if (p->stats.n > 0) medians.push_back(p->stats.median); // a report that kept no samples
        all.insert(all.end(), p->samples.begin(), p->samples.end());
    }
    into.samples = std::move(all);
    into.round_medians = medians.size() > 1 ? std::move(medians) : std::vector<double>{};
    into.stats = compute_stats(into.samples); // of the samples kept, where a part was thinned
    into.samples_taken = thinned ? taken : 0;
}

std::vector<Result> merge_rounds(std::vector<std::vector<Result>> rounds) {
    if (rounds.empty()) return {};
    std::vector<Result> merged = std::move(rounds.front());
    if (rounds.size() == 1) return merged;
    std::map<std::string, std::vector<const Result*>> later;
    for (std::size_t i = 1; i < rounds.size(); ++i)
        for (const auto& r : rounds[i]) later[r.key].push_back(&r);
    for (auto& r : merged) {
        const auto it = later.find(r.key);
        std::vector<const Result*> pooled;
        if (r.status == Status::ok) pooled.push_back(&r);
        nlohmann::json not_ok = nlohmann::json::array();
        if (it != later.end())
            for (const Result* o : it->second) {
                if (o->status == Status::ok && r.status == Status::ok) pooled.push_back(o);
                else if (o->status != Status::ok)
                    not_ok.push_back(o->reason.empty() ? std::string(to_string(o->status))
                                                       : fmt::format("{}: {}", to_string(o->status), o->reason));
            }
        if (!not_ok.empty()) {
            if (!r.details.is_object()) r.details = nlohmann::json::object();
            r.details["rounds_not_ok"] = std::move(not_ok);
        }
        if (r.status != Status::ok) continue;
        for (auto& metric : r.metrics) {
            std::vector<const MetricResult*> parts;
            for (const Result* o : pooled)
                if (const MetricResult* om = o == &r ? &metric : o->metric(metric.info.name)) parts.push_back(om);
            pool_metric(metric, parts);
        }
        double wall = 0;
        int warm = 0;
        for (const Result* o : pooled) {
            wall += o->wall_time_s;
            warm += o->warmup_samples;
        }
        r.wall_time_s = wall;
        r.warmup_samples = warm;
        r.rounds = static_cast<int>(pooled.size());
    }
    return merged;
}

// ---- results ------------------------------------------------------------------------------

const char* to_string(Status s) {
    switch (s) {
    case Status::ok: return "ok";
    case Status::skipped: return "skipped";
    case Status::failed: return "failed";
    case Status::interrupted: return "interrupted";
    }
    return "failed";
}

Status status_from_string(const std::string& s) {
    if (s == "ok") return Status::ok;
    if (s == "skipped") return Status::skipped;
    if (s == "failed") return Status::failed;
    if (s == "interrupted") return Status::interrupted;
    throw UsageError(fmt::format("unknown result status '{}'", s), "expected ok, skipped, failed or interrupted");
}

Uncertainty uncertainty(const MetricResult& m) {
    Uncertainty u;
    u.relative = m.stats.n > 1 ? m.stats.rel_ci_halfwidth() : 0;
    if (m.round_medians.size() > 1) {
        const double half_spread = relative_range(m.round_medians) / 2;
        if (half_spread > u.relative) u = {half_spread, "rounds"};
    }
    if (!std::isfinite(u.relative)) u.relative = 0;
    return u;
}

const MetricResult* Result::metric(const std::string& name) const {
    for (const auto& m : metrics)
        if (m.info.name == name) return &m;
    return nullptr;
}

bool Result::moved_no_bytes() const {
    for (const char* flag : {"pointer_shared", "zero_copy"})
        if (const auto it = details.find(flag); it != details.end() && it->is_boolean() && it->get<bool>()) return true;
    for (const char* count : {"bytes_moved", "copied", "copied_bytes"}) {
        if (const auto it = details.find(count); it != details.end() && it->is_number() && it->get<double>() == 0) return true;
        if (const auto* m = metric(count); m && m->stats.n && m->info.unit == "B" && m->stats.median == 0) return true;
    }
    return false;
}

namespace {

const char* ordinal_suffix(std::uint64_t n) {
    if (n % 100 >= 11 && n % 100 <= 13) return "th";
    return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/// `v` with every value nested deeper than `levels` below it replaced by a note; `cut` is set
/// when one was.
nlohmann::json within_depth(const nlohmann::json& v, int levels, bool& cut) {
    if (!v.is_structured()) return v;
    if (levels <= 0) {
        cut = true;
        return fmt::format("(cut: nested deeper than {} levels)", k_max_details_depth);
    }
    nlohmann::json out = v.is_array() ? nlohmann::json::array() : nlohmann::json::object();
    if (v.is_array())
        for (const auto& x : v) out.push_back(within_depth(x, levels - 1, cut));
    else
        for (auto it = v.begin(); it != v.end(); ++it) out[it.key()] = within_depth(it.value(), levels - 1, cut);
    return out;
}

/// A result's details within k_max_details_depth and k_max_details_bytes; each cut is added to `cut`.
nlohmann::json bounded_details(const nlohmann::json& details, std::vector<std::string>& cut) {
    bool deep = false;
    // The details object itself is the first level below "details".
    nlohmann::json out = within_depth(details, k_max_details_depth, deep);
    if (deep)
        cut.push_back(fmt::format("details: values nested deeper than {} levels replaced by a note", k_max_details_depth));
    const std::size_t bytes = out.dump().size();
    if (bytes > k_max_details_bytes) {
        cut.push_back(fmt::format("details: {} bytes left out (more than the {} a result's details may hold)", bytes,
                                  k_max_details_bytes));
        out = {{"cut", fmt::format("{} bytes of details left out", bytes)}};
    }
    return out;
}

/// Every `step`-th of `samples`, from the first; null for a value that is not finite.
nlohmann::json sample_values(const std::vector<double>& samples, std::size_t step) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < samples.size(); i += step)
        out.push_back(std::isfinite(samples[i]) ? nlohmann::json(samples[i]) : nlohmann::json(nullptr));
    return out;
}

} // namespace

std::string cut_text(const std::string& text, std::size_t most) {
    constexpr std::string_view k_mark = " [cut]";
    if (text.size() <= most) return text;
    std::size_t at = most > k_mark.size() ? most - k_mark.size() : 0;
    while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xc0) == 0x80) --at; // never inside a character
    return text.substr(0, at) + std::string(k_mark.substr(0, std::min(most - at, k_mark.size())));
}

void to_json(nlohmann::json& j, const Result& r) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [k, v] : r.params.items()) params[k] = v;
    std::vector<std::string> cut = r.cut;
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& m : r.metrics) {
        const std::size_t n = m.samples.size();
        const std::size_t step = n > k_max_report_samples ? (n + k_max_report_samples - 1) / k_max_report_samples : 1;
        nlohmann::json mj = {{"name", m.info.name},
                             {"unit", m.info.unit},
                             {"better", m.info.better == Better::higher ? "higher" : "lower"},
                             {"stats", m.stats},
                             {"samples", sample_values(m.samples, step)}};
        const std::uint64_t taken = std::max<std::uint64_t>(m.samples_taken, n);
        if (step > 1) {
            cut.push_back(fmt::format("samples of '{}': every {}{} of {} kept ({}); the statistics are of all {}", m.info.name,
                                      step, ordinal_suffix(step), n, mj["samples"].size(), taken));
        }
        if (taken > mj["samples"].size()) mj["samples_taken"] = taken;
        if (!m.round_medians.empty()) mj["round_medians"] = m.round_medians;
        metrics.push_back(std::move(mj));
    }
    std::string reason = r.reason;
    if (reason.size() > k_max_reason_bytes) {
        reason = cut_text(reason, k_max_reason_bytes);
        cut.push_back(fmt::format("reason: cut to {} of its {} bytes", reason.size(), r.reason.size()));
    }
    nlohmann::json details = bounded_details(r.details, cut);
    j = {{"key", r.key},
         {"scenario", r.scenario},
         {"family", r.family},
         {"params", std::move(params)},
         {"param_order", [&] {
              nlohmann::json order = nlohmann::json::array();
              for (const auto& kv : r.params.items()) order.push_back(kv.first);
              return order;
          }()},
         {"status", to_string(r.status)},
         {"reason", std::move(reason)},
         {"stop_reason", r.stop_reason},
         {"warmup_samples", r.warmup_samples},
         {"rounds", r.rounds},
         {"wall_time_s", r.wall_time_s},
         {"counting", r.counting},
         {"details", std::move(details)},
         {"metrics", std::move(metrics)}};
    if (!cut.empty()) j["cut"] = std::move(cut);
}

void from_json(const nlohmann::json& j, Result& r) {
    r.key = j.at("key").get<std::string>();
    r.scenario = j.at("scenario").get<std::string>();
    r.family = j.value("family", std::string{});
    std::vector<std::pair<std::string, std::string>> params;
    const auto& pj = j.contains("params") && j["params"].is_object() ? j["params"] : nlohmann::json::object();
    if (j.contains("param_order") && j["param_order"].is_array()) {
        for (const auto& name : j["param_order"])
            if (name.is_string() && pj.contains(name.get<std::string>()) && pj[name.get<std::string>()].is_string())
                params.emplace_back(name.get<std::string>(), pj[name.get<std::string>()].get<std::string>());
    } else {
        for (const auto& [k, v] : pj.items())
            if (v.is_string()) params.emplace_back(k, v.get<std::string>());
    }
    r.params = Params(std::move(params));
    r.status = status_from_string(j.at("status").get<std::string>());
    r.reason = j.value("reason", std::string{});
    r.stop_reason = j.value("stop_reason", std::string{});
    r.warmup_samples = j.value("warmup_samples", 0);
    r.rounds = j.contains("rounds") && j["rounds"].is_number_integer() ? j["rounds"].get<int>() : 1;
    r.wall_time_s = j.value("wall_time_s", 0.0);
    r.counting = j.value("counting", std::string{});
    r.details = j.value("details", nlohmann::json::object());
    r.cut.clear();
    if (j.contains("cut") && j["cut"].is_array())
        for (const auto& c : j["cut"])
            if (c.is_string()) r.cut.push_back(c.get<std::string>());
    r.metrics.clear();
    if (j.contains("metrics") && j["metrics"].is_array()) {
        for (const auto& mj : j["metrics"]) {
            MetricResult m;
            m.info.name = mj.at("name").get<std::string>();
            m.info.unit = mj.value("unit", std::string{});
            m.info.better = mj.value("better", std::string("higher")) == "lower" ? Better::lower : Better::higher;
            if (mj.contains("stats") && mj["stats"].is_object()) m.stats = mj["stats"].get<Stats>();
            if (mj.contains("samples") && mj["samples"].is_array())
                for (const auto& v : mj["samples"]) m.samples.push_back(v.is_number() ? v.get<double>() : NAN);
            if (mj.contains("round_medians") && mj["round_medians"].is_array())
                for (const auto& v : mj["round_medians"])
                    if (v.is_number() && std::isfinite(v.get<double>())) m.round_medians.push_back(v.get<double>());
            if (mj.contains("samples_taken") && mj["samples_taken"].is_number_unsigned() &&
                mj["samples_taken"].get<std::uint64_t>() > m.samples.size())
                m.samples_taken = mj["samples_taken"].get<std::uint64_t>();
            r.metrics.push_back(std::move(m));
        }
    }
}

std::string Config::key() const { return scenario->info().id + "/" + params.canonical(); }

// ---- plan expansion -----------------------------------------------------------------------

namespace {

/// One axis value, parsed once: its canonical text and, for numbers and pairs, its value.
struct AxisValue {
    std::string text;
    std::optional<std::uint64_t> number;
    std::optional<DevicePair> pair;
};

AxisValue number_value(std::uint64_t v) { return {std::to_string(v), v, std::nullopt}; }
AxisValue pair_value(DevicePair p) { return {fmt::format("{}>{}", p.src, p.dst), std::nullopt, p}; }

std::vector<AxisValue> default_devices(const Machine& m) {
    std::vector<AxisValue> out;
    for (int d : m.selected) out.push_back(number_value(static_cast<std::uint64_t>(d)));
    if (out.empty()) out.push_back(number_value(0));
    return out;
}

std::vector<AxisValue> default_pairs(const Machine& m) {
    std::vector<AxisValue> out;
    for (int a : m.selected)
        for (int b : m.selected)
            if (a != b) out.push_back(pair_value({a, b}));
    if (out.empty()) out.push_back(pair_value({0, 1}));
    return out;
}

void check_device(const Machine& m, std::uint64_t d, const std::string& text) {
    if (!m.cuda_available) return; // no GPU: configurations are skipped with the reason anyway
    if (!m.device(static_cast<int>(d)))
        throw UsageError(fmt::format("GPU {} in '{}' does not exist: this machine has {} GPU(s)", d, text,
                                     m.devices.size()),
                         fmt::format("use ordinals 0 to {}", m.devices.empty() ? 0 : m.devices.size() - 1));
}

/// A GPU ordinal as an axis value: a small number (ordinals fit an int).
std::uint64_t parse_ordinal(const std::string& item) {
    const auto d = parse_uint(item, "device");
    if (d > 1u << 20) throw UsageError(fmt::format("GPU ordinal '{}' is out of range", item), "use an ordinal such as 0 or 1");
    return d;
}

/// Parses one item (no commas) of an axis; sizes may expand to several values. A text axis's
/// item is the scenario's to read (`scenario`), or kept as it is without one (typed_params).
void parse_item(const Axis& axis, const std::string& item, const Machine& m, std::vector<AxisValue>& out,
                const Scenario* scenario) {
    switch (axis.kind) {
    case AxisKind::text:
        if (!scenario) out.push_back({item, std::nullopt, std::nullopt});
        else
            for (auto& v : scenario->expand_text(axis, item, m)) out.push_back({std::move(v), std::nullopt, std::nullopt});
        return;
    case AxisKind::size:
        for (auto v : parse_size_list(item)) out.push_back(number_value(v));
        return;
    case AxisKind::integer: {
        const auto v = parse_uint(item, axis.name);
        if (v < axis.min_value || v > axis.max_value)
            throw UsageError(fmt::format("invalid value '{}' for axis '{}'", item, axis.name),
                             fmt::format("give a whole number from {} to {}", axis.min_value, axis.max_value));
        out.push_back(number_value(v));
        return;
    }
    case AxisKind::choice: {
        const bool all_is_choice = std::find(axis.choices.begin(), axis.choices.end(), "all") != axis.choices.end();
        if (item == "all" && !all_is_choice) {
            for (const auto& c : axis.choices) out.push_back({c, std::nullopt, std::nullopt});
            return;
        }
        if (std::find(axis.choices.begin(), axis.choices.end(), item) == axis.choices.end())
            throw UsageError(fmt::format("invalid value '{}' for axis '{}'", item, axis.name),
                             fmt::format("choose from {} (or all)", fmt::join(axis.choices, ", ")));
        out.push_back({item, std::nullopt, std::nullopt});
        return;
    }
    case AxisKind::device: {
        const auto d = parse_ordinal(item);
        check_device(m, d, item);
        out.push_back(number_value(d));
        return;
    }
    case AxisKind::device_pair: {
        const auto gt = item.find('>');
        if (gt == std::string::npos)
            throw UsageError(fmt::format("invalid GPU pair '{}' for axis '{}'", item, axis.name),
                             "write a pair as SRC>DST, e.g. 0>1");
        const auto a = parse_ordinal(item.substr(0, gt));
        const auto b = parse_ordinal(item.substr(gt + 1));
        if (a == b) throw UsageError(fmt::format("GPU pair '{}' names one GPU twice", item), "use two different GPUs, e.g. 0>1");
        check_device(m, a, item);
        check_device(m, b, item);
        out.push_back(pair_value({static_cast<int>(a), static_cast<int>(b)}));
        return;
    }
    }
}

std::vector<AxisValue> resolve_axis(const Axis& axis, const std::vector<std::string>* given, const Machine& m,
                                    const Scenario* scenario) {
    std::vector<std::string> raw;
    if (given) raw = *given;
    else if (axis.kind == AxisKind::device) return default_devices(m);
    else if (axis.kind == AxisKind::device_pair) return default_pairs(m);
    else raw = axis.defaults;
    std::vector<AxisValue> out;
    for (const auto& text : raw) {
        // A size list has its own commas; a text is the scenario's whole.
        if (axis.kind == AxisKind::size || axis.kind == AxisKind::text) parse_item(axis, text, m, out, scenario);
        else
            for (const auto& item : split_list(text)) parse_item(axis, item, m, out, scenario);
    }
    // Keep first occurrences only, in order.
    std::vector<AxisValue> uniq;
    for (auto& v : out)
        if (std::none_of(uniq.begin(), uniq.end(), [&](const AxisValue& u) { return u.text == v.text; }))
            uniq.push_back(std::move(v));
    if (uniq.empty()) throw UsageError(fmt::format("axis '{}' has no values", axis.name));
    return uniq;
}

void set_value(Params& p, const std::string& name, const AxisValue& v) {
    if (v.number) p.set_number(name, *v.number);
    else if (v.pair) p.set_pair(name, *v.pair);
    else p.set(name, v.text);
}

} // namespace

std::vector<Config> expand_plan(const Registry& registry, const RunPlan& plan, const Machine& machine) {
    std::vector<Config> out;
    std::set<std::string> seen;
    for (const auto& entry : plan.entries) {
        const auto scenarios = registry.select(entry.pattern);
        for (const auto& [name, values] : entry.axes) {
            bool known = false;
            std::set<std::string> names;
            for (const auto* s : scenarios)
                for (const auto& a : s->info().axes) {
                    names.insert(a.name);
                    known = known || a.name == name;
                }
            if (!known) {
                const auto close = closest_match(name, std::vector<std::string>(names.begin(), names.end()));
                throw UsageError(fmt::format("no selected scenario ('{}') has an axis named '{}'", entry.pattern, name),
                                 close ? fmt::format("did you mean '{}'? axes of the selection: {}", *close, fmt::join(names, ", "))
                                       : fmt::format("axes of the selection: {}", fmt::join(names, ", ")));
            }
        }
        for (const auto* s : scenarios) {
            const auto& axes = s->info().axes;
            std::vector<std::vector<AxisValue>> values;
            for (const auto& axis : axes) {
                auto it = entry.axes.find(axis.name);
                values.push_back(resolve_axis(axis, it == entry.axes.end() ? nullptr : &it->second, machine, s));
            }
            // The product's size first: a plan that would expand past the cap is refused before
            // anything is built (a plugin with thousands of axes, a long size list on every axis).
            std::uint64_t count = 1;
            for (const auto& v : values) {
                if (count > k_max_configurations / std::max<std::size_t>(1, v.size())) {
                    count = k_max_configurations + 1;
                    break;
                }
                count *= v.size();
            }
            if (count + out.size() > k_max_configurations)
                throw UsageError(fmt::format("the selection expands to more than {} configurations (scenario '{}')",
                                             k_max_configurations, s->info().id),
                                 "select fewer scenarios or fewer axis values");
            // Cartesian product, last axis fastest.
            std::vector<std::size_t> idx(axes.size(), 0);
            while (true) {
                Params p;
                for (std::size_t i = 0; i < axes.size(); ++i) set_value(p, axes[i].name, values[i][idx[i]]);
                Config c{s, std::move(p)};
                if (seen.insert(c.key()).second) out.push_back(std::move(c));
                std::size_t k = axes.size();
                while (k > 0) {
                    --k;
                    if (++idx[k] < values[k].size()) break;
                    idx[k] = 0;
                    if (k == 0) { k = axes.size() + 1; break; }
                }
                if (axes.empty() || k == axes.size() + 1) break;
            }
        }
    }
    return out;
}

Params typed_params(const ScenarioInfo& info, const std::vector<std::pair<std::string, std::string>>& values,
                    const Machine& machine) {
    // Typed only: whether a named GPU exists is the scenario's to say (unsupported()), so
    // the expansion's existence check is left out here; a text value is kept as given (it is
    // a canonical text from a report or the parent process, which the scenario reads).
    Machine unchecked = machine;
    unchecked.cuda_available = false;
    Params p;
    for (const auto& axis : info.axes) {
        const auto it = std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == axis.name; });
        const std::vector<std::string> given{it == values.end() ? std::string{} : it->second};
        const auto parsed = resolve_axis(axis, it == values.end() ? nullptr : &given, unchecked, nullptr);
        set_value(p, axis.name, parsed.front());
    }
    for (const auto& kv : values) {
        const auto& k = kv.first; // named, not bound: clang before 16 cannot capture bindings
        if (std::none_of(info.axes.begin(), info.axes.end(), [&](const Axis& a) { return a.name == k; }))
            throw UsageError(fmt::format("scenario '{}' has no axis named '{}'", info.id, k));
    }
    return p;
}

// ---- sampling -----------------------------------------------------------------------------

namespace {
/// The fewest samples whose order statistics give a 95% interval of the median narrower
/// than [min, max].
constexpr std::size_t k_min_ci_samples = 6;
/// A configuration that took more than this many times its budget, plus the slack, is past
/// it (past_budget).
constexpr double k_overrun_factor = 1.5, k_overrun_slack_s = 1.0;
} // namespace

bool past_budget(double took_s, double budget_s) { return took_s > budget_s * k_overrun_factor + k_overrun_slack_s; }

bool needs_missing_gpu(const Config& config, const Machine& machine) {
    return config.scenario->info().needs_gpu && !machine.cuda_available;
}

const char* to_string(Phase p) {
    switch (p) {
    case Phase::setup: return "setup";
    case Phase::warmup: return "warm-up";
    case Phase::sampling: return "sampling";
    case Phase::check: return "check";
    case Phase::teardown: return "teardown";
    }
    return "setup";
}

bool LiveProgress::Snapshot::past_budget() const { return interopbench::past_budget(elapsed_s, budget_s); }

LiveProgress::Snapshot LiveProgress::snapshot() const {
    const std::lock_guard lock(m_mutex);
    Snapshot s = m_now;
    if (s.running) s.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count();
    return s;
}

void LiveProgress::start(int max_samples, double budget_s) {
    const std::lock_guard lock(m_mutex);
    m_started = std::chrono::steady_clock::now();
    m_now = {m_now.configuration + 1, true, Phase::setup, 0, max_samples, budget_s, 0};
}

void LiveProgress::set(Phase phase) {
    const std::lock_guard lock(m_mutex);
    m_now.phase = phase;
}

void LiveProgress::set(Phase phase, int samples) {
    const std::lock_guard lock(m_mutex);
    m_now.phase = phase;
    m_now.samples = samples;
}

void LiveProgress::stop() {
    const std::lock_guard lock(m_mutex);
    if (!m_now.running) return;
    m_now.running = false;
    m_now.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count();
}

static void record_overrun(Result& r, double budget_s, const double (&phase_end)[3]) {
    // Sampling stops at the budget, but setting up, one long sample and finishing (checking
    // the data, freeing) cannot be cut short: a configuration well over its budget says where
    // its time went instead of passing unnoticed.
    if (!past_budget(r.wall_time_s, budget_s)) return;
    nlohmann::json o = {{"budget_s", budget_s}, {"took_s", r.wall_time_s}};
    const char* names[] = {"setup_s", "warmup_s", "sampling_s"};
    double before = 0;
    for (int i = 0; i < 3 && phase_end[i] >= 0; ++i) {
        o[names[i]] = phase_end[i] - before;
        before = phase_end[i];
    }
    o["finish_s"] = r.wall_time_s - before;
    if (!r.details.is_object()) r.details = nlohmann::json::object();
    r.details["overrun"] = std::move(o);
}

std::string stop_reason(const RunSettings& s, const std::vector<double>& primary, double elapsed_s) {
    const auto n = static_cast<int>(primary.size());
    if (n >= s.max_samples) return "max_samples";
    if (n >= s.min_samples) {
        const Stats st = compute_stats(primary);
        if (st.n == 0) return "no_primary_metric";
        // Below k_min_ci_samples the interval is only [min, max], which says nothing
        // about noise (one sample has a zero-width one): never call that converged.
        if (st.n >= k_min_ci_samples && st.rel_ci_halfwidth() <= s.noise) return "converged";
    }
    if (elapsed_s >= s.max_time_s && n >= 1) return "time_budget";
    return {};
}

Result Runner::run_one(const Config& config) {
    using clock = std::chrono::steady_clock;
    const auto& info = config.scenario->info();
    Result r;
    r.key = config.key();
    r.scenario = info.id;
    r.family = info.family;
    r.params = config.params;
    r.counting = info.counting;
    for (const auto& m : info.metrics) r.metrics.push_back(MetricResult{m, {}, {}});
    const auto t0 = clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
    double phase_end[3] = {-1, -1, -1}; // set up, warmed up, sampled (seconds since t0)
    World* world = m_machine.world;
    // What this configuration is doing, for whoever displays progress; ended on every return.
    struct Published {
        LiveProgress* live;
        ~Published() {
            if (live) live->stop();
        }
    } published{m_live};
    if (m_live) m_live->start(m_settings.max_samples, m_settings.max_time_s);
    auto publish = [&](Phase phase) {
        if (m_live) m_live->set(phase);
    };

    // Any exception costs this configuration only, also one from the support check (an
    // allocation that fails while sizing a shape, say).
    std::optional<std::string> skip;
    std::string check_error;
    try {
        skip = config.scenario->unsupported(m_machine, config.params);
    } catch (const std::bad_alloc&) {
        check_error = "out of host memory while checking the configuration";
    } catch (const std::exception& e) {
        check_error = e.what();
    } catch (...) {
        check_error = "unknown error while checking the configuration";
    }
    if (!check_error.empty() && !world) {
        r.status = Status::failed;
        r.reason = check_error;
        return r;
    }
    if (!check_error.empty()) skip = "could not be checked: " + check_error; // every rank must agree
    if (world) {
        // Every rank must take the same decision, or collectives would wait forever: rank 0
        // collects the reasons and tells every rank whether (and why) to skip.
        const auto all = world->gather(skip.value_or(""), 0);
        std::string agreed;
        for (std::size_t i = 0; i < all.size(); ++i)
            if (!all[i].empty() && agreed.find(all[i]) == std::string::npos)
                agreed += (agreed.empty() ? "" : "; ") + (all.size() > 1 && i > 0 ? fmt::format("rank {}: ", i) : "") + all[i];
        std::uint64_t n = agreed.size();
        world->broadcast(&n, sizeof n, 0);
        agreed.resize(n);
        if (n) world->broadcast(agreed.data(), n, 0);
        skip = n ? std::optional<std::string>(agreed) : std::nullopt;
    }
    if (skip) {
        r.status = Status::skipped;
        r.reason = *skip;
        return r;
    }
    try {
        CaseContext ctx{&m_machine, m_settings.sample_time_s, m_settings.bind_numa};
        auto c = config.scenario->prepare(ctx, config.params);
        phase_end[0] = elapsed();
        // The budget is for warming up and sampling; set-up comes on top (as `run` says). Counted
        // from t0, a set-up longer than the budget (creating a dataset's files, say) left one sample.
        auto sampled_s = [&] { return elapsed() - phase_end[0]; };
        publish(Phase::warmup);
        // Warm-up: in a multi-process run every rank takes the same count (collectives).
        for (int i = 0; i < m_settings.warmup && !g_interrupted; ++i) {
            if (!world && i > 0 && sampled_s() > m_settings.max_time_s / 3) break;
            c->measure();
            ++r.warmup_samples;
        }
        phase_end[1] = elapsed();
        publish(Phase::sampling);
        std::vector<double> primary;
        while (true) {
            if (g_interrupted) {
                r.stop_reason = "interrupted";
                break;
            }
            Sample s = c->measure();
            if (s.size() != info.metrics.size())
                throw ConfigError(fmt::format("scenario returned {} values for {} metrics", s.size(), info.metrics.size()));
            for (std::size_t i = 0; i < s.size(); ++i) r.metrics[i].samples.push_back(s[i]);
            if (!std::isnan(s[0])) primary.push_back(s[0]);
            if (m_live) m_live->set(Phase::sampling, static_cast<int>(r.metrics[0].samples.size()));
            std::string why = stop_reason(m_settings, primary, sampled_s());
            if (why.empty() && static_cast<int>(r.metrics[0].samples.size()) >= m_settings.max_samples) why = "max_samples";
            if (world) {
                // Rank 0 decides so that every rank takes the same number of samples.
                char code = why.empty() ? 0 : why == "converged" ? 1 : why == "max_samples" ? 2 : why == "time_budget" ? 3 : 4;
                world->broadcast(&code, 1, 0);
                static const char* k_names[] = {"", "converged", "max_samples", "time_budget", "no_primary_metric"};
                why = k_names[static_cast<int>(code) % 5];
            }
            if (!why.empty()) {
                r.stop_reason = why;
                break;
            }
        }
        phase_end[2] = elapsed();
        if (r.stop_reason == "interrupted") {
            r.status = Status::interrupted;
            r.reason = "interrupted before sampling finished";
        } else {
            publish(Phase::check);
            c->check();
            // A configuration is ok only with values of its primary metric: samples that were
            // all null are a failure, never an `ok` with n = 0.
            if (std::none_of(primary.begin(), primary.end(), [](double v) { return std::isfinite(v); }))
                throw ConfigError(fmt::format("no sample gave a value of the primary metric '{}' ({} sample(s) taken)",
                                              info.metrics.front().name, r.metrics.front().samples.size()));
        }
        r.details = c->details();
        publish(Phase::teardown);
        c.reset();
    } catch (const Unsupported& e) {
        r.status = Status::skipped;
        r.reason = e.what();
    } catch (const Interrupted& e) {
        r.status = Status::interrupted;
        r.stop_reason = "interrupted";
        r.reason = e.what();
    } catch (const CheckFailed& e) {
        r.status = Status::failed;
        r.reason = fmt::format("verification failed: {}", e.what());
    } catch (const ConfigError& e) {
        r.status = Status::failed;
        r.reason = e.what();
    } catch (const FatalDeviceError& e) {
        r.status = Status::failed;
        r.reason = e.what();
        m_fatal = e.what();
    } catch (const UsageError& e) {
        r.status = Status::failed;
        r.reason = e.what();
    } catch (const std::bad_alloc&) {
        r.status = Status::failed;
        r.reason = "out of host memory (an allocation failed); the size may be too large for this machine";
    } catch (const std::exception& e) {
        r.status = Status::failed;
        r.reason = fmt::format("unexpected error: {}", e.what());
    } catch (...) {
        r.status = Status::failed;
        r.reason = "unexpected error of unknown type";
    }
    for (auto& m : r.metrics) m.stats = compute_stats(m.samples);
    r.wall_time_s = elapsed();
    record_overrun(r, m_settings.max_time_s, phase_end);
    return r;
}

} // namespace interopbench
