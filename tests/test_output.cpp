// Output a person reads: tables that fit, constant axes said once, one uncertainty column,
// notes in words, the summary first, skipped scenarios in one line per reason, and the
// comparison's one-line verdict with regressions listed first.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "interopbench/compare.hpp"
#include "presentation/output.hpp"
#include "interopbench/report.hpp"
#include "presentation/comparison.hpp"
#include "presentation/formats.hpp"

using namespace interopbench;

namespace {

const Format& table() { return find_format("table", Command::show); }

std::string comparison_table(const CompareOutcome& o) {
    const std::vector<Result> none;
    return find_format("table", Command::compare).render(ComparisonView{o, none});
}

MetricResult metric(const std::string& name, const std::string& unit, Better better, std::vector<double> samples,
                    std::vector<double> rounds = {}) {
    MetricResult m;
    m.info = {name, unit, better, ""};
    m.samples = samples;
    m.stats = compute_stats(samples);
    m.round_medians = std::move(rounds);
    return m;
}

Result result(const std::string& scenario, std::vector<std::pair<std::string, std::string>> params, double value,
              Status status = Status::ok, const std::string& reason = "") {
    Result r;
    r.scenario = scenario;
    r.family = "copy";
    r.params = Params(params);
    r.key = scenario + "/" + r.params.canonical();
    r.status = status;
    r.reason = reason;
    r.stop_reason = status == Status::ok ? "converged" : "";
    if (status == Status::ok) {
        r.metrics.push_back(metric("bandwidth", "B/s", Better::higher, {value, value * 1.01, value * 0.99, value}));
        r.metrics.push_back(metric("time", "s", Better::lower, {1e-3, 1e-3, 1e-3, 1e-3}));
        r.metrics.push_back(metric("some_long_secondary_metric_name", "B", Better::lower, {1, 1, 1, 1}));
        r.metrics.push_back(metric("another_long_secondary_metric_name", "B", Better::lower, {1, 1, 1, 1}));
    }
    return r;
}

std::size_t widest_line(const std::string& text) {
    std::istringstream in(text);
    std::size_t w = 0;
    for (std::string line; std::getline(in, line);) w = std::max(w, line.size());
    return w;
}

} // namespace

TEST_CASE("values have three significant digits") {
    CHECK(format_value(55.41e9, "B/s") == "55.4 GB/s");
    CHECK(format_value(5.416e9, "B/s") == "5.42 GB/s");
    CHECK(format_value(478.116e9, "B/s") == "478 GB/s");
    CHECK(format_value(1.31e12, "B/s") == "1.31 TB/s");
    CHECK(format_value(0.281013, "s") == "281 ms");
    CHECK(format_value(23.2e-6, "s") == "23.2 us");
    CHECK(format_value(0.9999e9, "B/s") == "1.00 GB/s"); // never "1000 MB/s"
}

TEST_CASE("a table fits its width: constant axes above it, secondary metrics left out and named") {
    std::vector<Result> rs;
    for (const char* mem : {"pageable", "pinned"})
        for (const char* size : {"1048576", "67108864"})
            rs.push_back(result("h2d_copy", {{"size", size}, {"host_mem", mem}, {"engine", "ce"}, {"device", "0"}},
                                std::string(mem) == "pinned" ? 50e9 : 7e9));
    TableStyle narrow;
    narrow.width = 80;
    const std::string t = render_results(rs, table(), narrow);
    CAPTURE(t);
    CHECK(widest_line(t) <= 80);
    CHECK(t.find("engine ce, device 0") != std::string::npos); // said once
    CHECK(t.find("64MiB") != std::string::npos);               // sizes for people
    CHECK(t.find("67108864") == std::string::npos);
    CHECK(t.find("not shown to fit 80 columns") != std::string::npos);
    CHECK(t.find("another_long_secondary_metric_name") != std::string::npos); // named below the table
    TableStyle all = narrow;
    all.all_metrics = true;
    const std::string wide = render_results(rs, table(), all);
    CHECK(wide.find("not shown") == std::string::npos);
    TableStyle unlimited;
    unlimited.width = 0;
    CHECK(render_results(rs, table(), unlimited).find("not shown") == std::string::npos);
}

TEST_CASE("the uncertainty is the larger of the interval and the spread between rounds, and says which") {
    MetricResult steady = metric("bandwidth", "B/s", Better::higher, {10, 10.1, 9.9, 10, 10}, {10, 10.02, 9.98});
    CHECK(std::string(uncertainty(steady).source) == "ci");
    MetricResult between = metric("bandwidth", "B/s", Better::higher, {10, 10.1, 9.9, 10, 10}, {10, 13, 9});
    const Uncertainty u = uncertainty(between);
    CHECK(std::string(u.source) == "rounds");
    CHECK(u.relative == doctest::Approx(relative_range({10, 13, 9}) / 2));
}

TEST_CASE("notes are plain words, and a note every row shares is said once") {
    std::vector<Result> rs{result("h2d_copy", {{"size", "1048576"}}, 1e9), result("h2d_copy", {{"size", "2097152"}}, 2e9)};
    for (auto& r : rs) r.stop_reason = "time_budget";
    const std::string t = render_results(rs, table());
    CHECK(t.find("time_budget") == std::string::npos);
    CHECK(t.find("all: not converged: time limit") != std::string::npos);
    rs[0].metrics[0].round_medians = {1e9, 1.5e9, 1e9};
    TableStyle unlimited; // the note on one line, as the check reads it
    unlimited.width = 0;
    const std::string noisy = render_results(rs, table(), unlimited);
    CHECK(noisy.find("varies 50% between runs") != std::string::npos);
}

TEST_CASE("scenarios skipped for one reason are one line, not a section each, and the summary says so") {
    std::vector<Result> rs;
    for (const char* s : {"h2d_copy", "d2h_copy", "peer_copy"})
        for (const char* size : {"1024", "2048"})
            rs.push_back(result(s, {{"size", size}}, 0, Status::skipped, "no NVIDIA driver"));
    rs.push_back(result("host_memcpy", {{"size", "1024"}}, 3e9));
    const std::string t = render_results(rs, table());
    CAPTURE(t);
    CHECK(t.find("== h2d_copy ==") == std::string::npos);
    CHECK(t.find("6 configurations of 3 scenarios skipped: no NVIDIA driver") != std::string::npos);
    const auto lines = summary_lines(rs);
    REQUIRE(!lines.empty());
    CHECK(lines[0] == "7 results: 1 ok, 6 skipped");
    CHECK(std::any_of(lines.begin(), lines.end(),
                      [](const std::string& l) { return l == "skipped: 6 configurations of 3 scenarios: no NVIDIA driver"; }));
}

TEST_CASE("the summary names what stands out: pageable far slower than pinned, results below their limit") {
    std::vector<Result> rs{result("h2d_copy", {{"size", "1048576"}, {"host_mem", "pageable"}}, 7e9),
                           result("h2d_copy", {{"size", "1048576"}, {"host_mem", "pinned"}}, 49e9)};
    rs[0].details["efficiency"] = 0.11;
    rs[1].details["efficiency"] = 0.78;
    const auto lines = summary_lines(rs);
    auto has = [&](const std::string& words) {
        return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(words) != std::string::npos; });
    };
    CHECK(has("copy      best bandwidth 49.0 GB/s, 78% of its limit"));
    CHECK(has("! pageable host memory is 7.0x slower than pinned"));
    CHECK(has("! 2 results below 80% of the path's limit; lowest 11%"));
    const std::string t = render_results(rs, table());
    CHECK(t.find("of limit") != std::string::npos);
    CHECK(t.find("78%") != std::string::npos);
}

TEST_CASE("a comparison opens with its verdict in one line, regressions listed first") {
    const std::string dir = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/";
    CompareOptions opt;
    opt.base_label = "base.json";
    opt.new_label = "regression.json";
    const auto o = compare_reports(read_report(dir + "base.json"), read_report(dir + "regression.json"), opt);
    const std::string line = verdict_line(o);
    CAPTURE(line);
    CHECK(line.rfind("FAIL: ", 0) == 0);
    CHECK(line.find(fmt::format("of {} results", o.results.size())) != std::string::npos);
    const std::string text = comparison_table(o);
    CHECK(text.rfind(line + "\n", 0) == 0);
    const auto changed = text.find("Changed, uncertain");
    REQUIRE(changed != std::string::npos);
    const auto first_row = text.find('\n', text.find("---", changed)) + 1;
    CHECK(text.compare(first_row, 10, "regression") == 0);
    // A report against itself: no regression. Half its results straddle the 5% threshold (its
    // samples are few), which makes the pass weak; at 50% none do.
    const auto self = compare_reports(read_report(dir + "base.json"), read_report(dir + "base.json"), opt);
    CHECK(verdict_line(self).rfind("PASS (weak: 4 of 8 inconclusive): ", 0) == 0);
    CompareOptions loose = opt;
    add_threshold(loose, "50%");
    CHECK(verdict_line(compare_reports(read_report(dir + "base.json"), read_report(dir + "base.json"), loose)).rfind("PASS: ", 0) == 0);
}

TEST_CASE("reports with no result in common are a usage error, not a pass") {
    const std::string dir = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/";
    auto other = read_report(dir + "base.json");
    for (auto& r : other.results) {
        r.scenario = "host_memcpy_renamed";
        r.key = "host_memcpy_renamed/" + r.key.substr(r.key.find('/') + 1);
    }
    CompareOptions opt;
    CHECK_THROWS_AS(compare_reports(read_report(dir + "base.json"), other, opt), UsageError);
    // A new report that lost every result is a failing gate (missing), not a usage error.
    auto empty = read_report(dir + "base.json");
    empty.results.clear();
    const auto lost = compare_reports(read_report(dir + "base.json"), empty, opt);
    CHECK(compare_exit_code(lost, false) == ExitCode::failed);
}

TEST_CASE("a comparison states its power at the threshold in use: how many results can see twice it") {
    const std::string dir = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/";
    CompareOptions opt;
    const auto base = read_report(dir + "base.json");
    const auto self = compare_reports(base, base, opt);
    CHECK(self.in_both == self.results.size());
    CHECK(self.sensitive <= self.in_both);
    const std::string line = power_line(self);
    CHECK(line == fmt::format("power: {} of {} results measured in both reports can see a 10% change (twice the 5% "
                              "threshold)",
                              self.sensitive, self.in_both));
    CHECK(comparison_table(self).find(line) != std::string::npos);
    CHECK(comparison_table(self).find("can see 10%") != std::string::npos);
    CHECK(comparison_json(self)["summary"]["power"]["change"].get<double>() == doctest::Approx(0.10));
    // Another threshold, another change: the power follows the threshold the gate uses, and a
    // wider threshold is seen by at least as many results (each one's detectable change is its
    // threshold plus its interval).
    CompareOptions wide = opt;
    add_threshold(wide, "10%");
    const auto loose = compare_reports(base, base, wide);
    CHECK(power_line(loose) == fmt::format("power: {} of {} results measured in both reports can see a 20% change (twice "
                                           "the 10% threshold)",
                                           loose.sensitive, loose.in_both));
    CHECK(loose.sensitive >= self.sensitive);
    CHECK(comparison_table(loose).find("can see 20%") != std::string::npos);
    CHECK(comparison_json(loose)["summary"]["power"]["change"].get<double>() == doctest::Approx(0.20));
    // A change of the threshold's own size is seen by no result: the whole interval must lie
    // beyond the threshold, so each detectable change exceeds it.
    for (const auto& r : self.results)
        if (const auto* m = shown_metric(r)) CHECK(m->detectable >= m->threshold);
    // A result of too few samples sees nothing: one fewer can see the change.
    auto thin = base;
    auto& samples = thin.results[0].metrics[0].samples;
    REQUIRE(samples.size() > 2);
    samples.resize(2);
    const auto fewer = compare_reports(base, thin, opt);
    CHECK(fewer.in_both == self.in_both);
    if (self.sensitive > 0) CHECK(fewer.sensitive <= self.sensitive);
    std::size_t family_sum = 0;
    for (const auto& f : fewer.families) family_sum += f.sensitive;
    CHECK(family_sum == fewer.sensitive);
}

TEST_CASE("a pass with many inconclusive results says it is weak, the exit code stays the same") {
    const std::string dir = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/";
    CompareOptions opt;
    // Two quick runs of one build on an H200: most results move more than their rounds allow.
    const auto o = compare_reports(read_report(dir + "rounds/h200x1-quick-0.json"), read_report(dir + "rounds/h200x1-quick-1.json"), opt);
    REQUIRE(o.count(Verdict::regression) == 0);
    const std::size_t unsure = o.count(Verdict::inconclusive);
    REQUIRE(4 * unsure >= o.results.size());
    CHECK(weak_pass(o));
    const std::string line = verdict_line(o);
    CAPTURE(line);
    CHECK(line.rfind(fmt::format("PASS (weak: {} of {} inconclusive): ", unsure, o.results.size()), 0) == 0);
    CHECK(comparison_table(o).rfind(line + "\n", 0) == 0);
    CHECK(comparison_json(o)["summary"]["weak"] == true);
    CHECK(compare_exit_code(o, false) == ExitCode::ok);
    CHECK(compare_exit_code(o, true) == ExitCode::inconclusive);
    // Fewer than a quarter inconclusive (a report against itself at a 20% threshold: one of
    // eight): a plain PASS.
    CompareOptions wider = opt;
    add_threshold(wider, "20%");
    const auto self = compare_reports(read_report(dir + "base.json"), read_report(dir + "base.json"), wider);
    REQUIRE(self.count(Verdict::inconclusive) == 1);
    CHECK_FALSE(weak_pass(self));
    CHECK(verdict_line(self).rfind("PASS: ", 0) == 0);
    CHECK(comparison_json(self)["summary"]["weak"] == false);
    // A failing gate is never weak: FAIL says it all.
    const auto failed = compare_reports(read_report(dir + "base.json"), read_report(dir + "regression.json"), opt);
    CHECK_FALSE(weak_pass(failed));
    CHECK(verdict_line(failed).rfind("FAIL: ", 0) == 0);
}

TEST_CASE("verdicts are painted for a terminal only: FAIL red, PASS green, a weak PASS yellow, markdown never") {
    const std::string dir = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/";
    CompareOptions opt;
    const auto failed = compare_reports(read_report(dir + "base.json"), read_report(dir + "regression.json"), opt);
    const auto weak = compare_reports(read_report(dir + "rounds/h200x1-quick-0.json"), read_report(dir + "rounds/h200x1-quick-1.json"), opt);
    CHECK(verdict_line(failed, true).rfind("\x1b[31mFAIL\x1b[0m: ", 0) == 0);
    CHECK(verdict_line(weak, true).rfind("\x1b[33mPASS (weak: ", 0) == 0);
    CHECK(verdict_line(failed).find('\x1b') == std::string::npos);
    const std::vector<Result> none;
    const auto render = [&](const char* format, const CompareOutcome& o, bool color) {
        return find_format(format, Command::compare).render(ComparisonView{o, none, CiMetrics::primary, color});
    };
    CHECK(render("table", failed, true).rfind("\x1b[31mFAIL\x1b[0m: ", 0) == 0);
    CHECK(render("table", failed, false).find('\x1b') == std::string::npos);
    for (const char* format : {"markdown", "json", "junit", "html"}) {
        CAPTURE(format);
        CHECK(render(format, failed, true).find('\x1b') == std::string::npos);
    }
    CompareOptions loose = opt;
    add_threshold(loose, "50%");
    const auto pass = compare_reports(read_report(dir + "base.json"), read_report(dir + "base.json"), loose);
    REQUIRE_FALSE(weak_pass(pass));
    CHECK(verdict_line(pass, true).rfind("\x1b[32mPASS\x1b[0m: ", 0) == 0);

    // The summary: "! " lines yellow, failures red, each wrapped line painted on its own, so
    // that the text and its line breaks are those of the plain summary.
    std::vector<Result> rs{result("h2d_copy", {{"size", "1048576"}, {"host_mem", "pageable"}}, 7e9),
                           result("h2d_copy", {{"size", "1048576"}, {"host_mem", "pinned"}}, 49e9),
                           result("h2d_copy", {{"size", "2097152"}, {"host_mem", "pinned"}}, 0, Status::failed,
                                  "a reason long enough to be wrapped over more than one line of a narrow terminal")};
    rs[0].details["efficiency"] = 0.11;
    TableStyle style;
    style.width = 50;
    const std::string plain = render_summary(rs, false, style);
    style.color = true;
    const std::string painted = render_summary(rs, false, style);
    CAPTURE(painted);
    CHECK(plain.find('\x1b') == std::string::npos);
    CHECK(painted.find("  \x1b[31m3 results: 2 ok, 1 failed\x1b[0m\n") != std::string::npos);
    CHECK(painted.find("  \x1b[33m! pageable host memory") != std::string::npos);
    CHECK(painted.find("  \x1b[31m! failed: ") != std::string::npos);
    std::string stripped;
    for (std::size_t i = 0; i < painted.size(); ++i) {
        if (painted[i] == '\x1b') {
            i = painted.find('m', i);
            continue;
        }
        stripped += painted[i];
    }
    CHECK(stripped == plain);
    for (std::size_t at = 0; (at = painted.find('\x1b', at)) != std::string::npos; ++at) {
        // Every colour is reset before its line ends.
        const std::size_t reset = painted.find("\x1b[0m", at), eol = painted.find('\n', at);
        CHECK(reset < eol);
        at = reset + 1;
    }
    CHECK(render_summary(rs, true, style).find('\x1b') == std::string::npos);
    CHECK(render_report(find_format("markdown", Command::show), ReportView{Report{}, rs, style}).find('\x1b') == std::string::npos);
    CHECK(render_report(find_format("table", Command::show), ReportView{Report{}, rs, style}).find("\x1b[33m") != std::string::npos);
    for (const char* format : {"json", "csv"})
        CHECK(find_format(format, Command::show).render(ReportView{Report{}, rs, style}).find('\x1b') == std::string::npos);
}

TEST_CASE("a diagnosis several configurations share is said once, naming them once, and a finding once per group") {
    std::vector<Result> rs;
    for (const char* variant : {"naive", "+pool", "tuned"})
        for (const char* cache : {"cold", "warm"}) {
            rs.push_back(result("pipe", {{"variant", variant}, {"cache", cache}, {"batch", "1048576"}}, 1e9));
            rs.back().details["finding"] = {{"scope", {{"cache", cache}, {"batch", "1048576"}}},
                                            {"text", std::string("the finding of ") + cache}};
        }
    rs.push_back(result("pipe", {{"variant", "naive"}, {"cache", "warm"}, {"batch", "65536"}}, 1e9));
    // The same words for naive and +pool, cold and warm (every combination of their values);
    // other words for tuned warm and naive warm 64KiB (not every combination: listed).
    for (std::size_t i = 0; i < 4; ++i) rs[i].details["diagnosis"] = "convert-bound.";
    rs[5].details["diagnosis"] = "read-bound.";
    rs[6].details["diagnosis"] = "read-bound.";
    TableStyle unlimited;
    unlimited.width = 0;
    const std::string text = render_results(rs, table(), unlimited);
    CAPTURE(text);
    CHECK(text.find("  naive/+pool cold/warm 1MiB: convert-bound.\n") != std::string::npos);
    CHECK(text.find("  tuned 1MiB, naive 64KiB; warm: read-bound.\n") != std::string::npos);
    CHECK(text.find("  cold 1MiB: the finding of cold\n") != std::string::npos);
    CHECK(text.find("  warm 1MiB: the finding of warm\n") != std::string::npos);
    CHECK(text.find("convert-bound") == text.rfind("convert-bound"));
    CHECK(text.find("the finding of warm") == text.rfind("the finding of warm"));
    // Findings come before the configurations' own diagnoses.
    CHECK(text.find("the finding of warm") < text.find("convert-bound"));
    const std::string md = render_results(rs, find_format("markdown", Command::show), unlimited);
    CHECK(md.find("- `naive/+pool cold/warm 1MiB`: convert-bound.") != std::string::npos);
    // Every row of the table: "all".
    for (auto& r : rs) r.details["diagnosis"] = "the same.";
    CHECK(render_results(rs, table(), unlimited).find("  all: the same.\n") != std::string::npos);
    // The summary states the finding of the most configurations (here a tie: the better
    // figure's), naming its group where there are others.
    rs[3].metrics[0] = metric("bandwidth", "B/s", Better::higher, {2e9, 2e9, 2e9, 2e9});
    const auto lines = summary_lines(rs);
    CHECK(std::find(lines.begin(), lines.end(), "copy      warm: the finding of warm (1 more finding under the tables)") !=
          lines.end());
}

TEST_CASE("a configuration that moved no bytes shows no bandwidth, and the table says why once") {
    std::vector<Result> rs{result("handoff", {{"path", "dlpack"}}, 2e14), result("handoff", {{"path", "deep_copy"}}, 2e12)};
    rs[0].details = {{"pointer_shared", true}};
    TableStyle unlimited;
    unlimited.width = 0;
    const std::string t = render_results(rs, table(), unlimited);
    CHECK(t.find("200 TB/s") == std::string::npos); // a size over a pointer exchange's time is no rate
    CHECK(t.find("2.00 TB/s") != std::string::npos);
    CHECK(t.find("bandwidth -: the configuration moved no bytes (zero-copy)") != std::string::npos);
    // A count of bytes copied that is 0 says the same.
    rs[0].details = {{"copied", 0}};
    CHECK(render_results(rs, table(), unlimited).find("200 TB/s") == std::string::npos);
    rs[0].details = nlohmann::json::object();
    CHECK(render_results(rs, table(), unlimited).find("200 TB/s") != std::string::npos);
}
