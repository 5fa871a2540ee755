#pragma once
// The fuzzed entry points, one function per parser of outside input. Each feeds its bytes
// to the parser as the command line would, then uses what was accepted the way `show`,
// `compare`, `run` or `topo` would. Bad input must end in UsageError (caught here); any
// other exception, a broken invariant (thrown as std::logic_error) or a sanitizer report
// is a finding. The libFuzzer targets (fuzz_*.cpp) call these, and the doctest suite
// replays the committed corpora through them (test_hardening.cpp).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "../fake_scenario.hpp"
#include "families/plugin/reply.hpp"
#include "interopbench/compare.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/fleet.hpp"
#include "interopbench/params.hpp"
#include "interopbench/profile.hpp"
#include "interopbench/report.hpp"
#include "presentation/formats.hpp"
#include "topology/topology.hpp"

namespace interopbench::fuzz {

inline void require(bool ok, const char* what) {
    if (!ok) throw std::logic_error(std::string("fuzz invariant broken: ") + what);
}

/// A scratch directory of this process, removed at exit.
inline const std::filesystem::path& scratch_dir() {
    struct Dir {
        std::filesystem::path path =
            std::filesystem::temp_directory_path() / ("interopbench-fuzz-" + std::to_string(::getpid()));
        Dir() { std::filesystem::create_directories(path); }
        ~Dir() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    };
    static const Dir dir;
    return dir.path;
}

/// Writes `bytes` to a file of the scratch directory; returns its path.
inline std::string write_scratch(const std::string& name, std::string_view bytes) {
    const auto path = scratch_dir() / name;
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path.string();
}

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

/// Report JSON, as `show` and `compare` read it.
inline void report(const std::uint8_t* data, std::size_t size) {
    nlohmann::json doc;
    try {
        doc = load_report(write_scratch("report.json", text_of(data, size)));
    } catch (const UsageError&) {
        return;
    }
    const Report rep = read_report_json(doc, "report.json");
    const auto& results = rep.results;
    require(results.size() == doc["results"].size(), "every result is read");
    for (const char* format : {"table", "csv", "markdown"})
        (void)find_format(format, Command::show).render(ReportView{rep, results, {}, CiMetrics::primary, true});
    (void)fingerprint(rep.header);
    CompareOptions options;
    options.resamples = 64; // the bootstrap's cost, not its quality, matters here
    try {
        auto outcome = compare_reports(rep, rep, options);
        for (const auto& r : outcome.results) require(r.verdict != Verdict::missing, "a report matches itself");
        (void)flagged_keys(outcome);
        for (const char* format : {"table", "markdown", "json", "junit"})
            (void)find_format(format, Command::compare).render(ComparisonView{outcome, results});
        Report none = rep;
        none.results.clear();
        outcome = compare_reports(none, rep, options);
        require(outcome.count(Verdict::added) == results.size(), "results only in the new report are new");
    } catch (const UsageError&) {
        // duplicate keys: compare refuses them
    }
    anonymize_report(doc);
    const auto again = read_report(write_scratch("anonymized.json", doc.dump()));
    require(again.results.size() == results.size(), "anonymizing keeps every result");
}

/// Report JSON as a baseline, as `run --baseline FILE` and `compare BASE NEW` read it: through
/// the one file reader (a temporary file), then judged against a fixed, valid new report.
inline void baseline(const std::uint8_t* data, std::size_t size) {
    static const Report fresh = read_report_json(nlohmann::json::parse(R"({
      "schema": {"name": "interopbench.report", "version": "1.1"},
      "results": [{"key": "host_memcpy/size=4096", "scenario": "host_memcpy", "status": "ok",
                   "params": {"size": "4096"}, "param_order": ["size"],
                   "metrics": [{"name": "bandwidth", "unit": "B/s", "better": "higher",
                                "stats": {"n": 3, "median": 1e10, "median_ci": [9e9, 1.1e10]},
                                "samples": [9e9, 1e10, 1.1e10]}]}]})"), "fresh");
    Report base;
    try {
        base = read_report(write_scratch("baseline.json", text_of(data, size)));
        check_unique_keys(base, "baseline.json");
    } catch (const UsageError&) {
        return;
    }
    CompareOptions options;
    options.resamples = 64;
    try {
        const auto outcome = compare_reports(base, fresh, options);
        for (const auto& r : outcome.results)
            for (const auto& m : r.metrics) {
                require(!m.has_ratio || (std::isfinite(m.ratio) && std::isfinite(m.ci_lo) && std::isfinite(m.ci_hi)),
                        "ratios are finite");
                require(!m.has_ratio || m.ratio >= 0, "ratios are not negative");
            }
        (void)compare_exit_code(outcome, true);
        const std::vector<Result> no_results; // none of these formats reads the new values
        const ComparisonView view{outcome, no_results};
        require(find_format("table", Command::compare).render(view).find('\x1b') == std::string::npos,
                "no escape character reaches the terminal");
        for (const char* format : {"markdown", "json", "junit"}) (void)find_format(format, Command::compare).render(view);
    } catch (const UsageError&) {
        // different hardware: refused
    }
}

/// A registry with the ids of the built-in profiles' scenarios, all host-only fakes.
inline const Registry& fake_registry() {
    static const Registry registry = [] {
        Registry r;
        for (const char* id : {"host_memcpy", "h2d_copy", "d2h_copy", "bidir_copy", "alloc_device", "peer_copy",
                               "latency", "nccl_all_reduce", "layout_transpose"})
            r.add(std::make_unique<testing::FakeScenario>(id, testing::FakeBehaviour{}));
        return r;
    }();
    return registry;
}

/// Profile JSON, as `run --profile FILE` reads it (extends may name built-ins or files).
inline void profile(const std::uint8_t* data, std::size_t size) {
    const std::string path = write_scratch("profile.json", text_of(data, size));
    try {
        const auto resolved = resolve_profile(path, fake_registry());
        require(resolved.is_object() && resolved.contains("sources"), "a resolved profile has its sources");
        (void)profile_hash(resolved);
        RunPlan plan = plan_from_profile(resolved, path, fake_registry());
        record_profile(plan);
        plan.settings.validate();
        Machine machine;
        const auto configs = expand_plan(fake_registry(), plan, machine);
        std::set<std::string> keys;
        for (const auto& c : configs) require(keys.insert(c.key()).second, "each configuration runs once");
    } catch (const UsageError&) {
    }
}

/// Size and range expressions of the command line: --size and counts, and compare's
/// --threshold and --floor.
inline void sizes(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = text_of(data, size);
    try {
        const auto v = parse_size(text);
        require(v > 0, "sizes are positive");
        require(parse_size(format_size(v)) == v, "format_size round-trips");
    } catch (const UsageError&) {
    }
    try {
        const auto list = parse_size_list(text);
        require(!list.empty() && list.size() <= 10000, "size lists hold 1 to 10000 values");
        for (auto s : list) require(s > 0, "listed sizes are positive");
    } catch (const UsageError&) {
    }
    try {
        (void)parse_uint(text, "count");
    } catch (const UsageError&) {
    }
    CompareOptions options;
    try {
        const double f = parse_fraction(text, "threshold");
        require(f >= 0 && std::isfinite(f), "fractions are finite and not negative");
    } catch (const UsageError&) {
    }
    try {
        add_threshold(options, text);
        (void)threshold_for(options, "h2d_copy", "bandwidth");
    } catch (const UsageError&) {
    }
    try {
        add_floor(options, text);
    } catch (const UsageError&) {
    }
}

/// `--devices` lists, against a machine with two GPUs.
inline void devices(const std::uint8_t* data, std::size_t size) {
    static const std::vector<DeviceInfo> gpus = [] {
        std::vector<DeviceInfo> d(2);
        d[0].ordinal = 0;
        d[0].pci_bus_id = "0000:1b:00.0";
        d[1].ordinal = 1;
        d[1].pci_bus_id = "0000:2c:00.0";
        return d;
    }();
    try {
        const auto chosen = parse_device_list(text_of(data, size), gpus);
        require(!chosen.empty() && chosen.size() <= gpus.size(), "a selection names 1 to all GPUs");
        for (int d : chosen) require(d == 0 || d == 1, "only existing GPUs are chosen");
        require(std::set<int>(chosen.begin(), chosen.end()).size() == chosen.size(), "each GPU is chosen once");
    } catch (const UsageError&) {
    }
}

/// Recorded topology XML as `topo --from FILE` reads it. Bytes after a line
/// "<!--sidecar-->" become the NVLink sidecar next to the XML.
inline void topology_xml(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = text_of(data, size);
    constexpr std::string_view k_marker = "\n<!--sidecar-->\n";
    const auto cut = text.find(k_marker);
    const std::string path = write_scratch("topology.xml", text.substr(0, cut));
    std::error_code ec;
    std::filesystem::remove(sidecar_path(path), ec);
    if (cut != std::string_view::npos) write_scratch("topology.xml.nvlink.json", text.substr(cut + k_marker.size()));
    try {
        const Topology topo = load_topology_xml(path);
        const auto j = topology_json(topo);
        require(j.is_object(), "the topology is a JSON object");
        (void)find_format("table", Command::topo).render(TopologyView{topo});
        (void)find_format("markdown", Command::topo).render(TopologyView{topo});
        for (std::size_t a = 0; a < topo.gpus.size(); ++a)
            for (std::size_t b = 0; b < topo.gpus.size(); ++b)
                if (a != b) require(topo.pair(a, b) != nullptr, "every ordered GPU pair is described");
    } catch (const UsageError&) {
    }
}

/// One line a plugin answers with, as Process::request reads it (parse_json: a JSON object, or
/// the process is refused), then read as a describe, a measure and a details reply. A bad
/// reply ends in ConfigError (BadReply for its form): that costs the plugin or the
/// configuration, never the run.
inline void plugin_reply(const std::uint8_t* data, std::size_t size) {
    const nlohmann::json reply = parse_json(text_of(data, size), false);
    if (reply.is_discarded() || !reply.is_object()) return;
    static const plugin::Manifest manifest = [] {
        plugin::Manifest m;
        m.id = "fuzz_plugin";
        m.needs_gpu = false;
        return m;
    }();
    static const std::vector<MetricInfo> fixed = {{"time", "s", Better::lower, ""}, {"bandwidth", "B/s", Better::higher, ""}};
    std::vector<MetricInfo> described = fixed;
    try {
        const ScenarioInfo info = plugin::parse_describe_reply(reply, manifest);
        require(info.id == manifest.id && !info.metrics.empty(), "a description is of its plugin and has metrics");
        std::set<std::string> names;
        for (const auto& m : info.metrics) require(plugin::is_id(m.name) && names.insert(m.name).second, "metric names are unique ids");
        for (const auto& a : info.axes)
            if (a.kind == AxisKind::choice)
                for (const auto& v : a.defaults)
                    require(std::find(a.choices.begin(), a.choices.end(), v) != a.choices.end(), "choice values are choices");
        described = info.metrics;
    } catch (const ConfigError&) {
    }
    const std::vector<MetricInfo>* lists[] = {&fixed, &described};
    for (const auto* metrics : lists) {
        try {
            const auto got = plugin::parse_measure_reply(reply, *metrics);
            require(got.values.size() == metrics->size(), "a value per described metric");
            for (double v : got.values) require(std::isnan(v) || std::isfinite(v), "values are finite or missing");
            require(!got.clock.empty(), "the clock is named");
        } catch (const ConfigError&) {
        }
    }
    try {
        const auto details = plugin::parse_details_reply(reply);
        require(details.is_object(), "details are an object");
        (void)valid_utf8(details).dump(); // as a report holds them
    } catch (const ConfigError&) {
    }
}

/// Four healthy machines' reports of host_memcpy of 4 KiB and 1 MiB (the second file a
/// multi-node report's shape is not needed: the fuzzed bytes bring that), for fleet().
inline const std::vector<std::string>& fleet_healthy() {
    static const std::vector<std::string> files = [] {
        std::vector<std::string> out;
        for (int i = 0; i < 4; ++i) {
            RunRecord rec;
            rec.argv = {"interopbench", "run"};
            rec.finished = "2026-12-07T00:00:00Z";
            for (const char* size : {"4096", "1048576"}) {
                Result r;
                r.scenario = "host_memcpy";
                r.family = "copy";
                r.params = Params({{"size", size}, {"threads", "single"}});
                r.key = r.scenario + "/" + r.params.canonical();
                MetricResult m;
                m.info = {"bandwidth", "B/s", Better::higher, ""};
                m.samples = {9e9 + i * 1e7, 9.1e9 + i * 1e7, 9.2e9 + i * 1e7};
                m.stats = compute_stats(m.samples);
                m.round_medians = {9.1e9, 9.1e9 + i * 1e7};
                r.metrics.push_back(std::move(m));
                rec.results.push_back(std::move(r));
            }
            Machine machine;
            nlohmann::json doc = build_report(rec, machine);
            doc["host"]["hostname"] = "node-" + std::to_string(i);
            doc["host"]["cpu"] = "Fuzz CPU";
            out.push_back(write_scratch("fleet-" + std::to_string(i) + ".json", doc.dump()));
        }
        return out;
    }();
    return files;
}

/// Fleet inputs, as `fleet` reads them: the bytes as a fifth machine's report (or a
/// multi-node one) judged with four healthy ones, with and without --skip-unreadable, then the
/// confirmation plan, the expectations written and read back and judged against, and every
/// rendering; and the bytes as the --expect file. Bad input ends in UsageError.
inline void fleet(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = text_of(data, size);
    const std::vector<std::string>& healthy = fleet_healthy();
    std::vector<std::string> files = healthy;
    files.push_back(write_scratch("fleet-fuzzed.json", text));
    for (const bool skip : {false, true}) {
        fleet::Options options;
        options.skip_unreadable = skip;
        try {
            const fleet::Outcome outcome = fleet::analyse(files, options);
            require(outcome.members.size() >= healthy.size(), "every healthy machine is a member");
            for (const auto& o : outcome.outliers) {
                require(o.row < outcome.rows.size() && o.figure < outcome.rows[o.row].figures.size(), "outliers point at figures");
                require(outcome.rows[o.row].figures[o.figure].member < outcome.members.size(), "figures point at members");
            }
            (void)fleet::exit_code(outcome);
            (void)fleet::verdict_line(outcome);
            for (const auto& step : fleet::confirm_plan(outcome, 3, scratch_dir().string())) {
                require(step.args.size() >= 4 && step.args[0] == "run", "a confirmation step is a run");
                require(step.member < outcome.members.size(), "a step is of a member");
            }
            const fleet::Expectations expected =
                fleet::parse_expectations(parse_json(fleet::expectations_json(outcome).dump()), "written expectations");
            try {
                (void)fleet::analyse(files, options, &expected);
            } catch (const UsageError&) {
            }
            for (const Format& f : formats())
                if (f.accepts(Command::fleet)) (void)f.render(FleetView{outcome});
        } catch (const UsageError&) {
        }
    }
    // The same bytes as an --expect file: read as the command reads it (text that is no JSON
    // is a UsageError there), then judged against.
    const nlohmann::json doc = parse_json(text, false);
    if (doc.is_discarded()) return;
    try {
        const fleet::Expectations expected = fleet::parse_expectations(doc, "--expect file");
        for (const auto& [key, e] : expected) require(std::isfinite(e.median) && std::isfinite(e.spread), "expectations are finite");
        fleet::Options options;
        (void)fleet::analyse(healthy, options, &expected);
    } catch (const UsageError&) {
    }
}

} // namespace interopbench::fuzz
