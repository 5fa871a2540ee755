#pragma once
/// The command line: one add_* function per subcommand, each in its own file. Every
/// subcommand's callback stores its exit code in Outcome; only main returns it.
#include <algorithm>
#include <memory>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "interopbench/errors.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/scenario.hpp"
#include "interopbench/text.hpp"
#include "presentation/formats.hpp"
#include "presentation/output.hpp"

namespace interopbench::cli {

/// The exit code chosen by the subcommand that ran.
struct Outcome {
    int code = 0;
};

void add_run(CLI::App& app, Outcome& out);
void add_list(CLI::App& app, Outcome& out);
void add_show(CLI::App& app, Outcome& out);
void add_topo(CLI::App& app, Outcome& out);
void add_doctor(CLI::App& app, Outcome& out);
void add_compare(CLI::App& app, Outcome& out);
void add_fleet(CLI::App& app, Outcome& out);
void add_round(CLI::App& app, Outcome& out); // internal: later rounds of `run --rounds`
/// Hidden `completion SHELL` and `man`: shell completion and the man page from `app` as it
/// is when they run (every command added).
void add_completion(CLI::App& app, Outcome& out);

/// Measures round `round` of `configs` in a new process of this binary (`_round`) with the
/// same --devices, and returns its results. Throws std::runtime_error when the process
/// cannot start or writes no results; passes a stop signal of this process on to it.
/// The child gets the family options of `settings` (it finds plugin scenarios where the
/// parent did, and uses the same storage directory). `progress`, when set, is called as the
/// child starts each configuration (index from 0, count), from this process; then the
/// child's phase and samples in that configuration are published to `live` (when set) as
/// the child reports them.
std::vector<Result> run_round_process(const std::vector<Config>& configs, const RunSettings& settings, int round,
                                      const std::string& devices,
                                      const std::function<void(std::size_t index, std::size_t count)>& progress,
                                      LiveProgress* live);

/// Adds the options the families declare (family.hpp) to `cmd`, storing what is given in
/// `values`: every option on `run`, those marked on_list on `list`.
void add_family_options(CLI::App* cmd, FamilyOptions& values, bool list_only);

/// Probes CUDA and NCCL and applies `--devices` (comma list of ordinals or PCI bus ids;
/// empty selects all). Throws UsageError for a device that does not exist.
Machine probe_machine(const std::string& devices);

/// The MPI world when launched by mpirun (and built with MPI), else nullptr. Called first
/// in main; finalises MPI when destroyed.
std::unique_ptr<World> make_mpi_world(int& argc, char**& argv);

/// The MPI world of this process (nullptr when single-process); probe_machine attaches it.
void set_world(World* world);
World* current_world();

/// The path of this executable, for starting it again (round processes, fleet --rerun).
/// Throws std::runtime_error when /proc/self/exe cannot be read.
std::string self_path();

/// The process's arguments as given (recorded in reports).
void set_argv(int argc, char** argv);
const std::vector<std::string>& invocation_argv();

/// True when stderr is a terminal.
bool stderr_is_tty();

/// True when progress lines (CR and ANSI erase codes) may go to stderr: it is a terminal,
/// TERM is set and not "dumb", and NO_COLOR is not set.
bool progress_allowed();

/// --color=auto|always|never, on the top level and on every command (a global option: before
/// or after the command's name), stored in `word`; main reads it with set_color_mode once
/// the command line is parsed.
void add_color_option(CLI::App* cmd, std::string& word);
/// The --color mode for this process. Throws UsageError for an unknown word.
void set_color_mode(const std::string& word);
/// Whether text for people written to `fd` (standard output; standard error for run's gate
/// beside JSON on stdout) is painted: color_wanted with --color and whether `fd` is a
/// terminal. Text written to a file never is.
bool color_on(int fd);

/// Calls `tick` every `interval` on a thread of its own until stop() or destruction, which
/// wake and join it at once. The thread blocks every signal: stop signals reach the
/// measuring thread.
class Ticker {
public:
    Ticker(std::chrono::milliseconds interval, std::function<void()> tick);
    ~Ticker();
    void stop();
    Ticker(const Ticker&) = delete;
    Ticker& operator=(const Ticker&) = delete;

private:
    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stopping = false;
    std::thread m_thread;
};

/// What a run still takes, from measured times: each configuration's last measured time (set-up
/// and teardown included) for it, the mean of those measured (but skipped ones) for one not
/// measured yet, nothing for one skipped for want of a GPU, and the start of a round's process
/// once one was seen. The progress line feeds it as the run goes; `run --dry-run --baseline`
/// from the times the baseline report recorded.
class TimeEstimate {
public:
    /// Configuration `key` took `seconds`; `skipped`: it was skipped (not in the mean).
    void took(const std::string& key, double seconds, bool skipped);
    /// A round's process took `seconds` to start its first configuration.
    void process_started(double seconds) { m_process_start = seconds; }
    /// That start, 0 before one was seen.
    double process_start() const { return m_process_start.value_or(0); }
    /// What configuration `key` is expected to take (0 when `skipped` for want of a GPU); nothing
    /// before any configuration was measured.
    std::optional<double> expected(const std::string& key, bool skipped) const;
    /// Whether `key` has a time of its own.
    bool knows(const std::string& key) const { return m_took.count(key) != 0; }
    /// `rounds` more rounds of configurations that take `round_total` in all, each in a new process.
    double later_rounds(double round_total, int rounds) const {
        return std::max(0, rounds) * (round_total + process_start());
    }

private:
    std::map<std::string, double> m_took; ///< the last measured time of each configuration
    double m_took_sum = 0;                ///< of those not skipped, every time measured
    std::size_t m_took_n = 0;
    std::optional<double> m_process_start; ///< a round's process up to its first configuration
};

/// How `run` shows its progress on stderr.
enum class ProgressStyle {
    none,
    live,  ///< one line redrawn in place (a terminal)
    lines, ///< plain lines for logs (--progress)
    json,  ///< one JSON object a line for programs (--progress=json)
};

/// Progress of a run on stderr. Each update says the round, the position, the elapsed time,
/// an estimate of what is left and the configuration with what it is doing (its phase and
/// samples, read from `live`, and whether it is past its time budget). An update is made
/// when a configuration or a round's process starts, and on tick() while one runs: `live`
/// redraws every tick; `lines` prints at most every 10 s, `json` at most every second, and
/// only when the phase or the samples changed. The estimate counts each configuration's
/// measured time (set-up included) in later rounds, the mean of those measured so far for
/// one not yet measured, nothing for one skipped for want of a GPU, and the start of a
/// round's process once one was seen (TimeEstimate). Safe to call from any thread.
class ProgressLine {
public:
    ProgressLine(ProgressStyle style, const LiveProgress& live, const Machine& machine);
    /// Configuration `index` (from 0) of this round's `configs` starts.
    void show(int round, int rounds, std::size_t index, const std::vector<Config>& configs);
    /// Round `round` starts in a new process, to measure `configs`.
    void round_starts(int round, int rounds, const std::vector<Config>& configs);
    /// The round's last configuration ended.
    void round_ends();
    /// Redraws (live) or prints when due (lines, json).
    void tick();
    /// Prints `text` (a line) on its own; no update follows until the next configuration.
    void say(const std::string& text);
    void clear(); ///< ends a live line
    double elapsed() const;

private:
    struct Entry {
        std::string key, label;
        bool skipped = false; ///< needs a GPU this machine lacks
    };
    using clock = std::chrono::steady_clock;
    void set_round(int round, int rounds, const std::vector<Config>& configs);
    void finish_config(clock::time_point now);
    std::optional<double> eta(clock::time_point now) const;
    void update(bool forced);

    const ProgressStyle m_style;
    const LiveProgress& m_live;
    const Machine& m_machine;
    const clock::time_point m_start;
    mutable std::mutex m_mutex;
    enum class State { idle, starting, running, paused } m_state = State::idle;
    int m_round = 0, m_rounds = 0;
    std::size_t m_index = 0;
    std::vector<Entry> m_configs;           ///< this round's
    clock::time_point m_since;              ///< the configuration's or the round's process start
    std::uint64_t m_seq = 0;                ///< live's configurations started before this one
    TimeEstimate m_estimate;                ///< from the configurations and processes measured so far
    clock::time_point m_printed{};          ///< the last update (lines, json)
    std::string m_printed_what;             ///< what it said, but the times
    bool m_drawn = false;                   ///< a live line is on the terminal
};

/// --progress's value: empty (not given) is `none`, "true" (the flag alone) `lines`, "json"
/// `json`. Throws UsageError for another.
ProgressStyle progress_style(const std::string& value);

/// -f/--format of `command`: the help ("WHAT: table, json, ...") and a "formats:" block in
/// the command's footer, from the format table. The callback reads the value with find_format.
void add_format_option(CLI::App* cmd, std::string& format, Command command, const std::string& what);

/// --wide, for every command whose tables fit the terminal (run, show, compare, fleet, list,
/// topo, doctor).
void add_wide_option(CLI::App* cmd, bool& wide);
/// The width tables fit: the terminal's (terminal_width()), or 0 (no limit) with --wide.
std::size_t output_width(bool wide);
/// --wide and --metrics (primary or all: parse_ci_metrics), for the commands that print
/// result tables (run, show).
void add_table_options(CLI::App* cmd, bool& wide, std::string& metrics);
/// The table layout they ask for: the terminal's width (none with --wide), every metric
/// with --metrics all. Throws UsageError for a --metrics value parse_ci_metrics refuses.
TableStyle table_style(bool wide, const std::string& metrics);

/// Writes `text` to stderr with write(2): never throws, never fails the command (a closed
/// or full stderr loses the text, nothing else). For every message of main and the
/// subcommands.
void print_stderr(std::string_view text) noexcept;

} // namespace interopbench::cli
