#include "interopbench/output.hpp"

#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interopbench/errors.hpp"

namespace interopbench {

OutputFormat parse_format(const std::string& text) {
    if (text == "table") return OutputFormat::table;
    if (text == "json") return OutputFormat::json;
    if (text == "csv") return OutputFormat::csv;
    if (text == "markdown" || text == "md") return OutputFormat::markdown;
    throw UsageError(fmt::format("unknown output format '{}'", text), "use table, json, csv or markdown");
}

std::string format_value(double v, const std::string& unit) {
    if (std::isnan(v)) return "-";
    const double a = std::fabs(v);
    if (unit == "B/s") {
        if (a >= 1e9) return fmt::format("{:.2f} GB/s", v / 1e9);
        if (a >= 1e6) return fmt::format("{:.2f} MB/s", v / 1e6);
        return fmt::format("{:.2f} kB/s", v / 1e3);
    }
    if (unit == "s") {
        if (a >= 1) return fmt::format("{:.3f} s", v);
        if (a >= 1e-3) return fmt::format("{:.3f} ms", v * 1e3);
        if (a >= 1e-6) return fmt::format("{:.2f} us", v * 1e6);
        return fmt::format("{:.1f} ns", v * 1e9);
    }
    if (unit == "B") {
        if (v == std::floor(v) && a < 1.8e19) return format_size(static_cast<std::uint64_t>(a));
        return fmt::format("{:.3g} B", v);
    }
    if (unit == "ratio") return fmt::format("{:.1f}%", v * 100);
    return fmt::format("{:.4g}", v);
}

std::string render_table(const std::vector<std::vector<std::string>>& rows, bool markdown) {
    if (rows.empty()) return {};
    std::size_t cols = 0;
    for (const auto& r : rows) cols = std::max(cols, r.size());
    std::vector<std::size_t> width(cols, 0);
    for (const auto& r : rows)
        for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    auto numeric = [](const std::string& s) {
        return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || (s[0] == '-' && s.size() > 1));
    };
    std::string out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        std::string line = markdown ? "|" : "";
        for (std::size_t c = 0; c < cols; ++c) {
            const std::string cell = c < rows[i].size() ? rows[i][c] : "";
            if (markdown) line += " " + cell + " |";
            else if (i > 0 && numeric(cell)) line += fmt::format("{:>{}}", cell, width[c]) + (c + 1 < cols ? "  " : "");
            else line += fmt::format("{:<{}}", cell, c + 1 < cols ? width[c] : 0) + (c + 1 < cols ? "  " : "");
        }
        while (!markdown && !line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
        if (i == 0) {
            if (markdown) {
                out += "|";
                for (std::size_t c = 0; c < cols; ++c) out += " --- |";
                out += "\n";
            } else {
                std::string rule;
                for (std::size_t c = 0; c < cols; ++c) rule += std::string(width[c], '-') + (c + 1 < cols ? "  " : "");
                out += rule + "\n";
            }
        }
    }
    return out;
}

namespace {

std::string param_cell(const std::string& name, const std::string& value) {
    if (name == "size" || name == "footprint" || name == "chunk" || name.find("bytes") != std::string::npos ||
        name.ends_with("_size")) {
        try {
            return format_size(std::stoull(value));
        } catch (const std::exception&) {
        }
    }
    return value;
}

std::string metric_cell(const MetricResult& m) {
    if (m.stats.n == 0) return "-";
    std::string s = format_value(m.stats.median, m.info.unit);
    if (m.stats.n > 1) s += fmt::format(" ±{:.1f}%", m.stats.rel_ci_halfwidth() * 100);
    return s;
}

} // namespace

std::string render_results(const std::vector<Result>& results, OutputFormat format) {
    if (format == OutputFormat::json) return nlohmann::json(results).dump(2) + "\n";
    if (format == OutputFormat::csv) {
        std::string out = "scenario,params,status,metric,unit,median,ci_lo,ci_hi,mean,stddev,min,max,n,stop_reason,reason\n";
        auto q = [](const std::string& s) {
            std::string e = "\"";
            for (char c : s) e += c == '"' ? std::string("\"\"") : std::string(1, c);
            return e + "\"";
        };
        for (const auto& r : results) {
            if (r.status != Status::ok || r.metrics.empty()) {
                out += fmt::format("{},{},{},,,,,,,,,,0,{},{}\n", r.scenario, q(r.params.canonical()), to_string(r.status),
                                   r.stop_reason, q(r.reason));
                continue;
            }
            for (const auto& m : r.metrics) {
                const auto& s = m.stats;
                out += fmt::format("{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{}\n", r.scenario,
                                   q(r.params.canonical()), to_string(r.status), m.info.name, m.info.unit, s.median,
                                   s.median_ci_lo, s.median_ci_hi, s.mean, s.stddev, s.min, s.max, s.n, r.stop_reason,
                                   q(r.reason));
            }
        }
        return out;
    }
    const bool md = format == OutputFormat::markdown;
    std::string out;
    // Sections per scenario, in order of first appearance.
    std::vector<std::string> order;
    std::map<std::string, std::vector<const Result*>> by;
    for (const auto& r : results) {
        if (!by.count(r.scenario)) order.push_back(r.scenario);
        by[r.scenario].push_back(&r);
    }
    for (const auto& id : order) {
        const auto& rs = by[id];
        out += md ? fmt::format("\n### {}\n\n", id) : fmt::format("\n== {} ==\n", id);
        // All skipped for one reason: one line, not a table of identical rows.
        bool same_skip = true;
        for (const auto* r : rs) same_skip = same_skip && r->status == Status::skipped && r->reason == rs[0]->reason;
        if (same_skip) {
            out += fmt::format("{} configuration(s) skipped: {}\n", rs.size(), rs[0]->reason);
            continue;
        }
        std::vector<std::vector<std::string>> rows;
        std::vector<std::string> header;
        for (const auto& [k, v] : rs[0]->params.items()) header.push_back(k);
        header.push_back("status");
        for (const auto& m : rs[0]->metrics) header.push_back(m.info.name);
        header.push_back("n");
        header.push_back("note");
        rows.push_back(header);
        for (const auto* r : rs) {
            std::vector<std::string> row;
            for (const auto& [k, v] : r->params.items()) row.push_back(param_cell(k, v));
            row.push_back(to_string(r->status));
            for (const auto& m : r->metrics) row.push_back(r->status == Status::ok || m.stats.n ? metric_cell(m) : "-");
            row.push_back(r->metrics.empty() ? "0" : std::to_string(r->metrics[0].stats.n));
            row.push_back(r->status == Status::ok ? r->stop_reason : r->reason);
            rows.push_back(std::move(row));
        }
        out += render_table(rows, md);
    }
    return out;
}

std::string render_scenarios(const std::vector<const ScenarioInfo*>& scenarios, OutputFormat format) {
    auto axis_kind = [](AxisKind k) {
        switch (k) {
        case AxisKind::size: return "size";
        case AxisKind::integer: return "integer";
        case AxisKind::choice: return "choice";
        case AxisKind::device: return "device";
        case AxisKind::device_pair: return "device_pair";
        }
        return "choice";
    };
    if (format == OutputFormat::json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto* s : scenarios) {
            nlohmann::json axes = nlohmann::json::array(), metrics = nlohmann::json::array();
            for (const auto& a : s->axes)
                axes.push_back({{"name", a.name}, {"kind", axis_kind(a.kind)}, {"help", a.help},
                                {"defaults", a.defaults}, {"choices", a.choices}});
            for (const auto& m : s->metrics)
                metrics.push_back({{"name", m.name}, {"unit", m.unit},
                                   {"better", m.better == Better::higher ? "higher" : "lower"}, {"help", m.help}});
            out.push_back({{"id", s->id}, {"family", s->family}, {"summary", s->summary}, {"needs_gpu", s->needs_gpu},
                           {"counting", s->counting}, {"axes", axes}, {"metrics", metrics}});
        }
        return out.dump(2) + "\n";
    }
    const bool md = format == OutputFormat::markdown;
    std::string out;
    if (format == OutputFormat::csv) {
        out = "id,family,needs_gpu,summary\n";
        for (const auto* s : scenarios)
            out += fmt::format("{},{},{},\"{}\"\n", s->id, s->family, s->needs_gpu ? "yes" : "no", s->summary);
        return out;
    }
    std::vector<std::vector<std::string>> rows{{"scenario", "family", "gpu", "summary"}};
    for (const auto* s : scenarios) rows.push_back({s->id, s->family, s->needs_gpu ? "yes" : "no", s->summary});
    out += render_table(rows, md);
    for (const auto* s : scenarios) {
        out += md ? fmt::format("\n### {}\n\n{}\n\n", s->id, s->summary) : fmt::format("\n{} — {}\n", s->id, s->summary);
        for (const auto& a : s->axes) {
            std::string vals = a.kind == AxisKind::device        ? "every selected GPU"
                               : a.kind == AxisKind::device_pair ? "every ordered pair of selected GPUs"
                                                                 : fmt::format("{}", fmt::join(a.defaults, ","));
            std::string choices = a.choices.empty() ? "" : fmt::format(" (of {})", fmt::join(a.choices, ","));
            out += fmt::format("{}  axis {:<12} default {}{} — {}\n", md ? "-" : " ", a.name, vals, choices, a.help);
        }
        for (const auto& m : s->metrics)
            out += fmt::format("{}  metric {:<14} [{}, {} is better] — {}\n", md ? "-" : " ", m.name, m.unit,
                               m.better == Better::higher ? "higher" : "lower", m.help);
        if (!s->counting.empty()) out += fmt::format("{}  counting: {}\n", md ? "-" : " ", s->counting);
    }
    return out;
}

} // namespace interopbench
