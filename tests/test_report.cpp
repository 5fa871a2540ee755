#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fake_scenario.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/output.hpp"
#include "interopbench/report.hpp"
#include "schema_check.hpp"

using namespace interopbench;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
    fs::path d = fs::temp_directory_path() / ("interopbench_test_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
}

RunRecord sample_run() {
    Registry r;
    r.add(std::make_unique<testing::FakeScenario>("fake_ok", testing::FakeBehaviour{}));
    Machine m;
    RunRecord rec;
    rec.argv = {"interopbench", "run"};
    rec.plan.entries = {{"fake_ok", {{"size", {"1K"}}}}};
    SessionOptions options;
    options.handle_signals = false;
    const auto configs = expand_plan(r, rec.plan, m);
    return run_session(configs, rec, m, options).record;
}

void write(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

} // namespace

TEST_CASE("a real report validates against the schema and round-trips") {
    ::setenv("NCCL_DEBUG", "WARN", 1);
    ::setenv("INTEROPBENCH_TEST_SECRET", "hunter2", 1);
    const RunRecord rec = sample_run();
    Machine m;
    const auto doc = build_report(rec, m);
    const auto schema = testing::SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    const auto errs = schema.errors(doc);
    for (const auto& e : errs) MESSAGE(e);
    CHECK(errs.empty());
    CHECK(doc["environment"]["NCCL_DEBUG"] == "WARN");
    CHECK_FALSE(doc.dump().find("hunter2") != std::string::npos); // never outside the allow-list

    const auto dir = temp_dir();
    const auto path = (dir / "r.json").string();
    write_file_atomic(path, doc.dump(1));
    const auto back = load_report(path);
    const auto results = report_results(back);
    REQUIRE(results.size() == 1);
    CHECK(results[0].key == rec.results[0].key);
    CHECK(results[0].params.canonical() == rec.results[0].params.canonical());
    CHECK(results[0].metrics[0].stats.median == rec.results[0].metrics[0].stats.median);
    CHECK(results[0].metrics[0].samples == rec.results[0].metrics[0].samples);
    fs::remove_all(dir);
}

TEST_CASE("schema checker rejects a broken report") {
    const auto schema = testing::SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    Machine m;
    auto doc = build_report(sample_run(), m);
    doc["results"][0]["status"] = "great";
    doc["environment"]["HOME"] = "/root";
    doc.erase("host");
    CHECK(schema.errors(doc).size() >= 3);
}

TEST_CASE("atomic write replaces whole files and leaves no temporaries") {
    const auto dir = temp_dir();
    const auto path = (dir / "out.json").string();
    write_file_atomic(path, "first");
    write_file_atomic(path, "second");
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    CHECK(text == "second");
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
    CHECK(files == 1);
    CHECK_THROWS_AS(write_file_atomic((dir / "missing" / "x.json").string(), "x"), UsageError);
    CHECK_THROWS_AS(check_output_path(dir.string()), UsageError); // a directory, not a file
    fs::remove_all(dir);
}

TEST_CASE("load_report names each problem") {
    const auto dir = temp_dir();
    auto expect = [&](const std::string& text, const std::string& words) {
        const auto p = (dir / "bad.json").string();
        write(p, text);
        try {
            load_report(p);
            FAIL("accepted: " << text);
        } catch (const UsageError& e) {
            CAPTURE(e.what());
            CHECK(std::string(e.what()).find(words) != std::string::npos);
        }
    };
    Machine m;
    const std::string good = build_report(sample_run(), m).dump();
    expect("", "is empty");
    expect(good.substr(0, good.size() / 2), "not valid JSON");
    expect("[1,2]", "not an interopbench report");
    expect(R"({"schema":{"name":"other","version":"1.0"},"results":[]})", "not an interopbench report");
    expect(R"({"schema":{"name":"interopbench.report","version":"2.0"},"results":[]})", "newer than this interopbench");
    expect(R"({"schema":{"name":"interopbench.report","version":"1.0"}})", "no results array");
    expect(R"({"schema":{"name":"interopbench.report","version":"1.0"},"results":[{"key":1}]})", "lacks key");
    CHECK_THROWS_AS(load_report((dir / "nope.json").string()), UsageError);
    // A newer minor version with unknown fields is read.
    auto newer = nlohmann::json::parse(good);
    newer["schema"]["version"] = "1.7";
    newer["future_field"] = {1, 2};
    write(dir / "newer.json", newer.dump());
    CHECK(load_report((dir / "newer.json").string())["results"].size() == 1);
    fs::remove_all(dir);
}

TEST_CASE("committed reference reports from real machines load and match the schema") {
    const auto schema = testing::SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    int seen = 0;
    for (const auto& e : fs::directory_iterator(INTEROPBENCH_SOURCE_DIR "/reports")) {
        const auto name = e.path().filename().string();
        if (e.path().extension() != ".json" || name == "report.schema.json") continue;
        CAPTURE(name);
        const auto doc = load_report(e.path().string());
        const auto errs = schema.errors(doc);
        for (const auto& err : errs) MESSAGE(err);
        CHECK(errs.empty());
        CHECK(!report_results(doc).empty());
        ++seen;
    }
    CHECK(seen > 0);
}

TEST_CASE("byte figures print exactly when whole units, else in the largest unit") {
    CHECK(format_value(64.0 * 1024 * 1024, "B") == "64MiB");
    CHECK(format_value(4096, "B") == "4KiB");
    CHECK(format_value(1536, "B") == "1.50KiB");
    CHECK(format_value(4194306.0 * 1024, "B") == "4.00GiB");
    CHECK(format_value(22801156.0 * 1024, "B") == "21.7GiB");
    CHECK(format_value(0, "B") == "0B");
}
