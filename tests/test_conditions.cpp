// The run conditions: the parsers of the kernel's files on recorded trees (tests/data/conditions/:
// cgroup v1 as a hybrid host shows it, v2 on a systemd host and in a container), the report's
// "conditions" block, read_header, and a run that writes it.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "fake_scenario.hpp"
#include "schema_check.hpp"
#include "test_support.hpp"
#include "interopbench/conditions.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/report.hpp"
#include "interopbench/session.hpp"
#include "topology/conditions_probe.hpp"
#include "topology/topology.hpp"

using namespace interopbench;
using namespace interopbench::testing;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) { return std::string(INTEROPBENCH_SOURCE_DIR) + "/tests/data/conditions/" + name; }

bool has_limit(const std::vector<CgroupIoLimit>& limits, const std::string& device, const std::string& kind,
               std::uint64_t value, const std::string& source) {
    for (const auto& l : limits)
        if (l.device == device && l.kind == kind && l.value == value && l.source == source) return true;
    return false;
}

ConditionsSnapshot snapshot(const std::string& time, double load, int others, std::uint64_t clocks,
                            std::vector<std::string> names) {
    ConditionsSnapshot s;
    s.time = time;
    s.cpus_allowed = "0-7,16-23";
    s.cpus_allowed_count = 16;
    s.numa_nodes_allowed = std::vector<unsigned>{0, 1};
    s.cgroup.io_limits.push_back({"8:0", "read_bps", 367001600, "blkio.throttle.read_bps_device"});
    s.cgroup.cpu_quota_cpus = 2.0;
    s.load_average = load;
    s.logical_cpus = 32;
    GpuConditions g;
    g.ordinal = 0;
    g.pci_bus_id = "0000:1b:00.0";
    g.other_processes = others;
    g.clock_reasons = clocks;
    g.clock_reason_names = std::move(names);
    g.pcie = PcieState{5, 16, 5, 16};
    g.nvlinks_up = 18;
    g.nvlinks_down = 0;
    g.ecc_uncorrected_volatile = 0;
    g.local_cpus_allowed = true;
    g.reason = "NVML gave no temperature";
    s.gpus.push_back(g);
    return s;
}

} // namespace

TEST_CASE("conditions: CPU lists parse and format back") {
    CHECK(parse_cpu_list("0-3,8,10-11\n") == std::vector<unsigned>{0, 1, 2, 3, 8, 10, 11});
    CHECK(parse_cpu_list("") == std::vector<unsigned>{});
    CHECK(parse_cpu_list("\n") == std::vector<unsigned>{});
    CHECK(parse_cpu_list("5,1-2,2") == std::vector<unsigned>{1, 2, 5});
    CHECK_FALSE(parse_cpu_list("3-1"));
    CHECK_FALSE(parse_cpu_list("a-b"));
    CHECK_FALSE(parse_cpu_list("0,,1"));
    CHECK_FALSE(parse_cpu_list("0-99999999"));
    // The affinity as the report writes it: the topology's list formatting.
    CHECK(format_cpu_list(*parse_cpu_list("0-7,16-23")) == "0-7,16-23");
    CHECK(format_cpu_list({0, 2, 3, 4, 9}) == "0,2-4,9");
}

TEST_CASE("conditions: /proc/loadavg, cpu quota and memory limit texts") {
    CHECK(parse_loadavg("0.52 0.70 1.11 1/93 18565\n") == doctest::Approx(0.52));
    CHECK_FALSE(parse_loadavg(""));
    CHECK_FALSE(parse_loadavg("x 1 2"));
    CHECK(parse_cfs_quota("200000\n", "100000\n") == doctest::Approx(2.0));
    CHECK_FALSE(parse_cfs_quota("-1", "100000")); // unlimited
    CHECK_FALSE(parse_cfs_quota("50000", "0"));
    CHECK(parse_cpu_max("150000 100000\n") == doctest::Approx(1.5));
    CHECK_FALSE(parse_cpu_max("max 100000"));
    CHECK_FALSE(parse_cpu_max("garbage"));
    CHECK(parse_memory_limit("8589934592\n") == 8589934592ull);
    CHECK_FALSE(parse_memory_limit("max\n"));
    CHECK_FALSE(parse_memory_limit("9223372036854771712")); // v1's "unlimited"
}

TEST_CASE("conditions: cgroup files parse (v1 blkio throttle, v2 io.max, /proc/self/cgroup, mountinfo)") {
    const auto v1 = parse_blkio_throttle("254:0 367001600\n253:0 100\nbad line\n8:x 5\n", "blkio.throttle.read_bps_device");
    REQUIRE(v1.size() == 2);
    CHECK(has_limit(v1, "254:0", "read_bps", 367001600, "blkio.throttle.read_bps_device"));
    CHECK(has_limit(v1, "253:0", "read_bps", 100, "blkio.throttle.read_bps_device"));
    CHECK(parse_blkio_throttle("8:0 7\n", "blkio.throttle.write_iops_device").front().kind == "write_iops");
    CHECK(parse_blkio_throttle("", "blkio.throttle.read_bps_device").empty());

    const auto v2 = parse_io_max("8:0 rbps=367001600 wbps=max riops=1000 wiops=max\n259:0 rbps=max wbps=max riops=max wiops=max\n");
    REQUIRE(v2.size() == 2);
    CHECK(has_limit(v2, "8:0", "read_bps", 367001600, "io.max"));
    CHECK(has_limit(v2, "8:0", "read_iops", 1000, "io.max"));

    const auto cg = parse_proc_cgroup(slurp(fixture("v1/proc/self/cgroup")));
    REQUIRE(cg.size() == 10);
    CHECK(cg[2].controllers == std::vector<std::string>{"blkio"});
    CHECK(cg[2].path == "/ib-test-4242");
    CHECK(cg[9].controllers.empty()); // the v2 line
    CHECK(parse_proc_cgroup("12:cpu,cpuacct:/a:b\n").front().path == "/a:b");

    const auto mounts = parse_cgroup_mounts(slurp(fixture("v1/proc/self/mountinfo")));
    REQUIRE(mounts.size() == 10); // 9 v1 hierarchies and the empty v2 one; tmpfs and ext4 left out
    CHECK(mounts[6].mount_point == "/sys/fs/cgroup/blkio");
    CHECK(mounts[6].options == std::vector<std::string>{"rw", "blkio"});
    CHECK(mounts.back().v2);
    const auto escaped = parse_cgroup_mounts("40 30 0:37 /a\\040b /mnt/c\\134g rw - cgroup2 cgroup2 rw\n");
    REQUIRE(escaped.size() == 1);
    CHECK(escaped[0].root == "/a b");
    CHECK(escaped[0].mount_point == "/mnt/c\\g");
}

TEST_CASE("conditions: the cgroup limits of recorded trees, the tightest of each kind") {
    SUBCASE("v1 (blkio, cpu, memory hierarchies)") {
        const CgroupLimits l = read_cgroup_limits(fixture("v1"));
        REQUIRE(l.io_limits.size() == 3);
        // The cgroup's own 350 MiB/s, not its parent's looser 700 MiB/s.
        CHECK(has_limit(l.io_limits, "254:0", "read_bps", 367001600, "blkio.throttle.read_bps_device"));
        CHECK(has_limit(l.io_limits, "254:0", "write_iops", 500, "blkio.throttle.write_iops_device"));
        CHECK(has_limit(l.io_limits, "253:0", "write_iops", 100, "blkio.throttle.write_iops_device"));
        CHECK(l.cpu_quota_cpus == doctest::Approx(2.0));
        CHECK(l.memory_limit_bytes == 8589934592ull);
    }
    SUBCASE("v2 (a scope below a slice)") {
        const CgroupLimits l = read_cgroup_limits(fixture("v2"));
        REQUIRE(l.io_limits.size() == 3);
        CHECK(has_limit(l.io_limits, "8:0", "read_bps", 367001600, "io.max"));
        CHECK(has_limit(l.io_limits, "8:0", "read_iops", 1000, "io.max"));
        CHECK(has_limit(l.io_limits, "8:0", "write_bps", 104857600, "io.max")); // the slice's
        CHECK(l.cpu_quota_cpus == doctest::Approx(1.5));
        CHECK(l.memory_limit_bytes == 17179869184ull); // the slice's; the scope has none
    }
    SUBCASE("v2 in a container (the namespace's root mounted)") {
        const CgroupLimits l = read_cgroup_limits(fixture("v2-container"));
        REQUIRE(l.io_limits.size() == 2);
        CHECK(has_limit(l.io_limits, "8:16", "read_iops", 2000, "io.max"));
        CHECK(l.cpu_quota_cpus == doctest::Approx(4.0));
        CHECK(l.memory_limit_bytes == 34359738368ull);
    }
    SUBCASE("nothing to read: no limit, no error") {
        const CgroupLimits l = read_cgroup_limits(fixture("absent"));
        CHECK(l.io_limits.empty());
        CHECK_FALSE(l.cpu_quota_cpus);
        CHECK_FALSE(l.memory_limit_bytes);
    }
}

TEST_CASE("conditions: NUMA nodes of the allowed CPUs and a GPU's local CPUs from sysfs") {
    CHECK(numa_nodes_of({0, 1}, fixture("v1")) == std::vector<unsigned>{0});
    CHECK(numa_nodes_of({3, 4}, fixture("v1")) == std::vector<unsigned>{0, 1});
    CHECK_FALSE(numa_nodes_of({0}, fixture("absent")));
    CHECK(pci_local_cpus("0000:1B:00.0", fixture("v1")) == std::vector<unsigned>{4, 5, 6, 7});
    CHECK_FALSE(pci_local_cpus("0000:99:00.0", fixture("v1")));
    CHECK_FALSE(pci_local_cpus("not a bus id", fixture("v1")));
}

TEST_CASE("conditions: a snapshot of a recorded tree, a GPU without NVML has null facts and a reason") {
    Machine m;
    DeviceInfo d;
    d.ordinal = 0;
    d.pci_bus_id = "0000:1b:00.0";
    m.devices.push_back(d);
    const ConditionsSnapshot s = take_conditions(m, fixture("v1"));
    CHECK_FALSE(s.time.empty());
    REQUIRE(s.cpus_allowed); // this process's own affinity
    CHECK(s.cpus_allowed_count.value_or(0) > 0);
    CHECK(s.load_average == doctest::Approx(0.52));
    CHECK(s.cgroup.cpu_quota_cpus == doctest::Approx(2.0));
    REQUIRE(s.gpus.size() == 1);
    CHECK(s.gpus[0].local_cpus_allowed.has_value());
    const nlohmann::json j = conditions_json(s, s);
    const auto& g = j["gpus"][0];
    CHECK(g["pci_bus_id"] == "0000:1b:00.0");
    CHECK(g.contains("temperature_c"));
    if (g["temperature_c"].is_null()) CHECK(g["reason"].get<std::string>().find("NVML") != std::string::npos);
}

TEST_CASE("conditions: the report block has the documented shape and holds no name or path") {
    const auto start = snapshot("2026-01-01T00:00:00Z", 0.52, 0, 0, {});
    const auto end = snapshot("2026-01-01T00:01:00Z", 3.1, 1, 0x20, {"sw_thermal"});
    const nlohmann::json j = conditions_json(start, end);
    CHECK(j["start"] == "2026-01-01T00:00:00Z");
    CHECK(j["end"] == "2026-01-01T00:01:00Z");
    CHECK(j["process"]["cpus_allowed"] == "0-7,16-23");
    CHECK(j["process"]["cpus_allowed_count"] == 16);
    CHECK(j["process"]["numa_nodes_allowed"] == nlohmann::json::array({0, 1}));
    const auto& io = j["process"]["cgroup"]["io_limits"][0];
    CHECK(io == nlohmann::json{{"device", "8:0"}, {"kind", "read_bps"}, {"value", 367001600}, {"source", "blkio.throttle.read_bps_device"}});
    CHECK(j["process"]["cgroup"]["cpu_quota_cpus"] == 2.0);
    CHECK(j["process"]["cgroup"]["memory_limit_bytes"].is_null());
    CHECK(j["load_average"] == nlohmann::json{{"start", 0.52}, {"end", 3.1}});
    CHECK(j["logical_cpus"] == 32);
    const auto& g = j["gpus"][0];
    CHECK(g["ordinal"] == 0);
    CHECK(g["other_processes"] == nlohmann::json{{"start", 0}, {"end", 1}});
    CHECK(g["clock_event_reasons"]["start"] == 0);
    CHECK(g["clock_event_reasons"]["end"] == 0x20);
    CHECK(g["clock_event_reasons"]["names"] == nlohmann::json::array({"sw_thermal"}));
    CHECK(g["pcie"] == nlohmann::json{{"gen_current", 5}, {"width_current", 16}, {"gen_max", 5}, {"width_max", 16}});
    CHECK(g["nvlinks_up"] == 18);
    CHECK(g["nvlinks_down"] == 0);
    CHECK(g["ecc_uncorrected_volatile"] == 0);
    CHECK(g["temperature_c"].is_null());
    CHECK(g["local_cpus_allowed"] == true);
    CHECK(g["reason"] == "NVML gave no temperature");

    // A checkpoint: no end yet.
    const nlohmann::json running = conditions_json(start, std::nullopt);
    CHECK(running["end"].is_null());
    CHECK(running["load_average"]["end"].is_null());
    CHECK(running["gpus"][0]["other_processes"]["end"].is_null());

    // anonymize_report has nothing to take out of the block.
    nlohmann::json doc{{"conditions", j}};
    anonymize_report(doc);
    CHECK(doc["conditions"] == j);
}

TEST_CASE("conditions: read_header reads the block leniently and conditions_note says what is set") {
    RunRecord rec;
    rec.conditions_start = snapshot("2026-01-01T00:00:00Z", 0.52, 0, 0, {});
    rec.conditions_end = snapshot("2026-01-01T00:01:00Z", 3.1, 1, 0x20, {"sw_thermal"});
    Machine m;
    const nlohmann::json doc = build_report(rec, m);
    const auto schema = SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    for (const auto& e : schema.errors(doc)) FAIL_CHECK(e);
    const ReportHeader h = read_header(doc);
    REQUIRE(h.conditions);
    const auto& c = *h.conditions;
    CHECK(c.start == "2026-01-01T00:00:00Z");
    CHECK(c.cpus_allowed == "0-7,16-23");
    CHECK(c.cpus_allowed_count == 16);
    CHECK(c.numa_nodes_allowed == std::vector<unsigned>{0, 1});
    REQUIRE(c.io_limits.size() == 1);
    CHECK(c.io_limits[0].value == 367001600);
    CHECK(c.cpu_quota_cpus == doctest::Approx(2.0));
    CHECK_FALSE(c.memory_limit_bytes);
    CHECK(c.load_average_end == doctest::Approx(3.1));
    CHECK(c.logical_cpus == 32);
    REQUIRE(c.gpus.size() == 1);
    CHECK(c.gpus[0].other_processes_end == 1);
    CHECK(c.gpus[0].clock_reasons_end == 0x20u);
    CHECK(c.gpus[0].clock_reason_names == std::vector<std::string>{"sw_thermal"});
    CHECK(c.gpus[0].pcie->gen_max == 5);
    CHECK(c.gpus[0].nvlinks_up == 18);
    CHECK_FALSE(c.gpus[0].temperature_c);
    CHECK(c.gpus[0].local_cpus_allowed == true);

    const std::string note = conditions_note(c);
    CHECK(note.find("reads limited to") == 0);
    CHECK(note.find("by a cgroup on 8:0") != std::string::npos);
    CHECK(note.find("1 other process on GPU0") != std::string::npos);
    CHECK(note.find("GPU0 clocks slowed (sw_thermal)") != std::string::npos);
    CHECK(conditions_note(ReportConditions{}).empty());

    // Without the block, or with one of another type: nothing, never an exception.
    CHECK_FALSE(read_header(build_report(RunRecord{}, m)).conditions);
    nlohmann::json odd = doc;
    odd["conditions"] = "yes";
    CHECK_FALSE(read_header(odd).conditions);
    odd["conditions"] = {{"process", 5}, {"gpus", {1, "x", {{"ordinal", "zero"}, {"nvlinks_up", -3.5}}}}, {"load_average", {{"start", "high"}}}};
    const ReportHeader mistyped = read_header(odd);
    REQUIRE(mistyped.conditions);
    CHECK_FALSE(mistyped.conditions->cpus_allowed);
    CHECK_FALSE(mistyped.conditions->load_average_start);
    REQUIRE(mistyped.conditions->gpus.size() == 1);
    CHECK_FALSE(mistyped.conditions->gpus[0].ordinal);
    CHECK_FALSE(mistyped.conditions->gpus[0].nvlinks_up);
}

TEST_CASE("conditions: the session takes a snapshot before the first configuration and after the last") {
    FakeBehaviour b;
    Registry r;
    r.add(std::make_unique<FakeScenario>("fake_ok", b));
    Machine m;
    RunRecord rec;
    rec.plan.entries = {{"fake_ok", {}}};
    rec.plan.settings.warmup = 0;
    rec.plan.settings.min_samples = 3;
    rec.plan.settings.max_samples = 3;
    rec.plan.settings.max_time_s = 1;
    rec.plan.settings.sample_time_s = 0.001;
    SessionOptions options;
    options.handle_signals = false;
    SessionHooks hooks;
    int calls = 0;
    hooks.conditions = [&] {
        ConditionsSnapshot s;
        s.time = ++calls == 1 ? "first" : "last";
        s.load_average = calls;
        return s;
    };
    const auto run = run_session(expand_plan(r, rec.plan, m), rec, m, options, hooks);
    CHECK(calls == 2);
    const nlohmann::json& written = run.report.document;
    REQUIRE(written.contains("conditions"));
    CHECK(written["conditions"]["start"] == "first");
    CHECK(written["conditions"]["end"] == "last");
    CHECK(written["conditions"]["load_average"]["end"] == 2.0);
    CHECK(run.report.header.conditions.has_value());
}

TEST_CASE("conditions: a run of a host-only scenario writes the block with the process's facts") {
    const fs::path dir = scratch("conditions_run");
    const fs::path out = dir / "r.json";
    const std::string cmd = fmt::format(
        "'{}' run --scenario host_memcpy --size 4K --axis threads=single --max-time 1 --min-samples 3 --max-samples 3 "
        "--rounds 1 --no-topology -q --out '{}' >/dev/null 2>'{}'",
        INTEROPBENCH_BINARY, out.string(), (dir / "err").string());
    const int status = run_shell(cmd);
    REQUIRE_MESSAGE(WIFEXITED(status), slurp(dir / "err"));
    CHECK_MESSAGE(WEXITSTATUS(status) == 0, slurp(dir / "err"));
    const nlohmann::json doc = load_report(out.string());
    REQUIRE(doc.contains("conditions"));
    const auto schema = SchemaCheck::from_file(INTEROPBENCH_SOURCE_DIR "/reports/report.schema.json");
    for (const auto& e : schema.errors(doc)) FAIL_CHECK(e);
    const auto& c = doc["conditions"];
    CHECK(c["start"].is_string());
    CHECK(c["end"].is_string());
    CHECK(c["process"]["cpus_allowed"].is_string());
    CHECK(c["process"]["cpus_allowed_count"].get<int>() >= 1);
    CHECK(c["process"]["cgroup"]["io_limits"].is_array());
    CHECK(c["load_average"]["start"].is_number());
    CHECK(c["gpus"].is_array());
    const ReportHeader h = read_header(doc);
    REQUIRE(h.conditions);
    CHECK(h.conditions->cpus_allowed_count.value_or(0) >= 1);
}
