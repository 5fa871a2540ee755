// Outputs that CI systems read natively. What each consumer really reads, from its source
// or documentation:
// - github-action-benchmark (custom tools): a JSON array of {name, unit, value, range?,
//   extra?}; it keeps those five fields, compares entries by name with the previous run and
//   takes one direction per file. It refuses a file without entries.
// - Bencher (json adapter): {benchmark: {measure: {value, lower_value?, upper_value?}}},
//   numbers only; a measure named by a slug that does not exist yet is created. The built-in
//   `latency` is in nanoseconds, which is why measures here carry their unit in the name.
// - GitLab metrics reports: each line with '#' and what follows removed, then split like a
//   shell command; the first word (name and labels, quotes dropped) keys the metric and the
//   second is its value, compared as a string. OpenMetrics text satisfies that, as long as
//   no label value holds a '#'.
#include "presentation/ci_formats.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interopbench/errors.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/params.hpp"
#include "interopbench/report.hpp"
#include "interopbench/text.hpp"
#include "presentation/formats.hpp"

namespace interopbench {

namespace {


// One value that goes out: a metric of an ok result, with its comparison when there is one.
struct Entry {
    const Result* result = nullptr;
    const MetricResult* metric = nullptr;
    const ResultComparison* rc = nullptr;  // the result's comparison, or nullptr
    const MetricComparison* mc = nullptr;  // the metric's comparison, or nullptr
    bool has_interval() const {
        const auto& s = metric->stats;
        return std::isfinite(s.median_ci_lo) && std::isfinite(s.median_ci_hi) && s.median_ci_lo <= s.median &&
               s.median <= s.median_ci_hi;
    }
};

const MetricComparison* find_metric(const ResultComparison* rc, const std::string& name) {
    if (!rc) return nullptr;
    for (const auto& m : rc->metrics)
        if (m.name == name) return &m;
    return nullptr;
}

// The values to write, in report order: ok results, metrics with samples and a finite median,
// the primary one (and, in a comparison, the gated ones) or all.
std::vector<Entry> entries(const std::vector<Result>& results, const CompareOutcome* outcome, CiMetrics which) {
    std::map<std::string, const ResultComparison*> by_key;
    if (outcome)
        for (const auto& rc : outcome->results) by_key.emplace(rc.key, &rc);
    std::vector<Entry> out;
    for (const auto& r : results) {
        if (r.status != Status::ok) continue;
        const auto it = by_key.find(r.key);
        const ResultComparison* rc = it == by_key.end() ? nullptr : it->second;
        for (std::size_t i = 0; i < r.metrics.size(); ++i) {
            const auto& m = r.metrics[i];
            if (m.stats.n == 0 || !std::isfinite(m.stats.median)) continue;
            const MetricComparison* mc = find_metric(rc, m.info.name);
            if (which == CiMetrics::primary && i != 0 && !(mc && mc->gated)) continue;
            out.push_back({&r, &m, rc, mc});
        }
    }
    return out;
}

std::string number(double v) { return fmt::format("{}", v); }

// The unit as a word for names: "bytes_per_second", "seconds"; empty for dimensionless.
std::string unit_word(const std::string& unit) {
    if (unit == "B/s") return "bytes_per_second";
    if (unit == "s") return "seconds";
    if (unit == "B") return "bytes";
    if (unit == "ratio") return "ratio";
    if (unit.empty() || unit == "1") return {};
    std::string u;
    for (char c : unit) u += c == '/' ? std::string("_per_") : std::string(1, static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    return openmetrics_name(u);
}

// "<metric>_<unit word>", the unit left out when the metric's name already ends with it
// (disk_bytes in B stays disk_bytes).
std::string metric_with_unit(const MetricResult& m) {
    const std::string name = openmetrics_name(m.info.name);
    const std::string unit = unit_word(m.info.unit);
    if (unit.empty() || name == unit || (name.size() > unit.size() && name.ends_with("_" + unit))) return name;
    return name + "_" + unit;
}

std::string kebab(std::string_view text) {
    std::string out;
    for (char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (std::isalnum(c) && c < 0x80) out += static_cast<char>(std::tolower(c));
        else if (!out.empty() && out.back() != '-') out += '-';
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out;
}

const char* better_text(Better b) { return b == Better::higher ? "higher" : "lower"; }

// ---- github-action-benchmark --------------------------------------------------------------

std::string comparison_lines(const Entry& e) {
    std::string out;
    if (e.rc) {
        out += fmt::format("\nverdict: {}", to_string(e.rc->verdict));
        if (!e.rc->reason.empty()) out += fmt::format(" ({})", e.rc->reason);
    }
    if (e.mc) {
        if (e.mc->has_ratio)
            out += fmt::format("\n{} new/base: {:.4g} [{:.4g}, {:.4g}], threshold \u00b1{:.1f}%, {}", e.mc->name, e.mc->ratio,
                               e.mc->ci_lo, e.mc->ci_hi, e.mc->threshold * 100, to_string(e.mc->verdict));
        else
            out += fmt::format("\n{}: {}", e.mc->name, to_string(e.mc->verdict));
        out += fmt::format("\nbase median: {} ({} samples)", format_value(e.mc->base_median, e.mc->unit), e.mc->base_n);
        if (!e.mc->note.empty()) out += fmt::format("\nnote: {}", e.mc->note);
    }
    return out;
}

std::string render_benchmark_action(const std::vector<Entry>& es, Better direction) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& e : es) {
        const auto& m = *e.metric;
        if (m.info.better != direction) continue;
        const auto& s = m.stats;
        nlohmann::ordered_json entry = {
            {"name", e.result->key + " " + m.info.name},
            {"unit", m.info.unit},
            {"value", s.median},
        };
        std::string extra = fmt::format("median {}", format_value(s.median, m.info.unit));
        if (e.has_interval()) {
            entry["range"] = fmt::format("\u00b1 {:.6g}", std::max(s.median - s.median_ci_lo, s.median_ci_hi - s.median));
            extra += fmt::format(", 95% CI [{}, {}]", format_value(s.median_ci_lo, m.info.unit),
                                 format_value(s.median_ci_hi, m.info.unit));
        }
        extra += fmt::format("\n{} samples", s.n);
        if (!e.result->stop_reason.empty()) extra += ", " + e.result->stop_reason;
        extra += comparison_lines(e);
        entry["extra"] = extra;
        out.push_back(std::move(entry));
    }
    return out.dump(2) + "\n";
}

// ---- Bencher Metric Format ----------------------------------------------------------------

std::string render_bmf(const std::vector<Entry>& es) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& e : es) {
        const auto& s = e.metric->stats;
        nlohmann::ordered_json v = {{"value", s.median}};
        if (e.has_interval()) {
            v["lower_value"] = s.median_ci_lo;
            v["upper_value"] = s.median_ci_hi;
        }
        auto& bench = out[e.result->key];
        const std::string measure = kebab(metric_with_unit(*e.metric));
        if (!bench.contains(measure)) bench[measure] = std::move(v); // two metrics one slug: the first
    }
    return out.dump(2) + "\n";
}

// ---- OpenMetrics --------------------------------------------------------------------------

class OpenMetricsWriter {
public:
    /// Adds a sample to family `name` (created with its metadata on first use). A second
    /// sample with the same labels is dropped: a family holds each label set once.
    void sample(const std::string& name, const std::string& unit, const std::string& help,
                const std::vector<std::pair<std::string, std::string>>& labels, double value) {
        if (!std::isfinite(value)) return;
        auto [it, fresh] = m_index.emplace(name, m_families.size());
        if (fresh) m_families.push_back({name, unit, help, {}, {}});
        auto& f = m_families[it->second];
        std::string set;
        for (const auto& [k, v] : labels) set += fmt::format("{}{}=\"{}\"", set.empty() ? "" : ",", k, openmetrics_escape(v));
        if (!f.seen.insert(set).second) return;
        f.samples.push_back(fmt::format("{}{}{}{} {}", name, set.empty() ? "" : "{", set, set.empty() ? "" : "}", number(value)));
    }

    std::string text() const {
        std::string out;
        for (const auto& f : m_families) {
            out += fmt::format("# TYPE {} gauge\n", f.name);
            if (!f.unit.empty()) out += fmt::format("# UNIT {} {}\n", f.name, f.unit);
            out += fmt::format("# HELP {} {}\n", f.name, openmetrics_escape(f.help));
            for (const auto& s : f.samples) out += s + "\n";
        }
        return out + "# EOF\n";
    }

private:
    struct Family {
        std::string name, unit, help;
        std::vector<std::string> samples;
        std::set<std::string> seen;
    };
    std::vector<Family> m_families;
    std::map<std::string, std::size_t> m_index;
};

void add_values(OpenMetricsWriter& w, const std::vector<Entry>& es) {
    for (const auto& e : es) {
        const auto& m = *e.metric;
        w.sample("interopbench_" + metric_with_unit(m), unit_word(m.info.unit),
                 fmt::format("median of {} in {}, {} is better", m.info.name, m.info.unit.empty() ? "1" : m.info.unit,
                             better_text(m.info.better)),
                 {{"key", e.result->key}}, m.stats.median);
    }
}

} // namespace

CiMetrics parse_ci_metrics(const std::string& text) {
    // "compact" was run --metrics' word for the tables' default: still read, for the scripts
    // that name it; help and docs name primary alone.
    if (text == "primary" || text == "compact") return CiMetrics::primary;
    if (text == "all") return CiMetrics::all;
    const auto near = closest_match(text, {"primary", "all"});
    throw UsageError(fmt::format("unknown metric selection '{}'{}", text, near ? fmt::format("; did you mean '{}'?", *near) : ""),
                     "use primary (the default: the metrics that fit a table, each result's primary metric in a CI "
                     "format) or all");
}

CiExport parse_ci_export(std::string_view spec) {
    const auto eq = spec.find('=');
    const std::string hint =
        fmt::format("write FORMAT=PATH, e.g. bmf=bench.json; FORMAT is {}", format_names(Command::export_file));
    if (eq == std::string_view::npos || eq == 0)
        throw UsageError(fmt::format("invalid --export '{}': no format", spec), hint);
    const std::string_view name = spec.substr(0, eq);
    const Format& format = find_format(name, Command::export_file);
    if (eq + 1 == spec.size()) throw UsageError(fmt::format("invalid --export '{}': no path", spec), hint);
    return {&format, std::string(spec.substr(eq + 1))};
}

void check_ci_exports(const std::vector<CiExport>& exports,
                      const std::vector<std::pair<std::string, std::string>>& taken) {
    const auto same = [](const std::string& a, const std::string& b) { return a == b || same_file(a, b); };
    for (std::size_t i = 0; i < exports.size(); ++i) {
        const auto& path = exports[i].path;
        for (const auto& [what, other] : taken)
            if (!other.empty() && same(path, other))
                throw UsageError(fmt::format("--export '{}' is {}: it would be overwritten", path, what),
                                 "write the export to another file");
        for (std::size_t j = 0; j < i; ++j)
            if (same(path, exports[j].path))
                throw UsageError(fmt::format("--export '{}' is given twice ({} and {})", path, exports[j].format->name,
                                             exports[i].format->name),
                                 "write each format to its own file");
        check_output_path(path);
    }
}

std::string openmetrics_name(std::string_view text) {
    std::string out;
    for (char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        out += (std::isalnum(c) && c < 0x80) || c == '_' ? ch : '_';
    }
    if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(out.begin(), '_');
    return out;
}

std::string openmetrics_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

namespace {

// Every format from its entries; OpenMetrics adds the comparison's ratios and verdict counts
// when there is one.
std::string render_entries(const std::vector<Entry>& es, CiSystem system, const CompareOutcome* outcome,
                           CiMetrics metrics) {
    switch (system) {
    case CiSystem::none: return {}; // not a CI format: its row has no render_ci
    case CiSystem::benchmark_action_bigger: return render_benchmark_action(es, Better::higher);
    case CiSystem::benchmark_action_smaller: return render_benchmark_action(es, Better::lower);
    case CiSystem::bmf: return render_bmf(es);
    case CiSystem::openmetrics: break;
    }
    OpenMetricsWriter w;
    add_values(w, es);
    if (!outcome) return w.text();
    const std::string ratio_help = "ratio of medians new/base and its bootstrap interval (estimate point, lower, upper)";
    for (const auto& rc : outcome->results)
        for (std::size_t i = 0; i < rc.metrics.size(); ++i) {
            const auto& mc = rc.metrics[i];
            if (!mc.has_ratio || (metrics == CiMetrics::primary && i != 0 && !mc.gated)) continue;
            const std::pair<const char*, double> estimates[] = {{"point", mc.ratio}, {"lower", mc.ci_lo}, {"upper", mc.ci_hi}};
            for (const auto& [estimate, v] : estimates)
                w.sample("interopbench_compare_ratio", "ratio", ratio_help,
                         {{"key", rc.key}, {"metric", mc.name}, {"estimate", estimate}}, v);
        }
    for (std::size_t v = 0; v < k_verdict_count; ++v)
        w.sample("interopbench_compare_results", "", "results of the comparison per verdict",
                 {{"verdict", to_string(static_cast<Verdict>(v))}}, static_cast<double>(outcome->counts[v]));
    return w.text();
}

} // namespace

std::string render_ci(const Format& format, const ReportView& view) {
    return render_entries(entries(view.results, nullptr, view.metrics), format.ci_system, nullptr, view.metrics);
}

std::string render_ci(const Format& format, const ComparisonView& view) {
    return render_entries(entries(view.fresh, &view.outcome, view.metrics), format.ci_system, &view.outcome, view.metrics);
}

} // namespace interopbench
