#include "interopbench/output.hpp"

#include <langinfo.h>
#include <locale.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interopbench/errors.hpp"
#include "interopbench/stats.hpp"

namespace interopbench {

bool ascii_output() {
    static const bool ascii = [] {
        // The locale the environment asks for, without making it the process's locale.
        locale_t loc = ::newlocale(LC_CTYPE_MASK, "", static_cast<locale_t>(nullptr));
        if (!loc) return true; // an unknown locale name: C, which is ASCII
        const std::string codeset = ::nl_langinfo_l(CODESET, loc);
        ::freelocale(loc);
        return codeset != "UTF-8";
    }();
    return ascii;
}

namespace {
struct GlyphText {
    const char* utf8;
    const char* ascii;
};
constexpr GlyphText k_glyphs[] = {
    {"\u00b1", "+/-"}, {"\u2014", "-"}, {"\u00d7", "x"}, {"\u00b5", "u"}, {"\u2192", "->"},
};
} // namespace

const char* glyph(Glyph g) {
    const auto& t = k_glyphs[static_cast<int>(g)];
    return ascii_output() ? t.ascii : t.utf8;
}

std::size_t utf8_sequence(std::string_view text, std::size_t at, std::uint32_t& code_point) {
    if (at >= text.size()) return 0;
    const auto c = static_cast<unsigned char>(text[at]);
    // The length from the lead byte, then the continuation bytes.
    const std::size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (len == 0 || at + len > text.size()) return 0;
    std::uint32_t cp = len == 2 ? c & 0x1fu : len == 3 ? c & 0x0fu : c & 0x07u;
    for (std::size_t k = 1; k < len; ++k) {
        const auto cc = static_cast<unsigned char>(text[at + k]);
        if ((cc & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (cc & 0x3fu);
    }
    if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return 0;
    if (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) return 0;
    code_point = cp;
    return len;
}

std::string display_text(std::string_view text) {
    const bool ascii = ascii_output();
    std::string out;
    out.reserve(text.size());
    const auto byte = [&](unsigned char c) { out += fmt::format("\\x{:02x}", c); };
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            switch (c) {
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c == 0x7f) byte(c);
                else out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        std::uint32_t cp = 0;
        const std::size_t len = utf8_sequence(text, i, cp);
        if (len == 0) {
            byte(c);
            ++i;
            continue;
        }
        const std::string_view seq = text.substr(i, len);
        i += len;
        if (cp >= 0x80 && cp <= 0x9f) { // C1 controls (CSI is one)
            out += fmt::format("\\u{:04x}", cp);
            continue;
        }
        if (!ascii) {
            out += seq;
            continue;
        }
        const GlyphText* g = nullptr;
        for (const auto& t : k_glyphs)
            if (seq == t.utf8) g = &t;
        if (g) out += g->ascii;
        else out += fmt::format("\\u{:04x}", cp);
    }
    return out;
}

OutputFormat parse_format(const std::string& text) {
    if (text == "table") return OutputFormat::table;
    if (text == "json") return OutputFormat::json;
    if (text == "csv") return OutputFormat::csv;
    if (text == "markdown" || text == "md") return OutputFormat::markdown;
    throw UsageError(fmt::format("unknown output format '{}'", text), "use table, json, csv or markdown");
}

std::string format_value(double v, const std::string& unit) {
    if (!std::isfinite(v)) return "-";
    const double a = std::fabs(v);
    // Beyond any real figure (a damaged or crafted report): exponent notation, never hundreds
    // of digits.
    if (a >= 1e18) return fmt::format("{:.3g} {}", v, unit);
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
        // Whole units stay exact ("64MiB"); anything else reads in the largest unit that
        // fits, to three significant figures ("4.00GiB", not "4194306KiB").
        static const char* const k_units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        int k = 0;
        double x = a;
        while (x >= 1024 && k < 6) {
            x /= 1024;
            ++k;
        }
        if (v == std::floor(v) && a < 1.8e19 && (k == 0 || x == std::floor(x)))
            return format_size(static_cast<std::uint64_t>(a));
        return fmt::format("{}{:.{}f}{}", v < 0 ? "-" : "", x, x < 10 ? 2 : x < 100 ? 1 : 0, k_units[k]);
    }
    if (unit == "ratio") return fmt::format("{:.1f}%", v * 100);
    return fmt::format("{:.4g}", v);
}

namespace {
std::string render_safe_table(const std::vector<std::vector<std::string>>& rows, bool markdown);
} // namespace

std::string render_table(const std::vector<std::vector<std::string>>& rows, bool markdown) {
    if (rows.empty()) return {};
    // Report text reaches the terminal only through display_text: one place for every table.
    std::vector<std::vector<std::string>> safe;
    safe.reserve(rows.size());
    for (const auto& r : rows) {
        std::vector<std::string> cells;
        cells.reserve(r.size());
        for (const auto& c : r) {
            std::string t = display_text(c);
            if (markdown) {
                std::string e;
                for (char ch : t) e += ch == '|' ? std::string("\\|") : std::string(1, ch);
                t = std::move(e);
            }
            cells.push_back(std::move(t));
        }
        safe.push_back(std::move(cells));
    }
    return render_safe_table(safe, markdown);
}

namespace {
// Display width of UTF-8 text: one column per character (continuation bytes do not count).
std::size_t columns(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xc0) != 0x80;
    return n;
}
std::string pad(const std::string& s, std::size_t width, bool right) {
    const std::size_t w = columns(s);
    if (w >= width) return s;
    return right ? std::string(width - w, ' ') + s : s + std::string(width - w, ' ');
}

std::string render_safe_table(const std::vector<std::vector<std::string>>& rows, bool markdown) {
    std::size_t cols = 0;
    for (const auto& r : rows) cols = std::max(cols, r.size());
    std::vector<std::size_t> width(cols, 0);
    for (const auto& r : rows)
        for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], columns(r[c]));
    auto numeric = [](const std::string& s) {
        return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || (s[0] == '-' && s.size() > 1));
    };
    std::string out;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        std::string line = markdown ? "|" : "";
        for (std::size_t c = 0; c < cols; ++c) {
            const std::string cell = c < rows[i].size() ? rows[i][c] : "";
            if (markdown) line += " " + cell + " |";
            else if (i > 0 && numeric(cell)) line += pad(cell, width[c], true) + (c + 1 < cols ? "  " : "");
            else line += pad(cell, c + 1 < cols ? width[c] : 0, false) + (c + 1 < cols ? "  " : "");
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
    if (m.stats.n > 1) s += fmt::format(" {}{:.1f}%", glyph(Glyph::plus_minus), m.stats.rel_ci_halfwidth() * 100);
    return s;
}

} // namespace

std::vector<std::vector<std::vector<std::string>>> matrix_tables(const std::vector<const nlohmann::json*>& details) {
    std::vector<const nlohmann::json*> seen;
    std::vector<std::string> titles;
    for (const auto* d : details) {
        if (!d || !d->is_object()) continue;
        const auto it = d->find("matrix");
        if (it == d->end() || !it->is_object()) continue;
        const auto& m = *it;
        if (!m.contains("rows") || !m["rows"].is_array() || !m.contains("columns") || !m["columns"].is_array() ||
            !m.contains("cells") || !m["cells"].is_array())
            continue;
        const std::string title = m.contains("title") && m["title"].is_string() ? m["title"].get<std::string>() : "";
        if (std::find(titles.begin(), titles.end(), title) != titles.end()) continue;
        titles.push_back(title);
        seen.push_back(&m);
    }
    std::vector<std::vector<std::vector<std::string>>> tables;
    std::vector<bool> done(seen.size(), false);
    auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    for (std::size_t first = 0; first < seen.size(); ++first) {
        if (done[first]) continue;
        const auto& cols = (*seen[first])["columns"];
        std::vector<std::vector<std::string>> rows;
        std::vector<std::string> header{"matrix", "row"};
        for (const auto& c : cols) header.push_back(text(c));
        rows.push_back(header);
        for (std::size_t i = first; i < seen.size(); ++i) {
            const auto& m = *seen[i];
            if (done[i] || m["columns"] != cols) continue;
            done[i] = true;
            for (std::size_t r = 0; r < m["rows"].size(); ++r) {
                std::vector<std::string> row{titles[i], text(m["rows"][r])};
                const auto& cells = r < m["cells"].size() && m["cells"][r].is_array() ? m["cells"][r] : nlohmann::json::array();
                for (std::size_t c = 0; c < cols.size(); ++c) row.push_back(c < cells.size() ? text(cells[c]) : "");
                rows.push_back(std::move(row));
            }
        }
        tables.push_back(std::move(rows));
    }
    return tables;
}

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
        out += md ? fmt::format("\n### {}\n\n", display_text(id)) : fmt::format("\n== {} ==\n", display_text(id));
        // All skipped for one reason: one line, not a table of identical rows.
        bool same_skip = true;
        for (const auto* r : rs) same_skip = same_skip && r->status == Status::skipped && r->reason == rs[0]->reason;
        if (same_skip) {
            out += fmt::format("{} configuration(s) skipped: {}\n", rs.size(), display_text(rs[0]->reason));
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
            std::string note = r->status == Status::ok ? r->stop_reason : r->reason;
            if (r->status == Status::ok && !r->metrics.empty() && r->metrics[0].round_medians.size() > 1) {
                const double spread = relative_range(r->metrics[0].round_medians);
                note += fmt::format("; {}{} rounds {} {:.1f}%", spread >= k_noisy_range ? "noisy: " : "",
                                    r->metrics[0].round_medians.size(), spread >= k_noisy_range ? "spread" : "within",
                                    spread * 100);
            }
            row.push_back(note);
            rows.push_back(std::move(row));
        }
        out += render_table(rows, md);
        // A scenario may explain a result in one sentence (details "diagnosis"): printed under
        // the table, one line per configuration.
        for (const auto* r : rs) {
            const auto it = r->details.find("diagnosis");
            if (it == r->details.end() || !it->is_string()) continue;
            out += md ? fmt::format("\n- `{}`: {}", display_text(r->params.canonical()), display_text(it->get<std::string>()))
                      : fmt::format("  {}: {}\n", display_text(r->params.canonical()), display_text(it->get<std::string>()));
        }
        if (md && std::any_of(rs.begin(), rs.end(), [](const Result* r) { return r->details.contains("diagnosis"); }))
            out += "\n";
        std::vector<const nlohmann::json*> details;
        for (const auto* r : rs) details.push_back(&r->details);
        for (const auto& t : matrix_tables(details)) out += "\n" + render_table(t, md);
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
        out += md ? fmt::format("\n### {}\n\n{}\n\n", display_text(s->id), display_text(s->summary))
                : fmt::format("\n{} {} {}\n", display_text(s->id), glyph(Glyph::dash), display_text(s->summary));
        for (const auto& a : s->axes) {
            std::string vals = a.kind == AxisKind::device        ? "every selected GPU"
                               : a.kind == AxisKind::device_pair ? "every ordered pair of selected GPUs"
                                                                 : fmt::format("{}", fmt::join(a.defaults, ","));
            std::string choices = a.choices.empty() ? "" : fmt::format(" (of {})", fmt::join(a.choices, ","));
            out += fmt::format("{}  axis {:<12} default {}{} {} {}\n", md ? "-" : " ", display_text(a.name), display_text(vals),
                               display_text(choices), glyph(Glyph::dash), display_text(a.help));
        }
        for (const auto& m : s->metrics)
            out += fmt::format("{}  metric {:<14} [{}, {} is better] {} {}\n", md ? "-" : " ", display_text(m.name),
                               display_text(m.unit), m.better == Better::higher ? "higher" : "lower", glyph(Glyph::dash),
                               display_text(m.help));
        if (!s->counting.empty()) out += fmt::format("{}  counting: {}\n", md ? "-" : " ", display_text(s->counting));
    }
    return out;
}

} // namespace interopbench
