#include "interopbench/session.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/private_dir.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "interopbench/cleanup.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/merge.hpp"

namespace interopbench {
namespace {

constexpr int k_stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

// The first stop signal asks the runner to stop after the current sample; a second one ends
// the process at once, after killing the plugins' process groups and removing the files the
// tool created (async-signal-safe).
extern "C" void on_stop_signal(int sig) {
    if (!g_interrupted.exchange(true)) return;
    cleanup::remove_all_from_signal();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

// The handlers in force before the outermost scope, and how many scopes are open.
std::mutex g_scope_mutex;
int g_scopes = 0;
struct sigaction g_saved[std::size(k_stop_signals)] = {};

} // namespace

StopSignals::StopSignals() {
    const std::lock_guard lock(g_scope_mutex);
    if (g_scopes++ > 0) return;
    g_interrupted = false;
    struct sigaction sa = {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigset_t unblock;
    sigemptyset(&unblock);
    for (std::size_t i = 0; i < std::size(k_stop_signals); ++i) {
        sigaction(k_stop_signals[i], &sa, &g_saved[i]);
        sigaddset(&unblock, k_stop_signals[i]);
    }
    // A parent may start us with these signals blocked (the mask is inherited): unblock
    // them, or an interrupted run would go on to the end.
    pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
}

StopSignals::~StopSignals() {
    const std::lock_guard lock(g_scope_mutex);
    if (--g_scopes > 0) return;
    for (std::size_t i = 0; i < std::size(k_stop_signals); ++i) sigaction(k_stop_signals[i], &g_saved[i], nullptr);
}

void StopSignals::for_process() {
    // A static made now is destroyed after every static made later, the private folder among them.
    static StopSignals process;
}

namespace {

void gather_ranks(RunRecord& rec, const Machine& machine) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const DeviceInfo* gpu = machine.selected.empty() ? nullptr : machine.device(machine.selected.front());
    // Every rank's machine and the conditions it ran under go into the report's "hosts".
    nlohmann::json fingerprint = host_fingerprint(machine, rec.topology);
    if (rec.conditions_start) fingerprint["conditions"] = conditions_json(*rec.conditions_start, rec.conditions_end);
    const RankIdentity who{machine.world->rank(), machine.world->local_rank(), host, gpu ? gpu->pci_bus_id : std::string{},
                           std::move(fingerprint)};
    const auto gathered = machine.world->gather(encode_rank_results(who, rec.results), 0);
    if (machine.world->rank() != 0) return;
    auto merged = merge_rank_results(gathered);
    rec.results = std::move(merged.results);
    rec.hosts = std::move(merged.hosts);
}

} // namespace

std::string save_fallback_report(const std::string& out, const std::string& content) {
    const std::string dir = temp_folder(); // it outlives the run: not the private folder
    std::string base = std::filesystem::path(out).filename().string();
    // The name's random part is made by mkostemps with O_EXCL: no link planted beforehand can
    // be followed, and no other user can take the name first.
    for (char& c : base)
        if (c == '/' || static_cast<unsigned char>(c) < 0x20) c = '_';
    std::string path;
    const int fd = create_unique_file(dir, "interopbench-unsaved-", "-" + (base.empty() ? std::string("report.json") : base), path);
    try {
        write_all(fd, content, path);
    } catch (...) {
        ::close(fd);
        ::unlink(path.c_str());
        throw;
    }
    ::close(fd);
    return path;
}

SessionResult run_session(const std::vector<Config>& configs, RunRecord rec, const Machine& machine,
                          const SessionOptions& options, const SessionHooks& hooks) {
    SessionResult out;
    out.root = !machine.world || machine.world->rank() == 0;
    std::optional<StopSignals> signals;
    if (options.handle_signals) signals.emplace();

    auto report_of = [&](const RunRecord& run) {
        nlohmann::json doc = valid_utf8(build_report(run, machine)); // bytes that are not UTF-8 never cost the report
        if (options.anonymize) anonymize_report(doc);
        return doc;
    };

    rec.started = now_iso8601();
    if (hooks.conditions) rec.conditions_start = hooks.conditions();
    const RunSettings round_settings = rec.plan.settings.per_round();
    Runner runner(machine, round_settings);
    runner.publish_to(hooks.live);
    // Checkpoint: a long run killed half-way still leaves its finished results, of every
    // round so far. A failed checkpoint is a warning; the run goes on and tries again.
    auto last_checkpoint = std::chrono::steady_clock::now();
    // `results` (null: the record's own) go into the checkpoint without a copy: a result of
    // millions of samples costs no copy here, only the bounded report (report_text).
    auto checkpoint = [&](std::vector<Result>* results, bool due) {
        const auto now = std::chrono::steady_clock::now();
        // After a stop signal the final report follows at once: no checkpoint before it.
        if (options.out.empty() || !out.root || g_interrupted ||
            (!due && std::chrono::duration<double>(now - last_checkpoint).count() <= options.checkpoint_interval_s))
            return;
        const std::string status = std::exchange(rec.status, "running");
        const std::string finished = std::exchange(rec.finished, now_iso8601());
        if (results) std::swap(rec.results, *results);
        try {
            nlohmann::json doc = report_of(rec);
            write_file_atomic(options.out, report_text(doc));
        } catch (const std::exception& e) {
            out.checkpoint_warnings.push_back(fmt::format("checkpoint not written: {}", e.what()));
        }
        if (results) std::swap(rec.results, *results);
        rec.status = status;
        rec.finished = finished;
        last_checkpoint = std::chrono::steady_clock::now();
    };
    const int rounds = rec.plan.settings.rounds;
    const int max_rounds = std::max(rounds, rec.plan.settings.max_rounds);
    for (std::size_t i = 0; i < configs.size() && !g_interrupted; ++i) {
        if (hooks.progress) hooks.progress(1, rounds, i, configs);
        rec.results.push_back(runner.run_one(configs[i]));
        if (!runner.fatal().empty() || rec.results.back().status == Status::interrupted) break;
        checkpoint(nullptr, false);
    }
    // Later rounds: a fresh setup each (a new process where the caller starts one), so that
    // the spread of the round medians shows what moves between processes, not only within one.
    // Past the planned rounds, only the configurations whose rounds still spread widely.
    if (rounds > 1 && runner.fatal().empty() && !g_interrupted) {
        std::vector<Config> again;
        for (std::size_t i = 0; i < rec.results.size(); ++i)
            if (rec.results[i].status == Status::ok) again.push_back(configs[i]);
        std::vector<std::vector<Result>> all{std::move(rec.results)};
        for (int round = 2; round <= max_rounds && !again.empty() && runner.fatal().empty() && !g_interrupted; ++round) {
            if (round > rounds) {
                std::set<std::string> noisy;
                for (const auto& r : merge_rounds(all))
                    if (r.status == Status::ok && !r.metrics.empty() &&
                        spread_as_three_rounds(r.metrics.front().round_medians) > k_adaptive_spread)
                        noisy.insert(r.key);
                std::erase_if(again, [&](const Config& c) { return !noisy.count(c.key()); });
                if (again.empty()) break;
            }
            const int of = round > rounds ? max_rounds : rounds;
            std::vector<Result> got;
            bool measured = false;
            if (hooks.run_round && !machine.world) {
                try {
                    got = hooks.run_round(again, round_settings, round);
                    measured = true;
                } catch (const UsageError& e) { // its fix too: a TMPDIR that cannot hold the round's plan
                    rec.warnings.push_back(fmt::format("round {} could not run in a new process ({}{}{}); it ran in this one",
                                                       round, e.what(), e.hint().empty() ? "" : ": ", e.hint()));
                } catch (const std::exception& e) {
                    rec.warnings.push_back(fmt::format("round {} could not run in a new process ({}); it ran in this one",
                                                       round, e.what()));
                }
            }
            if (!measured)
                for (std::size_t i = 0; i < again.size() && !g_interrupted; ++i) {
                    if (hooks.progress) hooks.progress(round, of, i, again);
                    got.push_back(runner.run_one(again[i]));
                    if (!runner.fatal().empty()) break;
                }
            all.push_back(std::move(got));
            if (!g_interrupted) {
                std::vector<Result> merged = merge_rounds(all);
                checkpoint(&merged, true);
            }
        }
        rec.results = merge_rounds(std::move(all));
    }
    rec.finished = now_iso8601();
    if (hooks.conditions) rec.conditions_end = hooks.conditions();
    out.interrupted = g_interrupted;
    out.fatal = runner.fatal();
    rec.status = out.interrupted ? "interrupted" : out.fatal.empty() ? "complete" : "aborted";
    if (!out.fatal.empty()) rec.warnings.push_back(fmt::format("run stopped after a fatal device error: {}", out.fatal));
    if (!machine.cuda_available) rec.warnings.push_back(machine.cuda_note);
    for (const auto& w : out.checkpoint_warnings) rec.warnings.push_back(w);
    if (hooks.annotate) hooks.annotate(rec.topology, rec.results);
    if (machine.world) gather_ranks(rec, machine);

    if (out.root) {
        nlohmann::json doc = report_of(rec);
        // What is written is what is read back: within the reader's limits (report_text).
        std::string text;
        if (!options.out.empty()) {
            try {
                text = report_text(doc);
            } catch (const std::exception& e) {
                out.write_error = e.what();
            }
        }
        if (!text.empty()) {
            try {
                write_file_atomic(options.out, text);
                out.written = options.out;
            } catch (const std::exception& e) {
                // The results are the run's worth: they go to a fallback file, never lost.
                out.write_error = e.what();
                try {
                    out.written = save_fallback_report(options.out, text);
                } catch (const std::exception&) {
                }
            }
        }
        // What the page, the gate and the printed formats read: the report as written.
        out.report = read_report_json(std::move(doc), "this run's report");
        if (!options.html.empty() && hooks.page) {
            // The page of the same final report, written the same way (no fallback: the
            // report itself holds everything the page shows).
            try {
                write_file_atomic(options.html, hooks.page(out.report));
                out.html_written = options.html;
            } catch (const std::exception& e) {
                out.html_error = e.what();
            }
        }
        for (const auto& r : rec.results) {
            out.failed += r.status == Status::failed;
            out.ok += r.status == Status::ok;
            out.skipped += r.status == Status::skipped;
        }
        if (options.baseline) {
            // --confirm: flagged results are measured again, round-robin over the flagged
            // configurations so that a drift in time hits them all alike; a regression
            // stands only when every re-measurement regresses too.
            CompareOutcome outcome = compare_reports(*options.baseline, out.report, options.compare);
            const auto flagged = flagged_keys(outcome);
            if (options.confirm > 0 && !flagged.empty() && !out.interrupted) {
                if (hooks.confirming) hooks.confirming(flagged.size(), options.confirm);
                std::map<std::string, const Config*> by_key;
                for (const auto& c : configs) by_key[c.key()] = &c;
                std::map<std::string, std::vector<Result>> reruns;
                for (int round = 0; round < options.confirm && runner.fatal().empty() && !g_interrupted; ++round)
                    for (const auto& key : flagged)
                        if (const auto it = by_key.find(key); it != by_key.end())
                            reruns[key].push_back(runner.run_one(*it->second));
                apply_confirmations(outcome, *options.baseline, reruns, options.compare);
            }
            out.gate = std::move(outcome);
        }
    }
    out.record = std::move(rec);
    return out;
}

} // namespace interopbench
