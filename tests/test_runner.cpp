#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "families/builtin.hpp"
#include "fake_scenario.hpp"
#include "test_support.hpp"
#include "interopbench/runner.hpp"

using namespace interopbench;
using testing::FakeBehaviour;
using testing::FakeScenario;

namespace {

Registry fake_registry(FakeBehaviour b = {}) {
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_one", b));
    r.add(std::make_unique<FakeScenario>("fake_two", b));
    return r;
}

RunSettings fast() {
    RunSettings s = testing::sampling(1, 5, 20, 5, 0.01);
    s.rounds = 1; // rounds are tested in test_rounds.cpp
    return s;
}

} // namespace

TEST_CASE("axis expansion: defaults, overrides, products, duplicates") {
    const Registry r = fake_registry();
    Machine m;
    RunPlan plan;
    plan.entries.push_back({"fake_one", {}});
    auto configs = expand_plan(r, plan, m);
    REQUIRE(configs.size() == 2);
    CHECK(configs[0].key() == "fake_one/size=1024,mode=a");
    CHECK(configs[1].key() == "fake_one/size=2048,mode=a");

    plan.entries = {{"fake_*", {{"size", {"4K:16K"}}, {"mode", {"a,b"}}}}, {"fake_one", {{"size", {"4K"}}}}};
    configs = expand_plan(r, plan, m);
    CHECK(configs.size() == 12); // 2 scenarios x 3 sizes x 2 modes; the second entry repeats
    CHECK(configs[1].key() == "fake_one/size=4096,mode=b");

    plan.entries = {{"fake_one", {{"mode", {"all"}}}}};
    CHECK(expand_plan(r, plan, m).size() == 4);
}

TEST_CASE("axis expansion rejects bad values") {
    const Registry r = fake_registry();
    Machine m;
    RunPlan plan;
    plan.entries = {{"fake_one", {{"mode", {"c"}}}}};
    CHECK_THROWS_AS(expand_plan(r, plan, m), UsageError);
    plan.entries = {{"fake_one", {{"colour", {"red"}}}}};
    CHECK_THROWS_AS(expand_plan(r, plan, m), UsageError);
    plan.entries = {{"fake_one", {{"size", {"0"}}}}};
    CHECK_THROWS_AS(expand_plan(r, plan, m), UsageError);
    plan.entries = {{"nope", {}}};
    CHECK_THROWS_AS(expand_plan(r, plan, m), UsageError);
}

TEST_CASE("device axes default to the selected GPUs and validate ordinals") {
    const Machine m = testing::fake_machine(2, 0);
    const Registry reg = builtin_registry();
    RunPlan plan;
    plan.entries = {{"h2d_copy", {{"size", {"1M"}}, {"host_mem", {"pinned"}}}}};
    auto configs = expand_plan(reg, plan, m);
    REQUIRE(configs.size() == 2);
    CHECK(configs[1].params.get("device") == "1");
    plan.entries = {{"h2d_copy", {{"device", {"7"}}}}};
    CHECK_THROWS_AS(expand_plan(reg, plan, m), UsageError);
}

TEST_CASE("stopping rule") {
    RunSettings s = fast();
    CHECK(stop_reason(s, {1, 1, 1}, 0.1).empty()); // below min_samples
    CHECK(stop_reason(s, {1, 1, 1, 1, 1}, 0.1).empty()); // too few for an interval
    CHECK(stop_reason(s, {1, 1, 1, 1, 1, 1}, 0.1) == "converged");
    RunSettings one = s;
    one.min_samples = 1;
    CHECK(stop_reason(one, {1}, 0.1).empty()); // one sample is no evidence of low noise
    CHECK(stop_reason(s, {1, 2, 1, 2, 1, 2}, 0.1).empty()); // noisy
    CHECK(stop_reason(s, {1, 2, 1, 2, 1}, 10) == "time_budget");
    CHECK(stop_reason(s, std::vector<double>(20, 1.0), 0) == "max_samples");
}

TEST_CASE("runner records ok, skipped and failed and goes on") {
    FakeBehaviour b;
    b.unsupported = [](const Params& p) -> std::optional<std::string> {
        if (p.get("size") == "2048") return std::string("too big here");
        return std::nullopt;
    };
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_ok", b));
    FakeBehaviour bad;
    bad.check = [] { throw CheckFailed("3 words differ"); };
    r.add(std::make_unique<FakeScenario>("fake_bad", bad));
    FakeBehaviour throws;
    throws.prepare = [](const Params&) { throw ConfigError("cannot allocate"); };
    r.add(std::make_unique<FakeScenario>("fake_throw", throws));

    Machine m;
    RunPlan plan;
    plan.entries = {{"fake_*", {}}};
    plan.settings = fast();
    const auto results = testing::run_plan(r, plan, m);
    REQUIRE(results.size() == 6);
    CHECK(results[0].status == Status::ok);
    CHECK(results[0].stop_reason == "converged");
    CHECK(results[0].metrics[0].stats.n == 6);
    CHECK(results[0].warmup_samples == 1);
    CHECK(results[0].details["calls"] == 7);
    CHECK(results[1].status == Status::skipped);
    CHECK(results[1].reason == "too big here");
    CHECK(results[2].status == Status::failed);
    CHECK(results[2].reason.find("verification failed: 3 words differ") == 0);
    CHECK(results[4].status == Status::failed);
    CHECK(results[4].reason == "cannot allocate");
}

TEST_CASE("a noisy case stops at max_samples, and a fatal error stops the run") {
    FakeBehaviour noisy;
    noisy.sample = [](int i) { return Sample{i % 2 ? 100.0 : 200.0, NAN}; };
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_noisy", noisy));
    FakeBehaviour fatal;
    fatal.sample = [](int) -> Sample { throw FatalDeviceError("illegal address"); };
    r.add(std::make_unique<FakeScenario>("fake_fatal", fatal));
    Machine m;
    RunPlan plan;
    plan.entries = {{"fake_noisy", {{"size", {"1K"}}}}, {"fake_fatal", {}}, {"fake_noisy", {{"size", {"8K"}}}}};
    plan.settings = fast();
    std::string why;
    const auto results = testing::run_plan(r, plan, m, &why);
    REQUIRE(results.size() == 2);
    CHECK(results[0].stop_reason == "max_samples");
    CHECK(results[0].metrics[1].stats.n == 0); // NaN metric left out
    CHECK(results[1].status == Status::failed);
    CHECK(why == "illegal address");
}

TEST_CASE("set-up comes on top of the sampling budget: a slow set-up still leaves the budget for samples") {
    // A set-up longer than the whole budget (creating a dataset's files, say) once left one
    // sample per round. The sleep is the set-up's length, not a timing assertion: every sample
    // here is immediate, so the full sample count fits any machine's budget.
    FakeBehaviour slow;
    slow.prepare = [](const Params&) { std::this_thread::sleep_for(std::chrono::milliseconds(400)); };
    slow.sample = [](int i) { return Sample{i % 2 ? 100.0 : 200.0, NAN}; }; // never converges
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_slow_setup", slow));
    Machine m;
    RunPlan plan;
    plan.entries = {{"fake_slow_setup", {{"size", {"1K"}}}}};
    plan.settings = testing::sampling(2, 5, 20, 0.3, 0.01);
    plan.settings.rounds = 1;
    const auto results = testing::run_plan(r, plan, m);
    REQUIRE(results.size() == 1);
    CHECK(results[0].warmup_samples == 2);
    CHECK(results[0].stop_reason == "max_samples");
    CHECK(results[0].metrics[0].samples.size() == 20);
}

TEST_CASE("interruption keeps finished results") {
    FakeBehaviour b;
    b.sample = [](int i) {
        if (i == 3) g_interrupted = true;
        return Sample{100.0 + i, 1.0};
    };
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_int", b));
    Machine m;
    RunPlan plan;
    plan.entries = {{"fake_int", {}}};
    plan.settings = fast();
    const auto results = testing::run_plan(r, plan, m);
    g_interrupted = false;
    REQUIRE(results.size() == 1);
    CHECK(results[0].status == Status::interrupted);
    CHECK(results[0].stop_reason == "interrupted");
}

TEST_CASE("settings from JSON and validation") {
    RunSettings s;
    s.apply_json({{"warmup", 2}, {"noise", 0.01}, {"bind_numa", false}}, "test");
    CHECK(s.warmup == 2);
    CHECK(s.noise == 0.01);
    CHECK_FALSE(s.bind_numa);
    CHECK_THROWS_AS(s.apply_json({{"warmpu", 2}}, "test"), UsageError);
    CHECK_THROWS_AS(s.apply_json({{"warmup", "2"}}, "test"), UsageError);
    s.min_samples = 10;
    s.max_samples = 5;
    CHECK_THROWS_AS(s.validate(), UsageError);
}
