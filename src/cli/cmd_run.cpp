// `interopbench run`: resolve the plan (profile + command line), measure, report.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "families/builtin.hpp"
#include "cli/cli.hpp"
#include "gpu/gpu_facts.hpp"
#include "interopbench/compare.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/profile.hpp"
#include "interopbench/report.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/session.hpp"
#include "topology/conditions_probe.hpp"
#include "presentation/ci_formats.hpp"
#include "presentation/comparison.hpp"
#include "presentation/html.hpp"
#include "topology/topology.hpp"

namespace interopbench::cli {
namespace {

struct RunOptions {
    std::string scenarios, sizes, devices, profile, out, html, format = "table", metrics = "primary";
    std::string progress; ///< --progress: "true" given alone, "json", or empty when not given (progress_style)
    std::vector<std::string> axes;
    std::vector<std::string> only; // result keys to measure exactly
    std::vector<std::string> transfers; // -t: sets of the transfer scenario, one each
    bool dry_run = false;
    bool quiet = false, require_gpu = false, no_numa_bind = false, no_topology = false, wide = false;
    bool anonymize = false;
    std::vector<std::string> exports;       ///< --export FORMAT=PATH (CI formats)
    std::string export_metrics = "primary"; ///< --export-metrics
    std::optional<int> warmup, min_samples, max_samples, rounds, max_rounds;
    std::optional<std::string> noise;
    std::optional<double> max_time, sample_time;
    FamilyOptions family; ///< the options the families declare (storage directory, plugin folders...)
    struct Baseline {
        std::string file;                    ///< --baseline: compare the run with this report
        int confirm = 0;                     ///< --confirm N: re-measure flagged results N times
        std::vector<std::string> thresholds; ///< --threshold, as for `compare`
    } baseline;
};

// ---- --baseline / --confirm: the run's report is compared with a baseline report as
// `interopbench compare` does, by the session; here the baseline is read and checked.

/// Checks the options, reads the baseline (none without --baseline) and refuses different
/// hardware, all before anything is measured. Every rank calls it, so that a refusal under
/// mpirun ends every rank alike.
std::optional<Report> load_baseline(const RunOptions::Baseline& b, const std::string& out, const RunRecord& rec,
                                    const Machine& machine) {
    if (b.file.empty()) {
        if (b.confirm != 0 || !b.thresholds.empty())
            throw UsageError("--confirm and --threshold compare with a baseline", "add --baseline FILE");
        return std::nullopt;
    }
    if (b.confirm < 0 || b.confirm > 20)
        throw UsageError(fmt::format("--confirm {} is outside 0 to 20", b.confirm),
                         "give 0 to 20 re-measurements of each flagged result (3 is usual)");
    CompareOptions thresholds;
    for (const auto& t : b.thresholds) add_threshold(thresholds, t);
    if (machine.world)
        throw UsageError("--baseline does not work under mpirun",
                         "save the report with --out and compare it afterwards with 'interopbench compare'");
    if (!out.empty() && same_file(out, b.file))
        throw UsageError(fmt::format("--out '{}' is the baseline '{}': the run would overwrite it", out, b.file),
                         "write the new report to another file");
    Report baseline = read_report(b.file);
    limit_report(baseline);
    check_unique_keys(baseline, b.file);
    const ReportHeader here = read_report_json(build_report(rec, machine), "this run's report").header;
    for (const auto& d : compare_fingerprints(baseline.header, here))
        if (d.hardware)
            throw UsageError(fmt::format("baseline '{}' comes from different hardware ({}: '{}' vs '{}')", b.file, d.field,
                                         d.base, d.fresh),
                             "run on the baseline's machine, or save the report with --out and use "
                             "'interopbench compare --cross-machine'");
    return baseline;
}

RunPlan build_plan(const RunOptions& o, const Registry& registry) {
    RunPlan plan;
    if (!o.only.empty()) {
        if (!o.scenarios.empty() || !o.transfers.empty())
            throw UsageError(fmt::format("--only and {} both choose what to run", o.scenarios.empty() ? "--transfer" : "--scenario"),
                             "give result keys with --only, or scenarios with --scenario and transfer sets with -t");
        // Exact configurations, as reports name them: SCENARIO/AXIS=VALUE,...; a profile gives settings only.
        if (!o.profile.empty()) plan.settings = load_profile(o.profile, registry).settings;
        for (const auto& key : o.only) {
            const auto slash = key.find('/');
            if (slash == std::string::npos || slash == 0)
                throw UsageError(fmt::format("invalid --only '{}'", key),
                                 "give a result key as a report names it, e.g. h2d_copy/size=1048576,host_mem=pinned,engine=ce,device=0");
            // A key is data, never a pattern: one scenario id, every axis once with one literal
            // value (no glob, list, range or "all"), so that it names exactly one configuration.
            const std::string example =
                "give a result key as a report names it, e.g. h2d_copy/size=1048576,host_mem=pinned,engine=ce,device=0";
            PlanEntry entry{key.substr(0, slash), {}};
            const Scenario* scenario = registry.find(entry.pattern);
            if (!scenario) {
                (void)registry.select(entry.pattern); // an unknown name fails here, with suggestions
                throw UsageError(fmt::format("invalid --only '{}': '{}' is a pattern, not one scenario id", key, entry.pattern),
                                 example);
            }
            std::string_view rest = std::string_view(key).substr(slash + 1);
            while (!rest.empty()) {
                const auto comma = rest.find(',');
                const std::string_view item = rest.substr(0, comma);
                const auto eq = item.find('=');
                if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size())
                    throw UsageError(fmt::format("invalid --only '{}': '{}' is not AXIS=VALUE", key, item), example);
                const std::string name(item.substr(0, eq)), value(item.substr(eq + 1));
                const auto& axes = scenario->info().axes;
                const auto axis = std::find_if(axes.begin(), axes.end(), [&](const Axis& x) { return x.name == name; });
                if (axis == axes.end())
                    throw UsageError(fmt::format("invalid --only '{}': {} has no axis '{}'", key, entry.pattern, name), example);
                if (entry.axes.count(name))
                    throw UsageError(fmt::format("invalid --only '{}': axis '{}' is given twice", key, name), example);
                // A range is FROM:TO[:STEP] on a number's axis; in a text (a transfer set's
                // "host:pinned") a colon is a letter.
                const char* pattern_chars = axis->kind == AxisKind::text ? "*?[" : ":*?[";
                if (value == "all" || value.find_first_of(pattern_chars) != std::string::npos)
                    throw UsageError(fmt::format("invalid --only '{}': '{}' is a pattern or a range, not one value", key, value),
                                     example);
                entry.axes[name] = {value};
                rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
            }
            for (const Axis& x : scenario->info().axes)
                if (!entry.axes.count(x.name))
                    throw UsageError(fmt::format("invalid --only '{}': axis '{}' is missing (a key names every axis)", key, x.name),
                                     example);
            plan.entries.push_back(std::move(entry));
        }
        plan.profile = o.profile;
    } else if (!o.scenarios.empty() || !o.transfers.empty()) {
        // Explicit selection: the profile (when named) contributes its settings only.
        if (!o.profile.empty()) plan.settings = load_profile(o.profile, registry).settings;
        if (!o.scenarios.empty()) {
            plan.entries.push_back({o.scenarios, {}});
            (void)registry.select(o.scenarios); // unknown names fail here, with suggestions
        }
        // Each -t is one value of the transfer family's scenario (docs/TRANSFERS.md), which
        // reads it when the plan is expanded.
        if (!o.transfers.empty()) plan.entries.push_back({"transfer", {{"set", o.transfers}}});
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
    if (o.rounds) s.rounds = *o.rounds;
    if (o.max_rounds) s.max_rounds = *o.max_rounds;
    if (o.noise) s.noise = parse_fraction(*o.noise, "noise target");
    if (o.max_time) s.max_time_s = *o.max_time;
    if (o.sample_time) s.sample_time_s = *o.sample_time;
    if (o.no_numa_bind) s.bind_numa = false;
    s.options = o.family;
    s.validate();
    record_profile(plan);
    return plan;
}

/// Prints the comparison with the baseline in the run's format when it is for people, else
/// as a table on stderr (stdout carries JSON or CSV).
void print_gate(const RunOptions& o, const CompareOutcome& outcome) {
    const Format& format = find_format(o.format, Command::run);
    const bool to_stdout = format.human;
    const Format& shown = to_stdout ? format : find_format("table", Command::compare);
    const std::vector<Result> none;
    const std::string text = shown.render(ComparisonView{outcome, none, CiMetrics::primary,
                                                         color_on(to_stdout ? STDOUT_FILENO : STDERR_FILENO),
                                                         table_style(o.wide, o.metrics).width});
    if (to_stdout && !o.quiet) fmt::print("\n{}", text);
    else if (!to_stdout) fmt::print(stderr, "\n{}", text);
}

/// The summary again after everything else (the tables scroll away), with the gate's verdict
/// and the files written: for the table format only (markdown and machine formats end as
/// they are).
std::string closing_summary(const SessionResult& run, const TableStyle& style) {
    std::string out = "\n" + render_summary(run.record.results, false, style);
    if (run.gate) out += "  gate: " + verdict_line(*run.gate, style.color) + "\n";
    if (!run.written.empty()) out += "  report: " + display_text(run.written) + "\n";
    if (!run.html_written.empty()) out += "  page: " + display_text(run.html_written) + "\n";
    return out;
}

/// Writes the --export files from the report's results, after the report itself, so a
/// failure here never loses the report. False (each failure on stderr) when one failed.
bool write_exports(const std::vector<CiExport>& exports, CiMetrics metrics, const SessionResult& run) {
    if (exports.empty()) return true;
    const std::vector<Result>& results = run.report.results;
    bool ok = true;
    for (const auto& e : exports) {
        try {
            // With --baseline, annotated with the comparison, as 'compare --export' writes them.
            write_file_atomic(e.path, run.gate ? e.format->render(ComparisonView{*run.gate, results, metrics})
                                               : e.format->render(ReportView{run.report, results, {}, metrics}));
        } catch (const std::exception& err) {
            fmt::print(stderr, "error: the {} export was not written: {}\n", e.format->name, display_text(err.what()));
            ok = false;
        }
    }
    return ok;
}

/// --dry-run: each configuration the plan expands to, and the paths its bytes cross.
ListView dry_run_view(const std::vector<Config>& configs) {
    ListView view;
    view.rows = {{"configuration", "paths it crosses"}};
    view.doc = nlohmann::json::array();
    for (const Config& c : configs) {
        std::vector<PathUse> paths;
        std::string labels;
        try {
            paths = c.scenario->paths(c.params);
        } catch (const std::exception& e) {
            labels = fmt::format("(not declared: {})", e.what());
        }
        for (const PathUse& p : paths)
            labels += (labels.empty() ? "" : ", ") + p.label() + (p.traffic != 1 ? fmt::format(" (x{:g})", p.traffic) : "");
        view.rows.push_back({display_text(c.key()), labels.empty() ? "-" : labels});
        view.doc.push_back({{"key", c.key()}, {"scenario", c.scenario->id()}, {"params", c.params.items()}, {"paths", paths}});
    }
    return view;
}

/// What is said before measuring: how many configurations are measured (and how many are
/// skipped for want of a GPU), in how many rounds, and the bound on their sampling; `then`
/// closes it with what comes on top (set-up and teardown). `verb`: "measuring", or "would
/// measure" for a dry run.
std::string plan_line(const std::vector<Config>& configs, const RunSettings& s, const Machine& machine, std::string_view verb,
                      std::string_view then) {
    const auto skipped = static_cast<std::size_t>(
        std::count_if(configs.begin(), configs.end(), [&](const Config& c) { return needs_missing_gpu(c, machine); }));
    const std::size_t measured = configs.size() - skipped;
    if (measured == 0)
        return fmt::format("nothing to measure: {} configuration{} need{} a GPU and none is usable here, so each is skipped\n",
                           configs.size(), configs.size() == 1 ? "" : "s", configs.size() == 1 ? "s" : "");
    // The budget of a configuration is shared by its planned rounds; an extra round has a
    // planned round's share.
    const double planned = s.max_time_s * static_cast<double>(measured);
    const double most = s.max_rounds > s.rounds ? planned / s.rounds * s.max_rounds : planned;
    return fmt::format(
        "{} {} configuration{}{}{}: sampling at most {}{} ({:g} s per configuration, warm-up included); {}\n", verb,
        measured, measured == 1 ? "" : "s",
        skipped ? fmt::format(" ({} more need{} a GPU and {} skipped)", skipped, skipped == 1 ? "s" : "", skipped == 1 ? "is" : "are")
                : std::string{},
        s.rounds > 1 ? fmt::format(" in {} rounds{}", s.rounds, machine.world ? "" : ", each a new process") : std::string{},
        format_duration(planned), most > planned ? fmt::format(", {} with every extra round", format_duration(most)) : std::string{},
        s.max_time_s, then);
}

/// --dry-run, after the configurations: the plan's size (configurations, rounds, the files it
/// creates) and its time: the sampling bound (plan_line) and, with a baseline report of this
/// machine, the whole time by what its configurations took there (the progress line's
/// estimate, set-up and teardown included); without one, that set-up cannot be estimated.
std::string dry_run_summary(const std::vector<Config>& configs, const RunSettings& s, const Machine& machine,
                            std::uint64_t file_bytes, const Report* baseline, const std::string& baseline_file) {
    std::string out = fmt::format(
        "plan: {} configuration{}, {} round{}{}, {} of files to create{}\n", configs.size(), configs.size() == 1 ? "" : "s",
        s.rounds, s.rounds == 1 ? "" : "s", s.max_rounds > s.rounds ? fmt::format(" (up to {} with extra rounds)", s.max_rounds) : "",
        file_bytes ? format_value(static_cast<double>(file_bytes), "B") : "no bytes", file_bytes ? " in the storage directory" : "");
    const std::string setup = file_bytes ? fmt::format("set-up (allocating, filling, creating {} of files)",
                                                        format_value(static_cast<double>(file_bytes), "B"))
                                         : std::string("set-up (allocating, filling)");
    if (!baseline)
        return out + plan_line(configs, s, machine, "would measure",
                               setup + " and teardown come on top: not estimated before a configuration is measured "
                                       "(--baseline REPORT of this machine estimates them from its times)");
    // The baseline's time of each configuration, one round's (a result sums its rounds').
    TimeEstimate estimate;
    for (const Result& r : baseline->results)
        if (r.wall_time_s > 0) estimate.took(r.key, r.wall_time_s / std::max(1, r.rounds), r.status != Status::ok);
    double round = 0;
    std::size_t known = 0;
    for (const Config& c : configs) {
        const std::string key = c.key();
        known += estimate.knows(key);
        round += estimate.expected(key, needs_missing_gpu(c, machine)).value_or(0);
    }
    if (known == 0)
        return out + plan_line(configs, s, machine, "would measure",
                               fmt::format("{} and teardown come on top: not estimated, '{}' holds none of these configurations",
                                           setup, baseline_file));
    const double total = round + estimate.later_rounds(round, s.rounds - 1);
    const double most = round + estimate.later_rounds(round, std::max(s.rounds, s.max_rounds) - 1);
    return out + plan_line(configs, s, machine, "would measure",
                           fmt::format("with {} and teardown about {}{}, by the times {} of {} took in '{}'{}", setup,
                                       format_duration(total),
                                       most > total ? fmt::format(" ({} with every extra round)", format_duration(most)) : "",
                                       known, configs.size(), baseline_file,
                                       known < configs.size() ? " (the others at their mean)" : ""));
}

int run_command(const RunOptions& o, const std::vector<std::string>& argv) {
    // From before the first file the run makes (plugins' folders, storage files, the private
    // folder) until after the last is removed at exit: a stop signal never leaves one behind.
    StopSignals::for_process();
    const Format& format = find_format(o.format, Command::run);
    ProgressStyle progress = progress_style(o.progress);
    const TableStyle style = table_style(o.wide, o.metrics);
    if (!o.out.empty()) check_output_path(o.out); // before any measuring
    if (!o.html.empty()) {
        check_output_path(o.html);
        if (!o.out.empty() && (o.html == o.out || same_file(o.html, o.out)))
            throw UsageError(fmt::format("--html '{}' is the --out report: the page would replace it", o.html),
                             "write the page to another file, e.g. report.html");
        if (!o.baseline.file.empty() && same_file(o.html, o.baseline.file))
            throw UsageError(fmt::format("--html '{}' is the baseline '{}': the run would overwrite it", o.html, o.baseline.file),
                             "write the page to another file");
    }
    // ---- --export: checked before measuring, written after the report (see write_exports)
    std::vector<CiExport> exports;
    for (const auto& e : o.exports) exports.push_back(parse_ci_export(e));
    const CiMetrics export_metrics = parse_ci_metrics(o.export_metrics);
    check_ci_exports(exports, {{"the --out report", o.out}, {"the --html page", o.html}, {"the baseline", o.baseline.file}});
    std::vector<std::string> plugin_warnings;
    const Registry registry = scenario_registry(o.family, plugin_warnings);
    for (const auto& w : plugin_warnings) fmt::print(stderr, "warning: {}\n", display_text(w));
    RunRecord rec;
    rec.warnings = plugin_warnings;
    rec.argv = argv;
    rec.plan = build_plan(o, registry);
    Machine machine = probe_machine(o.devices);
    const bool root = !machine.world || machine.world->rank() == 0;
    const bool quiet = o.quiet || !root;
    const auto configs = expand_plan(registry, rec.plan, machine);
    if (o.dry_run) {
        if (!machine.cuda_available && !quiet)
            fmt::print(stderr, "note: {}; GPU ordinals are not checked against this machine\n", machine.cuda_note);
        // The files of the configurations measured here (what the preflights claim, less the
        // configurations skipped for want of a GPU, which create none); the families judge the
        // input of every configuration, as their preflights do.
        (void)builtin_families().file_bytes(configs);
        std::vector<Config> measured;
        std::copy_if(configs.begin(), configs.end(), std::back_inserter(measured),
                     [&](const Config& c) { return !needs_missing_gpu(c, machine); });
        const std::uint64_t file_bytes = builtin_families().file_bytes(measured);
        const std::optional<Report> baseline = load_baseline(o.baseline, o.out, rec, machine);
        ListView view = dry_run_view(configs);
        view.width = style.width;
        if (root) fmt::print("{}", find_format(o.format, Command::list).render(view));
        if (!quiet && !configs.empty())
            print_stderr(dry_run_summary(configs, rec.plan.settings, machine, file_bytes, baseline ? &*baseline : nullptr,
                                         o.baseline.file));
        return 0;
    }
    if (!machine.cuda_available && !quiet)
        fmt::print(stderr, "note: {}; host-only scenarios still run\n", machine.cuda_note);
    if (!o.no_topology) rec.topology = discover_topology_json(machine);

    SessionOptions options;
    options.out = o.out;
    options.html = o.html;
    options.anonymize = o.anonymize;
    options.baseline = load_baseline(o.baseline, o.out, rec, machine);
    for (const auto& t : o.baseline.thresholds) add_threshold(options.compare, t);
    options.compare.base_label = o.baseline.file;
    options.compare.new_label = o.out.empty() ? "this run" : o.out;
    options.confirm = o.baseline.confirm;
    builtin_families().preflight(rec.plan.settings, configs); // family checks of bad input, before measuring
    SessionHooks hooks;
    hooks.page = html::render_report_page;
    hooks.conditions = [&machine] { return take_conditions(machine); };
    hooks.annotate = [&registry, &machine](const nlohmann::json& topology, std::vector<Result>& results) {
        limit_results(results, topology, devices_json(machine), registry);
    };
    // Before: how much there is to do and how long its sampling may take.
    const int rounds = rec.plan.settings.rounds;
    if (!quiet && !configs.empty())
        print_stderr(plan_line(configs, rec.plan.settings, machine, "measuring",
                               "set-up and teardown come on top, not known before the first configuration"));
    // During: a live line on a terminal, redrawn while each configuration runs; with
    // --progress plain lines (logs), with --progress=json JSON lines (programs). Later rounds
    // run in other processes and report back here.
    if (!root) progress = ProgressStyle::none;
    else if (progress == ProgressStyle::none && !quiet && progress_allowed()) progress = ProgressStyle::live;
    LiveProgress live;
    ProgressLine line(progress, live, machine);
    std::optional<Ticker> ticker;
    if (progress != ProgressStyle::none) {
        hooks.live = &live;
        hooks.progress = [&line](int round, int rounds_, std::size_t i, const std::vector<Config>& cs) {
            line.show(round, rounds_, i, cs);
        };
    }
    hooks.run_round = [&](const std::vector<Config>& cs, const RunSettings& s, int round) {
        std::function<void(std::size_t, std::size_t)> report;
        if (hooks.progress) {
            line.round_starts(round, std::max(round, rounds), cs);
            report = [&, round](std::size_t i, std::size_t) { hooks.progress(round, std::max(round, rounds), i, cs); };
        }
        try {
            auto results = run_round_process(cs, s, round, o.devices, report, hooks.live);
            line.round_ends();
            return results;
        } catch (...) {
            line.round_ends();
            throw;
        }
    };
    if (!o.quiet)
        hooks.confirming = [&line](std::size_t flagged, int repeats) {
            line.say(fmt::format("confirming {} flagged result(s) with {} re-measurement(s) each", flagged, repeats));
        };

    if (progress != ProgressStyle::none) ticker.emplace(std::chrono::milliseconds(500), [&line] { line.tick(); });
    const SessionResult run = run_session(configs, std::move(rec), machine, options, hooks);
    ticker.reset(); // stopped before anything else is printed
    line.clear();
    if (!run.root) return run.record.status == "complete" ? 0 : 1;

    for (const auto& w : run.checkpoint_warnings) fmt::print(stderr, "warning: {}\n", display_text(w));
    if (!o.quiet) fmt::print("{}", format.render(ReportView{run.report, run.record.results, style}));
    if (!o.quiet) fmt::print(stderr, "took {}\n", format_duration(line.elapsed()));
    const std::string& status = run.record.status;
    // The table format ends with the summary, which names the report; other formats name it here.
    const bool closes = !o.quiet && format.human && !format.markdown;
    if (!o.quiet)
        fmt::print(stderr, "{} ok, {} skipped, {} failed{}{}\n", run.ok, run.skipped, run.failed,
                   status == "complete" ? "" : fmt::format(" (run {})", status),
                   closes || run.written.empty() || !run.write_error.empty()
                       ? ""
                       : fmt::format("; report written to {}", display_text(run.written)));
    if (run.interrupted)
        fmt::print(stderr, "interrupted: the report holds the {} finished result(s)\n", run.record.results.size());
    if (!run.fatal.empty()) fmt::print(stderr, "error: {}\n", display_text(run.fatal));
    const bool exported = write_exports(exports, export_metrics, run);
    if (!run.html_error.empty()) {
        fmt::print(stderr, "error: the HTML page was not written: {}\n", display_text(run.html_error));
        return static_cast<int>(ExitCode::failed);
    }
    if (!run.write_error.empty()) {
        fmt::print(stderr, "error: {}; {}\n", display_text(run.write_error),
                   run.written.empty() ? "the report could not be saved anywhere"
                                       : fmt::format("the finished results were saved to {}", display_text(run.written)));
        return static_cast<int>(ExitCode::failed);
    }
    if (!exported) return static_cast<int>(ExitCode::failed);
    if (o.require_gpu && !machine.cuda_available) {
        fmt::print(stderr, "error: --require-gpu given but {}\n", display_text(machine.cuda_note));
        return static_cast<int>(ExitCode::failed);
    }
    int gate = 0;
    if (run.gate) {
        print_gate(o, *run.gate);
        gate = static_cast<int>(compare_exit_code(*run.gate, false));
    }
    if (closes) fmt::print("{}", closing_summary(run, style));
    if (run.failed || status != "complete") return static_cast<int>(ExitCode::failed);
    return gate;
}

} // namespace

void add_run(CLI::App& app, Outcome& out) {
    auto o = std::make_shared<RunOptions>();
    auto* cmd = app.add_subcommand("run", "measure scenarios and report (no options: the default profile)");
    cmd->add_option("-s,--scenario", o->scenarios, "scenario ids or globs, comma separated (e.g. 'h2d*,d2h_copy')");
    cmd->add_option("--size", o->sizes, "sizes for every scenario with a size axis: 4K,1M or LO:HI[:xF|:+S], e.g. 4K:1G:x4");
    cmd->add_option("-a,--axis", o->axes, "set an axis: NAME=V1,V2 (repeatable), e.g. host_mem=pinned,registered");
    cmd->add_option("--only", o->only,
                    "measure exactly the configuration of a result key, as reports name it (SCENARIO/AXIS=VALUE,...; "
                    "repeatable), e.g. to re-measure what 'fleet' or 'compare' flagged")
        ->allow_extra_args(false);
    cmd->add_option("-t,--transfer", o->transfers,
                    "a set of transfers that run at once, measured together and each alone: SRC -> DST [via EXECUTOR] "
                    "[SIZE] joined by ';' (repeatable: one set each), e.g. -t 'host:pinned -> gpu0 via ce 1G; "
                    "file(warm) -> gpu0 via pipelined 1G' (docs/TRANSFERS.md)")
        ->allow_extra_args(false);
    cmd->add_flag("--dry-run", o->dry_run,
                  "print the configurations the plan expands to (transfer sets included) and the paths each crosses, "
                  "then on stderr its size (configurations, rounds, files to create) and time (with --baseline: "
                  "by what the baseline's configurations took); measure nothing");
    cmd->add_option("-d,--devices", o->devices, "GPUs to use: ordinals or PCI bus ids, comma separated (default all)");
    cmd->add_option("-p,--profile", o->profile, "named profile (quick, ci, full) or a profile JSON file");
    cmd->add_option("-o,--out", o->out, "write the JSON report to FILE (atomically)");
    cmd->add_option("--html", o->html, "also write the report as one self-contained HTML page with charts to FILE (atomically)");
    add_format_option(cmd, o->format, Command::run, "stdout format");
    add_table_options(cmd, o->wide, o->metrics);
    cmd->add_option("--export", o->exports,
                    "also write the results in a CI format to a file (atomically, after the report), FORMAT=PATH with "
                    "FORMAT " + format_names(Command::export_file) + "; repeatable")
        ->allow_extra_args(false);
    cmd->add_option("--export-metrics", o->export_metrics,
                    "metrics in the --export files: primary (each result's primary metric, the default) or all");
    cmd->add_flag("-q,--quiet", o->quiet, "print nothing on stdout (errors still go to stderr)");
    cmd->add_flag("--require-gpu", o->require_gpu, "exit 1 when no usable GPU is found");
    cmd->add_flag("--progress", o->progress,
                  "progress on stderr also when it is no terminal: a plain line as each configuration starts and at "
                  "most every 10 s while one runs; --progress=json: one JSON object a line, at most every second")
        ->disable_flag_override(false); // the one flag that takes a value: --progress=json
    cmd->add_option("--warmup", o->warmup, "untimed samples before measuring");
    cmd->add_option("--min-samples", o->min_samples, "never stop sampling before this many");
    cmd->add_option("--max-samples", o->max_samples, "stop sampling at this many");
    cmd->add_option("--rounds", o->rounds,
                    "measure each configuration in N rounds, each in a new process with a fresh setup, sharing the "
                    "sample budget; compare gates beyond the spread of the round medians (profiles set it)");
    cmd->add_option("--max-rounds", o->max_rounds,
                    "give a result whose round medians spread more than 3% extra rounds, up to N in all, each in a "
                    "new process (0: none; the ci profile sets 6)");
    cmd->add_option("--noise", o->noise, "stop when the median's 95% CI half-width is within this (0.005 or 0.5%)");
    cmd->add_option("--max-time", o->max_time, "time budget per configuration, seconds");
    cmd->add_option("--sample-time", o->sample_time, "target duration of one sample, seconds");
    cmd->add_flag("--no-numa-bind", o->no_numa_bind, "do not bind threads and host buffers near each GPU, nor pin reader threads to fixed CPUs");
    cmd->add_flag("--no-topology", o->no_topology, "do not discover and embed the topology");
    add_family_options(cmd, o->family, false);
    cmd->add_flag("--anonymize", o->anonymize, "leave out host name, UUIDs, serial numbers and absolute paths (home as ~, others as <path>/NAME)");
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
