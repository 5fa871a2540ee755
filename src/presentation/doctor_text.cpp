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

std::string render_checks(const Format& format, const ChecksView& view) {
    const std::vector<CheckResult>& results = view.checks;
    std::string out;
    if (format.markdown) {
        const auto t = [](const std::string& s) { return display_text(s); }; // machine facts reach the page escaped
        out += "| status | check | subject | evidence | fix |\n|---|---|---|---|---|\n";
        for (const CheckResult& r : results)
            out += fmt::format("| {} | {} | {} | {} | {} |\n", to_string(r.status), t(r.id), t(r.subject), t(r.evidence),
                               t(r.fix));
    } else {
        // A row per check, its fix on a row of its own under the evidence; the evidence and
        // the fix wrap under their column.
        std::vector<TableColumn> cols{{"status", {}}, {"check", {}}, {"subject", {}}, {"evidence", {}, false, true}};
        const auto row = [&cols](const std::string& status, const std::string& id, const std::string& subject,
                                 const std::string& text) {
            cols[0].cells.push_back(status);
            cols[1].cells.push_back(id);
            cols[2].cells.push_back(subject);
            cols[3].cells.push_back(text);
        };
        for (const CheckResult& r : results) {
            row(to_string(r.status), r.id, r.subject, r.evidence);
            if (!r.fix.empty() && r.status != CheckStatus::pass)
                row("", "", "", fmt::format("{}: {}", r.status == CheckStatus::info ? "advice" : "fix", r.fix));
        }
        TableLayout layout;
        layout.width = view.width;
        layout.header = false;
        out += fit_table(std::move(cols), layout);
    }
    auto n = counts(results);
    out += fmt::format("\n{} FAIL, {} WARN, {} PASS, {} SKIP{}\n", n[CheckStatus::fail], n[CheckStatus::warn],
                       n[CheckStatus::pass], n[CheckStatus::skip],
                       n[CheckStatus::info] ? fmt::format(", {} INFO", n[CheckStatus::info]) : "");
    return out;
}

std::string render_checks_json(const Format&, const ChecksView& view) {
    return checks_json(view.checks).dump(2) + "\n";
}

} // namespace interopbench
