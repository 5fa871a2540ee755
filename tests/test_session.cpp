// The run session: final write with a fallback, checkpoints, bad_alloc containment, the
// cleanup guards that the signal path relies on.
#include <doctest/doctest.h>

#include <unistd.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <new>

#include "fake_scenario.hpp"
#include "test_support.hpp"
#include "interopbench/cleanup.hpp"
#include "interopbench/report.hpp"
#include "interopbench/session.hpp"

using namespace interopbench;
using namespace interopbench::testing;
namespace fs = std::filesystem;

namespace {

RunSettings fast() { return sampling(0, 3, 3, 1, 0.001); }

} // namespace

TEST_CASE("a final write that fails costs no result: the report goes to a fallback file") {
    const fs::path dir = scratch("fallback");
    const fs::path sub = dir / "gone";
    fs::create_directories(sub);
    FakeBehaviour b;
    // The output directory disappears while the run measures (as when it is removed mid-run).
    b.sample = [&](int) {
        fs::remove_all(sub);
        return Sample{100.0, 0.01};
    };
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_ok", b));
    Machine m;
    RunRecord rec;
    rec.plan.entries = {{"fake_ok", {}}};
    rec.plan.settings = fast();
    SessionOptions options;
    options.handle_signals = false;
    options.out = (sub / "r.json").string();
    options.checkpoint_interval_s = 0; // a checkpoint after every configuration
    // A link planted at the name earlier versions used (pid and name guessable) is not followed.
    const char* tmp_env = std::getenv("TMPDIR");
    const fs::path tmp = tmp_env && *tmp_env ? tmp_env : "/tmp";
    const fs::path planted = tmp / ("interopbench-unsaved-" + std::to_string(::getpid()) + "-r.json");
    std::ofstream(dir / "victim") << "secret";
    fs::remove(planted);
    fs::create_symlink(dir / "victim", planted);
    const auto run = run_session(expand_plan(r, rec.plan, m), rec, m, options);
    {
        std::ifstream v(dir / "victim");
        CHECK(std::string(std::istreambuf_iterator<char>(v), {}) == "secret");
    }
    CHECK(run.written != planted.string());
    fs::remove(planted);
    CHECK_FALSE(run.checkpoint_warnings.empty()); // a failed checkpoint is a warning
    CHECK(run.checkpoint_warnings.front().find("checkpoint not written") == 0);
    REQUIRE_FALSE(run.write_error.empty());
    CHECK(run.write_error.find(options.out) != std::string::npos);
    REQUIRE(run.written.find("/interopbench-unsaved-") != std::string::npos);
    CHECK(run.written.size() > 6);
    CHECK(run.written.substr(run.written.size() - 7) == "-r.json");
    const auto doc = load_report(run.written);
    CHECK(doc["results"].size() == 2);
    CHECK(doc["invocation"]["status"] == "complete");
    fs::remove(run.written);
    fs::remove_all(dir);
}

TEST_CASE("the run binary names the lost path, the OS error and the fallback, exit 1") {
    const fs::path dir = scratch("fallback_cli");
    const fs::path sub = dir / "out";
    fs::create_directories(sub);
    // The output directory is removed once the second configuration has started. The wait for
    // that has a deadline (60 s, a guard against a hang): past it, or when the run ended
    // before, the marker file `no-progress` says so and the test fails on it.
    const std::string out = (sub / "r.json").string(), err_file = (dir / "err").string();
    const std::string cmd = std::string(INTEROPBENCH_BINARY) +
                            " run -s host_memcpy -a threads=single --size 4K:4M --max-time 0.3 --no-topology -q "
                            "--progress --out " + out + " 2>" + err_file + " & pid=$!; n=0; " +
                            "until grep -q '\\[2/' " + err_file + " 2>/dev/null; do " +
                            "if [ $n -ge 1200 ] || ! kill -0 $pid 2>/dev/null; then grep -q '\\[2/' " + err_file +
                            " 2>/dev/null || : > " + (dir / "no-progress").string() + "; break; fi; " +
                            "n=$((n + 1)); sleep 0.05; done; " +
                            "rm -rf " + sub.string() + "; wait $pid";
    const int status = testing::run_shell(cmd);
    const std::string err = testing::slurp(err_file);
    CAPTURE(err);
    REQUIRE_MESSAGE(!fs::exists(dir / "no-progress"),
                    "the run did not start its second configuration within 60 s, or ended before it");
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
    const std::string fallback = err.substr(err.find("saved to ") + 9, err.find('\n', err.find("saved to ")) - err.find("saved to ") - 9);
    CHECK(err.find("error: ") != std::string::npos);
    CHECK(err.find(out) != std::string::npos);
    REQUIRE(fs::exists(fallback));
    CHECK(load_report(fallback)["results"].size() == 11);
    fs::remove(fallback);
    fs::remove_all(dir);
}

TEST_CASE("std::bad_alloc in one configuration costs that configuration only") {
    FakeBehaviour huge;
    huge.prepare = [](const Params& p) {
        if (p.get_uint("size") > 1024) throw std::bad_alloc();
    };
    FakeBehaviour checks;
    checks.unsupported = [](const Params&) -> std::optional<std::string> { throw std::bad_alloc(); };
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_huge", huge));
    r.add(std::make_unique<FakeScenario>("fake_checks", checks));
    Machine m;
    RunPlan plan;
    plan.entries = {{"fake_*", {}}};
    plan.settings = fast();
    const auto results = run_plan(r, plan, m);
    REQUIRE(results.size() == 4);
    CHECK(results[0].status == Status::ok);
    CHECK(results[1].status == Status::failed);
    CHECK(results[1].reason.find("out of host memory") != std::string::npos);
    CHECK(results[2].status == Status::failed);
    CHECK(results[3].status == Status::failed);
}

TEST_CASE("Unsupported thrown while setting up is a skip with the reason") {
    FakeBehaviour b;
    b.prepare = [](const Params&) { throw Unsupported("needs 2TiB of host memory, 20GiB available"); };
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_big", b));
    Machine m;
    RunPlan plan;
    plan.entries = {{"fake_big", {{"size", {"1K"}}}}};
    plan.settings = fast();
    const auto results = run_plan(r, plan, m);
    REQUIRE(results.size() == 1);
    CHECK(results[0].status == Status::skipped);
    CHECK(results[0].reason == "needs 2TiB of host memory, 20GiB available");
}

TEST_CASE("cleanup guards remove their path, and the signal path removes what is still guarded") {
    const fs::path dir = scratch("guards");
    const int before = cleanup::guarded_count();
    {
        std::ofstream(dir / "a") << "x";
        cleanup::Guard a((dir / "a").string());
        CHECK(cleanup::guarded_count() == before + 1);
    }
    CHECK_FALSE(fs::exists(dir / "a"));
    CHECK(cleanup::guarded_count() == before);

    fs::create_directories(dir / "d");
    std::ofstream(dir / "d" / "f") << "x";
    cleanup::Guard d((dir / "d").string(), true);
    cleanup::Guard f((dir / "d" / "f").string());
    cleanup::remove_all_from_signal(); // files first, then the directory
    CHECK_FALSE(fs::exists(dir / "d"));

    std::ofstream(dir / "kept") << "x";
    cleanup::Guard k((dir / "kept").string());
    k.release();
    CHECK(fs::exists(dir / "kept"));
    fs::remove_all(dir);
}
