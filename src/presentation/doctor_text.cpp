// The doctor's results for people and programs.
#include "presentation/doctor_text.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "interopbench/text.hpp"
#include "presentation/formats.hpp"
#include "presentation/output.hpp"

namespace interopbench {

namespace {
std::map<CheckStatus, int> counts(const std::vector<CheckResult>& results) {
    std::map<CheckStatus, int> n{{CheckStatus::pass, 0}, {CheckStatus::warn, 0}, {CheckStatus::fail, 0},
                                 {CheckStatus::skip, 0}, {CheckStatus::info, 0}};
    for (const CheckResult& r : results)
        ++n[r.status];
    return n;
}
} // namespace

nlohmann::json checks_json(const std::vector<CheckResult>& results) {
    nlohmann::json checks = nlohmann::json::array();
    for (const CheckResult& r : results)
        checks.push_back({{"id", r.id}, {"subject", r.subject}, {"status", to_string(r.status)},
                          {"evidence", r.evidence}, {"fix", r.fix}});
    auto n = counts(results);
    return {{"checks", checks},
            {"summary", {{"pass", n[CheckStatus::pass]}, {"warn", n[CheckStatus::warn]},
                         {"fail", n[CheckStatus::fail]}, {"skip", n[CheckStatus::skip]}, {"info", n[CheckStatus::info]}}},
            {"failed", any_failed(results)}};
}

std::string render_checks(const Format& format, const std::vector<CheckResult>& results) {
    std::string out;
    const bool markdown = format.markdown;
    const auto t = [](const std::string& s) { return display_text(s); }; // machine facts reach the terminal escaped
    if (markdown) {
        out += "| status | check | subject | evidence | fix |\n|---|---|---|---|---|\n";
        for (const CheckResult& r : results)
            out += fmt::format("| {} | {} | {} | {} | {} |\n", to_string(r.status), t(r.id), t(r.subject), t(r.evidence),
                               t(r.fix));
    } else {
        std::size_t id_w = 5, subject_w = 7;
        for (const CheckResult& r : results) {
            id_w = std::max(id_w, r.id.size());
            subject_w = std::max(subject_w, r.subject.size());
        }
        // Evidence and fix wrapped under their column to the terminal's width.
        const std::size_t indent = id_w + subject_w + 10, width = terminal_width();
        const auto wrapped = [&](const std::string& text) {
            std::string w = wrap(text, width > indent + 30 ? width : 0, std::string(indent, ' '));
            w.erase(0, indent); // the first line goes on the check's row
            w.pop_back();       // and the row ends it
            return w;
        };
        for (const CheckResult& r : results) {
            out += fmt::format("{}  {:<{}}  {:<{}}  {}\n", to_string(r.status), t(r.id), id_w, t(r.subject), subject_w,
                               wrapped(t(r.evidence)));
            if (!r.fix.empty() && r.status != CheckStatus::pass)
                out += fmt::format("{:<{}}{}\n", "", indent,
                                   wrapped(fmt::format("{}: {}", r.status == CheckStatus::info ? "advice" : "fix", t(r.fix))));
        }
    }
    auto n = counts(results);
    out += fmt::format("\n{} FAIL, {} WARN, {} PASS, {} SKIP{}\n", n[CheckStatus::fail], n[CheckStatus::warn],
                       n[CheckStatus::pass], n[CheckStatus::skip],
                       n[CheckStatus::info] ? fmt::format(", {} INFO", n[CheckStatus::info]) : "");
    return out;
}

std::string render_checks_json(const Format&, const std::vector<CheckResult>& results) {
    return checks_json(results).dump(2) + "\n";
}

} // namespace interopbench
