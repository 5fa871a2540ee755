// Compare: verdicts on recorded report pairs (tests/data/reports, see its README), options,
// output formats, exit codes and bad input through the real binary.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "interopbench/compare.hpp"
#include "interopbench/report.hpp"
#include "interopbench/splitmix.hpp"
#include "interopbench/stats.hpp"
#include "test_support.hpp"
#include "presentation/comparison.hpp"
#include "presentation/formats.hpp"

using namespace interopbench;
using nlohmann::json;

namespace {

// A comparison in the format `name`, through its row of the format table.
std::string rendered(const CompareOutcome& o, std::string_view name) {
    const std::vector<Result> none;
    return find_format(name, Command::compare).render(ComparisonView{o, none, CiMetrics::primary, false, 0}); // cells whole
}

const std::string k_dir = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/";
const std::string k_regressed = "host_memcpy/size=262144,threads=multi";
const std::string k_regressed_label = "host_memcpy 256KiB multi"; // as the tables name it
const std::string k_noisy = "host_memcpy/size=65536,threads=multi";

json load(const std::string& name) { return load_report(k_dir + name); }

/// A report document these tests load or build and then edit, read as the tool reads one.
Report typed(const json& doc) { return read_report_json(doc, "test report"); }

const ResultComparison& find(const CompareOutcome& o, const std::string& key) {
    for (const auto& r : o.results)
        if (r.key == key) return r;
    FAIL("no result " << key);
    throw std::logic_error("unreachable");
}

std::filesystem::path scratch_dir() {
    static const auto dir = [] {
        auto d = std::filesystem::temp_directory_path() / fmt::format("interopbench-compare-test-{}", getpid());
        std::filesystem::create_directories(d);
        return d;
    }();
    return dir;
}

using testing::run_cli;

std::string report_arg(const std::string& name) { return "'" + k_dir + name + "'"; }

// A small XML 1.0 well-formedness check: one root, nested tags, quoted attributes, known
// entities, no stray '<' or '&'. Enough for what render_junit writes.
bool well_formed_xml(const std::string& s, std::string& why) {
    std::size_t i = 0;
    std::vector<std::string> open;
    bool root_seen = false;
    auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':'; };
    auto check_text = [&](std::size_t from, std::size_t to) {
        for (std::size_t k = from; k < to; ++k) {
            if (s[k] == '<') return false;
            if (s[k] == '&') {
                const auto semi = s.find(';', k);
                if (semi == std::string::npos || semi > to) return false;
                const std::string ent = s.substr(k + 1, semi - k - 1);
                if (ent != "amp" && ent != "lt" && ent != "gt" && ent != "quot" && ent != "apos") return false;
            }
        }
        return true;
    };
    if (s.rfind("<?xml", 0) == 0) i = s.find("?>") + 2;
    while (i < s.size()) {
        const auto lt = s.find('<', i);
        if (lt == std::string::npos) {
            if (!check_text(i, s.size()) || s.find_first_not_of(" \t\r\n", i) != std::string::npos) {
                why = "text after the root element";
                return false;
            }
            break;
        }
        if (!check_text(i, lt)) {
            why = "bad character data before offset " + std::to_string(lt);
            return false;
        }
        if (open.empty() && s.find_first_not_of(" \t\r\n", i) < lt) {
            why = "text outside the root element";
            return false;
        }
        const bool closing = s[lt + 1] == '/';
        std::size_t k = lt + (closing ? 2 : 1);
        const std::size_t name_start = k;
        while (k < s.size() && name_char(s[k])) ++k;
        const std::string name = s.substr(name_start, k - name_start);
        if (name.empty()) {
            why = "tag without a name at " + std::to_string(lt);
            return false;
        }
        if (closing) {
            if (open.empty() || open.back() != name) {
                why = "mismatched </" + name + ">";
                return false;
            }
            open.pop_back();
            k = s.find('>', k);
            i = k + 1;
            continue;
        }
        // Attributes.
        while (true) {
            while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
            if (s[k] == '>' || (s[k] == '/' && s[k + 1] == '>')) break;
            const std::size_t a = k;
            while (k < s.size() && name_char(s[k])) ++k;
            if (k == a || s[k] != '=' || s[k + 1] != '"') {
                why = "bad attribute in <" + name + ">";
                return false;
            }
            const auto end = s.find('"', k + 2);
            if (end == std::string::npos || !check_text(k + 2, end)) {
                why = "bad attribute value in <" + name + ">";
                return false;
            }
            k = end + 1;
        }
        if (open.empty()) {
            if (root_seen) {
                why = "second root element <" + name + ">";
                return false;
            }
            root_seen = true;
        }
        if (s[k] == '/') {
            i = k + 2;
        } else {
            open.push_back(name);
            i = k + 1;
        }
    }
    if (!open.empty()) {
        why = "unclosed <" + open.back() + ">";
        return false;
    }
    if (!root_seen) why = "no root element";
    return root_seen;
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
    return n;
}

} // namespace

TEST_SUITE("compare") {

TEST_CASE("fractions, thresholds and floors parse, bad ones are usage errors") {
    CHECK(parse_fraction("5%", "t") == doctest::Approx(0.05));
    CHECK(parse_fraction("0.03", "t") == doctest::Approx(0.03));
    CHECK(parse_fraction(" 2.5% ", "t") == doctest::Approx(0.025));
    CHECK_THROWS_AS(parse_fraction("5", "t"), UsageError); // ambiguous
    CHECK_THROWS_AS(parse_fraction("-1%", "t"), UsageError);
    CHECK_THROWS_AS(parse_fraction("fast", "t"), UsageError);
    CHECK_THROWS_AS(parse_fraction("", "t"), UsageError);

    CompareOptions o;
    add_threshold(o, "7%");
    add_threshold(o, "h2d_*=3%");
    add_threshold(o, "h2d_copy.time=10%");
    add_threshold(o, "h2d_copy=4%");
    CHECK(threshold_for(o, "d2h_copy", "bandwidth") == doctest::Approx(0.07));
    CHECK(threshold_for(o, "h2d_copy", "bandwidth") == doctest::Approx(0.04)); // last scenario rule wins
    CHECK(threshold_for(o, "h2d_copy", "time") == doctest::Approx(0.10));      // metric rule beats scenario rule
    CHECK(threshold_for(o, "h2d_pinned", "time") == doctest::Approx(0.03));
    CHECK_THROWS_AS(add_threshold(o, "=3%"), UsageError);
    CHECK_THROWS_AS(add_threshold(o, "h2d_copy.=3%"), UsageError);
    CHECK_THROWS_AS(add_threshold(o, "h2d_copy=lots"), UsageError);

    CHECK(o.floors.at("s") == doctest::Approx(500e-9)); // default
    add_floor(o, "s=2us");
    CHECK(o.floors.at("s") == doctest::Approx(2e-6));
    add_floor(o, "s=150ns");
    CHECK(o.floors.at("s") == doctest::Approx(150e-9));
    add_floor(o, "B/s=1e6");
    CHECK(o.floors.at("B/s") == doctest::Approx(1e6));
    add_floor(o, "s=0");
    CHECK(o.floors.count("s") == 0);
    CHECK_THROWS_AS(add_floor(o, "s"), UsageError);
    CHECK_THROWS_AS(add_floor(o, "=1"), UsageError);
    CHECK_THROWS_AS(add_floor(o, "s=2xs"), UsageError);
    CHECK_THROWS_AS(add_floor(o, "s=-1us"), UsageError);

}

TEST_CASE("the bootstrap interval is seeded, brackets the ratio and follows a shift") {
    std::vector<double> base, slower;
    for (int i = 0; i < 60; ++i) {
        base.push_back(100.0 + (i * 37 % 11)); // deterministic spread of about 10%
        slower.push_back(0.9 * base.back());
    }
    const auto a = bootstrap_median_ratio(base, slower, 2000, 42, 0.95);
    const auto b = bootstrap_median_ratio(base, slower, 2000, 42, 0.95);
    CHECK(a.ratio == doctest::Approx(0.9));
    CHECK(a.lo == b.lo); // same seed, same interval
    CHECK(a.hi == b.hi);
    CHECK(a.lo <= a.ratio);
    CHECK(a.ratio <= a.hi);
    CHECK(a.hi < 1.0);
    const auto same = bootstrap_median_ratio(base, base, 2000, 42, 0.95);
    CHECK(same.ratio == doctest::Approx(1.0));
    CHECK(same.lo <= 1.0);
    CHECK(same.hi >= 1.0);
    // NaN samples are dropped; an empty side gives no estimate.
    auto with_nan = base;
    with_nan.push_back(std::nan(""));
    CHECK(bootstrap_median_ratio(with_nan, base, 500, 1, 0.95).ratio == doctest::Approx(1.0));
    CHECK(bootstrap_median_ratio({}, base, 500, 1, 0.95).ratio == 0);
}

TEST_CASE("the bootstrap's work is bounded: the resamples chosen respect the cap of draws per metric") {
    CHECK(bootstrap_resamples(2000, 30, 30) == 2000); // small sets: as many as asked
    CHECK(bootstrap_resamples(2000, 1000, 1000) == 2000);
    CHECK(bootstrap_resamples(2000, 5000, 5000) == k_max_bootstrap_draws / 10000);
    CHECK(bootstrap_resamples(2000, 100000, 100000) == k_min_bootstrap_resamples); // never fewer
    CHECK(bootstrap_resamples(50, 100000, 100000) == 50);                        // never more than asked
    CHECK(bootstrap_resamples(-1, 10, 10) == 0);
    CHECK(bootstrap_resamples(2000, 0, 0) == 2000);
    for (std::size_t n : {1, 10, 100, 1000, 2000, 10000, 20000, 50000, 100000, 1000000}) {
        for (std::size_t m : {n, std::size_t{1}, 3 * n}) {
            CAPTURE(n);
            CAPTURE(m);
            const std::size_t r = bootstrap_resamples(2000, n, m);
            CHECK(r * (n + m) <= std::max(k_max_bootstrap_draws, k_min_bootstrap_resamples * (n + m)));
            CHECK(r >= k_min_bootstrap_resamples);
        }
    }
    // The bootstrap draws exactly that many: with its seeded stream, asking for 2000 gives the
    // interval of asking for the capped count, and not the one of a single resample fewer.
    std::vector<double> base, fresh;
    std::uint64_t x = 12345;
    auto next = [&x] {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(x >> 11) / 9007199254740992.0; // [0, 1)
    };
    for (int i = 0; i < 5000; ++i) {
        base.push_back(100 + 10 * next());
        fresh.push_back(101 + 10 * next());
    }
    const std::size_t capped = bootstrap_resamples(2000, base.size(), fresh.size());
    REQUIRE(capped < 2000);
    const auto asked = bootstrap_median_ratio(base, fresh, 2000, 7, 0.95);
    const auto exact = bootstrap_median_ratio(base, fresh, static_cast<int>(capped), 7, 0.95);
    const auto fewer = bootstrap_median_ratio(base, fresh, static_cast<int>(capped) - 1, 7, 0.95);
    CHECK(asked.lo == exact.lo);
    CHECK(asked.hi == exact.hi);
    CHECK((fewer.lo != exact.lo || fewer.hi != exact.hi));
    // 100,000 samples on each side: the floor of resamples, not 2000 of them.
    base.resize(100000);
    fresh.resize(100000);
    for (std::size_t i = 5000; i < base.size(); ++i) {
        base[i] = 100 + 10 * next();
        fresh[i] = 101 + 10 * next();
    }
    REQUIRE(bootstrap_resamples(2000, base.size(), fresh.size()) == k_min_bootstrap_resamples);
    const auto big = bootstrap_median_ratio(base, fresh, 2000, 7, 0.95);
    const auto floor = bootstrap_median_ratio(base, fresh, static_cast<int>(k_min_bootstrap_resamples), 7, 0.95);
    CHECK(big.lo == floor.lo);
    CHECK(big.hi == floor.hi);
    CHECK(big.lo <= big.ratio);
    CHECK(big.ratio <= big.hi);
}

TEST_CASE("comparing many results of many samples completes, within the cap of draws per metric") {
    constexpr int k_results = 12;
    constexpr std::size_t k_samples = 20000;
    auto make = [&](double scale) {
        json doc = {{"schema", {{"name", "interopbench.report"}, {"version", "1.1"}}}, {"results", json::array()}};
        for (int r = 0; r < k_results; ++r) {
            json samples = json::array();
            for (std::size_t i = 0; i < k_samples; ++i) samples.push_back(scale * (1e9 + 1e7 * ((i * 7919 + r) % 101)));
            const double median = scale * 1.05e9;
            doc["results"].push_back(
                {{"key", fmt::format("host_memcpy/size={}", 4096 * (r + 1))}, {"scenario", "host_memcpy"}, {"status", "ok"},
                 {"params", {{"size", std::to_string(4096 * (r + 1))}}}, {"param_order", {"size"}},
                 {"metrics", {{{"name", "bandwidth"}, {"unit", "B/s"}, {"better", "higher"},
                               {"stats", {{"n", k_samples}, {"median", median}, {"median_ci", {0.99 * median, 1.01 * median}}}},
                               {"samples", std::move(samples)}}}}});
        }
        return doc;
    };
    const json base = make(1), fresh = make(1.001);
    const CompareOptions options;
    const auto o = compare_reports(typed(base), typed(fresh), options);
    REQUIRE(o.results.size() == static_cast<std::size_t>(k_results));
    std::size_t draws = 0, metrics = 0;
    for (const auto& r : o.results)
        for (const auto& m : r.metrics) {
            CHECK(m.has_ratio);
            CHECK(m.base_n == k_samples);
            CHECK(m.new_n == k_samples);
            draws += bootstrap_resamples(options.resamples, m.base_n, m.new_n) * (m.base_n + m.new_n);
            ++metrics;
        }
    CHECK(metrics == static_cast<std::size_t>(k_results));
    CHECK(draws <= metrics * k_max_bootstrap_draws);
    CHECK(o.count(Verdict::regression) == 0);
}

TEST_CASE("the bootstrap's medians are those of the resampled values: odd and even counts, ties, one sample") {
    // The reference draws as the bootstrap does (splitmix64, one draw per sample, base then
    // new) and takes each resample's median by sorting its values.
    const auto reference = [](const std::vector<double>& base, const std::vector<double>& fresh, int resamples,
                              std::uint64_t seed) {
        std::uint64_t state = seed;
        const auto below = [&state](std::size_t n) {
            const std::uint64_t z = splitmix64(state);
            state += k_splitmix_gamma;
            return static_cast<std::size_t>(z % n);
        };
        const auto median = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v.size() % 2 ? v[v.size() / 2] : v[v.size() / 2 - 1] / 2 + v[v.size() / 2] / 2;
        };
        std::vector<double> ratios;
        for (int i = 0; i < resamples; ++i) {
            std::vector<double> b, f;
            for (std::size_t k = 0; k < base.size(); ++k) b.push_back(base[below(base.size())]);
            for (std::size_t k = 0; k < fresh.size(); ++k) f.push_back(fresh[below(fresh.size())]);
            if (median(b) != 0) ratios.push_back(median(f) / median(b));
        }
        std::sort(ratios.begin(), ratios.end());
        return std::pair{quantile_sorted(ratios, 0.025), quantile_sorted(ratios, 0.975)};
    };
    for (const std::size_t n : {1, 2, 3, 4, 7, 10, 31}) {
        std::vector<double> base, fresh;
        for (std::size_t i = 0; i < n; ++i) {
            base.push_back(1e9 + 1e7 * static_cast<double>((i * 37) % 5)); // ties
            fresh.push_back(1.1e9 - 1e7 * static_cast<double>((i * 11) % 7));
        }
        CAPTURE(n);
        const auto est = bootstrap_median_ratio(base, fresh, 300, 1234 + n, 0.95);
        const auto [lo, hi] = reference(base, fresh, 300, 1234 + n);
        CHECK(est.lo == lo);
        CHECK(est.hi == hi);
    }
}

TEST_CASE("results are compared in the base report's order, each as compare_result compares it alone") {
    json base = {{"schema", {{"name", "interopbench.report"}, {"version", "1.1"}}}, {"results", json::array()}};
    json fresh = base;
    for (int r = 0; r < 40; ++r) {
        const auto result = [r](double scale) {
            json samples = json::array();
            for (int i = 0; i < 30; ++i) samples.push_back(scale * (1e9 + 1e6 * ((i * 13 + r) % 17)));
            return json{{"key", fmt::format("host_memcpy/size={}", 4096 * (40 - r))}, {"scenario", "host_memcpy"}, {"status", "ok"},
                        {"params", {{"size", std::to_string(4096 * (40 - r))}}}, {"param_order", {"size"}},
                        {"metrics", {{{"name", "bandwidth"}, {"unit", "B/s"}, {"better", "higher"},
                                      {"stats", {{"n", 30}, {"median", scale * 1e9}}}, {"samples", std::move(samples)}}}}};
        };
        base["results"].push_back(result(1));
        if (r != 5) fresh["results"].push_back(result(r % 3 == 0 ? 0.8 : 1.0)); // one only in base, some slower
    }
    const Report b = typed(base), f = typed(fresh);
    const CompareOptions options;
    const auto o = compare_reports(b, f, options);
    REQUIRE(o.results.size() == b.results.size());
    for (std::size_t i = 0; i < b.results.size(); ++i) {
        CAPTURE(i);
        CHECK(o.results[i].key == b.results[i].key);
        if (i == 5) {
            CHECK(o.results[i].verdict == Verdict::missing);
            continue;
        }
        const auto alone = compare_result(b.results[i], f.results[i < 5 ? i : i - 1], options);
        CHECK(o.results[i].verdict == alone.verdict);
        REQUIRE(o.results[i].metrics.size() == alone.metrics.size());
        CHECK(o.results[i].metrics[0].ci_lo == alone.metrics[0].ci_lo);
        CHECK(o.results[i].metrics[0].ci_hi == alone.metrics[0].ci_hi);
    }
    CHECK(o.count(Verdict::regression) == 14); // every third of 40 (0, 3, ..., 39), 20% slower
    // No pair, or one: nothing to spread (an empty base once started threads until none were left).
    json empty = base;
    empty["results"] = json::array();
    CHECK_THROWS_AS(compare_reports(typed(empty), f, options), UsageError); // nothing in common
    json one = base;
    one["results"] = json::array({base["results"][0]});
    CHECK(compare_reports(typed(one), f, options).count(Verdict::added) == 38); // one pair, the rest only in new
}

TEST_CASE("a report against itself: no regression, nothing missing or new") {
    const auto base = load("base.json");
    const auto o = compare_reports(typed(base), typed(base), {});
    CHECK(o.count(Verdict::regression) == 0);
    CHECK(o.count(Verdict::improvement) == 0);
    CHECK(o.count(Verdict::missing) == 0);
    CHECK(o.count(Verdict::added) == 0);
    CHECK(o.count(Verdict::unchanged) >= 2);
    CHECK(o.results.size() == base["results"].size());
    CHECK(find(o, k_noisy).verdict == Verdict::unchanged);
    CHECK(find(o, k_regressed).verdict == Verdict::unchanged);
    CHECK(o.fingerprint.empty());
    CHECK(o.warnings.empty());
    REQUIRE(o.families.size() == 1);
    CHECK(o.families[0].geomean == doctest::Approx(1.0));
    CHECK(compare_exit_code(o, false) == ExitCode::ok);
    CHECK(flagged_keys(o).size() == o.count(Verdict::inconclusive));
}

TEST_CASE("one result 10% slower beyond its noise is the one regression") {
    const auto base = load("base.json"), slower = load("regression.json");
    const auto same = compare_reports(typed(base), typed(base), {});
    const auto o = compare_reports(typed(base), typed(slower), {});
    CHECK(o.count(Verdict::regression) == 1);
    const auto& r = find(o, k_regressed);
    CHECK(r.verdict == Verdict::regression);
    REQUIRE(r.deciding() != nullptr);
    CHECK(r.deciding()->name == "bandwidth");
    CHECK(r.deciding()->ratio == doctest::Approx(0.9));
    CHECK(r.deciding()->ci_hi < 0.95);
    CHECK(r.reason == "bandwidth beyond ±5.0%");
    CHECK(rendered(o, "junit").find("message=\"bandwidth -10.0% [") != std::string::npos);
    // The secondary metric is compared and shown but does not decide.
    REQUIRE(r.metrics.size() == 2);
    CHECK(r.metrics[1].name == "time");
    CHECK_FALSE(r.metrics[1].gated);
    CHECK(r.metrics[1].ratio == doctest::Approx(1 / 0.9));
    // Every other result is judged as in the self-comparison.
    for (std::size_t i = 0; i < o.results.size(); ++i)
        if (o.results[i].key != k_regressed) CHECK(o.results[i].verdict == same.results[i].verdict);
    CHECK(compare_exit_code(o, false) == ExitCode::failed);
    const auto flagged = flagged_keys(o);
    CHECK(std::find(flagged.begin(), flagged.end(), k_regressed) != flagged.end());
    // Deterministic: the same pair gives the same interval.
    const auto again = compare_reports(typed(base), typed(slower), {});
    CHECK(find(again, k_regressed).deciding()->ci_lo == r.deciding()->ci_lo);
    // The family geomean moves down.
    CHECK(o.families.at(0).geomean < 1.0);
}

TEST_CASE("thresholds and floors change what counts") {
    const auto base = load("base.json"), slower = load("regression.json");
    CompareOptions wide;
    add_threshold(wide, "15%");
    CHECK(find(compare_reports(typed(base), typed(slower), wide), k_regressed).verdict == Verdict::unchanged);

    CompareOptions per_metric;
    add_threshold(per_metric, "host_memcpy.bandwidth=15%");
    CHECK(find(compare_reports(typed(base), typed(slower), per_metric), k_regressed).verdict == Verdict::unchanged);

    // A rule naming the time metric makes it decide too; a floor of 10 us covers the whole
    // 0.6 us difference of a 5.8 us copy.
    CompareOptions timed;
    add_threshold(timed, "host_memcpy.bandwidth=15%");
    add_threshold(timed, "host_memcpy.time=5%");
    auto o = compare_reports(typed(base), typed(slower), timed);
    CHECK(find(o, k_regressed).verdict == Verdict::regression);
    CHECK(find(o, k_regressed).deciding()->name == "time");
    add_floor(timed, "s=10us");
    o = compare_reports(typed(base), typed(slower), timed);
    CHECK(find(o, k_regressed).verdict == Verdict::unchanged);
    CHECK(find(o, k_regressed).metrics[1].threshold > 1.0);

    CompareOptions typo;
    add_threshold(typo, "h2d_cpy=3%");
    const auto w = compare_reports(typed(base), typed(base), typo).warnings;
    REQUIRE(w.size() == 1);
    CHECK(w[0].find("h2d_cpy") != std::string::npos);
}

TEST_CASE("a noisy result is inconclusive, never a regression") {
    const auto base = load("base.json"), noisy = load("noisy.json");
    const auto o = compare_reports(typed(base), typed(noisy), {});
    const auto& r = find(o, k_noisy);
    CHECK(r.verdict == Verdict::inconclusive);
    CHECK(r.reason.find("noisy") != std::string::npos);
    CHECK(o.count(Verdict::regression) == 0);
    CHECK(compare_exit_code(o, false) == ExitCode::ok);
    CHECK(compare_exit_code(o, true) == ExitCode::inconclusive);
    const auto flagged = flagged_keys(o);
    CHECK(std::find(flagged.begin(), flagged.end(), k_noisy) != flagged.end());
}

TEST_CASE("too few samples are inconclusive") {
    const auto base = load("base.json");
    auto few = base;
    for (auto& m : few["results"][0]["metrics"]) {
        m["samples"] = json::array({m["samples"][0], m["samples"][1], m["samples"][2]});
        m["stats"]["n"] = 3;
    }
    const auto o = compare_reports(typed(base), typed(few), {});
    CHECK(o.results[0].verdict == Verdict::inconclusive);
    CHECK(o.results[0].reason.find("too few samples") != std::string::npos);
}

TEST_CASE("reports without samples fall back to the median intervals") {
    auto base = load("base.json");
    auto slower = load("regression.json");
    for (auto* doc : {&base, &slower})
        for (auto& r : (*doc)["results"])
            for (auto& m : r["metrics"]) m.erase("samples");
    const auto o = compare_reports(typed(base), typed(slower), {});
    const auto& r = find(o, k_regressed);
    CHECK(r.verdict == Verdict::regression);
    CHECK(r.deciding()->note.find("no samples kept") != std::string::npos);
    CHECK(r.deciding()->ratio == doctest::Approx(0.9));
}

TEST_CASE("statuses: a new failure regresses, a new skip is inconclusive, skipped twice is unchanged") {
    const auto base = load("base.json");
    auto fresh = base;
    fresh["results"][0]["status"] = "failed";
    fresh["results"][0]["reason"] = "data check failed at byte 12";
    fresh["results"][1]["status"] = "skipped";
    fresh["results"][1]["reason"] = "no GPU";
    auto o = compare_reports(typed(base), typed(fresh), {});
    CHECK(o.results[0].verdict == Verdict::regression);
    CHECK(o.results[0].reason.find("now fails") != std::string::npos);
    CHECK(o.results[1].verdict == Verdict::inconclusive);
    auto both = fresh;
    o = compare_reports(typed(both), typed(fresh), {});
    CHECK(o.results[1].verdict == Verdict::unchanged);
    CHECK(o.results[0].verdict == Verdict::inconclusive); // failed in both
}

TEST_CASE("missing and new results are listed") {
    const auto base = load("base.json");
    auto fresh = base;
    auto extra = fresh["results"][0];
    extra["key"] = "host_memcpy/size=8388608,threads=single";
    extra["params"]["size"] = "8388608";
    fresh["results"].erase(0);
    fresh["results"].push_back(extra);
    const auto o = compare_reports(typed(base), typed(fresh), {});
    CHECK(o.count(Verdict::missing) == 1);
    CHECK(o.count(Verdict::added) == 1);
    CHECK(o.results.front().verdict == Verdict::missing);
    CHECK(o.results.back().verdict == Verdict::added);
    CHECK(o.results.back().key == "host_memcpy/size=8388608,threads=single");
    // A result the new run lost fails the gate: a gate never passes by comparing nothing.
    CHECK(compare_exit_code(o, false) == ExitCode::failed);
    const auto only_added = compare_reports(typed(fresh), typed(fresh), {});
    CHECK(compare_exit_code(only_added, false) == ExitCode::ok);
}

TEST_CASE("differing profiles, environments and unfinished runs are warned about") {
    const auto base = load("base.json");
    auto fresh = base;
    fresh["invocation"]["profile"] = "ci";
    fresh["invocation"]["profile_hash"] = "0123456789abcdef";
    fresh["invocation"]["status"] = "interrupted";
    fresh["environment"]["NCCL_P2P_DISABLE"] = "1";
    const auto o = compare_reports(typed(base), typed(fresh), {});
    REQUIRE(o.warnings.size() == 3);
    CHECK(o.warnings[0].find("profiles differ") != std::string::npos);
    CHECK(o.warnings[1].find("NCCL_P2P_DISABLE differs (base '', new '1')") != std::string::npos);
    CHECK(o.warnings[2].find("interrupted") != std::string::npos);
}

TEST_CASE("duplicate keys are refused") {
    const auto dup = load("bad/duplicate_key.json");
    const auto base = load("base.json");
    CHECK_THROWS_AS(compare_reports(typed(base), typed(dup), {}), UsageError);
    CHECK_THROWS_AS(compare_reports(typed(dup), typed(base), {}), UsageError);
    CHECK_THROWS_AS(check_unique_keys(typed(dup), "dup.json"), UsageError);
}

TEST_CASE("different hardware: refused unless cross-machine, fingerprint hardware first") {
    const auto base = load("base.json"), other = load("other_machine.json");
    const auto diffs = compare_fingerprints(read_header(base), read_header(other));
    REQUIRE(diffs.size() == 2);
    CHECK(diffs[0].field == "GPU count");
    CHECK(diffs[0].hardware);
    CHECK(diffs[1].field == "NCCL");
    CHECK_FALSE(diffs[1].hardware);
    CHECK_THROWS_AS(compare_reports(typed(base), typed(other), {}), UsageError);
    try {
        (void)compare_reports(typed(base), typed(other), {});
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()).find("different hardware") != std::string::npos);
        CHECK(e.hint().find("--cross-machine") != std::string::npos);
    }
    CompareOptions cross;
    cross.cross_machine = true;
    const auto o = compare_reports(typed(base), typed(other), cross);
    CHECK(o.cross_machine);
    CHECK(o.fingerprint.size() == 2);
    CHECK(o.count(Verdict::regression) == 0);

    // A software-only difference never refuses.
    auto newer_driver = base;
    newer_driver["software"]["driver_release"] = "999.1";
    CHECK_NOTHROW(compare_reports(typed(base), typed(newer_driver), {}));
    // Facts only one report holds are no difference (a run without topology discovery).
    auto no_topology = base;
    no_topology["topology"] = nullptr;
    CHECK(compare_fingerprints(read_header(base), read_header(no_topology)).empty());
}

TEST_CASE("fingerprint reads GPUs, PCIe, NVLinks and pair paths") {
    json report = {{"devices", json::array({{{"ordinal", 0}, {"name", "NVIDIA H200"},
                                             {"pcie", {{"gen_max", 5}, {"width_max", 16}}}}})},
                   {"topology", {{"gpus", json::array({{{"label", "GPU0"},
                                                        {"nvlink", {{"known", true}, {"active", 18},
                                                                    {"links", json::array({1, 2, 3})}}}}})},
                                 {"pairs", json::array({{{"label", "GPU0>GPU1"}, {"class", "NV18"}}})}}},
                   {"software", {{"driver_release", "580.159.04"}, {"cuda_driver", "13.0"}, {"nccl", "2.28.3"}}}};
    const auto fp = fingerprint(read_header(report));
    CHECK(fp.at("GPU0 model").first == "NVIDIA H200");
    CHECK(fp.at("GPU0 PCIe").first == "Gen5 x16");
    CHECK(fp.at("GPU0 NVLinks").first == "3");
    CHECK(fp.at("GPU0 NVLinks").second);
    CHECK(fp.at("GPU0 NVLinks active").first == "18");
    CHECK_FALSE(fp.at("GPU0 NVLinks active").second);
    CHECK(fp.at("GPU0>GPU1 path").first == "NV18");
    CHECK(fp.at("NCCL").first == "2.28.3");
    auto degraded = report;
    degraded["topology"]["gpus"][0]["nvlink"]["active"] = 12;
    const auto d = compare_fingerprints(read_header(report), read_header(degraded));
    REQUIRE(d.size() == 1);
    CHECK_FALSE(d[0].hardware); // links down: shown, and the figures are still gated
    auto other_path = report;
    other_path["topology"]["pairs"][0]["class"] = "SYS";
    CHECK(compare_fingerprints(read_header(report), read_header(other_path)).at(0).hardware);
}

TEST_CASE("cross-machine comparisons add efficiency against the path bandwidth") {
    auto base = load("base.json"), other = load("other_machine.json");
    base["results"][0]["details"]["efficiency"] = 0.8;
    base["results"][0]["details"]["path"] = "PCIe";
    other["results"][0]["details"]["efficiency"] = 0.6;
    other["results"][0]["details"]["path"] = "PCIe";
    CompareOptions cross;
    cross.cross_machine = true;
    const auto o = compare_reports(typed(base), typed(other), cross);
    const auto& r = o.results[0];
    const auto e = std::find_if(r.metrics.begin(), r.metrics.end(), [](const MetricComparison& m) { return m.name == "efficiency"; });
    REQUIRE(e != r.metrics.end());
    CHECK(e->gated);
    CHECK(e->ratio == doctest::Approx(0.75));
    CHECK(e->ci_lo <= e->ratio);
    CHECK(e->ratio <= e->ci_hi);
    // Without --cross-machine efficiency is not compared.
    const auto same = compare_reports(typed(base), typed(base), {});
    CHECK(same.results[0].metrics.size() == 2);
}

TEST_CASE("confirmations keep only regressions that every re-run repeats") {
    const auto base = load("base.json"), slower = load("regression.json");
    Result slow_result, base_result;
    for (const auto& r : slower["results"])
        if (r["key"] == k_regressed) slow_result = r.get<Result>();
    for (const auto& r : base["results"])
        if (r["key"] == k_regressed) base_result = r.get<Result>();
    auto confirmed = compare_reports(typed(base), typed(slower), {});
    apply_confirmations(confirmed, typed(base), {{k_regressed, {slow_result, slow_result}}}, {});
    CHECK(find(confirmed, k_regressed).verdict == Verdict::regression);
    CHECK(find(confirmed, k_regressed).reason.find("confirmed by 2 of 2") != std::string::npos);

    auto refuted = compare_reports(typed(base), typed(slower), {});
    apply_confirmations(refuted, typed(base), {{k_regressed, {slow_result, base_result}}}, {});
    CHECK(find(refuted, k_regressed).verdict == Verdict::inconclusive);
    CHECK(find(refuted, k_regressed).reason.find("1 of 2") != std::string::npos);
    CHECK(refuted.count(Verdict::regression) == 0);
    CHECK(compare_exit_code(refuted, false) == ExitCode::ok);

    // A noisy result whose re-runs all agree takes their verdict.
    const auto noisy = load("noisy.json");
    Result tight;
    for (const auto& r : base["results"])
        if (r["key"] == k_noisy) tight = r.get<Result>();
    auto settled = compare_reports(typed(base), typed(noisy), {});
    apply_confirmations(settled, typed(base), {{k_noisy, {tight, tight, tight}}}, {});
    CHECK(find(settled, k_noisy).verdict == Verdict::unchanged);
}

TEST_CASE("output formats: table, markdown, json, junit") {
    const auto base = load("base.json"), slower = load("regression.json"), other = load("other_machine.json");
    CompareOptions cross;
    cross.cross_machine = true;
    auto o = compare_reports(typed(base), typed(slower), {});

    const auto table = rendered(o, "table");
    CHECK(table.find("Summary") != std::string::npos);
    CHECK(table.find("\nregression    " + k_regressed_label) != std::string::npos); // verdict column, then the result

    const auto with_machine = rendered(compare_reports(typed(base), typed(other), cross), "table");
    CHECK(with_machine.find("Machine differences") < with_machine.find("Summary")); // printed first

    // Markdown: every table has a header, a --- separator and rows with as many cells.
    const auto md = rendered(o, "markdown");
    std::istringstream lines(md);
    std::string line;
    std::vector<std::string> block;
    std::size_t tables = 0;
    auto check_block = [&] {
        if (block.empty()) return;
        ++tables;
        REQUIRE(block.size() >= 3);
        const auto cells = count_of(block[0], "|");
        CHECK(block[1].find("---") != std::string::npos);
        for (const auto& l : block) CHECK(count_of(l, "|") == cells);
        block.clear();
    };
    while (std::getline(lines, line)) {
        if (!line.empty() && line.front() == '|') {
            CHECK(line.back() == '|');
            block.push_back(line);
        } else {
            check_block();
        }
    }
    check_block();
    CHECK(tables >= 3); // summary, families, changed; unchanged inside <details>
    CHECK(md.find("<details>") != std::string::npos);

    const auto j = json::parse(rendered(o, "json"));
    CHECK(j["summary"]["counts"]["regression"] == 1);
    CHECK(j["results"].size() == o.results.size());
    CHECK(j["results"][0].contains("metrics"));

    const auto xml = rendered(o, "junit");
    std::string why;
    CHECK_MESSAGE(well_formed_xml(xml, why), why);
    CHECK(count_of(xml, "<testcase ") == o.results.size());
    CHECK(count_of(xml, "<failure ") == 1);
    CHECK(xml.find("failures=\"1\"") != std::string::npos);
    // Escaping: labels with markup characters stay well formed.
    const auto odd_xml = rendered(compare_reports(typed(base), typed(other), [] {
                                      CompareOptions c;
                                      c.cross_machine = true;
                                      c.base_label = "a<b>&\"c'\"";
                                      return c;
                                  }()),
                                  "junit");
    CHECK_MESSAGE(well_formed_xml(odd_xml, why), why);
    CHECK_FALSE(well_formed_xml("<a><b></a></b>", why)); // the checker itself rejects bad XML
    CHECK_FALSE(well_formed_xml("<a x=\"1 & 2\"/>", why));
}

TEST_CASE("the compare command: exit codes") {
    CHECK(run_cli("compare " + report_arg("base.json") + " " + report_arg("base.json")).code == 0);
    const auto reg = run_cli("compare --wide " + report_arg("base.json") + " " + report_arg("regression.json"));
    CHECK(reg.code == 1);
    CHECK(reg.out.find(k_regressed_label) != std::string::npos);
    CHECK(run_cli("compare " + report_arg("base.json") + " " + report_arg("regression.json") + " --threshold 15%").code == 0);
    CHECK(run_cli("compare " + report_arg("base.json") + " " + report_arg("noisy.json")).code == 0);
    CHECK(run_cli("compare " + report_arg("base.json") + " " + report_arg("noisy.json") + " --fail-on-inconclusive").code == 3);
    CHECK(run_cli("compare " + report_arg("base.json") + " " + report_arg("regression.json") + " --fail-on-inconclusive").code == 1);

    const auto refused = run_cli("compare " + report_arg("base.json") + " " + report_arg("other_machine.json"));
    CHECK(refused.code == 2);
    // One line naming the differences (and a hint), not a table before it.
    CHECK(refused.err.rfind("error: ", 0) == 0);
    CHECK(refused.err.find("GPU count") != std::string::npos);
    CHECK(refused.err.find("--cross-machine") != std::string::npos);
    const auto cross = run_cli("compare " + report_arg("base.json") + " " + report_arg("other_machine.json") + " --cross-machine");
    CHECK(cross.code == 0);
    CHECK(cross.out.find("GPU count") < cross.out.find("Summary"));
}

TEST_CASE("the compare command: formats and --out") {
    const auto dir = scratch_dir();
    const auto xml_path = (dir / "result.xml").string();
    const auto r = run_cli("compare " + report_arg("base.json") + " " + report_arg("regression.json") +
                       " --format junit --out '" + xml_path + "'");
    CHECK(r.code == 1);
    CHECK(r.out.find("Summary") != std::string::npos); // the table still goes to stdout
    std::string why;
    CHECK_MESSAGE(well_formed_xml(testing::slurp(xml_path), why), why);
    const auto j = run_cli("compare " + report_arg("base.json") + " " + report_arg("base.json") + " --format json");
    CHECK(j.code == 0);
    CHECK(json::parse(j.out)["summary"]["counts"]["regression"] == 0);
    const auto md = run_cli("compare " + report_arg("base.json") + " " + report_arg("base.json") + " --format markdown");
    CHECK(md.out.rfind("## interopbench compare", 0) == 0);
    const auto t = run_cli("compare " + report_arg("base.json") + " " + report_arg("regression.json") +
                       " --threshold host_memcpy.bandwidth=15% --threshold 5% --floor s=1us");
    CHECK(t.code == 0);
}

TEST_CASE("the compare command: every bad input is one error line and exit 2") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {report_arg("no_such_report.json"), "no such file"},
        {report_arg("bad/empty.json"), "is empty"},
        {report_arg("bad/truncated.json"), "not valid JSON"},
        {report_arg("bad/not_json.json"), "not valid JSON"},
        {report_arg("bad/other_schema.json"), "not an interopbench report"},
        {report_arg("bad/newer_major.json"), "newer"},
        {report_arg("bad/duplicate_key.json"), "twice"},
    };
    for (const auto& [arg, expect] : cases) {
        CAPTURE(arg);
        for (const auto& args : {"compare " + report_arg("base.json") + " " + arg, "compare " + arg + " " + report_arg("base.json")}) {
            const auto r = run_cli(args);
            CHECK(r.code == 2);
            CHECK(r.err.rfind("error: ", 0) == 0);
            CHECK(r.err.find(expect) != std::string::npos);
            CHECK(count_of(r.err, "\n") <= 2); // the error and its hint
            CHECK(r.out.empty());
        }
    }
    const std::vector<std::string> options = {"--format xml", "--threshold 5", "--threshold fast", "--floor s=2xs",
                                              "--floor nounit", "--out /nonexistent-dir/x.json"};
    for (const auto& opt : options) {
        CAPTURE(opt);
        const auto r = run_cli("compare " + report_arg("base.json") + " " + report_arg("base.json") + " " + opt);
        CHECK(r.code == 2);
        CHECK(r.err.rfind("error: ", 0) == 0);
    }
    CHECK(run_cli("compare " + report_arg("base.json")).code == 2); // one report only
}

TEST_CASE("run --baseline: bad baselines fail before measuring, a run compares with its baseline") {
    const std::string run = "run --scenario host_memcpy --size 4K --axis threads=single --max-time 0.05 --min-samples 5 ";
    auto r = run_cli(run + "--baseline " + report_arg("no_such_report.json"));
    CHECK(r.code == 2);
    CHECK(r.err.find("no such file") != std::string::npos);
    CHECK(r.out.empty()); // nothing was measured
    r = run_cli(run + "--baseline " + report_arg("bad/duplicate_key.json"));
    CHECK(r.code == 2);
    CHECK(r.err.find("twice") != std::string::npos);
    r = run_cli(run + "--baseline " + report_arg("other_machine.json"));
    CHECK(r.code == 2);
    CHECK(r.err.find("different hardware") != std::string::npos);
    CHECK(run_cli(run + "--baseline " + report_arg("base.json") + " --confirm -1").code == 2);
    r = run_cli(run + "--baseline " + report_arg("base.json") + " --threshold 5");
    CHECK(r.code == 2);
    CHECK(r.out.empty()); // a bad threshold fails before measuring
    CHECK(run_cli(run + "--confirm 2").code == 2);     // needs --baseline
    CHECK(run_cli(run + "--threshold 5%").code == 2); // needs --baseline

    const auto first = (scratch_dir() / "first.json").string();
    REQUIRE(run_cli(run + "--out '" + first + "' -q").code == 0);
    // A threshold of 1000% cannot be crossed: the gate passes whatever this machine's noise.
    r = run_cli(run + "--baseline '" + first + "' --confirm 1 --threshold 1000%");
    CHECK(r.code == 0);
    CHECK(r.out.find("Summary") != std::string::npos);
    CHECK(r.out.find("host_memcpy 4KiB single") != std::string::npos);
}

} // TEST_SUITE

TEST_CASE("two units of one metric are not compared, and the gate cannot pass on them") {
    const auto base = load("base.json");
    auto fresh = base;
    fresh["results"][0]["metrics"][0]["unit"] = "s";
    const auto o = compare_reports(typed(base), typed(fresh), {});
    const std::string key = base["results"][0]["key"];
    const ResultComparison* rc = nullptr;
    for (const auto& r : o.results)
        if (r.key == key) rc = &r;
    REQUIRE(rc);
    REQUIRE(!rc->metrics.empty());
    CHECK(rc->metrics[0].note.find("units differ") != std::string::npos);
    CHECK_FALSE(rc->metrics[0].has_ratio);
    CHECK(rc->verdict != Verdict::unchanged);
}

TEST_CASE("the compare command: 200 baseline files are pooled, and the regression is still the one found") {
    // Each baseline a report of one build (here the same one, copied): read one at a time,
    // pooled, judged once. The verdict is that of one baseline.
    const auto dir = scratch_dir() / "two-hundred";
    std::filesystem::create_directories(dir);
    std::string args = "compare";
    for (int i = 0; i < 200; ++i) {
        const auto p = dir / fmt::format("base-{:03}.json", i);
        std::filesystem::copy_file(k_dir + "base.json", p, std::filesystem::copy_options::overwrite_existing);
        args += " '" + p.string() + "'";
    }
    const auto reg = run_cli(args + " --wide " + report_arg("regression.json"));
    CAPTURE(reg.err);
    CHECK(reg.code == 1);
    CHECK(reg.out.rfind("FAIL: 1 regression", 0) == 0);
    CHECK(reg.out.find(k_regressed_label) != std::string::npos);
    CHECK(reg.out.find("(+199 more)") != std::string::npos);
    CHECK(run_cli(args + " " + report_arg("base.json")).code == 0);
}
