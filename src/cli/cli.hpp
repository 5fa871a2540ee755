#pragma once
/// The command line: one add_* function per subcommand, each in its own file. Every
/// subcommand's callback stores its exit code in Outcome; only main returns it.
#include <memory>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
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

/// Measures round `round` of `configs` in a new process of this binary (`_round`) with the
/// same --devices, and returns its results. Throws std::runtime_error when the process
/// cannot start or writes no results; passes a stop signal of this process on to it.
/// The child gets the family options of `settings` (it finds plugin scenarios where the
/// parent did, and uses the same storage directory). `progress`, when set, is called as the
/// child starts each configuration (index from 0, count), from this process.
std::vector<Result> run_round_process(const std::vector<Config>& configs, const RunSettings& settings, int round,
                                      const std::string& devices,
                                      const std::function<void(std::size_t index, std::size_t count)>& progress);

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

/// Progress of a run on stderr: a live line redrawn in place (`live`), or one plain line per
/// configuration; each with the round, the position, the elapsed time, an estimate of what
/// is left (from the pace so far, counting every round still to come) and the configuration.
class ProgressLine {
public:
    explicit ProgressLine(bool live);
    void show(int round, int rounds, std::size_t index, std::size_t count, const std::string& name);
    void clear(); ///< ends a live line
    double elapsed() const;

private:
    bool m_live;
    std::chrono::steady_clock::time_point m_start;
    int m_round = 0;
    std::size_t m_done_before = 0; ///< configurations of the rounds before this one
    std::size_t m_count = 0;       ///< configurations of this round
};

/// -f/--format of `command`: the help ("WHAT: table, json, ...") and a "formats:" block in
/// the command's footer, from the format table. The callback reads the value with find_format.
void add_format_option(CLI::App* cmd, std::string& format, Command command, const std::string& what);

/// --wide and --metrics, for the commands that print result tables.
void add_table_options(CLI::App* cmd, bool& wide, std::string& metrics);
/// The table layout they ask for: the terminal's width (none with --wide), every metric
/// with --metrics all. Throws UsageError for a --metrics value other than compact or all.
TableStyle table_style(bool wide, const std::string& metrics);

/// Writes `text` to stderr with write(2): never throws, never fails the command (a closed
/// or full stderr loses the text, nothing else). For every message of main and the
/// subcommands.
void print_stderr(std::string_view text) noexcept;

} // namespace interopbench::cli
