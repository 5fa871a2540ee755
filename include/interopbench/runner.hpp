#pragma once
/// Axis expansion, sampling and per-configuration error containment.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/registry.hpp"
#include "interopbench/scenario.hpp"
#include "interopbench/stats.hpp"

namespace interopbench {

/// How samples are taken. Every field can be set by a profile and by the command line.
struct RunSettings {
    int warmup = 3;            ///< untimed samples before measuring
    int min_samples = 10;      ///< never stop before this many
    int max_samples = 200;     ///< stop at this many ("max_samples")
    double noise = 0.005;      ///< stop when the primary metric's median CI half-width,
                               ///< relative to the median, is at most this ("converged")
    double max_time_s = 3.0;   ///< per configuration, warm-up included ("time_budget")
    double sample_time_s = 0.01; ///< target duration of one sample
    /// Rounds per configuration, each a fresh setup (a new process where the caller can
    /// start one; see session.hpp). The sample budget (min_samples, max_samples, max_time_s)
    /// is shared between them (per_round); the spread of the round medians is the noise
    /// between setups that compare gates beyond.
    int rounds = 3;
    /// Extra rounds for noisy results: after the planned rounds, a configuration whose round
    /// medians spread more than k_adaptive_spread (rescaled to three rounds) is measured in
    /// further rounds, each a new process with the per-round budget, until its spread is
    /// below that or it has this many rounds. At most `rounds` (the default 0): none.
    int max_rounds = 0;
    bool bind_numa = true;
    /// Options the families declare (family.hpp), from the command line; not part of
    /// to_json (the report's settings and the profile hash).
    FamilyOptions options;

    /// Resolved settings for the report.
    nlohmann::json to_json() const;
    /// Applies the known keys of `j` (same names as to_json); throws UsageError on an
    /// unknown key or a wrong type, naming `origin` (a file or "command line").
    void apply_json(const nlohmann::json& j, const std::string& origin);
    /// Throws UsageError when values are out of range (min > max, noise <= 0...).
    void validate() const;
    /// The settings of one of `rounds` rounds: the sample budget divided between them (at
    /// least 3 samples each), warm-up and sample time unchanged, rounds = 1.
    RunSettings per_round() const;
};

/// The spread of round medians (spread_as_three_rounds of the primary metric) above which
/// a configuration gets extra rounds (RunSettings::max_rounds): at 3% the gate's noise
/// allowance (twice the spread) and its interval leave a 10% change visible.
inline constexpr double k_adaptive_spread = 0.03;

/// One selection in a plan: scenarios matching `pattern`, with axis values overridden.
struct PlanEntry {
    std::string pattern;
    std::map<std::string, std::vector<std::string>> axes; ///< axis name -> values (raw text)
};

/// What to run: entries in order, and how to sample.
struct RunPlan {
    std::vector<PlanEntry> entries;
    RunSettings settings;
    std::string profile;            ///< profile name, or empty
    std::string profile_hash;       ///< digest of the resolved profile (profile.hpp), or empty
    nlohmann::json profile_resolved = nullptr; ///< resolved profile document, or null
};

enum class Status { ok, skipped, failed, interrupted };
const char* to_string(Status s);
Status status_from_string(const std::string& s);

struct MetricResult {
    MetricInfo info;
    Stats stats;
    std::vector<double> samples;   ///< every round's samples, in round order
    /// The median of each round's samples (empty for a run of one round).
    std::vector<double> round_medians;
    /// How many samples were taken when `samples` holds fewer (a report kept every k-th of
    /// them: k_max_report_samples); 0 when `samples` holds every one.
    std::uint64_t samples_taken = 0;
};

// ---- what one result may hold in a report ---------------------------------------------------
// A report the tool writes is one it reads back (read_report refuses more than
// k_max_report_bytes, or nesting past k_max_json_depth): to_json(Result) bounds each result,
// and report_text (report.hpp) the whole. Where a bound cuts, the report says what was cut.

/// Most samples of one metric a result holds in a report: of more, every k-th is kept (evenly
/// spaced, k the smallest that fits), and "samples_taken" says how many were taken. The
/// statistics are of every sample taken.
inline constexpr std::size_t k_max_report_samples = 100000;
/// Deepest nesting below a result's "details": a deeper value is replaced by a note saying so.
/// With the levels above it (report, results, result) far within k_max_json_depth.
inline constexpr int k_max_details_depth = 64;
/// Largest a result's details may be, as compact JSON: larger ones are replaced by a note
/// ("cut") saying how large they were.
inline constexpr std::size_t k_max_details_bytes = 1u << 20;
/// Longest a result's reason may be: a longer one is cut there, saying how long it was.
inline constexpr std::size_t k_max_reason_bytes = 16u << 10;

/// The uncertainty people are shown for a result's primary metric: the larger of the 95%
/// interval's relative half-width and half the relative spread between round medians, and
/// which of the two it is ("ci" or "rounds").
struct Uncertainty {
    double relative = 0;
    const char* source = "ci";
};
Uncertainty uncertainty(const MetricResult& m);

/// One configuration's outcome.
struct Result {
    std::string key;      ///< "<scenario>/<canonical params>"
    std::string scenario;
    std::string family;
    Params params;
    Status status = Status::ok;
    std::string reason;   ///< why skipped or failed; empty when ok
    std::string stop_reason; ///< converged | max_samples | time_budget | interrupted
    int warmup_samples = 0;
    int rounds = 1;       ///< rounds whose samples were pooled (see RunSettings::rounds)
    double wall_time_s = 0;
    std::string counting;
    nlohmann::json details = nlohmann::json::object();
    std::vector<MetricResult> metrics;
    /// What a report writer cut from this result to keep the report readable, one line each
    /// ("samples of 'bandwidth': every 336th of 33554432 kept"); read back from a report.
    std::vector<std::string> cut;

    const MetricResult* metric(const std::string& name) const;
    /// True when the configuration moved no bytes: a zero-copy handoff (details
    /// "pointer_shared" or "zero_copy" true, or a count "bytes_moved", "copied" or
    /// "copied_bytes" of 0, in details or as a metric in bytes). Its "bandwidth" is a size
    /// over the time of a pointer exchange, not a transfer: tables and charts show its time.
    bool moved_no_bytes() const;
};

/// `text` of at most `most` bytes: cut there (never inside a UTF-8 character) and marked
/// " [cut]" when longer.
std::string cut_text(const std::string& text, std::size_t most);

/// The result as a report holds it, within the bounds above (samples thinned, details and
/// reason cut where they exceed them, each cut said where it was made).
void to_json(nlohmann::json& j, const Result& r);
void from_json(const nlohmann::json& j, Result& r);

/// A configuration to run: the scenario and its params.
struct Config {
    const Scenario* scenario = nullptr;
    Params params;
    std::string key() const;
};

/// Most configurations one run may expand to (expand_plan refuses more with a UsageError).
inline constexpr std::uint64_t k_max_configurations = 100000;

/// Expands a plan into configurations, in plan order; a configuration that two entries
/// produce runs once. Throws UsageError for unknown scenarios, for an axis that no
/// selected scenario has, and for invalid axis values (with the allowed ones).
std::vector<Config> expand_plan(const Registry& registry, const RunPlan& plan,
                                const Machine& machine);

/// The typed parameters of one configuration of `info` from text values, parsed as the
/// expansion parses them (the first value of each axis; defaults for axes not given), but
/// without checking that named GPUs exist (unsupported() says so for the scenario).
/// For tests and tools that build one configuration by hand. Throws UsageError.
Params typed_params(const ScenarioInfo& info, const std::vector<std::pair<std::string, std::string>>& values,
                    const Machine& machine);

/// One metric pooled over `parts` (rounds, or reports of one build): their samples in order,
/// and each part's round medians, or its median for a part of one round (kept when there are
/// two or more); statistics recomputed. `parts` may include `into` itself.
void pool_metric(MetricResult& into, const std::vector<const MetricResult*>& parts);

/// Pools the rounds of every configuration: `rounds[0]` is the first round's results,
/// the others later rounds' (in any order, matched by key). A result keeps the first round's
/// status, details and stop reason; the samples of every round that ended ok are pooled,
/// each metric's round medians recorded and its statistics recomputed. A later round that
/// did not end ok is named in the result's details ("rounds_not_ok") and not pooled.
std::vector<Result> merge_rounds(std::vector<std::vector<Result>> rounds);

/// Decides when to stop sampling; exposed for tests.
/// Returns the stop reason, or empty to continue.
std::string stop_reason(const RunSettings& s, const std::vector<double>& primary,
                        double elapsed_s);

/// Set by the session's SIGINT/SIGTERM/SIGHUP handler; the runner stops between samples.
extern std::atomic<bool> g_interrupted;

/// Whether a configuration that took `took_s` is well past its time budget: more than 1.5
/// times `budget_s` plus 1 s (sampling stops at the budget; setting up, one long sample and
/// finishing cannot be cut short). Such a result says where its time went (details.overrun).
bool past_budget(double took_s, double budget_s);

/// True when `config` is skipped without being measured: its scenario needs a GPU and
/// `machine` has none usable (what every GPU scenario's unsupported() then says).
bool needs_missing_gpu(const Config& config, const Machine& machine);

/// What the runner is doing in a configuration, in this order.
enum class Phase { setup, warmup, sampling, check, teardown };
/// "setup", "warm-up", "sampling", "check", "teardown".
const char* to_string(Phase p);

/// The configuration the runner is measuring, as it goes: written by the runner's thread
/// (or by whatever relays another process's runner), read from any thread, e.g. a progress
/// display that redraws while a configuration runs. Knows nothing of displays.
class LiveProgress {
public:
    struct Snapshot {
        std::uint64_t configuration = 0; ///< configurations started so far (1 for the first)
        bool running = false;   ///< that configuration is still being measured
        Phase phase = Phase::setup;
        int samples = 0;        ///< samples taken so far (warm-up not counted)
        int max_samples = 0;    ///< sampling stops at this many at the latest
        double budget_s = 0;    ///< its time budget (RunSettings::max_time_s of the round)
        double elapsed_s = 0;   ///< since it started (to its end once it ended)
        /// past_budget(elapsed_s, budget_s).
        bool past_budget() const;
    };
    Snapshot snapshot() const;

    /// A configuration starts, in setup.
    void start(int max_samples, double budget_s);
    void set(Phase phase);              ///< the samples so far stay
    void set(Phase phase, int samples);
    /// It ended (measured, skipped or failed).
    void stop();

private:
    mutable std::mutex m_mutex;
    Snapshot m_now;
    std::chrono::steady_clock::time_point m_started;
};

/// Runs one configuration at a time; each outcome is recorded, none is lost to another's
/// failure. The session (session.hpp) drives it over a plan.
class Runner {
public:
    Runner(const Machine& machine, RunSettings settings) : m_machine(machine), m_settings(settings) {}
    /// Runs one configuration. Never throws: every error is recorded in the result; a
    /// FatalDeviceError is also remembered in fatal() so that callers stop.
    Result run_one(const Config& config);
    /// Where run_one publishes its phase and samples as it goes (null: nowhere).
    void publish_to(LiveProgress* live) { m_live = live; }
    /// The fatal device error met so far, or empty.
    const std::string& fatal() const { return m_fatal; }
private:
    const Machine& m_machine;
    RunSettings m_settings;
    std::string m_fatal;
    LiveProgress* m_live = nullptr;
};

} // namespace interopbench
