#pragma once
/// The command line: one add_* function per subcommand, each in its own file. Every
/// subcommand's callback stores its exit code in Outcome; only main returns it.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "interopbench/errors.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/scenario.hpp"

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
void add_round(CLI::App& app, Outcome& out); // internal: later rounds of `run --rounds`

/// Measures round `round` of `configs` in a new process of this binary (`_round`) with the
/// same --devices, and returns its results. Throws std::runtime_error when the process
/// cannot start or writes no results; passes a stop signal of this process on to it.
/// The child gets the family options of `settings` (it finds plugin scenarios where the
/// parent did, and uses the same storage directory).
std::vector<Result> run_round_process(const std::vector<Config>& configs, const RunSettings& settings, int round,
                                      const std::string& devices, bool progress);

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

/// The process's arguments as given (recorded in reports).
void set_argv(int argc, char** argv);
const std::vector<std::string>& invocation_argv();

/// True when stderr is a terminal.
bool stderr_is_tty();

/// True when progress lines (CR and ANSI erase codes) may go to stderr: it is a terminal,
/// TERM is set and not "dumb", and NO_COLOR is not set.
bool progress_allowed();

/// Writes `text` to stderr with write(2): never throws, never fails the command (a closed
/// or full stderr loses the text, nothing else). For every message of main and the
/// subcommands.
void print_stderr(std::string_view text) noexcept;

} // namespace interopbench::cli
