// Rounds (each a fresh process) and the gate between processes: the budget split, the
// pooling of rounds and of several baselines, the spread the gate allows for, Student's t,
// recorded report pairs (no false alarm; a 10% slowdown caught where the spread allows),
// and the command line.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "interopbench/compare.hpp"
#include "presentation/output.hpp"
#include "interopbench/report.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/stats.hpp"
#include "fake_scenario.hpp"
#include "test_support.hpp"
#include "presentation/comparison.hpp"
#include "presentation/formats.hpp"

using namespace interopbench;
using nlohmann::json;

namespace {

const std::string k_reports = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/";
const std::string k_key = "host_memcpy/size=262144,threads=multi";

/// A report document these tests load or build and then edit, read as the tool reads one.
Report typed(const json& doc) { return read_report_json(doc, "test report"); }

// A result of `base.json` with `rounds` rounds of samples around the given medians
// (relative jitter 0.2% within a round).
json with_rounds(json report, const std::string& key, const std::vector<double>& medians) {
    for (auto& r : report["results"]) {
        if (r["key"] != key) continue;
        auto& m = r["metrics"][0];
        std::vector<double> samples, meds;
        for (double med : medians) {
            for (int i = 0; i < 8; ++i) samples.push_back(med * (1 + 0.002 * ((i % 5) - 2)));
            meds.push_back(med);
        }
        m["samples"] = samples;
        m["round_medians"] = medians.size() > 1 ? json(meds) : json::array();
        m["stats"] = compute_stats(samples);
        r["rounds"] = static_cast<int>(medians.size());
    }
    return report;
}

const ResultComparison& result(const CompareOutcome& o, const std::string& key) {
    for (const auto& r : o.results)
        if (r.key == key) return r;
    FAIL("no result " << key);
    throw std::logic_error("unreachable");
}

// Every metric scaled by 0.9 in its bad direction (bandwidth x 0.9, time / 0.9).
json slowed(json report) {
    for (auto& r : report["results"])
        for (auto& m : r["metrics"]) {
            const double f = m.value("better", std::string("higher")) == "lower" ? 1 / 0.9 : 0.9;
            for (auto& v : m["samples"])
                if (v.is_number()) v = v.get<double>() * f;
            if (m.contains("round_medians"))
                for (auto& v : m["round_medians"]) v = v.get<double>() * f;
            for (auto& [k, v] : m["stats"].items())
                if (v.is_number_float()) v = v.get<double>() * f;
        }
    return report;
}

// Every fake_* scenario at 1 KiB, three samples a round, no warm-up.
RunPlan fake_plan(double max_time_s, int rounds) {
    RunPlan plan;
    plan.entries = {{"fake_*", {{"size", {"1K"}}}}};
    plan.settings.warmup = 0;
    plan.settings.min_samples = plan.settings.max_samples = 3;
    plan.settings.max_time_s = max_time_s;
    plan.settings.sample_time_s = 0.001;
    plan.settings.rounds = rounds;
    return plan;
}

} // namespace

TEST_CASE("Student's t quantiles match the tables") {
    CHECK(student_t_quantile(0.975, 1) == doctest::Approx(12.7062).epsilon(1e-4));
    CHECK(student_t_quantile(0.975, 2) == doctest::Approx(4.3027).epsilon(1e-4));
    CHECK(student_t_quantile(0.975, 4) == doctest::Approx(2.7764).epsilon(1e-4));
    CHECK(student_t_quantile(0.975, 30) == doctest::Approx(2.0423).epsilon(1e-4));
    CHECK(student_t_quantile(0.5, 7) == doctest::Approx(0).epsilon(1e-9));
    CHECK(student_t_quantile(0.025, 4) == doctest::Approx(-2.7764).epsilon(1e-4));
    CHECK(std::isnan(student_t_quantile(1.5, 3)));
    CHECK(std::isnan(student_t_quantile(0.9, 0)));
}

TEST_CASE("rounds share the sample budget, at least three samples each") {
    RunSettings s;
    s.rounds = 3;
    s.min_samples = 20;
    s.max_samples = 200;
    s.max_time_s = 3;
    const RunSettings r = s.per_round();
    CHECK(r.rounds == 1);
    CHECK(r.min_samples == 7);
    CHECK(r.max_samples == 67);
    CHECK(r.max_time_s == doctest::Approx(1.0));
    s.min_samples = 2;
    s.max_samples = 4;
    CHECK(s.per_round().min_samples == 3);
    CHECK(s.per_round().max_samples == 3);
    s.rounds = 1;
    CHECK(s.per_round().min_samples == 2);
    s.rounds = 0;
    CHECK_THROWS_AS(s.validate(), UsageError);
    s.rounds = 101;
    CHECK_THROWS_AS(s.validate(), UsageError);
    RunSettings fromjson;
    fromjson.apply_json(json{{"rounds", 5}}, "test");
    CHECK(fromjson.rounds == 5);
    CHECK_THROWS_AS(fromjson.apply_json(json{{"rounds", "many"}}, "test"), UsageError);
}

TEST_CASE("merge_rounds pools the rounds that ended ok and records their medians") {
    auto make = [](const std::string& key, Status st, std::vector<double> v) {
        Result r;
        r.key = key;
        r.status = st;
        r.reason = st == Status::ok ? "" : "device lost";
        r.wall_time_s = 1;
        r.metrics.push_back(MetricResult{{"bandwidth", "B/s", Better::higher, ""}, compute_stats(v), v, {}});
        return r;
    };
    std::vector<std::vector<Result>> rounds = {
        {make("a", Status::ok, {10, 11, 12}), make("b", Status::ok, {5, 5, 5}), make("c", Status::skipped, {})},
        {make("b", Status::failed, {}), make("a", Status::ok, {20, 21, 22})},
        {make("a", Status::ok, {30, 31, 32}), make("b", Status::ok, {6, 6, 6})},
    };
    const auto merged = merge_rounds(rounds);
    REQUIRE(merged.size() == 3);
    CHECK(merged[0].rounds == 3);
    CHECK(merged[0].metrics[0].samples.size() == 9);
    CHECK(merged[0].metrics[0].round_medians == std::vector<double>{11, 21, 31});
    CHECK(merged[0].metrics[0].stats.median == 21);
    CHECK(merged[0].wall_time_s == doctest::Approx(3));
    CHECK(merged[1].rounds == 2); // the failed round is named, not pooled
    CHECK(merged[1].metrics[0].round_medians == std::vector<double>{5, 6});
    REQUIRE(merged[1].details.contains("rounds_not_ok"));
    CHECK(merged[1].details["rounds_not_ok"][0].get<std::string>().find("device lost") != std::string::npos);
    CHECK(merged[2].status == Status::skipped);
    CHECK(merged[2].rounds == 1);
    // A result's round medians survive the report.
    json j = merged[0];
    CHECK(j["rounds"] == 3);
    const Result back = j.get<Result>();
    CHECK(back.metrics[0].round_medians == std::vector<double>{11, 21, 31});
}

TEST_CASE("the gate allows for the spread between rounds") {
    const json base = load_report(k_reports + "base.json");
    // base.json with k_key's rounds at the medians `before`, compared with the same at `after`.
    const auto compare_rounds = [&](const std::vector<double>& before, const std::vector<double>& after) {
        return compare_reports(typed(with_rounds(base, k_key, before)), typed(with_rounds(base, k_key, after)), {});
    };
    SUBCASE("a shift inside the rounds' spread is not a regression, and it is marked noisy") {
        const auto o = compare_rounds({100e9, 120e9, 90e9}, {85e9, 95e9, 80e9});
        const auto& r = result(o, k_key);
        CHECK(r.verdict != Verdict::regression);
        REQUIRE(!r.metrics.empty());
        CHECK(r.metrics[0].noisy);
        CHECK(r.metrics[0].noise == doctest::Approx(0.30).epsilon(0.01));
        CHECK(r.metrics[0].threshold >= r.metrics[0].noise);
        CHECK(r.metrics[0].base_rounds == 3);
        CHECK(find_format("table", Command::compare).render(ComparisonView{o, {}}).find("noisy") != std::string::npos);
        CHECK(comparison_json(o).dump().find("\"noisy\":true") != std::string::npos);
    }
    SUBCASE("a 10% slowdown of stable rounds is a regression") {
        const auto o = compare_rounds({100e9, 100.5e9, 99.7e9}, {90e9, 90.3e9, 89.8e9});
        const auto& r = result(o, k_key);
        CHECK(r.verdict == Verdict::regression);
        CHECK_FALSE(r.metrics[0].noisy);
        CHECK(r.metrics[0].detectable < 0.10);
    }
    SUBCASE("within one process the samples agree, between rounds they do not: the interval widens") {
        // The samples alone would call this -8% a regression (tight rounds of 8 samples
        // each); the round medians say the figure moves by 6% between processes.
        const auto o = compare_rounds({100e9, 106e9, 103e9}, {94e9, 97.5e9, 93e9});
        const auto& r = result(o, k_key);
        CHECK(r.verdict != Verdict::regression);
        CHECK(r.metrics[0].ci_hi > 0.95);
    }
    SUBCASE("rounds on one side only still widen the interval") {
        const auto o = compare_rounds({100e9}, {100e9, 130e9, 80e9});
        const auto& r = result(o, k_key);
        CHECK(r.metrics[0].base_rounds == 0);
        CHECK(r.metrics[0].new_rounds == 3);
        CHECK(r.verdict != Verdict::regression);
    }
}

TEST_CASE("several baselines pool into one whose spread is the noise") {
    const json base = load_report(k_reports + "base.json");
    const auto b1 = with_rounds(base, k_key, {100e9});
    const auto b2 = with_rounds(base, k_key, {120e9});
    const auto b3 = with_rounds(base, k_key, {95e9, 97e9});
    const Report pooled = pool_baselines({typed(b1), typed(b2), typed(b3)}, {"b1", "b2", "b3"});
    const auto& results = pooled.results;
    const auto it = std::find_if(results.begin(), results.end(), [](const Result& r) { return r.key == k_key; });
    REQUIRE(it != results.end());
    CHECK(it->metrics[0].round_medians.size() == 4);
    CHECK(it->metrics[0].samples.size() == 32);
    CHECK(it->rounds == 4);
    CHECK(it->details["baseline_reports"] == 3);
    // 112 is within what moved between the baselines: not a change.
    const auto outcome4 = compare_reports(pooled, typed(with_rounds(base, k_key, {112e9})), {});
    const auto& r = result(outcome4, k_key);
    CHECK(r.metrics[0].noisy);
    CHECK(r.verdict != Verdict::regression);
    CHECK(r.verdict != Verdict::improvement);
    // One report is itself.
    CHECK(report_document(pool_baselines({typed(base)}, {"b"})) == report_document(typed(base)));
    CHECK_THROWS_AS(pool_baselines({typed(base), read_report(k_reports + "other_machine.json")}, {"b", "o"}), UsageError);
    CHECK_THROWS_AS(pool_baselines({}, {}), UsageError);
}

TEST_CASE("recorded pairs of one build: no false regression / a 10% slowdown caught where the spread allows") {
    // Back-to-back runs of one binary on one machine (tests/data/reports/rounds/README.md).
    const std::filesystem::path dir = k_reports + "rounds";
    std::vector<std::string> runs;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".json") runs.push_back(e.path().string());
    std::sort(runs.begin(), runs.end());
    REQUIRE(runs.size() >= 2);
    std::size_t stable = 0, caught = 0, compared = 0;
    for (std::size_t i = 0; i + 1 < runs.size(); ++i) {
        // A pair: two files of one series ("NAME-0.json", "NAME-1.json").
        const auto series = [](const std::string& p) { return p.substr(0, p.rfind('-')); };
        if (series(runs[i]) != series(runs[i + 1])) continue;
        const json a = load_report(runs[i]), b = load_report(runs[i + 1]);
        CAPTURE(runs[i]);
        const auto same = compare_reports(typed(a), typed(b), {});
        for (const auto& r : same.results) {
            CAPTURE(r.key);
            CAPTURE(r.reason);
            CHECK(r.verdict != Verdict::regression);
        }
        const auto slow = compare_reports(typed(a), typed(slowed(b)), {});
        for (const auto& r : slow.results) {
            if (r.metrics.empty() || !r.metrics.front().has_ratio || !r.metrics.front().gated) continue;
            const auto& m = r.metrics.front();
            ++compared;
            if (m.detectable > 0.10) continue;
            ++stable;
            caught += r.verdict == Verdict::regression;
            // What the pair itself moved adds to the slowdown or takes from it: a result that
            // is not caught moved by less than it could detect.
            const double moved = m.better == Better::higher ? 1 - m.ratio : m.ratio - 1;
            CAPTURE(r.key);
            CAPTURE(r.reason);
            if (r.verdict != Verdict::regression) CHECK(moved < m.detectable + 1e-9);
        }
    }
    CHECK(compared > 0);
    CHECK(stable > 0);
    CHECK(caught * 10 >= stable * 9);
    MESSAGE(fmt::format("recorded pairs: {} of {} compared results could detect a 10% change; {} caught", stable, compared,
                        caught));
}

TEST_CASE("a really slower path stays a regression: pageable instead of pinned, recorded on an H200") {
    // The pinned copies of one run against the pageable copies of the next, under the pinned
    // keys: what a build that lost its pinned buffers would report.
    const json a = load_report(k_reports + "rounds/h200x1-quick-0.json");
    json b = load_report(k_reports + "rounds/h200x1-quick-1.json");
    json base = a, fresh = b;
    base["results"] = json::array();
    fresh["results"] = json::array();
    auto copy = [](const json& r) { return r["scenario"] == "h2d_copy" || r["scenario"] == "d2h_copy"; };
    for (const auto& r : a["results"])
        if (copy(r) && r["key"].get<std::string>().find("host_mem=pinned") != std::string::npos) base["results"].push_back(r);
    for (auto r : b["results"]) {
        if (!copy(r)) continue;
        std::string key = r["key"].get<std::string>();
        const auto at = key.find("host_mem=pageable");
        if (at == std::string::npos) continue;
        key.replace(at, 17, "host_mem=pinned");
        r["key"] = key;
        r["params"]["host_mem"] = "pinned";
        fresh["results"].push_back(r);
    }
    REQUIRE(base["results"].size() >= 2);
    const auto o = compare_reports(typed(base), typed(fresh), {});
    CHECK(o.count(Verdict::regression) == base["results"].size());
}

TEST_CASE("run --rounds measures in new processes and records the round medians") {
    const auto dir = testing::scratch("rounds-cli");
    const std::string out = (dir / "r.json").string();
    const std::string cmd = fmt::format("'{}' run --scenario host_memcpy --size 64K --axis threads=single --max-time 0.3 "
                                        "--min-samples 6 --rounds 2 -q --out '{}' > '{}' 2>&1",
                                        INTEROPBENCH_BINARY, out, (dir / "log").string());
    const int rc = interopbench::testing::run_shell(cmd);
    INFO(testing::slurp(dir / "log"));
    REQUIRE(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 0);
    const json rep = load_report(out);
    REQUIRE(rep["results"].size() == 1);
    CHECK(rep["results"][0]["rounds"] == 2);
    CHECK(rep["results"][0]["metrics"][0]["round_medians"].size() == 2);
    CHECK(rep["invocation"]["settings"]["rounds"] == 2);
    // No round file is left behind.
    // No round file of this run is left behind (nor of a killed earlier one: they are swept).
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
        CAPTURE(e.path().string());
        CHECK(e.path().filename().string().rfind("interopbench-round-", 0) != 0);
    }
    for (const char* bad : {"--rounds 0", "--rounds 101", "--rounds x"}) {
        const int code = interopbench::testing::run_shell(fmt::format("'{}' run --scenario host_memcpy --size 4K {} > /dev/null 2>&1",
                                                 INTEROPBENCH_BINARY, bad));
        CHECK(WEXITSTATUS(code) == 2);
    }
    // compare takes several baselines; the last report is the new one.
    const int three = interopbench::testing::run_shell(fmt::format("'{0}' compare '{1}' '{1}' '{1}' > /dev/null 2>&1", INTEROPBENCH_BINARY, out));
    CHECK(WEXITSTATUS(three) == 0);
}

TEST_CASE("a really slower path stays a regression: collectives with NCCL_P2P_DISABLE, recorded on 2 x H200") {
    // reports/h200x2-ci-1.json and the same build's collectives with NCCL_P2P_DISABLE=1.
    const json base = load_report(INTEROPBENCH_SOURCE_DIR "/reports/h200x2-ci-1.json");
    const json slow = load_report(INTEROPBENCH_SOURCE_DIR "/reports/h200x2-ci-nccl-p2p-disabled.json");
    const auto o = compare_reports(typed(base), typed(slow), {});
    std::size_t collectives = 0, regressions = 0;
    for (const auto& r : o.results) {
        if (r.scenario.rfind("nccl_", 0) != 0 || r.verdict == Verdict::missing || r.verdict == Verdict::added) continue;
        ++collectives;
        regressions += r.verdict == Verdict::regression;
        CAPTURE(r.key);
        CAPTURE(r.reason);
        CHECK(r.verdict == Verdict::regression);
    }
    CHECK(collectives >= 4);
    CHECK(regressions == collectives);
}

TEST_CASE("the range of more rounds is rescaled to three before it sets the noise allowance") {
    CHECK(spread_as_three_rounds({100, 110, 105}) == doctest::Approx(relative_range({100, 110, 105})));
    CHECK(spread_as_three_rounds({100}) == 0);
    // Ten rounds of the same spread show a wider range; rescaled, it is about what three show.
    const std::vector<double> ten{100, 110, 105, 102, 108, 101, 109, 104, 106, 103};
    CHECK(spread_as_three_rounds(ten) < relative_range(ten) * 0.6);
    CHECK(spread_as_three_rounds(ten) == doctest::Approx(relative_range(ten) * 1.693 / 3.078));
}

TEST_CASE("a result of few samples is decided on its round medians when both sides have three") {
    // One long sample per round: too few samples for an interval within a round, but three
    // processes on each side that agree within 0.4%.
    const json base = load_report(k_reports + "base.json");
    auto one_per_round = [&](const std::vector<double>& medians) {
        json r = base;
        for (auto& x : r["results"]) {
            if (x["key"] != k_key) continue;
            auto& m = x["metrics"][0];
            m["samples"] = medians;
            m["round_medians"] = medians;
            m["stats"] = compute_stats(medians);
            x["rounds"] = static_cast<int>(medians.size());
        }
        return r;
    };
    const auto b = one_per_round({100e9, 100.3e9, 99.9e9});
    SUBCASE("the same figures: unchanged, with the reason") {
        const auto o = compare_reports(typed(b), typed(one_per_round({100.1e9, 99.8e9, 100.2e9})), {});
        const auto& r = result(o, k_key);
        CHECK(r.verdict == Verdict::unchanged);
        CHECK(r.metrics[0].note.find("decided on round medians (3 and 3 rounds)") != std::string::npos);
        CHECK(r.metrics[0].detectable < 0.10);
    }
    SUBCASE("10% slower in every round: a regression") {
        const auto o = compare_reports(typed(b), typed(one_per_round({90e9, 90.2e9, 89.9e9})), {});
        CHECK(result(o, k_key).verdict == Verdict::regression);
    }
    SUBCASE("two rounds are not enough: inconclusive, saying what would be") {
        const auto o = compare_reports(typed(b), typed(one_per_round({90e9, 90.2e9})), {});
        const auto& r = result(o, k_key);
        CHECK(r.verdict == Verdict::inconclusive);
        CHECK(r.reason.find("too few samples") != std::string::npos);
        CHECK(r.reason.find("3 rounds on each side") != std::string::npos);
    }
}

TEST_CASE("noisy results get extra rounds up to max_rounds, steady ones keep the planned rounds") {
    // Each prepare() is a new round here (no round processes in this test): the noisy
    // scenario alternates between 100 and 110 from round to round, the steady one does not.
    int prepared = 0;
    testing::FakeBehaviour noisy;
    noisy.prepare = [&](const Params&) { ++prepared; };
    noisy.sample = [&](int) { return Sample{prepared % 2 ? 100.0 : 110.0, 0.01}; };
    Registry reg;
    reg.add(std::make_unique<testing::FakeScenario>("fake_noisy", noisy));
    reg.add(std::make_unique<testing::FakeScenario>("fake_steady", testing::FakeBehaviour{}));
    RunPlan plan = fake_plan(1, 3);
    auto rounds_of = [](const std::vector<Result>& results, const std::string& scenario) {
        for (const auto& r : results)
            if (r.scenario == scenario) return r.rounds;
        return -1;
    };
    SUBCASE("max_rounds 6") {
        plan.settings.max_rounds = 6;
        const auto results = testing::run_plan(reg, plan, Machine{});
        CHECK(rounds_of(results, "fake_noisy") == 6);
        CHECK(rounds_of(results, "fake_steady") == 3);
        CHECK(plan.settings.to_json()["max_rounds"] == 6);
    }
    SUBCASE("no extra rounds by default") {
        const auto results = testing::run_plan(reg, plan, Machine{});
        CHECK(rounds_of(results, "fake_noisy") == 3);
        CHECK(plan.settings.to_json()["max_rounds"] == 3);
    }
    SUBCASE("out of range: a usage error") {
        plan.settings.max_rounds = 101;
        CHECK_THROWS_AS(plan.settings.validate(), UsageError);
    }
}

TEST_CASE("a configuration far over its time budget says where the time went") {
    // Setting up cannot be cut short: 1.5 s of it against a 0.1 s budget.
    testing::FakeBehaviour slow_setup;
    slow_setup.prepare = [](const Params&) { std::this_thread::sleep_for(std::chrono::milliseconds(1500)); };
    Registry reg;
    reg.add(std::make_unique<testing::FakeScenario>("fake_slow", slow_setup));
    reg.add(std::make_unique<testing::FakeScenario>("fake_quick", testing::FakeBehaviour{}));
    RunPlan plan = fake_plan(0.1, 1);
    const auto results = testing::run_plan(reg, plan, Machine{});
    REQUIRE(results.size() == 2);
    for (const auto& r : results) {
        CAPTURE(r.key);
        CAPTURE(r.details.dump());
        if (r.scenario == "fake_quick") {
            CHECK_FALSE(r.details.contains("overrun"));
            continue;
        }
        REQUIRE(r.details.contains("overrun"));
        const auto& o = r.details["overrun"];
        CHECK(o["budget_s"] == doctest::Approx(0.1));
        CHECK(o["setup_s"].get<double>() >= 1.5);
        CHECK(o["took_s"].get<double>() >= o["setup_s"].get<double>());
        CHECK(o["setup_s"].get<double>() + o["warmup_s"].get<double>() + o["sampling_s"].get<double>() +
                  o["finish_s"].get<double>() ==
              doctest::Approx(o["took_s"].get<double>()));
    }
    TableStyle style;
    style.width = 0;
    const std::string table = render_results(results, find_format("table", Command::show), style);
    CAPTURE(table);
    CHECK(table.find("of a 100 ms budget (setup ") != std::string::npos);
}

TEST_CASE("a checkpoint follows every round, with the rounds measured so far") {
    const auto dir = testing::scratch("round-checkpoints");
    const std::string out = (dir / "r.json").string();
    int prepared = 0;
    std::vector<std::pair<std::string, int>> seen; // status and rounds of the checkpoint found at each round's start
    testing::FakeBehaviour b;
    b.prepare = [&](const Params&) {
        ++prepared;
        if (prepared == 1 || !std::filesystem::exists(out)) return seen.emplace_back("none", 0), void();
        const json doc = load_report(out);
        seen.emplace_back(doc["invocation"]["status"].get<std::string>(), doc["results"][0].value("rounds", 1));
    };
    Registry reg;
    reg.add(std::make_unique<testing::FakeScenario>("fake_one", b));
    RunRecord rec;
    rec.plan.entries = {{"fake_one", {{"size", {"1K"}}}}};
    rec.plan.settings.warmup = 0;
    rec.plan.settings.min_samples = rec.plan.settings.max_samples = 3;
    rec.plan.settings.max_time_s = 1;
    rec.plan.settings.sample_time_s = 0.001;
    rec.plan.settings.rounds = 3;
    SessionOptions options;
    options.handle_signals = false;
    options.out = out;
    options.checkpoint_interval_s = 1e9; // only the per-round checkpoints
    const auto run = run_session(expand_plan(reg, rec.plan, Machine{}), rec, Machine{}, options);
    REQUIRE(seen.size() == 3);
    CHECK(seen[1] == std::pair<std::string, int>{"none", 0}); // nothing is written during round 1 here
    CHECK(seen[2] == std::pair<std::string, int>{"running", 2});
    CHECK(load_report(out)["invocation"]["status"] == "complete");
    CHECK(load_report(out)["results"][0]["rounds"] == 3);
}
