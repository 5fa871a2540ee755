// `interopbench run`: resolve the plan (profile + command line), measure, report.
#include <unistd.h>

#include <csignal>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "families/builtin.hpp"
#include "cli/cli.hpp"
#include "gpu/gpu_facts.hpp"
#include "interopbench/compare.hpp"
#include "interopbench/merge.hpp"
#include "interopbench/output.hpp"
#include "interopbench/profile.hpp"
#include "interopbench/report.hpp"
#include "interopbench/runner.hpp"
#include "topology/topology.hpp"

namespace interopbench::cli {
namespace {

struct RunOptions {
    std::string scenarios, sizes, devices, profile, out, format = "table";
    std::vector<std::string> axes;
    bool quiet = false, require_gpu = false, no_numa_bind = false, no_topology = false;
    bool anonymize = false;
    std::string storage_dir;
    bool keep_files = false;
    std::optional<int> warmup, min_samples, max_samples;
    std::optional<std::string> noise;
    std::optional<double> max_time, sample_time;
    struct Baseline {
        std::string file;                    ///< --baseline: compare the run with this report
        int confirm = 0;                     ///< --confirm N: re-measure flagged results N times
        std::vector<std::string> thresholds; ///< --threshold, as for `compare`
    } baseline;
};

// ---- --baseline / --confirm: compare after the run ----------------------------------------
// The run's report is compared with a baseline report as `interopbench compare` does. With
// --confirm N, flagged results (regressions, and results too noisy to call) are measured N
// more times, round-robin over the flagged configurations so that a drift in time hits them
// all alike, and a regression stands only when every re-measurement regresses too.

/// Checks the options, reads the baseline (null without --baseline) and refuses different
/// hardware, all before anything is measured. Every rank calls it, so that a refusal under
/// mpirun ends every rank alike.
nlohmann::json load_baseline(const RunOptions::Baseline& b, const RunRecord& rec, const Machine& machine) {
    if (b.file.empty()) {
        if (b.confirm != 0 || !b.thresholds.empty())
            throw UsageError("--confirm and --threshold compare with a baseline", "add --baseline FILE");
        return nullptr;
    }
    if (b.confirm < 0) throw UsageError(fmt::format("--confirm {} is negative", b.confirm), "give 0 or more re-measurements");
    CompareOptions thresholds;
    for (const auto& t : b.thresholds) add_threshold(thresholds, t);
    if (machine.world)
        throw UsageError("--baseline does not work under mpirun",
                         "save the report with --out and compare it afterwards with 'interopbench compare'");
    nlohmann::json baseline = load_report(b.file);
    check_unique_keys(baseline, b.file);
    for (const auto& d : compare_fingerprints(baseline, build_report(rec, machine)))
        if (d.hardware)
            throw UsageError(fmt::format("baseline '{}' comes from different hardware ({}: '{}' vs '{}')", b.file, d.field,
                                         d.base, d.fresh),
                             "run on the baseline's machine, or save the report with --out and use "
                             "'interopbench compare --cross-machine'");
    return baseline;
}

/// Compares, confirms, prints the comparison (stderr when stdout carries JSON or CSV) and
/// returns the gate's exit code.
int gate_on_baseline(const RunOptions& o, const nlohmann::json& baseline, const nlohmann::json& report,
                     const std::vector<Config>& configs, Runner& runner) {
    CompareOptions options;
    for (const auto& t : o.baseline.thresholds) add_threshold(options, t);
    options.base_label = o.baseline.file;
    options.new_label = o.out.empty() ? "this run" : o.out;
    CompareOutcome outcome = compare_reports(baseline, report, options);
    const auto flagged = flagged_keys(outcome);
    if (o.baseline.confirm > 0 && !flagged.empty()) {
        if (!o.quiet)
            fmt::print(stderr, "confirming {} flagged result(s) with {} re-measurement(s) each\n", flagged.size(),
                       o.baseline.confirm);
        std::map<std::string, const Config*> by_key;
        for (const auto& c : configs) by_key[c.key()] = &c;
        std::map<std::string, std::vector<nlohmann::json>> reruns;
        for (int round = 0; round < o.baseline.confirm && runner.fatal().empty(); ++round)
            for (const auto& key : flagged)
                if (const auto it = by_key.find(key); it != by_key.end()) reruns[key].push_back(runner.run_one(*it->second));
        apply_confirmations(outcome, baseline, reruns, options);
    }
    const OutputFormat format = parse_format(o.format);
    const bool to_stdout = format == OutputFormat::table || format == OutputFormat::markdown;
    const std::string text =
        render_comparison(outcome, format == OutputFormat::markdown ? CompareFormat::markdown : CompareFormat::table);
    if (to_stdout && !o.quiet) fmt::print("\n{}", text);
    else if (!to_stdout) fmt::print(stderr, "\n{}", text);
    return static_cast<int>(compare_exit_code(outcome, false));
}
// ---- end of --baseline / --confirm ---------------------------------------------------------

extern "C" void on_signal(int sig) {
    g_interrupted = true;
    std::signal(sig, SIG_DFL); // a second signal ends the process at once
}

/// "0.5%" -> 0.005; "0.005" -> 0.005.
double parse_fraction(const std::string& text, const std::string& what) {
    try {
        std::size_t used = 0;
        double v = std::stod(text, &used);
        std::string rest = text.substr(used);
        if (rest == "%") v /= 100;
        else if (!rest.empty()) throw std::invalid_argument(text);
        return v;
    } catch (const std::exception&) {
        throw UsageError(fmt::format("invalid {} '{}'", what, text), "give a fraction such as 0.005 or a percentage such as 0.5%");
    }
}

RunPlan build_plan(const RunOptions& o, const Registry& registry) {
    RunPlan plan;
    if (!o.scenarios.empty()) {
        // Explicit selection: the profile (when named) contributes its settings only.
        if (!o.profile.empty()) plan.settings = load_profile(o.profile, registry).settings;
        plan.entries.push_back({o.scenarios, {}});
        (void)registry.select(o.scenarios); // unknown names fail here, with suggestions
        plan.profile = o.profile;
    } else {
        plan = load_profile(o.profile.empty() ? default_profile_name() : o.profile, registry);
    }
    if (!o.sizes.empty()) override_axis(plan, registry, "size", {o.sizes});
    for (const auto& a : o.axes) {
        const auto eq = a.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
            throw UsageError(fmt::format("invalid --axis '{}'", a), "write --axis NAME=VALUES, e.g. --axis host_mem=pinned,registered");
        override_axis(plan, registry, a.substr(0, eq), {a.substr(eq + 1)});
    }
    auto& s = plan.settings;
    if (o.warmup) s.warmup = *o.warmup;
    if (o.min_samples) s.min_samples = *o.min_samples;
    if (o.max_samples) s.max_samples = *o.max_samples;
    if (o.noise) s.noise = parse_fraction(*o.noise, "noise target");
    if (o.max_time) s.max_time_s = *o.max_time;
    if (o.sample_time) s.sample_time_s = *o.sample_time;
    if (o.no_numa_bind) s.bind_numa = false;
    s.storage_dir = o.storage_dir;
    s.keep_files = o.keep_files;
    s.validate();
    record_profile(plan);
    return plan;
}

int run_command(const RunOptions& o, const std::vector<std::string>& argv) {
    const OutputFormat format = parse_format(o.format);
    if (!o.out.empty()) check_output_path(o.out); // before any measuring
    const Registry registry = builtin_registry();
    RunRecord rec;
    rec.argv = argv;
    rec.plan = build_plan(o, registry);
    Machine machine = probe_machine(o.devices);
    const bool root = !machine.world || machine.world->rank() == 0;
    const bool quiet = o.quiet || !root;
    const auto configs = expand_plan(registry, rec.plan, machine);
    if (!machine.cuda_available && !quiet)
        fmt::print(stderr, "note: {}; host-only scenarios still run\n", machine.cuda_note);
    if (!o.no_topology) rec.topology = discover_topology_json(machine);
    const nlohmann::json baseline = load_baseline(o.baseline, rec, machine);
    before_run(rec.plan.settings, configs);

    g_interrupted = false;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    // A parent may start us with these signals blocked (the mask is inherited): unblock
    // them, or an interrupted run would go on to the end.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);

    rec.started = now_iso8601();
    Runner runner(machine, rec.plan.settings);
    // --anonymize applies to every report this run writes or prints, checkpoints included.
    auto report_of = [&](const RunRecord& run) {
        nlohmann::json doc = build_report(run, machine);
        if (o.anonymize) anonymize_report(doc);
        return doc;
    };
    const bool progress = !quiet && stderr_is_tty();
    auto last_checkpoint = std::chrono::steady_clock::now();
    std::vector<Result> results;
    for (std::size_t i = 0; i < configs.size() && !g_interrupted; ++i) {
        if (progress)
            fmt::print(stderr, "\r\033[K[{}/{}] {}", i + 1, configs.size(), configs[i].key());
        results.push_back(runner.run_one(configs[i]));
        if (!runner.fatal().empty() || results.back().status == Status::interrupted) break;
        // Checkpoint: a long run killed half-way still leaves its finished results.
        if (!o.out.empty() && root && std::chrono::steady_clock::now() - last_checkpoint > std::chrono::seconds(10)) {
            RunRecord partial = rec;
            partial.results = results;
            partial.status = "running";
            partial.finished = now_iso8601();
            write_file_atomic(o.out, report_of(partial).dump(1) + "\n");
            last_checkpoint = std::chrono::steady_clock::now();
        }
    }
    if (progress) fmt::print(stderr, "\r\033[K");
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    rec.finished = now_iso8601();
    rec.status = g_interrupted ? "interrupted" : runner.fatal().empty() ? "complete" : "aborted";
    if (!runner.fatal().empty())
        rec.warnings.push_back(fmt::format("run stopped after a fatal device error: {}", runner.fatal()));
    if (!machine.cuda_available) rec.warnings.push_back(machine.cuda_note);
    if (rec.topology.is_object()) annotate_results(rec.topology, results);
    after_run(results);
    rec.results = std::move(results);
    if (machine.world) {
        // Under MPI, rank 0 gathers every rank's results and merges them into one report.
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        const DeviceInfo* gpu = machine.selected.empty() ? nullptr : machine.device(machine.selected.front());
        const RankIdentity who{machine.world->rank(), machine.world->local_rank(), host,
                               gpu ? gpu->pci_bus_id : std::string{}};
        const auto gathered = machine.world->gather(encode_rank_results(who, rec.results), 0);
        if (root) rec.results = merge_rank_results(gathered);
    }

    if (!root) return rec.status == "complete" ? 0 : 1;
    const nlohmann::json report = report_of(rec);
    if (!o.out.empty()) write_file_atomic(o.out, report.dump(1) + "\n");
    if (!o.quiet) {
        if (format == OutputFormat::json) fmt::print("{}\n", report.dump(2));
        else fmt::print("{}", render_results(rec.results, format));
    }
    int failed = 0, ok = 0, skipped = 0;
    for (const auto& r : rec.results) {
        failed += r.status == Status::failed;
        ok += r.status == Status::ok;
        skipped += r.status == Status::skipped;
    }
    if (!o.quiet)
        fmt::print(stderr, "{} ok, {} skipped, {} failed{}{}\n", ok, skipped, failed,
                   rec.status == "complete" ? "" : fmt::format(" (run {})", rec.status),
                   o.out.empty() ? "" : fmt::format("; report written to {}", o.out));
    if (g_interrupted) fmt::print(stderr, "interrupted: the report holds the {} finished result(s)\n", rec.results.size());
    if (!runner.fatal().empty()) fmt::print(stderr, "error: {}\n", runner.fatal());
    if (o.require_gpu && !machine.cuda_available) {
        fmt::print(stderr, "error: --require-gpu given but {}\n", machine.cuda_note);
        return static_cast<int>(ExitCode::failed);
    }
    const int gate = baseline.is_null() ? 0 : gate_on_baseline(o, baseline, report, configs, runner);
    if (failed || rec.status != "complete") return static_cast<int>(ExitCode::failed);
    return gate;
}

} // namespace

void add_run(CLI::App& app, Outcome& out) {
    auto o = std::make_shared<RunOptions>();
    auto* cmd = app.add_subcommand("run", "measure scenarios and report (no options: the default profile)");
    cmd->add_option("-s,--scenario", o->scenarios, "scenario ids or globs, comma separated (e.g. 'h2d*,d2h_copy')");
    cmd->add_option("--size", o->sizes, "sizes for every scenario with a size axis: 4K,1M or LO:HI[:xF|:+S], e.g. 4K:1G:x4");
    cmd->add_option("-a,--axis", o->axes, "set an axis: NAME=V1,V2 (repeatable), e.g. host_mem=pinned,registered");
    cmd->add_option("-d,--devices", o->devices, "GPUs to use: ordinals or PCI bus ids, comma separated (default all)");
    cmd->add_option("-p,--profile", o->profile, "named profile (quick, ci, full) or a profile JSON file");
    cmd->add_option("-o,--out", o->out, "write the JSON report to FILE (atomically)");
    cmd->add_option("-f,--format", o->format, "stdout format: table, json, csv, markdown");
    cmd->add_flag("-q,--quiet", o->quiet, "print nothing on stdout (errors still go to stderr)");
    cmd->add_flag("--require-gpu", o->require_gpu, "exit 1 when no usable GPU is found");
    cmd->add_option("--warmup", o->warmup, "untimed samples before measuring");
    cmd->add_option("--min-samples", o->min_samples, "never stop sampling before this many");
    cmd->add_option("--max-samples", o->max_samples, "stop sampling at this many");
    cmd->add_option("--noise", o->noise, "stop when the median's 95% CI half-width is within this (0.005 or 0.5%)");
    cmd->add_option("--max-time", o->max_time, "time budget per configuration, seconds");
    cmd->add_option("--sample-time", o->sample_time, "target duration of one sample, seconds");
    cmd->add_flag("--no-numa-bind", o->no_numa_bind, "do not bind threads and host buffers near each GPU");
    cmd->add_flag("--no-topology", o->no_topology, "do not discover and embed the topology");
    cmd->add_option("--storage-dir", o->storage_dir,
                    "directory for the storage scenarios' files (default: a scratch directory under TMPDIR)");
    cmd->add_flag("--keep-files", o->keep_files, "keep the storage scenarios' files for the next run");
    cmd->add_flag("--anonymize", o->anonymize, "leave out host name, UUIDs, serial numbers and home directories");
    cmd->add_option("--baseline", o->baseline.file,
                    "compare this run with a baseline report, as 'interopbench compare' does; exit 1 on a regression");
    cmd->add_option("--confirm", o->baseline.confirm,
                    "with --baseline: measure flagged results N more times, interleaved; a regression must repeat every time");
    cmd->add_option("--threshold", o->baseline.thresholds,
                    "with --baseline: minimum effect, 5% or SCENARIO[.METRIC]=3% (repeatable), as for 'compare'")
        ->allow_extra_args(false);
    cmd->callback([o, &out] { out.code = run_command(*o, invocation_argv()); });
}

} // namespace interopbench::cli
