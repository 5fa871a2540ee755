// fleet: classes, reference medians, outliers and their causes, exclusions, expectations,
// confirmations, multi-node reports, bad input. Reports are built by build_report, so they
// have the shape runs write.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "families/builtin.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/fleet.hpp"
#include "interopbench/report.hpp"
#include "presentation/fleet_view.hpp"
#include "presentation/formats.hpp"
#include "test_support.hpp"

using namespace interopbench;

namespace {

/// Reports read as the fleet command reads them: against today's declared paths, which the
/// causes follow.
fleet::Options limited() {
    fleet::Options o;
    o.prepare = limit_report;
    return o;
}

struct Fig {
    std::string key; ///< scenario/axes
    double value;
    std::vector<double> rounds = {};
    std::string status = "ok";
};

Result make_result(const Fig& f) {
    Result r;
    r.key = f.key;
    r.scenario = f.key.substr(0, f.key.find('/'));
    r.family = r.scenario.rfind("storage", 0) == 0 ? "storage" : r.scenario.rfind("h2d", 0) == 0 ? "copy" : "layout";
    std::vector<std::pair<std::string, std::string>> axes;
    std::string rest = f.key.substr(f.key.find('/') + 1);
    for (std::size_t at = 0; at < rest.size();) {
        const auto comma = rest.find(',', at);
        const std::string item = rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        axes.emplace_back(item.substr(0, item.find('=')), item.substr(item.find('=') + 1));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    r.params = Params(axes);
    r.status = status_from_string(f.status);
    if (r.status == Status::failed) r.reason = "device error: an illegal memory access";
    MetricResult m;
    m.info = {"bandwidth", "B/s", Better::higher, ""};
    m.stats = compute_stats({f.value * 0.99, f.value, f.value * 1.01});
    m.stats.median = f.value;
    m.round_medians = f.rounds;
    r.metrics.push_back(m);
    r.stop_reason = "converged";
    return r;
}

/// A report of host `host` with `figs`, its conditions and GPUs as given.
nlohmann::json report_of(const std::string& host, const std::vector<Fig>& figs, nlohmann::json conditions = nullptr,
                         const std::string& finished = "2026-12-05T06:00:00Z") {
    RunRecord rec;
    rec.argv = {"interopbench", "run"};
    rec.started = "2026-12-05T05:59:00Z";
    rec.finished = finished;
    for (const auto& f : figs) rec.results.push_back(make_result(f));
    Machine m;
    auto doc = build_report(rec, m);
    doc["host"]["hostname"] = host;
    doc["host"]["cpu"] = "Test CPU 9000";
    doc["host"]["kernel"] = "Linux 6.1";
    doc["host"]["logical_cpus"] = 16;
    doc["tool"]["git_sha"] = "abc1234";
    if (!conditions.is_null()) doc["conditions"] = conditions;
    return doc;
}

std::string write(const std::filesystem::path& dir, const std::string& name, const nlohmann::json& doc) {
    const auto p = dir / name;
    std::ofstream(p) << doc.dump();
    return p.string();
}

const std::string k_cold = "storage_read/size=67108864,path=odirect,cache=cold,chunk=16777216,threads=1,qd=0";
const std::string k_warm = "storage_read/size=67108864,path=buffered,cache=warm,chunk=16777216,threads=1,qd=0";

nlohmann::json throttled() {
    return {{"process",
             {{"cpus_allowed_count", 16},
              {"cgroup",
               {{"io_limits", {{{"device", "254:0"}, {"kind", "read_bps"}, {"value", 367001600}, {"source", "blkio.throttle.read_bps_device"}}}},
                {"cpu_quota_cpus", nullptr}}}}},
            {"load_average", {{"start", 0.2}, {"end", 0.4}}}};
}

/// Five machines, node-b and node-d slowed on cold reads; node-b's report shows a cgroup limit.
std::vector<std::string> five(const std::filesystem::path& dir) {
    std::vector<std::string> files;
    const double healthy[] = {2.61e9, 0.36e9, 2.48e9, 0.35e9, 2.55e9};
    const char* names[] = {"node-a", "node-b", "node-c", "node-d", "node-e"};
    for (int i = 0; i < 5; ++i)
        files.push_back(write(dir, std::string(names[i]) + ".json",
                              report_of(names[i], {{k_cold, healthy[i]}, {k_warm, 9.0e9 + i * 0.05e9}},
                                        i == 1 ? throttled() : nlohmann::json())));
    return files;
}

} // namespace

TEST_CASE("fleet names exactly the slowed machines, with the cause their report supports") {
    const auto dir = testing::scratch("fleet-five");
    const auto outcome = fleet::analyse(five(dir), limited());
    REQUIRE(outcome.members.size() == 5);
    REQUIRE(outcome.classes.size() == 1);
    REQUIRE(outcome.outliers.size() == 2);
    std::set<std::string> named;
    for (const auto& o : outcome.outliers) {
        const auto& f = outcome.rows[o.row].figures[o.figure];
        named.insert(outcome.members[f.member].label);
        CHECK(outcome.rows[o.row].key == k_cold);
        CHECK(f.ratio < 0.2);
        if (outcome.members[f.member].label == "node-b") {
            REQUIRE(!o.causes.empty());
            CHECK(o.causes[0].find("reads limited to") != std::string::npos);
            CHECK(o.causes[0].find("cgroup on device 254:0") != std::string::npos);
        } else {
            CHECK(o.causes.back().find("no fact in its report explains it") != std::string::npos);
        }
    }
    CHECK(named == std::set<std::string>{"node-b", "node-d"});
    CHECK(fleet::exit_code(outcome) == 1);
    CHECK(fleet::verdict_line(outcome).rfind("FAIL: 2 outlier(s) on 2 of 5 machines", 0) == 0);
    const auto text = find_format("table", Command::fleet).render(FleetView{outcome, 0});
    CHECK(text.find("node-b") != std::string::npos);
    // Grouped by machine, then cause: the cause said once on the group's line, its figures below.
    CHECK(text.find("\n! node-b: 1 result, cause: reads limited to") != std::string::npos);
    CHECK(text.find("\n! node-d: 1 result, cause: no fact in its report explains it") != std::string::npos);
    CHECK(text.find("    cause:") == std::string::npos); // one cause: no list of causes
    const auto j = fleet::outcome_json(outcome);
    CHECK(j["outliers"].size() == 2);
    CHECK(j["pass"] == false);
    const auto page = find_format("html", Command::fleet).render(FleetView{outcome});
    CHECK(page.find("class=\"out\"") != std::string::npos);
    CHECK(page.find("cause: reads limited") != std::string::npos);
}

TEST_CASE("fleet passes a healthy fleet and judges no key measured on fewer than three machines") {
    const auto dir = testing::scratch("fleet-healthy");
    std::vector<std::string> files;
    for (int i = 0; i < 4; ++i)
        files.push_back(write(dir, fmt::format("h{}.json", i),
                              report_of(fmt::format("h{}", i), {{k_warm, 9.0e9 * (1 + 0.01 * i)}})));
    files.push_back(write(dir, "h4.json", report_of("h4", {{k_warm, 9.1e9}, {k_cold, 1e9}})));
    const auto outcome = fleet::analyse(files, limited());
    CHECK(outcome.outliers.empty());
    CHECK(fleet::exit_code(outcome) == 0);
    CHECK(fleet::verdict_line(outcome).rfind("PASS", 0) == 0);
    bool cold_not_judged = false;
    for (const auto& r : outcome.rows)
        if (r.key == k_cold) cold_not_judged = !r.judged && r.not_judged.find("3 are needed") != std::string::npos;
    CHECK(cold_not_judged);
}

TEST_CASE("fleet spares a figure whose own rounds spread more than its shortfall") {
    const auto dir = testing::scratch("fleet-noisy");
    std::vector<std::string> files;
    for (int i = 0; i < 4; ++i) files.push_back(write(dir, fmt::format("n{}.json", i), report_of(fmt::format("n{}", i), {{k_warm, 9e9}})));
    // 15% short, but its rounds ranged 30%: its own noise, not the machine.
    files.push_back(write(dir, "n4.json", report_of("n4", {{k_warm, 7.65e9, {6.9e9, 7.65e9, 9.2e9}}})));
    auto outcome = fleet::analyse(files, limited());
    CHECK(outcome.outliers.empty());
    // The same shortfall with steady rounds is an outlier.
    files.back() = write(dir, "n4.json", report_of("n4", {{k_warm, 7.65e9, {7.6e9, 7.65e9, 7.7e9}}}));
    outcome = fleet::analyse(files, limited());
    CHECK(outcome.outliers.size() == 1);
}

TEST_CASE("fleet judges hardware classes apart") {
    const auto dir = testing::scratch("fleet-classes");
    std::vector<std::string> files;
    for (int i = 0; i < 3; ++i) files.push_back(write(dir, fmt::format("a{}.json", i), report_of(fmt::format("a{}", i), {{k_warm, 9e9}})));
    for (int i = 0; i < 3; ++i) {
        auto doc = report_of(fmt::format("b{}", i), {{k_warm, 4e9}});
        doc["host"]["cpu"] = "Slower CPU 100";
        files.push_back(write(dir, fmt::format("b{}.json", i), doc));
    }
    const auto outcome = fleet::analyse(files, limited());
    CHECK(outcome.classes.size() == 2);
    CHECK(outcome.outliers.empty());
}

TEST_CASE("fleet leaves out duplicates, machines with nothing in common and files given twice, and says so") {
    const auto dir = testing::scratch("fleet-dups");
    auto files = five(dir);
    // node-a again, newer and healthy: the older node-a is left out.
    files.push_back(write(dir, "node-a-again.json", report_of("node-a", {{k_cold, 2.6e9}, {k_warm, 9e9}}, nullptr, "2026-12-05T07:00:00Z")));
    files.push_back(write(dir, "other.json", report_of("other", {{"layout_transpose/size=1024,variant=cpu", 1e9}})));
    files.push_back(files.front());
    const auto outcome = fleet::analyse(files, limited());
    CHECK(outcome.members.size() == 5);
    std::string all;
    for (const auto& e : outcome.excluded) all += e + "\n";
    CHECK(all.find("node-a.json: the same machine (node-a)") != std::string::npos);
    CHECK(all.find("other.json: other has no result in common") != std::string::npos);
    CHECK(all.find("given twice") != std::string::npos);
}

TEST_CASE("fleet refuses bad input with one clear error, or leaves it out when asked") {
    const auto dir = testing::scratch("fleet-bad");
    auto files = five(dir);
    std::ofstream(dir / "junk.json") << "{\"schema\": 3}";
    files.push_back((dir / "junk.json").string());
    CHECK_THROWS_AS(fleet::analyse(files, limited()), UsageError);
    fleet::Options skip = limited();
    skip.skip_unreadable = true;
    const auto outcome = fleet::analyse(files, skip);
    CHECK(outcome.excluded.size() == 1);
    CHECK(outcome.outliers.size() == 2);
    auto v2 = report_of("node-z", {{k_cold, 1e9}});
    v2["schema"]["version"] = "2.0";
    CHECK_THROWS_AS(fleet::analyse({write(dir, "v2.json", v2)}, limited()), UsageError);
    CHECK_THROWS_AS(fleet::analyse({}, limited()), UsageError);
    // Two machines: nothing can be judged.
    CHECK_THROWS_WITH_AS(fleet::analyse({files[0], files[2]}, limited()), doctest::Contains("no result could be judged"), UsageError);
}

TEST_CASE("fleet --expect judges a lone machine against a healthy fleet's figures") {
    const auto dir = testing::scratch("fleet-expect");
    std::vector<std::string> healthy;
    for (int i = 0; i < 4; ++i)
        healthy.push_back(write(dir, fmt::format("g{}.json", i), report_of(fmt::format("g{}", i), {{k_cold, 2.5e9 * (1 + 0.01 * i)}})));
    const auto reference = fleet::expectations_json(fleet::analyse(healthy, limited()));
    const auto expect = fleet::parse_expectations(reference, "test");
    REQUIRE(expect.size() == 1);
    const auto slow = write(dir, "new.json", report_of("new", {{k_cold, 0.35e9}}, throttled()));
    const auto outcome = fleet::analyse({slow}, limited(), &expect);
    REQUIRE(outcome.outliers.size() == 1);
    CHECK(outcome.rows[0].reference == "expected");
    const auto fine = write(dir, "fine.json", report_of("fine", {{k_cold, 2.52e9}}));
    CHECK(fleet::analyse({fine}, limited(), &expect).outliers.empty());
    CHECK_THROWS_AS(fleet::parse_expectations({{"schema", "interopbench.fleet-expect"}, {"version", 7}}, "f"), UsageError);
    CHECK_THROWS_AS(fleet::parse_expectations({{"schema", "x"}}, "f"), UsageError);
    nlohmann::json bad = reference;
    bad["expectations"][0]["median"] = -1;
    CHECK_THROWS_AS(fleet::parse_expectations(bad, "f"), UsageError);
    // An expectation in another unit or direction is not the reports' figure: refused, never
    // judged against (a ratio of 0.51 must not pass as 51% of a bandwidth).
    for (const auto& [field, value] : {std::pair<const char*, const char*>{"unit", "ratio"}, {"better", "lower"}}) {
        nlohmann::json other = reference;
        other["expectations"][0][field] = value;
        const auto wrong = fleet::parse_expectations(other, "f");
        CHECK_THROWS_WITH_AS(fleet::analyse({fine}, limited(), &wrong), doctest::Contains("the --expect file's"), UsageError);
    }
}

TEST_CASE("fleet keeps an outlier only when its re-measurement repeats it") {
    const auto dir = testing::scratch("fleet-confirm");
    auto outcome = fleet::analyse(five(dir), limited());
    REQUIRE(outcome.outliers.size() == 2);
    const auto plan = fleet::confirm_plan(outcome, 3, (dir / "again").string());
    REQUIRE(plan.size() == 2);
    CHECK(std::find(plan[0].args.begin(), plan[0].args.end(), "--only") != plan[0].args.end());
    CHECK(std::find(plan[0].args.begin(), plan[0].args.end(), k_cold) != plan[0].args.end());
    // node-b slow again, node-d fine this time (a passing disturbance).
    const auto b = write(dir, "b-again.json", report_of("node-b", {{k_cold, 0.37e9}}, throttled()));
    const auto d = write(dir, "d-again.json", report_of("node-d", {{k_cold, 2.5e9}}));
    fleet::apply_confirmations(outcome, {b, d});
    REQUIRE(outcome.outliers.size() == 1);
    CHECK(outcome.members[outcome.rows[outcome.outliers[0].row].figures[outcome.outliers[0].figure].member].label == "node-b");
    CHECK(outcome.outliers[0].confirmation == "repeated");
    REQUIRE(outcome.dropped.size() == 1);
    CHECK(outcome.dropped[0].confirmation == "not repeated");
    auto anonymous = report_of("", {{k_cold, 1e9}});
    anonymous["host"].erase("hostname");
    CHECK_THROWS_AS(fleet::apply_confirmations(outcome, {write(dir, "anon.json", anonymous)}), UsageError);
}

TEST_CASE("fleet reads every (host, GPU) of a multi-node report and names the slow rank's host") {
    const auto dir = testing::scratch("fleet-ranks");
    auto doc = report_of("rank0-host", {{"h2d_copy/size=268435456,host_mem=pinned,engine=ce", 55e9}});
    nlohmann::json ranks = nlohmann::json::array();
    const double values[] = {55.1e9, 54.9e9, 41.0e9, 55.3e9};
    for (int i = 0; i < 4; ++i)
        ranks.push_back({{"rank", i}, {"local_rank", 0}, {"host", fmt::format("gpu-node-{}", i)}, {"device", "0000:1b:00.0"},
                         {"status", "ok"}, {"metrics", {{"bandwidth", {{"n", 20}, {"median", values[i]}}}}}});
    doc["results"][0]["details"]["ranks"] = ranks;
    doc["results"][0]["details"]["world_size"] = 4;
    const auto outcome = fleet::analyse({write(dir, "mpi.json", doc)}, limited());
    CHECK(outcome.members.size() >= 4);
    REQUIRE(outcome.outliers.size() == 1);
    const auto& f = outcome.rows[outcome.outliers[0].row].figures[outcome.outliers[0].figure];
    CHECK(outcome.members[f.member].label == "gpu-node-2");
    CHECK(f.gpu == "0000:1b:00.0");
}

TEST_CASE("fleet calls a configuration that failed where its class measured it an outlier, with the failure as cause") {
    const auto dir = testing::scratch("fleet-failed");
    std::vector<std::string> files;
    for (int i = 0; i < 3; ++i) files.push_back(write(dir, fmt::format("f{}.json", i), report_of(fmt::format("f{}", i), {{k_warm, 9e9}})));
    files.push_back(write(dir, "f3.json", report_of("f3", {{k_warm, 0, {}, "failed"}})));
    const auto outcome = fleet::analyse(files, limited());
    REQUIRE(outcome.outliers.size() == 1);
    CHECK(outcome.outliers[0].causes[0].find("failed there: device error") != std::string::npos);
}

TEST_CASE("fleet names software that differs from the rest of the class as a cause") {
    const auto dir = testing::scratch("fleet-kernel");
    std::vector<std::string> files;
    for (int i = 0; i < 4; ++i) files.push_back(write(dir, fmt::format("k{}.json", i), report_of(fmt::format("k{}", i), {{k_warm, 9e9}})));
    auto doc = report_of("k4", {{k_warm, 6e9}});
    doc["host"]["kernel"] = "Linux 5.4";
    files.push_back(write(dir, "k4.json", doc));
    const auto outcome = fleet::analyse(files, limited());
    REQUIRE(outcome.outliers.size() == 1);
    CHECK(outcome.outliers[0].causes[0] == "kernel Linux 5.4 where most of its class has Linux 6.1");
}

TEST_CASE("fleet reads a thousand reports one at a time") {
    const auto dir = testing::scratch("fleet-many");
    auto doc = report_of("m", {{k_warm, 9e9}});
    std::vector<std::string> files;
    for (int i = 0; i < 1000; ++i) {
        doc["host"]["hostname"] = fmt::format("m{:04}", i);
        doc["results"][0]["metrics"][0]["stats"]["median"] = i == 500 ? 4e9 : 9e9;
        files.push_back(write(dir, fmt::format("m{:04}.json", i), doc));
    }
    const auto outcome = fleet::analyse(files, limited());
    CHECK(outcome.members.size() == 1000);
    REQUIRE(outcome.outliers.size() == 1);
    CHECK(outcome.members[outcome.rows[0].figures[outcome.outliers[0].figure].member].label == "m0500");
}

TEST_CASE("show opens with every rank's host and what limited the run") {
    auto doc = report_of("h0", {{k_cold, 1e9}}, throttled());
    doc["hosts"] = nlohmann::json::array({
        {{"rank", 0}, {"local_rank", 0}, {"device", ""}, {"host", {{"hostname", "h0"}}}},
        {{"rank", 1}, {"local_rank", 0}, {"device", "0000:1b:00.0"}, {"host", {{"hostname", "h1"}}}},
    });
    const Report report = read_report_json(doc, "h0");
    const Format& table = find_format("table", Command::show);
    const std::string text = table.render(ReportView{report, report.results, TableStyle{}, CiMetrics::primary, true});
    CHECK(text.find("2 ranks: 0 h0, 1 h1 0000:1b:00.0\n") != std::string::npos);
    CHECK(text.find("conditions: reads limited to 367 MB/s by a cgroup on 254:0") != std::string::npos);
    // Nothing limited: no conditions line.
    const Report plain = read_report_json(report_of("h2", {{k_cold, 1e9}}), "h2");
    CHECK(table.render(ReportView{plain, plain.results, TableStyle{}, CiMetrics::primary, true}).find("conditions:") ==
          std::string::npos);
}

TEST_CASE("fleet --rerun refuses a confirm folder another user may change, and never writes through a link") {
    const auto dir = testing::scratch("fleet-confirm-dir");
    const auto files = five(dir);
    auto fleet_rerun = [&](const std::filesystem::path& confirm_dir, std::string& err) {
        std::string cmd = INTEROPBENCH_BINARY " fleet";
        for (const auto& f : files) cmd += " '" + f + "'";
        cmd += " --confirm 1 --rerun --confirm-dir '" + confirm_dir.string() + "' >/dev/null 2>'" + (dir / "stderr").string() + "'";
        const int status = testing::run_shell(cmd);
        err = testing::slurp(dir / "stderr");
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    };
    std::string err;
    // Any user may write it: they could plant a link where the report will be written.
    const auto open = dir / "open";
    std::filesystem::create_directories(open);
    std::filesystem::permissions(open, std::filesystem::perms::all);
    CHECK(fleet_rerun(open, err) == 2);
    CAPTURE(err);
    CHECK(err.find("error: --confirm-dir '" + open.string() + "' may be written by any user (mode 777)") != std::string::npos);
    CHECK(err.find("hint: give --confirm-dir a folder") != std::string::npos);
    CHECK(std::filesystem::is_empty(open));
    // A safe folder, but a link where node-b's report goes: refused, the link's target untouched.
    const auto safe = dir / "safe";
    std::filesystem::create_directories(safe);
    std::ofstream(dir / "victim") << "secret";
    std::filesystem::create_symlink(dir / "victim", safe / "node-b-confirm.json");
    CHECK(fleet_rerun(safe, err) == 2);
    CHECK(err.find("node-b-confirm.json' is a symbolic link: nothing is written through a link") != std::string::npos);
    CHECK(testing::slurp(dir / "victim") == "secret");
    if (::geteuid() == 0) { // a folder of nobody's: nobody may replace what is written there
        const auto theirs = dir / "theirs";
        std::filesystem::create_directories(theirs);
        REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
        CHECK(fleet_rerun(theirs, err) == 2);
        CHECK(err.find("belongs to another user (uid 65534)") != std::string::npos);
        CHECK(std::filesystem::is_empty(theirs));
    }
}

TEST_CASE("fleet: a host name that is not one never reaches mpirun, and --out and --write-expect never name each other") {
    const auto dir = testing::scratch("fleet-hostile-host");
    auto files = five(dir);
    // node-b's report names a host that is an option and a command, with a terminal escape.
    auto doc = nlohmann::json::parse(testing::slurp(files[1]));
    doc["host"]["hostname"] = "node-b --oversubscribe;touch x\x1b]0;t\x07";
    files[1] = write(dir, "node-b-hostile.json", doc);
    std::string cmd = INTEROPBENCH_BINARY " fleet";
    for (const auto& f : files) cmd += " '" + f + "'";
    const std::string err_file = (dir / "stderr").string();
    int status = testing::run_shell(cmd + " --confirm 1 >/dev/null 2>'" + err_file + "'");
    std::string err = testing::slurp(err_file);
    CAPTURE(err);
    CHECK(WEXITSTATUS(status) == 2);
    CHECK(err.find("which is not a host name") != std::string::npos);
    CHECK(err.find('\x1b') == std::string::npos); // escaped on the way to the terminal
    // One file for both outputs: refused before anything is written.
    const std::string both = (dir / "both.json").string();
    status = testing::run_shell(cmd + " --out '" + both + "' --write-expect '" + both + "' >/dev/null 2>'" + err_file + "'");
    err = testing::slurp(err_file);
    CHECK(WEXITSTATUS(status) == 2);
    CHECK(err.find("--out and --write-expect both name") != std::string::npos);
    CHECK(!std::filesystem::exists(both));
}

namespace {

/// Five machines measured host_memcpy of 4 KiB; the one that is this host is slow, the four
/// others (other hosts) alike. Returns the report files.
std::vector<std::string> four_and_this_host(const std::filesystem::path& dir) {
    char name[256] = {};
    REQUIRE(::gethostname(name, sizeof name - 1) == 0);
    const std::string here = name;
    const std::string key = "host_memcpy/size=4096,threads=single";
    std::vector<std::string> files;
    const char* hosts[] = {"node-a", "node-b", "node-c", "node-d"};
    for (int i = 0; i < 4; ++i) files.push_back(write(dir, std::string(hosts[i]) + ".json", report_of(hosts[i], {{key, 9e9 + i * 0.05e9}})));
    files.push_back(write(dir, "here.json", report_of(here, {{key, 1e9}})));
    return files;
}

/// `fleet` over `files` with `options`.
testing::CliRun run_fleet(const std::vector<std::string>& files, const std::string& options) {
    std::string args = "fleet";
    for (const auto& f : files) args += " '" + f + "'";
    return testing::run_cli(args + " " + options);
}

} // namespace

TEST_CASE("fleet --rerun: stdout holds the verdict alone, the re-measurement's tables go to stderr") {
    const auto dir = testing::scratch("fleet-rerun-json");
    const auto files = four_and_this_host(dir);
    const auto r = run_fleet(files, "--confirm 1 --rerun -f json");
    CAPTURE(r.err);
    CHECK((r.code == 0 || r.code == 1));
    CHECK(r.err.find("fleet: re-measuring on ") != std::string::npos);
    const auto doc = nlohmann::json::parse(r.out, nullptr, false); // JSON, and nothing else
    CHECK_FALSE(doc.is_discarded());
    CHECK(r.err.find("1 ok, 0 skipped, 0 failed") != std::string::npos); // the run's summary, on stderr
    CHECK(r.err.find("host_memcpy") != std::string::npos);               // and its table
}

TEST_CASE("fleet --expect given a report is a one-line error, exit 2") {
    // Once the JSON library's own message, exit 1: a report's "schema" is an object.
    const auto dir = testing::scratch("fleet-expect-report");
    const auto files = five(dir);
    const auto r = run_fleet(files, "--expect '" + files[0] + "'");
    CHECK(r.code == 2);
    CHECK(r.err.find("is not an expectations file") != std::string::npos);
    CHECK(r.err.find("type must be") == std::string::npos);
}

TEST_CASE("fleet --rerun refuses hosts it cannot hear back from without a shared --confirm-dir, naming each") {
    const auto dir = testing::scratch("fleet-rerun-remote");
    const auto r = run_fleet(five(dir), "--confirm 1 --rerun");
    CHECK(r.code == 2);
    CHECK(r.err.find("error: --rerun re-measures on other hosts without --confirm-dir: no confirmation would come back "
                     "here: node-b-confirm.json (node-b), node-d-confirm.json (node-d)\n") != std::string::npos);
    CHECK(r.err.find("hint: give --confirm-dir a folder those hosts share") != std::string::npos);
    CHECK(r.err.find("re-measuring") == std::string::npos); // nothing ran
    CHECK(r.out.empty());
}

TEST_CASE("fleet --rerun passes a stop signal to its re-measurement: none outlives fleet") {
    const auto dir = testing::scratch("fleet-rerun-signal");
    const auto files = four_and_this_host(dir);
    std::vector<std::string> args{INTEROPBENCH_BINARY, "fleet"};
    args.insert(args.end(), files.begin(), files.end());
    for (const char* a : {"--confirm", "100", "--rerun"}) args.emplace_back(a); // 100 rounds: long enough
    const std::string err_path = (dir / "stderr").string();
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        ::freopen("/dev/null", "r", stdin);
        ::freopen((dir / "stdout").c_str(), "w", stdout);
        ::freopen(err_path.c_str(), "w", stderr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    // The re-measurement: fleet's child, once it has started.
    long child = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(testing::deadline_s(60));
    while (child == 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (testing::slurp(err_path).find("fleet: re-measuring on ") == std::string::npos) continue;
        for (const auto& e : std::filesystem::directory_iterator("/proc")) {
            const std::string name = e.path().filename().string();
            if (name.find_first_not_of("0123456789") != std::string::npos) continue;
            const std::string stat = testing::slurp(e.path() / "stat");
            const auto close = stat.rfind(')');
            long ppid = 0;
            char state = 0;
            if (close != std::string::npos && std::sscanf(stat.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 &&
                ppid == pid && state != 'Z')
                child = std::stol(e.path().filename().string());
        }
    }
    REQUIRE_MESSAGE(child > 0, "fleet started no re-measurement; stderr: ", testing::slurp(err_path));
    REQUIRE(::kill(pid, SIGTERM) == 0);
    const int status = testing::wait_child(pid, 120, "fleet after the signal");
    const std::string err = testing::slurp(err_path);
    CAPTURE(err);
    CHECK(WIFEXITED(status));
    CHECK(err.find("fleet: interrupted: the re-measurement on ") != std::string::npos);
    CHECK(err.find("was stopped; its outliers stay unconfirmed") != std::string::npos);
    // fleet waited for it: it is gone (reaped), not orphaned and measuring on.
    CHECK((::kill(static_cast<pid_t>(child), 0) != 0 && errno == ESRCH));
}
