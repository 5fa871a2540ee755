// Progress while a run measures: the runner publishes the phase and samples of the
// configuration in progress (read from another thread, as the progress display's ticker
// reads them), a configuration past its time budget says so while it runs and in the table
// at any width, `run --progress=json` writes JSON lines that parse, in every round, and the
// estimate said before a run counts no time for configurations that will be skipped. No
// timing is asserted: each wait is for a state to be seen, with a generous deadline.
#include <doctest/doctest.h>


#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "fake_scenario.hpp"
#include "presentation/formats.hpp"
#include "presentation/output.hpp"
#include "test_support.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/session.hpp"

using namespace interopbench;
using namespace interopbench::testing;
namespace fs = std::filesystem;

namespace {

/// Reads a LiveProgress from a thread of its own, as a progress display does, and keeps
/// each state it sees that differs from the one before.
class Watcher {
public:
    explicit Watcher(const LiveProgress& live) : m_live(live), m_thread([this] { watch(); }) {}
    ~Watcher() {
        m_stop = true;
        m_thread.join();
    }
    /// Waits until a state seen satisfies `seen`, at most deadline_s(60); false past it.
    bool wait_for(const std::function<bool(const LiveProgress::Snapshot&)>& seen) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s(60));
        while (std::chrono::steady_clock::now() < until) {
            {
                const std::lock_guard lock(m_mutex);
                if (std::any_of(m_states.begin(), m_states.end(), seen)) return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        return false;
    }
    std::vector<LiveProgress::Snapshot> states() {
        const std::lock_guard lock(m_mutex);
        return m_states;
    }

private:
    void watch() {
        while (!m_stop) {
            const LiveProgress::Snapshot s = m_live.snapshot();
            {
                const std::lock_guard lock(m_mutex);
                const bool same = !m_states.empty() && m_states.back().configuration == s.configuration &&
                                  m_states.back().running == s.running && m_states.back().phase == s.phase &&
                                  m_states.back().samples == s.samples && m_states.back().past_budget() == s.past_budget();
                if (!same) m_states.push_back(s);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }

    const LiveProgress& m_live;
    std::mutex m_mutex;
    std::vector<LiveProgress::Snapshot> m_states;
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

RunRecord plan_of(const std::string& scenario, const std::string& sizes, double max_time_s) {
    RunRecord rec;
    rec.plan.entries = {{scenario, {{"size", {sizes}}}}};
    rec.plan.settings.warmup = 1;
    rec.plan.settings.min_samples = rec.plan.settings.max_samples = 3;
    rec.plan.settings.max_time_s = max_time_s;
    rec.plan.settings.sample_time_s = 0.001;
    rec.plan.settings.rounds = 1;
    return rec;
}

using Cli = CliRun;

} // namespace

TEST_SUITE("progress") {

TEST_CASE("the runner publishes the phase and samples of the configuration in progress, set-up then sampling") {
    LiveProgress live;
    Watcher watch(live);
    // The case goes on only once the watcher has seen it in set-up, then with its first sample.
    bool setup_seen = false, sample_seen = false;
    FakeBehaviour slow;
    slow.prepare = [&](const Params&) {
        setup_seen = watch.wait_for([](const auto& s) { return s.running && s.phase == Phase::setup; });
    };
    slow.sample = [&](int call) {
        if (call == 2) // after the warm-up sample and the first counted one
            sample_seen = watch.wait_for([](const auto& s) { return s.running && s.phase == Phase::sampling && s.samples == 1; });
        return Sample{100.0, 0.01};
    };
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_slow", slow));
    Machine m;
    RunRecord rec = plan_of("fake_slow", "1K", 60);
    const auto configs = expand_plan(r, rec.plan, m);
    REQUIRE(configs.size() == 1);
    std::vector<std::pair<std::size_t, std::size_t>> announced; // index, count
    SessionHooks hooks;
    hooks.live = &live;
    hooks.progress = [&](int round, int rounds, std::size_t index, const std::vector<Config>& round_configs) {
        CHECK(round == 1);
        CHECK(rounds == 1);
        announced.emplace_back(index, round_configs.size());
        CHECK(live.snapshot().configuration == 0); // announced before the runner starts it
    };
    SessionOptions options;
    options.handle_signals = false;
    const SessionResult run = run_session(configs, std::move(rec), m, options, hooks);
    REQUIRE(run.record.results.size() == 1);
    CHECK(run.record.results[0].status == Status::ok);
    CHECK(setup_seen);
    CHECK(sample_seen);
    CHECK(announced == std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}});
    // In order: set-up before sampling; once ended, the snapshot says so, with every sample.
    const auto states = watch.states();
    auto first = [&](Phase p) {
        return std::find_if(states.begin(), states.end(), [&](const auto& s) { return s.running && s.phase == p; }) - states.begin();
    };
    CHECK(first(Phase::setup) < first(Phase::sampling));
    CHECK(first(Phase::sampling) < static_cast<std::ptrdiff_t>(states.size()));
    const LiveProgress::Snapshot end = live.snapshot();
    CHECK_FALSE(end.running);
    CHECK(end.configuration == 1);
    CHECK(end.samples == 3);
    CHECK(end.max_samples == 3);
    CHECK(std::string(to_string(Phase::warmup)) == "warm-up");
}

TEST_CASE("a configuration past its time budget says so while it runs, and in the table at any width") {
    LiveProgress live;
    Watcher watch(live);
    // Setting up the 2K configuration lasts until the watcher has seen it past its budget.
    bool past_seen = false;
    FakeBehaviour slow;
    slow.prepare = [&](const Params& p) {
        if (p.get_uint("size") == 2048)
            past_seen = watch.wait_for([](const auto& s) { return s.running && s.phase == Phase::setup && s.past_budget(); });
    };
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_slow", slow));
    Machine m;
    RunRecord rec = plan_of("fake_slow", "1K,2K", 0.1);
    const auto configs = expand_plan(r, rec.plan, m);
    SessionHooks hooks;
    hooks.live = &live;
    SessionOptions options;
    options.handle_signals = false;
    const SessionResult run = run_session(configs, std::move(rec), m, options, hooks);
    CHECK(past_seen);
    const auto& results = run.record.results;
    REQUIRE(results.size() == 2);
    CHECK_FALSE(results[0].details.contains("overrun"));
    REQUIRE(results[1].details.contains("overrun"));
    CHECK(past_budget(results[1].wall_time_s, 0.1));
    CHECK(results[1].stop_reason == "max_samples"); // the set-up did not eat the sampling budget
    // The note says it in full at the default width and at a narrow one (where the note
    // column is cut: the whole note follows the table).
    for (std::size_t width : {std::size_t{100}, std::size_t{60}}) {
        CAPTURE(width);
        TableStyle style;
        style.width = width;
        const std::string table = render_results(results, find_format("table", Command::show), style);
        CAPTURE(table);
        std::string words; // the table's words, as wrapped lines read
        std::istringstream in(table);
        for (std::string word; in >> word;) words += word + " ";
        CHECK(words.find(" of a 100 ms budget (setup ") != std::string::npos);
        if (width == 60) CHECK(words.find("2KiB: not converged: sample limit; took ") != std::string::npos);
    }
}

TEST_CASE("run --progress=json: one JSON object a line, with the phase of the configuration in progress, in every round") {
    // One configuration sampled to its time budget in each of two rounds (the second in a
    // process of its own): long enough for updates while it samples.
    const std::string budget = std::to_string(2 * deadline_s(3));
    const Cli run = run_cli("run -s host_memcpy -a threads=single --size 4K --rounds 2 --max-time " + budget +
                            " --min-samples 1000000 --max-samples 1000000 --noise 1e-9 --warmup 0 --no-topology -q"
                            " --progress=json");
    CAPTURE(run.err);
    REQUIRE(run.code == 0);
    std::vector<nlohmann::json> lines;
    std::istringstream in(run.err);
    for (std::string line; std::getline(in, line);) {
        CAPTURE(line);
        const auto j = nlohmann::json::parse(line, nullptr, false);
        REQUIRE_FALSE(j.is_discarded());
        REQUIRE(j.is_object());
        for (const char* field : {"elapsed_s", "round", "rounds", "index", "count", "key", "phase", "samples", "max_samples",
                                  "budget_s", "past_budget", "eta_s"})
            CHECK(j.contains(field));
        CHECK(j["count"] == 1);
        CHECK(j["rounds"] == 2);
        lines.push_back(j);
    }
    auto any = [&](const std::function<bool(const nlohmann::json&)>& f) { return std::any_of(lines.begin(), lines.end(), f); };
    // Round 1 starts with nothing measured to estimate from.
    REQUIRE(!lines.empty());
    CHECK(lines.front()["round"] == 1);
    CHECK(lines.front()["index"] == 1);
    CHECK(lines.front()["phase"] == "setup");
    CHECK(lines.front()["key"].get<std::string>().rfind("host_memcpy/", 0) == 0);
    CHECK(lines.front()["eta_s"].is_null());
    CHECK(any([](const auto& j) { return j["round"] == 1 && j["phase"] == "sampling" && j["samples"].template get<int>() > 0; }));
    // Round 2: its process starts, then reports its phases; the estimate uses round 1's time.
    CHECK(any([](const auto& j) { return j["round"] == 2 && j["phase"] == "starting" && j["key"].is_null(); }));
    CHECK(any([](const auto& j) {
        return j["round"] == 2 && j["phase"] == "sampling" && j["samples"].template get<int>() > 0 && j["eta_s"].is_number() &&
               j["max_samples"].is_number();
    }));
}

TEST_CASE("the estimate before a run: nothing for configurations that will be skipped, set-up said to come on top") {
    SUBCASE("every configuration needs a GPU and none is usable: no time is announced") {
        const Cli run = run_cli("run -s h2d_copy --size 4K:1G --no-topology", "CUDA_VISIBLE_DEVICES=");
        CAPTURE(run.err);
        CHECK(run.err.find("nothing to measure: ") != std::string::npos);
        CHECK(run.err.find("sampling at most") == std::string::npos);
        CHECK(run.err.find(" min ") == std::string::npos);
    }
    SUBCASE("measured configurations: the sampling bound, and set-up not known before the first one") {
        const Cli run = run_cli("run -s host_memcpy -a threads=single --size 4K,8K --max-time 0.2 --rounds 1 --no-topology");
        CAPTURE(run.err);
        CHECK(run.code == 0);
        CHECK(run.err.find("measuring 2 configurations: sampling at most 400 ms (0.2 s per configuration") != std::string::npos);
        CHECK(run.err.find("set-up and teardown come on top, not known before the first configuration") != std::string::npos);
    }
    SUBCASE("--dry-run: the plan's size and the sampling bound; set-up not estimated without a baseline") {
        const fs::path dir = scratch("progress_dry");
        const std::string plan = "run -s host_memcpy,storage_read -a path=buffered -a cache=warm --size 4K,8K "
                                 "--max-time 0.2 --rounds 2 --no-topology --storage-dir " + dir.string();
        const Cli dry = run_cli(plan + " --dry-run");
        CAPTURE(dry.err);
        CHECK(dry.code == 0);
        CHECK(dry.out.find("host_memcpy/size=4096,threads=single") != std::string::npos); // the plan on stdout
        CHECK(dry.err.find("plan: 6 configurations, 2 rounds, 12KiB of files to create in the storage directory\n") !=
              std::string::npos);
        CHECK(dry.err.find("would measure 6 configurations in 2 rounds, each a new process: sampling at most ") !=
              std::string::npos);
        CHECK(dry.err.find("set-up (allocating, filling, creating 12KiB of files) and teardown come on top: not estimated") !=
              std::string::npos);
        CHECK(fs::is_empty(dir)); // nothing created, nothing claimed
        // JSON on stdout stays the configurations alone.
        const Cli json = run_cli(plan + " --dry-run -f json");
        CHECK(nlohmann::json::parse(json.out).size() == 6);
        // With a baseline from this machine: the time its configurations took, set-up included.
        const std::string base = (dir / "base.json").string();
        const Cli measured = run_cli("run -s host_memcpy -a threads=single --size 4K --max-time 0.2 --rounds 1 --no-topology -q "
                                     "--out " + base);
        REQUIRE(measured.code == 0);
        const Cli estimated = run_cli(plan + " --dry-run --baseline " + base);
        CAPTURE(estimated.err);
        CHECK(estimated.code == 0);
        CHECK(estimated.err.find("and teardown about ") != std::string::npos);
        CHECK(estimated.err.find("by the times 1 of 6 took in '" + base + "' (the others at their mean)") != std::string::npos);
        const Cli none = run_cli("run -s host_memcpy -a threads=single --size 64K --dry-run --no-topology --baseline " + base);
        CHECK(none.err.find("not estimated, '" + base + "' holds none of these configurations") != std::string::npos);
        // Bad input a family judges is refused by the dry run too.
        const Cli bad = run_cli("run -s pipeline -a dataset=1M -a batch=2M --dry-run --no-topology");
        CHECK(bad.code == 2);
    }
    SUBCASE("--progress takes json or nothing") {
        const Cli run = run_cli("run -s host_memcpy --progress=yaml --no-topology");
        CAPTURE(run.err);
        CHECK(run.code == 2);
        CHECK(run.err.find("unknown --progress 'yaml'") != std::string::npos);
    }
}

} // TEST_SUITE
