// The formats CI systems read (ci_formats.hpp), checked against each consumer's published
// field rules, on the recorded reports of tests/data/reports; and their command-line wiring
// through the real binary.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "presentation/ci_formats.hpp"
#include "presentation/formats.hpp"
#include "interopbench/compare.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/report.hpp"
#include "test_support.hpp"

using namespace interopbench;
using nlohmann::json;

namespace {

const std::string k_dir = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/";
const std::string k_regressed = "host_memcpy/size=262144,threads=multi";

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (s == n) return true;
    return false;
}

std::vector<Result> results_of(const std::string& name) { return read_report(k_dir + name).results; }

MetricResult metric(const std::string& name, const std::string& unit, Better better, double median, std::size_t n = 10) {
    MetricResult m;
    m.info = {name, unit, better, ""};
    m.stats.n = n;
    m.stats.median = median;
    m.stats.median_ci_lo = median * 0.99;
    m.stats.median_ci_hi = median * 1.01;
    return m;
}

Result result(const std::string& key, Status status, std::vector<MetricResult> metrics) {
    Result r;
    r.key = key;
    r.scenario = key.substr(0, key.find('/'));
    r.status = status;
    r.stop_reason = "converged";
    r.metrics = std::move(metrics);
    return r;
}

// ---- github-action-benchmark: an array of {name: string, unit: string, value: number,
// range?: string, extra?: string}, nothing else.
void check_benchmark_action(const std::string& text, Better direction, const std::vector<Result>& results) {
    const json doc = json::parse(text);
    REQUIRE(doc.is_array());
    std::set<std::string> names;
    for (const auto& e : doc) {
        CAPTURE(e.dump());
        REQUIRE(e.is_object());
        for (const auto& item : e.items()) CHECK(one_of(item.key(), {"name", "unit", "value", "range", "extra"}));
        REQUIRE(e["name"].is_string());
        CHECK(e["unit"].is_string());
        CHECK(e["value"].is_number());
        CHECK(std::isfinite(e["value"].get<double>()));
        if (e.contains("range")) {
            REQUIRE(e["range"].is_string());
            CHECK(e["range"].get<std::string>().rfind("\u00b1 ", 0) == 0);
        }
        if (e.contains("extra")) CHECK(e["extra"].is_string());
        CHECK(names.insert(e["name"].get<std::string>()).second); // one entry per name
        // Only the file's direction: the named metric of the named result.
        const std::string name = e["name"];
        bool found = false;
        for (const auto& r : results)
            for (const auto& m : r.metrics)
                if (r.key + " " + m.info.name == name) {
                    found = true;
                    CHECK(m.info.better == direction);
                    CHECK(m.info.unit == e["unit"].get<std::string>());
                    CHECK(m.stats.median == e["value"].get<double>());
                }
        CHECK(found);
    }
}

// ---- Bencher Metric Format: {benchmark: {measure: {value, lower_value?, upper_value?}}},
// numbers, the interval around the value; measures as slugs of at most 64 characters.
void check_bmf(const std::string& text) {
    const json doc = json::parse(text);
    REQUIRE(doc.is_object());
    const std::regex slug("[a-z0-9]+(-[a-z0-9]+)*");
    for (const auto& [bench, measures] : doc.items()) {
        CAPTURE(bench);
        CHECK(!bench.empty());
        CHECK(bench.size() <= 1024);
        REQUIRE(measures.is_object());
        CHECK(!measures.empty());
        for (const auto& [measure, m] : measures.items()) {
            CAPTURE(measure);
            CHECK(std::regex_match(measure, slug));
            CHECK(measure.size() <= 64);
            CHECK(measure != "latency"); // Bencher's built-in latency is in nanoseconds
            REQUIRE(m.is_object());
            for (const auto& item : m.items()) {
                CHECK(one_of(item.key(), {"value", "lower_value", "upper_value"}));
                CHECK(item.value().is_number());
            }
            REQUIRE(m.contains("value"));
            CHECK(m.contains("lower_value") == m.contains("upper_value"));
            if (m.contains("lower_value")) {
                CHECK(m["lower_value"].get<double>() <= m["value"].get<double>());
                CHECK(m["value"].get<double>() <= m["upper_value"].get<double>());
            }
        }
    }
}

// ---- OpenMetrics text: metadata before samples, families not interleaved, names and labels
// by the grammar, label values escaped, "# EOF" the last line.
struct Sample {
    std::string name;
    std::vector<std::pair<std::string, std::string>> labels; // unescaped values
    double value = 0;
};

// Parses `name{a="x",b="y"} value` by the OpenMetrics grammar; false with `why` otherwise.
bool parse_sample(const std::string& line, Sample& s, std::string& why) {
    static const std::regex name_re("[a-zA-Z_:][a-zA-Z0-9_:]*");
    static const std::regex label_re("[a-zA-Z_][a-zA-Z0-9_]*");
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (!std::regex_match(s.name, name_re)) return why = "bad metric name '" + s.name + "'", false;
    if (i < line.size() && line[i] == '{') {
        ++i;
        while (i < line.size() && line[i] != '}') {
            const std::size_t eq = line.find('=', i);
            if (eq == std::string::npos) return why = "label without '='", false;
            const std::string lname = line.substr(i, eq - i);
            if (!std::regex_match(lname, label_re)) return why = "bad label name '" + lname + "'", false;
            i = eq + 1;
            if (i >= line.size() || line[i] != '"') return why = "label value not quoted", false;
            ++i;
            std::string value;
            for (;; ++i) {
                if (i >= line.size()) return why = "unterminated label value", false;
                if (line[i] == '"') break;
                if (line[i] == '\\') {
                    if (i + 1 >= line.size()) return why = "dangling backslash", false;
                    const char c = line[++i];
                    if (c == '\\') value += '\\';
                    else if (c == '"') value += '"';
                    else if (c == 'n') value += '\n';
                    else return why = std::string("bad escape \\") + c, false;
                } else {
                    value += line[i];
                }
            }
            ++i; // closing quote
            s.labels.emplace_back(lname, value);
            if (i < line.size() && line[i] == ',') ++i;
        }
        if (i >= line.size()) return why = "labels not closed", false;
        ++i; // '}'
    }
    if (i >= line.size() || line[i] != ' ') return why = "no space before the value", false;
    const std::string value = line.substr(i + 1);
    char* end = nullptr;
    s.value = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0') return why = "bad value '" + value + "'", false;
    return true;
}

std::vector<Sample> check_openmetrics(const std::string& text) {
    REQUIRE(!text.empty());
    REQUIRE(text.back() == '\n');
    std::vector<std::string> lines;
    for (std::size_t p = 0; p < text.size();) {
        const std::size_t nl = text.find('\n', p);
        lines.push_back(text.substr(p, nl - p));
        p = nl + 1;
    }
    CHECK(lines.back() == "# EOF");
    std::set<std::string> typed, closed;
    std::string current;
    std::vector<Sample> samples;
    for (std::size_t n = 0; n + 1 < lines.size(); ++n) {
        const std::string& line = lines[n];
        CAPTURE(line);
        CHECK(!line.empty());
        CHECK(line != "# EOF");
        if (line.rfind("# ", 0) == 0) {
            std::istringstream in(line.substr(2));
            std::string kind, name, rest;
            in >> kind >> name;
            std::getline(in, rest);
            CHECK((kind == "TYPE" || kind == "UNIT" || kind == "HELP"));
            if (kind == "TYPE") {
                CHECK(rest == " gauge");
                CHECK(typed.insert(name).second); // one TYPE per family
                if (!current.empty()) closed.insert(current);
                current = name;
            } else {
                CHECK(name == current); // metadata of the family being written
            }
            if (kind == "UNIT") CHECK(name.ends_with("_" + rest.substr(1)));
            if (kind == "HELP") CHECK(rest.find('\n') == std::string::npos);
            continue;
        }
        Sample s;
        std::string why;
        CHECK_MESSAGE(parse_sample(line, s, why), why);
        CHECK(s.name == current);            // after its family's TYPE line
        CHECK(closed.count(s.name) == 0);    // families are not interleaved
        CHECK(std::isfinite(s.value));
        samples.push_back(std::move(s));
    }
    return samples;
}

std::string label(const Sample& s, const std::string& name) {
    for (const auto& [k, v] : s.labels)
        if (k == name) return v;
    return {};
}

// The names a format gives its figures (what the CI system keys its history on).
std::set<std::string> names_of(const std::string& text, std::string_view format) {
    const CiSystem system = find_format(format, Command::export_file).ci_system;
    std::set<std::string> out;
    if (system == CiSystem::openmetrics) {
        for (const auto& s : check_openmetrics(text)) {
            std::string id = s.name;
            for (const auto& [k, v] : s.labels) id += "," + k + "=" + v;
            out.insert(id);
        }
    } else if (system == CiSystem::bmf) {
        const json doc = json::parse(text); // items() of a temporary would dangle
        for (const auto& [bench, measures] : doc.items())
            for (const auto& [measure, m] : measures.items()) out.insert(bench + "|" + measure);
    } else {
        for (const auto& e : json::parse(text)) out.insert(e["name"].get<std::string>());
    }
    return out;
}

constexpr std::string_view k_all_formats[] = {"benchmark-action-bigger", "benchmark-action-smaller", "bmf", "openmetrics"};

// Results, and a comparison, in the CI format `format`, through its row of the format table.
std::string ci(std::string_view format, const std::vector<Result>& results, CiMetrics metrics = CiMetrics::primary) {
    static const Report no_report;
    return find_format(format, Command::export_file).render(ReportView{no_report, results, {}, metrics});
}
std::string ci(std::string_view format, const CompareOutcome& outcome, const std::vector<Result>& fresh,
               CiMetrics metrics = CiMetrics::primary) {
    return find_format(format, Command::export_file).render(ComparisonView{outcome, fresh, metrics});
}

using Cli = interopbench::testing::CliRun;

/// The binary with `args`.
Cli cli(const std::string& args) { return interopbench::testing::run_cli(args); }

std::size_t lines_in(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

void expect_usage_error(const std::string& args, const std::string& words) {
    CAPTURE(args);
    const Cli r = cli(args);
    CHECK(r.code == 2);
    CAPTURE(r.err);
    CHECK(r.err.rfind("error: ", 0) == 0);
    CHECK(r.err.find(words) != std::string::npos);
    CHECK(lines_in(r.err) <= 2); // the error and its hint
    CHECK(r.out.empty());
}

} // namespace

TEST_SUITE("export") {

TEST_CASE("export: CI format names, --export values and metric selections parse / bad ones are usage errors") {
    // The CI formats are the rows of the format table that --export accepts.
    CHECK(format_names(Command::export_file) == "benchmark-action-bigger, benchmark-action-smaller, bmf, openmetrics");
    for (const Format& f : formats())
        if (f.ci()) CHECK((f.report != nullptr && f.comparison != nullptr && f.accepts(Command::show) && f.accepts(Command::compare)));
    CHECK_THROWS_AS(parse_ci_export("json=x.json"), UsageError);
    CHECK_THROWS_AS(parse_ci_export("BMF=x.json"), UsageError);
    const auto e = parse_ci_export("openmetrics=out/metrics.txt");
    REQUIRE(e.format);
    CHECK(e.format->name == "openmetrics");
    CHECK(e.path == "out/metrics.txt");
    CHECK(parse_ci_export("bmf=a=b.json").path == "a=b.json"); // the first '=' splits
    for (const char* bad : {"bmf", "=x.json", "bmf="}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_ci_export(bad), UsageError);
        try {
            parse_ci_export(bad);
        } catch (const UsageError& err) {
            CHECK(std::string(err.hint()).find("FORMAT=PATH") != std::string::npos);
        }
    }
    for (const char* bad : {"xml=x.json", "bencher=x.json"}) { // one line naming the formats
        CAPTURE(bad);
        try {
            parse_ci_export(bad);
            FAIL("no error");
        } catch (const UsageError& err) {
            CHECK(std::string(err.what()).find("formats: benchmark-action-bigger,") != std::string::npos);
            CHECK(std::string(err.hint()).empty());
        }
    }
    CHECK(parse_ci_metrics("primary") == CiMetrics::primary);
    CHECK(parse_ci_metrics("all") == CiMetrics::all);
    CHECK_THROWS_AS(parse_ci_metrics("every"), UsageError);
}

TEST_CASE("export: benchmark-action files follow the custom tool's fields, one direction each") {
    const auto results = results_of("base.json");
    for (const auto which : {CiMetrics::primary, CiMetrics::all}) {
        const std::string bigger = ci("benchmark-action-bigger", results, which);
        const std::string smaller = ci("benchmark-action-smaller", results, which);
        check_benchmark_action(bigger, Better::higher, results);
        check_benchmark_action(smaller, Better::lower, results);
        // host_memcpy: bandwidth (primary, higher) and time (lower).
        CHECK(json::parse(bigger).size() == results.size());
        CHECK(json::parse(smaller).size() == (which == CiMetrics::all ? results.size() : 0));
    }
    const auto first = json::parse(ci("benchmark-action-bigger", results))[0];
    CHECK(first["name"] == results[0].key + " bandwidth");
    CHECK(first["unit"] == "B/s");
    CHECK(first["extra"].get<std::string>().find("samples") != std::string::npos);
}

TEST_CASE("export: BMF holds every result key with its measures and their intervals") {
    const auto results = results_of("base.json");
    const std::string primary = ci("bmf", results);
    check_bmf(primary);
    const json p = json::parse(primary);
    CHECK(p.size() == results.size());
    for (const auto& r : results) {
        REQUIRE(p.contains(r.key));
        CHECK(p[r.key].size() == 1);
        CHECK(p[r.key]["bandwidth-bytes-per-second"]["value"] == r.metrics[0].stats.median);
        CHECK(p[r.key]["bandwidth-bytes-per-second"]["lower_value"] == r.metrics[0].stats.median_ci_lo);
    }
    const std::string all = ci("bmf", results, CiMetrics::all);
    check_bmf(all);
    CHECK(json::parse(all)[results[0].key].contains("time-seconds"));
}

TEST_CASE("export: OpenMetrics text follows the grammar and what GitLab's metrics reports read") {
    const auto results = results_of("base.json");
    for (const auto which : {CiMetrics::primary, CiMetrics::all}) {
        const std::string text = ci("openmetrics", results, which);
        const auto samples = check_openmetrics(text);
        CHECK(samples.size() == results.size() * (which == CiMetrics::all ? 2 : 1));
        // GitLab drops everything from '#' on and keys a metric by its first word: every
        // sample keeps its labels and value, and no two samples share a key.
        std::set<std::string> gitlab_keys;
        for (const auto& s : samples) {
            CHECK(label(s, "key").find('#') == std::string::npos);
            std::string key = s.name;
            for (const auto& [k, v] : s.labels) key += "{" + k + "=" + v + "}";
            CHECK(gitlab_keys.insert(key).second);
        }
    }
    const std::string text = ci("openmetrics", results, CiMetrics::all);
    CHECK(text.find("# TYPE interopbench_bandwidth_bytes_per_second gauge\n") != std::string::npos);
    CHECK(text.find("# UNIT interopbench_time_seconds seconds\n") != std::string::npos);
    CHECK(text.find("interopbench_bandwidth_bytes_per_second{key=\"" + results[0].key + "\"} ") != std::string::npos);
}

TEST_CASE("export: OpenMetrics label values and names are escaped / odd metrics and units get valid names") {
    const std::string odd_key = "odd/name=a\"b\\c\nd,x=\u00e9";
    const std::vector<Result> results = {
        result(odd_key, Status::ok, {metric("9 lives-per:run", "ops/s", Better::higher, 3.5)}),
        result("plain/size=1", Status::ok, {metric("disk_bytes", "B", Better::higher, 4096), metric("speedup", "1", Better::higher, 1.5)}),
    };
    const std::string text = ci("openmetrics", results, CiMetrics::all);
    CAPTURE(text);
    const auto samples = check_openmetrics(text);
    REQUIRE(samples.size() == 3);
    CHECK(label(samples[0], "key") == odd_key); // read back exactly
    CHECK(text.find("key=\"odd/name=a\\\"b\\\\c\\nd,x=\u00e9\"") != std::string::npos);
    CHECK(samples[0].name == "interopbench__9_lives_per_run_ops_per_s");
    CHECK(samples[1].name == "interopbench_disk_bytes"); // the unit is not repeated
    CHECK(samples[2].name == "interopbench_speedup");     // dimensionless: no unit, no UNIT line
    CHECK(text.find("# UNIT interopbench_speedup") == std::string::npos);
    CHECK(openmetrics_escape("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
    CHECK(openmetrics_name("0a-b:c") == "_0a_b_c");
    check_bmf(ci("bmf", results, CiMetrics::all));
    CHECK(json::parse(ci("bmf", results, CiMetrics::all))[odd_key].contains("9-lives-per-run-ops-per-s"));
}

TEST_CASE("export: only ok results with a finite median go out") {
    auto nan_metric = metric("bandwidth", "B/s", Better::higher, std::nan(""));
    auto empty_metric = metric("bandwidth", "B/s", Better::higher, 5, 0);
    auto no_interval = metric("bandwidth", "B/s", Better::higher, 7);
    no_interval.stats.median_ci_lo = std::nan("");
    const std::vector<Result> results = {
        result("a/x=1", Status::ok, {metric("bandwidth", "B/s", Better::higher, 2e9)}),
        result("b/x=1", Status::skipped, {metric("bandwidth", "B/s", Better::higher, 2e9)}),
        result("c/x=1", Status::failed, {metric("bandwidth", "B/s", Better::higher, 2e9)}),
        result("d/x=1", Status::ok, {nan_metric}),
        result("e/x=1", Status::ok, {empty_metric}),
        result("f/x=1", Status::ok, {no_interval}),
        result("g/x=1", Status::ok, {}),
    };
    for (const std::string_view f : {"benchmark-action-bigger", "bmf", "openmetrics"}) {
        CAPTURE(std::string(f));
        const std::string text = ci(f, results, CiMetrics::all);
        CHECK(text.find("a/x=1") != std::string::npos);
        CHECK(text.find("f/x=1") != std::string::npos);
        for (const char* gone : {"b/x=1", "c/x=1", "d/x=1", "e/x=1", "g/x=1"}) CHECK(text.find(gone) == std::string::npos);
        CHECK(text.find("nan") == std::string::npos);
        CHECK(text.find("null") == std::string::npos);
    }
    // Without an interval: no range, no bounds; the value still goes out.
    const json ba = json::parse(ci("benchmark-action-bigger", results));
    REQUIRE(ba.size() == 2);
    CHECK_FALSE(ba[1].contains("range"));
    const json bmf = json::parse(ci("bmf", results));
    CHECK_FALSE(bmf["f/x=1"]["bandwidth-bytes-per-second"].contains("lower_value"));
    check_bmf(bmf.dump());
    // Nothing to write is still a valid document.
    CHECK(ci("openmetrics", {}) == "# EOF\n");
    CHECK(json::parse(ci("bmf", {})).empty());
    CHECK(json::parse(ci("benchmark-action-smaller", {})).empty());
}

TEST_CASE("export: names are stable between two runs of the same plan") {
    // regression.json and noisy.json are base.json's plan with other samples.
    for (const auto f : k_all_formats)
        for (const auto which : {CiMetrics::primary, CiMetrics::all}) {
            CAPTURE(std::string(f));
            const auto base = names_of(ci(f, results_of("base.json"), which), f);
            CHECK(base == names_of(ci(f, results_of("regression.json"), which), f));
            CHECK(base == names_of(ci(f, results_of("noisy.json"), which), f));
            CHECK(ci(f, results_of("base.json"), which) == ci(f, results_of("base.json"), which));
        }
}

TEST_CASE("export: a comparison: the new values with the verdicts, ratios and counts") {
    const Report base = read_report(k_dir + "base.json"), fresh = read_report(k_dir + "regression.json");
    const auto outcome = compare_reports(base, fresh, CompareOptions{});
    REQUIRE(outcome.count(Verdict::regression) == 1);
    const auto& fresh_results = fresh.results;

    const std::string bigger = ci("benchmark-action-bigger", outcome, fresh_results);
    check_benchmark_action(bigger, Better::higher, fresh_results);
    bool seen = false;
    for (const auto& e : json::parse(bigger)) {
        const std::string extra = e["extra"];
        CHECK(extra.find("verdict: ") != std::string::npos);
        CHECK(extra.find("new/base: ") != std::string::npos);
        if (e["name"] == k_regressed + " bandwidth") {
            seen = true;
            CHECK(extra.find("verdict: regression") != std::string::npos);
        }
    }
    CHECK(seen);
    check_benchmark_action(ci("benchmark-action-smaller", outcome, fresh_results, CiMetrics::all), Better::lower,
                           fresh_results);

    const std::string bmf = ci("bmf", outcome, fresh_results);
    check_bmf(bmf);
    CHECK(bmf == ci("bmf", fresh_results)); // the new values

    const std::string om = ci("openmetrics", outcome, fresh_results);
    const auto samples = check_openmetrics(om);
    std::size_t ratios = 0, verdicts = 0;
    for (const auto& s : samples) {
        if (s.name == "interopbench_compare_ratio") {
            ++ratios;
            CHECK(one_of(label(s, "estimate"), {"point", "lower", "upper"}));
            CHECK(label(s, "metric") == "bandwidth"); // the primary (gated) metric only
        }
        if (s.name == "interopbench_compare_results") {
            ++verdicts;
            if (label(s, "verdict") == "regression") CHECK(s.value == 1);
            if (label(s, "verdict") == "unchanged") CHECK(s.value == outcome.count(Verdict::unchanged));
        }
    }
    CHECK(ratios == 3 * fresh_results.size());
    CHECK(verdicts == k_verdict_count);
    CHECK(om.find("interopbench_compare_ratio{key=\"" + k_regressed + "\",metric=\"bandwidth\",estimate=\"point\"} 0.") !=
          std::string::npos);
    // Every metric on request; names stable against a comparison of other runs.
    const auto all = check_openmetrics(ci("openmetrics", outcome, fresh_results, CiMetrics::all));
    CHECK(all.size() > samples.size());
    const auto noisy = compare_reports(base, read_report(k_dir + "noisy.json"), CompareOptions{});
    for (const auto f : k_all_formats)
        CHECK(names_of(ci(f, outcome, fresh_results), f) ==
              names_of(ci(f, noisy, results_of("noisy.json")), f));
}

TEST_CASE("export: paths are checked before any work") {
    const auto dir = interopbench::testing::scratch("ci-exports");
    const std::string a = (dir / "a.json").string(), b = (dir / "b.txt").string();
    const Format* bmf = &find_format("bmf", Command::export_file);
    const Format* om = &find_format("openmetrics", Command::export_file);
    CHECK_NOTHROW(check_ci_exports({{bmf, a}, {om, b}}, {{"the --out report", ""}}));
    CHECK_THROWS_AS(check_ci_exports({{bmf, a}, {om, a}}, {}), UsageError);
    CHECK_THROWS_AS(check_ci_exports({{bmf, a}}, {{"the --out report", a}}), UsageError);
    CHECK_THROWS_AS(check_ci_exports({{bmf, (dir / "missing" / "x.json").string()}}, {}), UsageError);
    CHECK_THROWS_AS(check_ci_exports({{bmf, dir.string()}}, {}), UsageError);
}

TEST_CASE("export: show and compare print CI formats / bad formats are one error line and exit 2") {
    const std::string base = "'" + k_dir + "base.json'", regression = "'" + k_dir + "regression.json'";
    auto r = cli("show " + base + " --format bmf");
    CHECK(r.code == 0);
    check_bmf(r.out);
    r = cli("show " + base + " --format openmetrics --metrics all");
    CHECK(r.code == 0);
    CHECK(check_openmetrics(r.out).size() == 16);
    r = cli("show " + base + " --format benchmark-action-smaller --metrics all");
    CHECK(r.code == 0);
    check_benchmark_action(r.out, Better::lower, results_of("base.json"));
    CHECK(json::parse(r.out).size() == 8);

    r = cli("compare " + base + " " + regression + " --format openmetrics");
    CHECK(r.code == 1); // the gate is unchanged by the format
    check_openmetrics(r.out);
    CHECK(r.out.find("interopbench_compare_results{verdict=\"regression\"} 1\n") != std::string::npos);

    const auto dir = interopbench::testing::scratch("ci-compare");
    const std::string bmf = (dir / "bmf.json").string(), om = (dir / "metrics.txt").string();
    r = cli("compare " + base + " " + regression + " --export bmf='" + bmf + "' --export openmetrics='" + om + "'");
    CHECK(r.code == 1);
    CHECK(r.out.find("Summary") != std::string::npos); // the table on stdout as before
    check_bmf(interopbench::testing::slurp(bmf));
    check_openmetrics(interopbench::testing::slurp(om));

    expect_usage_error("show " + base + " --format bencher", "unknown format 'bencher' for show");
    expect_usage_error("show " + base + " --format bmf --metrics some", "unknown metric selection");
    expect_usage_error("show " + base + " --metrics primry", "unknown metric selection 'primry'; did you mean 'primary'?");
    // One set of words for every metric selection: show's and run's tables take primary and all,
    // and compact (run's earlier word) is still read as primary.
    const Cli primary = cli("show " + base + " --format bmf --metrics primary"), compact = cli("show " + base + " --format bmf --metrics compact");
    CHECK(primary.code == 0);
    CHECK(compact.code == 0);
    CHECK(compact.out == primary.out);
    CHECK(cli("show " + base + " --metrics compact").out == cli("show " + base).out);
    expect_usage_error("compare " + base + " " + base + " --format gitlab", "unknown");
    expect_usage_error("compare " + base + " " + base + " --export bmf", "invalid --export 'bmf'");
    expect_usage_error("compare " + base + " " + base + " --export xml=x.xml", "unknown format 'xml'");
    expect_usage_error("compare " + base + " " + base + " --export bmf=" + base, "input report");
    const Cli hint = cli("show " + base + " --format bencher");
    CHECK(hint.err.find("openmetrics") != std::string::npos); // the hint lists the CI formats
}

TEST_CASE("export: run --export: checked before measuring, written after the report") {
    // The time budget stops sampling even below --min-samples, and the comparison needs five
    // samples on each side for a ratio: a budget of a second leaves room on a loaded machine
    // (the copy of 4 KiB converges in far less).
    const std::string run = "run --scenario host_memcpy --size 4K --axis threads=single --max-time 1 --min-samples 5 -q ";
    expect_usage_error(run + "--export bmf", "invalid --export 'bmf'");
    expect_usage_error(run + "--export yaml=x.yaml", "unknown format 'yaml'");
    expect_usage_error(run + "--export bmf=/nonexistent-dir/x.json", "does not exist");
    expect_usage_error(run + "--export-metrics most", "unknown metric selection");
    expect_usage_error(run + "--metrics compacted", "unknown metric selection 'compacted'");
    const auto dir = interopbench::testing::scratch("ci-run");
    const std::string out = (dir / "r.json").string();
    expect_usage_error(run + "--out '" + out + "' --export bmf='" + out + "'", "--out report");

    const std::string bmf = (dir / "bmf.json").string(), om = (dir / "metrics.txt").string(),
                      ba = (dir / "bigger.json").string();
    const Cli r = cli(run + "--out '" + out + "' --export bmf='" + bmf + "' --export openmetrics='" + om +
                      "' --export benchmark-action-bigger='" + ba + "' --export-metrics all");
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
    const auto results = read_report(out).results;
    REQUIRE(results.size() == 1);
    check_bmf(interopbench::testing::slurp(bmf));
    CHECK(json::parse(interopbench::testing::slurp(bmf)).contains("host_memcpy/size=4096,threads=single"));
    CHECK(check_openmetrics(interopbench::testing::slurp(om)).size() == 2);
    check_benchmark_action(interopbench::testing::slurp(ba), Better::higher, results);
    // The exports hold what the report holds.
    CHECK(interopbench::testing::slurp(om) == ci("openmetrics", results, CiMetrics::all));

    // With --baseline they carry the comparison too, as compare --export writes them.
    const std::string om2 = (dir / "gated.txt").string();
    const Cli g = cli(run + "--baseline '" + out + "' --export openmetrics='" + om2 + "'");
    CAPTURE(g.err);
    CHECK((g.code == 0 || g.code == 1)); // the gate's verdict on two runs of one host copy is not the point
    const std::string gated = interopbench::testing::slurp(om2);
    check_openmetrics(gated);
    CHECK(gated.find("interopbench_compare_results{verdict=") != std::string::npos);
    CHECK(gated.find("interopbench_compare_ratio{") != std::string::npos);
}

} // TEST_SUITE
