#include "presentation/output.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interopbench/conditions.hpp"
#include "interopbench/merge.hpp"
#include "interopbench/report.hpp"
#include "interopbench/stats.hpp"
#include "interopbench/text.hpp"
#include "presentation/formats.hpp"

namespace interopbench {

namespace {

std::string short_label(const Result& r) { return interopbench::short_label(r.scenario, r.params); }

// Text cut to `width` columns with "..." (a UTF-8 character is never cut in two).
std::string shorten_to(const std::string& s, std::size_t width) {
    if (width == 0 || display_width(s) <= width) return s;
    std::string out;
    std::size_t n = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if ((c & 0xc0) != 0x80 && ++n > (width > 3 ? width - 3 : 0)) break;
        out += s[i];
    }
    return out + "...";
}

// Why sampling stopped, in words a person reads; nothing when it converged.
std::string stop_words(const std::string& why) {
    if (why == "converged" || why.empty()) return "";
    if (why == "time_budget") return "not converged: time limit";
    if (why == "max_samples") return "not converged: sample limit";
    if (why == "no_primary_metric") return "no primary metric";
    return why;
}

std::string note_of(const Result& r) {
    if (r.status != Status::ok) return r.reason;
    std::string note = stop_words(r.stop_reason);
    if (!r.metrics.empty() && r.metrics[0].round_medians.size() > 1) {
        const double spread = relative_range(r.metrics[0].round_medians);
        if (spread >= k_noisy_range)
            note += fmt::format("{}varies {:.3g}% between runs", note.empty() ? "" : "; ", spread * 100);
    }
    if (const auto o = r.details.find("overrun"); o != r.details.end() && o->is_object()) {
        // Where the time beyond the budget went: the longest phase.
        std::string longest;
        double most = -1;
        for (const char* phase : {"setup_s", "warmup_s", "sampling_s", "finish_s"})
            if (const auto p = o->find(phase); p != o->end() && p->is_number() && p->get<double>() > most) {
                most = p->get<double>();
                longest = std::string(phase).substr(0, std::string(phase).size() - 2);
            }
        note += fmt::format("{}took {} of a {} budget ({} {})", note.empty() ? "" : "; ",
                            format_duration(o->value("took_s", 0.0)), format_duration(o->value("budget_s", 0.0)),
                            longest, format_duration(most));
    }
    if (const std::string slowest = slowest_rank_words(r.details); !slowest.empty())
        note += fmt::format("{}slowest: {}", note.empty() ? "" : "; ", slowest);
    if (const auto w = r.details.find("limit_wrong"); w != r.details.end() && w->is_string())
        note += fmt::format("{}above the {}'s limit: the limit is wrong", note.empty() ? "" : "; ",
                            r.details.value("path", std::string("path")));
    return note;
}

std::string uncertainty_cell(const MetricResult& m) {
    if (m.stats.n < 2) return "-";
    const Uncertainty u = uncertainty(m);
    return fmt::format("{:.2g}% {}", u.relative * 100, u.source);
}

const nlohmann::json* efficiency_of(const Result& r) {
    const auto it = r.details.find("efficiency");
    return it != r.details.end() && it->is_number() && std::isfinite(it->get<double>()) ? &*it : nullptr;
}

// What a family found for a group of configurations (details "finding", written by its
// annotate hook on each result of the group): its words ("text") and the axis values that
// make the group ("scope"); nullptr where the result carries none.
const nlohmann::json* finding_of(const Result& r) {
    if (r.status != Status::ok) return nullptr;
    const auto it = r.details.find("finding");
    if (it == r.details.end() || !it->is_object()) return nullptr;
    const auto text = it->find("text");
    return text != it->end() && text->is_string() && !text->get<std::string>().empty() ? &*it : nullptr;
}

bool same_finding(const nlohmann::json& a, const nlohmann::json& b) {
    return a["text"] == b["text"] && a.value("scope", nlohmann::json()) == b.value("scope", nlohmann::json());
}

// The scope of result `r`'s finding in words, by the axes (in `r`'s order) whose values differ
// among `others` (the findings it is told apart from): "warm 1GiB 64MiB"; sizes in binary
// units, a number with its axis name, as short_label.
std::string scope_words(const Result& r, const std::vector<const nlohmann::json*>& others) {
    const nlohmann::json& scope = (*finding_of(r))["scope"];
    if (!scope.is_object()) return {};
    std::vector<std::pair<std::string, std::string>> differing;
    for (const auto& [axis, value] : r.params.items()) {
        const auto at = scope.find(axis);
        if (at == scope.end()) continue;
        const nlohmann::json& mine = *at;
        const bool same = std::all_of(others.begin(), others.end(), [&](const nlohmann::json* o) {
            const auto os = o->find("scope");
            return os != o->end() && os->is_object() && os->value(axis, nlohmann::json()) == mine;
        });
        if (!same) differing.emplace_back(axis, value);
    }
    return differing.empty() ? std::string() : short_label("", Params(differing)).substr(1);
}

// Rows of a scenario's table named for people by the values of its varying axes (`varying`):
// one row as "naive warm 1GiB"; several by what they share and what tells them apart:
// "naive/+pool warm 1GiB" where they are every combination of their values, else each listed
// ("naive cold, tuned warm; 1GiB"); every row of the table is "all". `shared_only` names a
// group by the values its rows share alone (a finding's group: "warm 1GiB").
std::string rows_name(const std::vector<const Result*>& rs, const std::vector<std::string>& varying,
                      const std::vector<std::size_t>& rows, bool shared_only) {
    if (rows.size() == rs.size() && rs.size() > 1) return "all";
    const auto cell = [&](std::size_t row, const std::string& axis) { return param_cell(axis, rs[row]->params.find(axis).value_or("")); };
    std::vector<std::string> shared, parts;
    std::vector<std::string> apart; // axes whose values differ among the rows
    std::size_t combinations = 1;
    for (const auto& axis : varying) {
        std::vector<std::string> values;
        for (const std::size_t row : rows)
            if (const std::string v = cell(row, axis); std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
        if (values.size() == 1) shared.push_back(values[0]);
        else apart.push_back(axis);
        combinations *= values.size();
        parts.push_back(fmt::format("{}", fmt::join(values, "/")));
    }
    if (varying.empty()) return "this configuration";
    if (apart.empty() || (shared_only && !shared.empty())) return fmt::format("{}", fmt::join(shared, " "));
    if (combinations == rows.size()) return fmt::format("{}", fmt::join(parts, " "));
    std::vector<std::string> listed;
    for (const std::size_t row : rows) {
        std::vector<std::string> own;
        for (const auto& axis : apart) own.push_back(cell(row, axis));
        listed.push_back(fmt::format("{}", fmt::join(own, " ")));
    }
    return fmt::format("{}{}{}", fmt::join(listed, ", "), shared.empty() ? "" : "; ", fmt::join(shared, " "));
}

// Under a scenario's table, what the family found for each group of configurations (details
// "finding"), then each configuration's own explanation (details "diagnosis"): every distinct
// one once, naming the rows it applies to once (rows_name).
std::string explanations(const std::vector<const Result*>& rs, const std::vector<std::string>& varying, bool md,
                         std::size_t width) {
    std::string out;
    const auto say = [&](const std::string& name, const std::string& text) {
        if (md) out += fmt::format("{}- `{}`: {}\n", out.empty() ? "\n" : "", display_text(name), display_text(text));
        else out += wrap(fmt::format("{}: {}", display_text(name), display_text(text)), width, "  ");
    };
    std::vector<const nlohmann::json*> findings;
    std::vector<std::string> diagnoses;
    std::vector<std::vector<std::size_t>> finding_rows, diagnosis_rows;
    for (std::size_t i = 0; i < rs.size(); ++i) {
        if (const auto* f = finding_of(*rs[i])) {
            const auto at = std::find_if(findings.begin(), findings.end(), [f](const nlohmann::json* g) { return same_finding(*f, *g); });
            if (at == findings.end()) {
                findings.push_back(f);
                finding_rows.push_back({i});
            } else {
                finding_rows[static_cast<std::size_t>(at - findings.begin())].push_back(i);
            }
        }
        const auto it = rs[i]->details.find("diagnosis");
        if (it == rs[i]->details.end() || !it->is_string()) continue;
        const auto at = std::find(diagnoses.begin(), diagnoses.end(), it->get<std::string>());
        if (at == diagnoses.end()) {
            diagnoses.push_back(it->get<std::string>());
            diagnosis_rows.push_back({i});
        } else {
            diagnosis_rows[static_cast<std::size_t>(at - diagnoses.begin())].push_back(i);
        }
    }
    for (std::size_t k = 0; k < findings.size(); ++k)
        say(rows_name(rs, varying, finding_rows[k], true), (*findings[k])["text"].get<std::string>());
    for (std::size_t k = 0; k < diagnoses.size(); ++k) say(rows_name(rs, varying, diagnosis_rows[k], false), diagnoses[k]);
    return out;
}

// One scenario's table: varying axes, status (when not all ok), the primary metric and its
// uncertainty, the share of the limit, the other metrics, n and the note; fitted to `width`
// (fit_table): secondary metrics left out first, notes wrapped under their column.
std::string render_section(const std::vector<const Result*>& rs, bool md, std::size_t width, bool all_metrics) {
    std::string out;
    const auto& first = *rs[0];
    // Axes with one value in the whole section are said once, above the table; one
    // configuration has every axis so.
    std::vector<const Params*> configs;
    for (const auto* r : rs) configs.push_back(&r->params);
    const auto constant = rs.size() == 1 ? first.params.items() : shared_axes(configs);
    std::vector<std::string> varying;
    for (const auto& item : first.params.items())
        if (std::find(constant.begin(), constant.end(), item) == constant.end()) varying.push_back(item.first);
    if (!constant.empty()) out += wrap(display_text(axes_text(constant)), width, md ? "" : "  ");
    if (md && !constant.empty()) out += "\n";
    const bool all_ok = std::all_of(rs.begin(), rs.end(), [](const Result* r) { return r->status == Status::ok; });
    const bool any_eff = std::any_of(rs.begin(), rs.end(), [](const Result* r) { return efficiency_of(*r) != nullptr; });
    const std::size_t n_metrics = first.metrics.size();
    std::string no_copy_rate; // a rate column left empty where the configuration moved no bytes

    std::vector<TableColumn> cols;
    for (const auto& k : varying) {
        TableColumn c{k, {}};
        for (const auto* r : rs) c.cells.push_back(param_cell(k, r->params.find(k).value_or("")));
        cols.push_back(std::move(c));
    }
    if (!all_ok) {
        TableColumn c{"status", {}};
        for (const auto* r : rs) c.cells.push_back(to_string(r->status));
        cols.push_back(std::move(c));
    }
    for (std::size_t mi = 0; mi < n_metrics; ++mi) {
        // A secondary metric no configuration of the table produced is no column (a transfer
        // set's metrics of transfers it does not have).
        if (mi > 0 && std::none_of(rs.begin(), rs.end(), [mi](const Result* r) { return mi < r->metrics.size() && r->metrics[mi].stats.n; }))
            continue;
        TableColumn c{first.metrics[mi].info.name, {}, mi > 0};
        for (const auto* r : rs) {
            const bool measured = mi < r->metrics.size() && r->metrics[mi].stats.n;
            // A handoff that moved no bytes has no bandwidth: its time is its figure.
            const bool no_rate = measured && r->metrics[mi].info.unit == "B/s" && r->moved_no_bytes();
            if (no_rate) no_copy_rate = c.header;
            c.cells.push_back(measured && !no_rate ? format_value(r->metrics[mi].stats.median, r->metrics[mi].info.unit) : "-");
        }
        cols.push_back(std::move(c));
        if (mi == 0) {
            TableColumn u{"\u00b1 (ci|rounds)", {}};
            for (const auto* r : rs) u.cells.push_back(r->metrics.empty() ? "-" : uncertainty_cell(r->metrics[0]));
            cols.push_back(std::move(u));
            if (any_eff) {
                TableColumn e{"of limit", {}};
                for (const auto* r : rs) {
                    const auto* eff = efficiency_of(*r);
                    e.cells.push_back(eff ? fmt::format("{:.0f}%", eff->get<double>() * 100) : "-");
                }
                cols.push_back(std::move(e));
            }
        }
    }
    TableColumn n{"n", {}}, note{"note", {}, false, true};
    for (const auto* r : rs) {
        n.cells.push_back(r->metrics.empty() ? "0" : std::to_string(r->metrics[0].stats.n));
        note.cells.push_back(note_of(*r));
    }
    cols.push_back(std::move(n));
    // A note every row shares is said once, under the table.
    std::string shared_note;
    if (rs.size() > 1 && std::all_of(note.cells.begin(), note.cells.end(), [&](const std::string& t) { return t == note.cells[0]; }))
        shared_note = note.cells[0];
    else if (std::any_of(note.cells.begin(), note.cells.end(), [](const std::string& t) { return !t.empty(); }))
        cols.push_back(std::move(note));
    // A row named by the values of its varying axes (before the table takes the columns).
    std::vector<std::string> row_names;
    for (std::size_t i = 0; i < rs.size(); ++i) {
        std::vector<std::string> label;
        for (std::size_t c = 0; c < varying.size(); ++c) label.push_back(cols[c].cells[i]);
        row_names.push_back(label.empty() ? std::string("this configuration") : fmt::format("{}", fmt::join(label, " ")));
    }
    TableLayout layout;
    layout.width = md ? 0 : width;
    layout.markdown = md;
    layout.keep_all = all_metrics;
    layout.hint = "--metrics all, or --wide";
    layout.row_names = row_names;
    out += fit_table(std::move(cols), layout);
    if (!shared_note.empty()) out += wrap("all: " + display_text(shared_note), width, md ? "\n" : "  ");
    if (!no_copy_rate.empty())
        out += wrap(fmt::format("{} -: the configuration moved no bytes (zero-copy); its time is its figure", no_copy_rate), width,
                    md ? "\n" : "  ");
    out += explanations(rs, varying, md, width);
    return out;
}

// Scenarios whose every configuration was skipped: one line per reason.
std::string skipped_lines(const std::vector<Result>& results, bool md, std::size_t width) {
    std::string out;
    for (const auto& g : skip_groups(results, true)) {
        const std::string line = fmt::format("{} configuration{} of {} scenario{} skipped: {} ({})", g.count,
                                             g.count == 1 ? "" : "s", g.scenarios.size(), g.scenarios.size() == 1 ? "" : "s",
                                             display_text(g.reason), display_text(fmt::format("{}", fmt::join(g.scenarios, ", "))));
        out += md ? "- " + line + "\n" : wrap(line, width, "  ");
    }
    return out;
}

} // namespace

std::vector<SkipGroup> skip_groups(const std::vector<Result>& results, bool whole_only) {
    std::set<std::string> measured; // scenarios with a configuration that was not skipped
    for (const auto& r : results)
        if (r.status != Status::skipped) measured.insert(r.scenario);
    std::vector<SkipGroup> groups;
    std::map<std::string, std::size_t> at;
    for (const auto& r : results) {
        if (r.status != Status::skipped || (whole_only && measured.count(r.scenario))) continue;
        const auto [it, fresh] = at.emplace(r.reason, groups.size());
        if (fresh) groups.push_back({r.reason, 0, {}});
        auto& g = groups[it->second];
        ++g.count;
        if (std::find(g.scenarios.begin(), g.scenarios.end(), r.scenario) == g.scenarios.end()) g.scenarios.push_back(r.scenario);
    }
    return groups;
}

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

std::string render_results(const std::vector<Result>& results, const Format& format, const TableStyle& style) {
    const bool md = format.markdown;
    const std::size_t width = md ? 0 : style.width;
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
        // Scenarios whose every configuration was skipped are said together at the end.
        if (std::all_of(rs.begin(), rs.end(), [](const Result* r) { return r->status == Status::skipped; })) continue;
        out += md ? fmt::format("\n### {}\n\n", display_text(id)) : fmt::format("\n== {} ==\n", display_text(id));
        out += render_section(rs, md, width, style.all_metrics);
        std::vector<const nlohmann::json*> details;
        for (const auto* r : rs) details.push_back(&r->details);
        for (const auto& t : matrix_tables(details)) {
            out += '\n';
            out += render_table(t, md, width);
        }
    }
    const std::string skipped = skipped_lines(results, md, width);
    if (!skipped.empty()) {
        out += md ? "\n### skipped\n\n" : "\n== skipped ==\n";
        out += skipped;
    }
    return out;
}

std::vector<std::string> summary_lines(const std::vector<Result>& results) {
    std::size_t ok = 0, failed = 0, skipped = 0, other = 0, noisy = 0;
    for (const auto& r : results) {
        ok += r.status == Status::ok;
        failed += r.status == Status::failed;
        skipped += r.status == Status::skipped;
        other += r.status == Status::interrupted;
        noisy += r.status == Status::ok && !r.metrics.empty() && r.metrics[0].round_medians.size() > 1 &&
                 relative_range(r.metrics[0].round_medians) >= k_noisy_range;
    }
    std::vector<std::string> lines;
    std::string head = fmt::format("{} result{}: {} ok", results.size(), results.size() == 1 ? "" : "s", ok);
    if (failed) head += fmt::format(", {} failed", failed);
    if (skipped) head += fmt::format(", {} skipped", skipped);
    if (other) head += fmt::format(", {} interrupted", other);
    if (noisy) head += fmt::format("; {} vary more than {:.0f}% between runs", noisy, k_noisy_range * 100);
    lines.push_back(head);
    // Per family, its best primary figure (by the metric's own direction) and its share of
    // the limit where the result knows it; or, where the family found something (details
    // "finding"), that finding in words: the one made of the most configurations (the most
    // complete), of those the one with the best figure.
    std::vector<std::string> families;
    std::map<std::string, const Result*> best;
    struct Found {
        const nlohmann::json* finding;
        const Result* best; ///< its best configuration
        std::size_t results;
    };
    std::map<std::string, std::vector<Found>> found; // per family, each distinct finding once
    auto better = [](const Result& r, const Result* b) {
        if (!b) return true;
        // A result that knows its limit (a path to the GPU, a pipeline against its bound)
        // heads its family before one that does not (a standalone stage, a host copy).
        const bool knows = efficiency_of(r) != nullptr, best_knows = efficiency_of(*b) != nullptr;
        if (knows != best_knows) return knows;
        if (b->metrics[0].info.unit != r.metrics[0].info.unit) return false;
        const bool higher = r.metrics[0].info.better == Better::higher;
        const double x = r.metrics[0].stats.median, y = b->metrics[0].stats.median;
        return higher ? x > y : x < y;
    };
    for (const auto& r : results) {
        if (r.status != Status::ok || r.metrics.empty() || r.metrics[0].stats.n == 0) continue;
        const std::string fam = r.family.empty() ? r.scenario : r.family;
        if (!best.count(fam)) families.push_back(fam);
        if (better(r, best[fam])) best[fam] = &r;
        if (const auto* f = finding_of(r)) {
            auto& distinct = found[fam];
            auto at = std::find_if(distinct.begin(), distinct.end(), [f](const Found& g) { return same_finding(*f, *g.finding); });
            if (at == distinct.end()) at = distinct.insert(distinct.end(), {f, nullptr, 0});
            ++at->results;
            if (better(r, at->best)) at->best = &r;
        }
    }
    for (const auto& fam : families) {
        if (const auto& distinct = found[fam]; !distinct.empty()) {
            const Found* main = &distinct.front();
            for (const auto& g : distinct)
                if (g.results > main->results || (g.results == main->results && better(*g.best, main->best))) main = &g;
            // Its scope is named where the family found something else elsewhere (the others
            // follow their tables).
            std::vector<const nlohmann::json*> all;
            for (const auto& g : distinct) all.push_back(g.finding);
            const std::string scope = distinct.size() > 1 ? scope_words(*main->best, all) : std::string();
            lines.push_back(fmt::format("{:<9} {}{}{}", fam, scope.empty() ? "" : scope + ": ",
                                        (*main->finding)["text"].get<std::string>(),
                                        distinct.size() > 1 ? fmt::format(" ({} more finding{} under the tables)",
                                                                          distinct.size() - 1, distinct.size() == 2 ? "" : "s")
                                                            : std::string()));
            continue;
        }
        const Result& r = *best[fam];
        const auto* eff = efficiency_of(r);
        lines.push_back(fmt::format("{:<9} best {} {}{} ({})", fam, r.metrics[0].info.name,
                                    format_value(r.metrics[0].stats.median, r.metrics[0].info.unit),
                                    eff ? fmt::format(", {:.0f}% of its limit", eff->get<double>() * 100) : "",
                                    short_label(r)));
    }
    // What stands out: pageable against pinned host memory of the same configuration, found
    // through an index of the pinned results by their other axes (linear in the results).
    auto twin_key = [](const Result& r, const std::string& axis) {
        std::string key = r.scenario + '\n' + axis;
        for (const auto& [k, v] : r.params.items())
            if (k != axis) key += '\n' + k + '=' + v;
        return key;
    };
    auto usable = [](const Result& r) {
        return r.status == Status::ok && !r.metrics.empty() && r.metrics[0].info.better == Better::higher;
    };
    std::map<std::string, const Result*> pinned;
    for (const auto& r : results)
        if (usable(r))
            for (const auto& [axis, value] : r.params.items())
                if (value == "pinned") pinned.emplace(twin_key(r, axis), &r);
    double worst_ratio = 0;
    const Result* worst = nullptr;
    for (const auto& r : results) {
        if (!usable(r)) continue;
        for (const auto& [axis, value] : r.params.items()) {
            if (value != "pageable") continue;
            const auto it = pinned.find(twin_key(r, axis));
            if (it == pinned.end()) continue;
            const double ratio = it->second->metrics[0].stats.median / r.metrics[0].stats.median;
            if (std::isfinite(ratio) && ratio > worst_ratio) worst_ratio = ratio, worst = &r;
        }
    }
    if (worst && worst_ratio >= 1.5)
        lines.push_back(fmt::format("! pageable host memory is {:.1f}x slower than pinned ({}): pin it", worst_ratio,
                                    short_label(*worst)));
    std::size_t low = 0;
    const Result* lowest = nullptr;
    for (const auto& r : results) {
        const auto* eff = efficiency_of(r);
        if (r.status != Status::ok || !eff || eff->get<double>() >= 0.8) continue;
        ++low;
        if (!lowest || eff->get<double>() < efficiency_of(*lowest)->get<double>()) lowest = &r;
    }
    if (lowest)
        lines.push_back(fmt::format("! {} result{} below 80% of the path's limit; lowest {:.0f}%: {}", low,
                                    low == 1 ? "" : "s", efficiency_of(*lowest)->get<double>() * 100, short_label(*lowest)));
    // A figure above its limit: the limit, not the figure, is wrong (limits.hpp); said once.
    std::size_t wrong = 0;
    const Result* first_wrong = nullptr;
    for (const auto& r : results)
        if (const auto w = r.details.find("limit_wrong"); w != r.details.end() && w->is_string())
            if (++wrong == 1) first_wrong = &r;
    if (first_wrong)
        lines.push_back(fmt::format("! {} result{} above the declared limit (no efficiency shown): {}{}", wrong,
                                    wrong == 1 ? "" : "s", short_label(*first_wrong),
                                    display_text(": " + first_wrong->details["limit_wrong"].get<std::string>())));
    for (const auto& r : results)
        if (r.status == Status::failed) {
            lines.push_back(fmt::format("! failed: {}: {}", short_label(r), shorten_to(r.reason, 100)));
            if (failed > 1) {
                lines.back() += fmt::format(" (and {} more)", failed - 1);
                break;
            }
        }
    // Skipped, the most frequent reasons first, three at most: the full list ends the tables.
    auto groups = skip_groups(results, false);
    std::stable_sort(groups.begin(), groups.end(), [](const SkipGroup& a, const SkipGroup& b) { return a.count > b.count; });
    for (std::size_t i = 0; i < groups.size() && i < 3; ++i)
        lines.push_back(fmt::format("skipped: {} configuration{} of {} scenario{}: {}", groups[i].count,
                                    groups[i].count == 1 ? "" : "s", groups[i].scenarios.size(),
                                    groups[i].scenarios.size() == 1 ? "" : "s", shorten_to(groups[i].reason, 90)));
    if (groups.size() > 3) {
        std::size_t rest = 0;
        for (std::size_t i = 3; i < groups.size(); ++i) rest += groups[i].count;
        lines.push_back(fmt::format("skipped: {} more configuration{} for {} other reasons (listed at the end)", rest,
                                    rest == 1 ? "" : "s", groups.size() - 3));
    }
    return lines;
}

std::string render_summary(const std::vector<Result>& results, bool md, const TableStyle& style) {
    std::string out = md ? "### Summary\n\n" : "== summary ==\n";
    const bool failed = std::any_of(results.begin(), results.end(), [](const Result& r) { return r.status == Status::failed; });
    const auto lines = summary_lines(results);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& l = lines[i];
        if (md) {
            out += "- " + display_text(l) + "\n";
            continue;
        }
        // A line that does not fit goes on under a hanging indent, so that each summary line
        // starts at the margin. Painted after wrapping, each wrapped line on its own: the escape
        // codes are never counted as columns and never span a line break.
        const bool painted = style.color && ((i == 0 && failed) || l.rfind("! ", 0) == 0);
        const Tone tone = i == 0 || l.rfind("! failed: ", 0) == 0 ? Tone::bad : Tone::unsure;
        const std::string text = wrap(display_text(l), style.width, "    ").substr(2);
        for (std::size_t at = 0; at < text.size();) {
            const std::size_t end = text.find('\n', at), words = text.find_first_not_of(' ', at);
            out += text.substr(at, words - at) + paint(std::string_view(text).substr(words, end - words), tone, painted) + "\n";
            at = end + 1;
        }
    }
    return out;
}

namespace {

// The report's header in a few lines, as `show` opens its tables; each wrapped to `width`.
std::string header_lines(const ReportHeader& h, std::size_t width) {
    std::string out;
    // Report text reaches the terminal through display_text only.
    const auto line = [&out, width](const std::string& text) { out += wrap(display_text(text), width, "", "  "); };
    const auto known = [](const std::string& text, const char* missing) { return text.empty() ? missing : text; };
    line(fmt::format("interopbench {} report, profile {}, {} ({})", known(h.schema_version, "?"),
                     known(h.invocation.profile, "-"), known(h.invocation.started, "?"), known(h.invocation.status, "?")));
    line(fmt::format("host {} ({}, {} CPUs)", known(h.host.hostname, "?"), known(h.host.cpu, "?"), h.host.logical_cpus));
    for (const auto& d : h.devices)
        line(fmt::format("GPU {}: {} {} ({} SMs, {})", d.ordinal, known(d.name, "?"), known(d.pci_bus_id, "?"), d.sm_count,
                         d.memory_bytes ? format_value(static_cast<double>(d.memory_bytes), "B") : std::string("?")));
    // A multi-process report: every rank's host and GPU (the lines above are rank 0's).
    if (h.hosts.size() > 1) {
        std::vector<std::string> ranks;
        for (const auto& r : h.hosts)
            ranks.push_back(fmt::format("{} {}{}", r.rank, known(r.host.hostname, "?"), r.device.empty() ? "" : " " + r.device));
        const std::size_t shown = std::min<std::size_t>(ranks.size(), 8);
        line(fmt::format("{} ranks: {}{}", ranks.size(), fmt::join(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                         ranks.size() > shown ? fmt::format(" and {} more (-f json has them all)", ranks.size() - shown) : ""));
    }
    // What the run ran under, when something limited it (cgroup limits, other processes on a GPU, ...).
    if (h.conditions)
        if (const std::string note = conditions_note(*h.conditions); !note.empty()) line("conditions: " + note);
    for (const auto& w : h.warnings) line("warning: " + w);
    return out;
}

// The scenario catalogue for programs: each scenario whole.
nlohmann::json scenarios_json(const std::vector<const ScenarioInfo*>& scenarios) {
    auto axis_kind = [](AxisKind k) {
        switch (k) {
        case AxisKind::size: return "size";
        case AxisKind::integer: return "integer";
        case AxisKind::choice: return "choice";
        case AxisKind::device: return "device";
        case AxisKind::device_pair: return "device_pair";
        case AxisKind::text: return "text";
        }
        return "choice";
    };
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
    return out;
}

// The scenario catalogue for people: a row per scenario, and with `details` each scenario's
// axes with their defaults, metrics and byte counting; fitted to `width` (0: no limit).
std::string render_scenarios(const std::vector<const ScenarioInfo*>& scenarios, bool md, bool details, std::size_t width) {
    width = md ? 0 : width;
    TableLayout layout;
    layout.width = width;
    layout.markdown = md;
    std::vector<TableColumn> cols{{"scenario", {}}, {"family", {}}, {"gpu", {}}, {"summary", {}, false, true}};
    for (const auto* s : scenarios) {
        cols[0].cells.push_back(s->id);
        cols[1].cells.push_back(s->family);
        cols[2].cells.push_back(s->needs_gpu ? "yes" : "no");
        cols[3].cells.push_back(s->summary);
    }
    std::string out = fit_table(std::move(cols), layout);
    if (!details) {
        out += md ? "\nAxes, defaults and metrics of a scenario: `interopbench list -s NAME`.\n"
                  : "\n" + wrap("axes, defaults and metrics of a scenario: interopbench list -s NAME (globs work: -s 'h2d*')", width, "");
        return out;
    }
    layout.indent = md ? "" : "  ";
    for (const auto* s : scenarios) {
        out += md ? fmt::format("\n### {}\n\n{}\n\n", display_text(s->id), display_text(s->summary))
                : "\n" + wrap(fmt::format("{} {} {}", display_text(s->id), glyph(Glyph::dash), display_text(s->summary)), width, "", "  ");
        const bool any_choices = std::any_of(s->axes.begin(), s->axes.end(), [](const Axis& a) { return !a.choices.empty(); });
        std::vector<TableColumn> axes{{"axis", {}}, {"default", {}, false, true}};
        if (any_choices) axes.push_back({"choices", {}, false, true});
        axes.push_back({"meaning", {}, false, true});
        for (const auto& a : s->axes) {
            axes[0].cells.push_back(a.name);
            axes[1].cells.push_back(a.kind == AxisKind::device        ? "every selected GPU"
                                    : a.kind == AxisKind::device_pair ? "every ordered pair of selected GPUs"
                                                                      : fmt::format("{}", fmt::join(a.defaults, ",")));
            if (any_choices) axes[2].cells.push_back(fmt::format("{}", fmt::join(a.choices, ",")));
            if (!a.choices.empty() && a.defaults == a.choices) axes[1].cells.back() = "every choice";
            axes.back().cells.push_back(a.help);
        }
        if (!s->axes.empty()) out += fit_table(std::move(axes), layout);
        std::vector<TableColumn> metrics{{"metric", {}}, {"unit", {}}, {"better", {}}, {"meaning", {}, false, true}};
        for (const auto& m : s->metrics) {
            metrics[0].cells.push_back(m.name);
            metrics[1].cells.push_back(m.unit);
            metrics[2].cells.push_back(m.better == Better::higher ? "higher" : "lower");
            metrics[3].cells.push_back(m.help);
        }
        if (!s->metrics.empty()) out += (md ? "\n" : "") + fit_table(std::move(metrics), layout);
        if (!s->counting.empty())
            out += md ? "\ncounting: " + display_text(s->counting) + "\n" : wrap("counting: " + display_text(s->counting), width, "  ", "    ");
    }
    return out;
}

} // namespace

std::string render_report(const Format& format, const ReportView& view) {
    return (view.header ? header_lines(view.report.header, format.markdown ? 0 : view.style.width) : std::string{}) +
           render_summary(view.results, format.markdown, view.style) + render_results(view.results, format, view.style);
}

std::string render_report_csv(const Format&, const ReportView& view) {
    std::string out = "scenario,params,status,metric,unit,median,ci_lo,ci_hi,mean,stddev,min,max,n,stop_reason,reason\n";
    auto q = [](const std::string& s) {
        std::string e = "\"";
        for (char c : s) e += c == '"' ? std::string("\"\"") : std::string(1, c);
        return e + "\"";
    };
    for (const auto& r : view.results) {
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

std::string render_report_json(const Format&, const ReportView& view) { return report_document(view.report).dump(2) + "\n"; }

std::string render_listing(const Format& format, const ListView& view) {
    const bool md = format.markdown;
    if (!view.rows.empty()) return render_table(view.rows, md, view.width);
    // One line per scenario, the details when scenarios are named; then, where plugin
    // scenarios are listed, a table of the manifests they come from.
    std::string text = render_scenarios(view.scenarios, md, view.details, view.width);
    std::vector<std::vector<std::string>> plugins{{"plugin scenario", "manifest"}};
    for (std::size_t i = 0; i < view.scenarios.size() && i < view.origins.size(); ++i)
        if (!view.origins[i].empty()) plugins.push_back({view.scenarios[i]->id, view.origins[i]});
    if (plugins.size() > 1) {
        text += '\n'; // appended apart: GCC 12 warns falsely (-Wrestrict) on "\n" + string here
        text += render_table(plugins, md, view.width);
    }
    return text;
}

std::string render_listing_csv(const Format&, const ListView& view) {
    if (!view.rows.empty()) return render_table(view.rows); // profiles and families: their table
    std::string out = "id,family,needs_gpu,summary\n";
    for (const auto* s : view.scenarios)
        out += fmt::format("{},{},{},\"{}\"\n", s->id, s->family, s->needs_gpu ? "yes" : "no", s->summary);
    return out;
}

std::string render_listing_json(const Format&, const ListView& view) {
    if (!view.rows.empty()) return view.doc.dump(2) + "\n";
    // Each plugin scenario with an "origin": the manifest it comes from.
    nlohmann::json doc = scenarios_json(view.scenarios);
    for (std::size_t i = 0; i < view.scenarios.size() && i < view.origins.size(); ++i)
        if (!view.origins[i].empty()) doc[i]["origin"] = view.origins[i];
    return doc.dump(2) + "\n";
}

} // namespace interopbench
