// `interopbench fleet REPORT...`: many machines' reports (or one multi-node report), one
// verdict: which machine or GPU is an outlier within its hardware class, and why. Exit 0
// without an outlier, 1 with one, 2 for bad input.
#include <filesystem>
#include <memory>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "families/builtin.hpp"
#include "interopbench/cleanup.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/fleet.hpp"
#include "interopbench/params.hpp"
#include "interopbench/private_dir.hpp"
#include "interopbench/report.hpp"
#include "interopbench/session.hpp"
#include "presentation/formats.hpp"

extern char** environ;

namespace interopbench::cli {

namespace {

/// The report paths of a --files-from list: one per line, blank lines and '#' lines skipped.
std::vector<std::string> read_list(const std::string& path) {
    const std::string text = read_input_file(path, "--files-from list", 64ull << 20);
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at <= text.size()) {
        const auto nl = text.find('\n', at);
        std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
        if (!line.empty() && line.front() != '#') out.push_back(line);
        if (nl == std::string::npos) break;
        at = nl + 1;
    }
    return out;
}

std::string this_host() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0) return {};
    return name;
}

/// A host name as DNS allows it (RFC 1123): labels of letters, digits and '-', not starting
/// or ending with '-', joined by '.'; at most 253 characters. Nothing else goes to mpirun.
bool valid_host_name(const std::string& name) {
    if (name.empty() || name.size() > 253) return false;
    std::size_t label = 0;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        if (c == '.') {
            if (label == 0 || name[i - 1] == '-') return false;
            label = 0;
        } else if (std::isalnum(static_cast<unsigned char>(c)) || (c == '-' && label > 0)) {
            if (++label > 63) return false;
        } else {
            return false;
        }
    }
    return label > 0 && name.back() != '-';
}

/// The command line of a confirmation step: on this host directly, on another through
/// mpirun (the launcher multi-node runs use). A report's host name that is not a host name
/// is refused: it would reach mpirun's command line.
std::vector<std::string> step_command(const fleet::Member& m, const fleet::ConfirmStep& step, const std::string& exe) {
    std::vector<std::string> cmd;
    if (!m.hostname.empty() && m.hostname != this_host()) {
        if (!valid_host_name(m.hostname))
            throw UsageError(fmt::format("the report of {} names its host '{}', which is not a host name", display_text(m.label),
                                         display_text(m.hostname)),
                             "re-measure that machine by hand on it, or correct the report's host");
        cmd = {"mpirun", "--host", m.hostname, "-np", "1"};
    }
    cmd.push_back(exe);
    cmd.insert(cmd.end(), step.args.begin(), step.args.end());
    return cmd;
}

std::string shell_quoted(const std::vector<std::string>& words) {
    std::vector<std::string> out;
    for (const auto& w : words) {
        const bool plain = !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                             "-_./=:,+@%") == std::string::npos;
        if (plain) {
            out.push_back(w);
            continue;
        }
        std::string q = "'";
        for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
        out.push_back(q + "'");
    }
    return fmt::format("{}", fmt::join(out, " "));
}

/// Runs a re-measurement `cmd` (no shell) and returns its exit status (128 + N when signal N
/// ended it), or -1 when it could not start. It runs in a process group of its own with stdin
/// from /dev/null, and its stdout goes to our stderr: our stdout is the verdict's (JSON stays
/// JSON). A stop signal of ours is passed on to it once (SIGINT: a run stops after its sample
/// and writes what it has; it stops its own children) and `stopped` set; fleet waits for it. A
/// further signal kills its group (cleanup.hpp). So no re-measurement outlives fleet.
int run_step(const std::vector<std::string>& cmd, bool& stopped) {
    std::vector<char*> argv;
    for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&files, 2, 1);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    // The stop signals as a new process has them: not blocked, not ignored.
    sigset_t none, stops;
    sigemptyset(&none);
    sigemptyset(&stops);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&stops, sig);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &stops);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = 0;
    const int spawned = posix_spawnp(&pid, argv[0], &files, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    if (spawned != 0) return -1;
    const int guard = cleanup::guard_process_group(pid);
    int status = 0;
    bool told = false;
    while (true) {
        const pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) break;
        if (got < 0 && errno != EINTR) {
            status = -1;
            break;
        }
        if (g_interrupted && !told) {
            // To it alone: it passes the signal on to its own children (a run's rounds, mpirun's ranks).
            (void)kill(pid, SIGINT);
            told = stopped = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    cleanup::release_process_group(guard);
    if (status == -1) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/// Whether `path` holds something: a re-measurement replaced the empty file made for it.
bool written(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && access(path.c_str(), R_OK) == 0;
}

} // namespace

void add_fleet(CLI::App& app, Outcome& out) {
    struct Args {
        std::vector<std::string> reports, confirmed_by;
        std::string files_from, format = "table", out_file, threshold = "10%", expect, write_expect, confirm_dir;
        double spread_factor = 3;
        int confirm = 0;
        bool rerun = false, skip_unreadable = false, quiet = false, wide = false;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("fleet", "judge many machines' reports together: which machine or GPU is an outlier, and why");
    cmd->footer(
        "Machines are grouped by hardware class (GPU models, their maximum link, CPU model) and judged apart. A figure is "
        "an outlier when it falls short of its class's median by more than the threshold, the class's spread (robust, "
        "times --spread-factor) and its own spread between rounds; each outlier gets the probable causes the facts in its "
        "report support.\n"
        "Exit codes: 0 no outlier, 1 an outlier, 2 usage or input error.");
    cmd->add_option("reports", args->reports,
                    "reports of the machines (JSON from 'interopbench run --out'), or one multi-node report (mpirun)")
        ->expected(0, 1000000);
    cmd->add_option("--files-from", args->files_from, "also read report paths from FILE, one per line (for large fleets)");
    add_format_option(cmd, args->format, Command::fleet, "output format");
    cmd->add_option("--out", args->out_file, "write the chosen format to FILE (the table still goes to stdout)");
    cmd->add_option("--threshold", args->threshold, "smallest shortfall from the class's median that can be an outlier (10%)");
    cmd->add_option("--spread-factor", args->spread_factor,
                    "robust standard deviations of the class a figure must fall beyond (3)");
    cmd->add_option("--expect", args->expect,
                    "judge against the expected medians and spreads of this file (written by --write-expect from a healthy "
                    "fleet) where it has the class and result");
    cmd->add_option("--write-expect", args->write_expect, "write the fleet's medians and spreads to FILE for later --expect");
    cmd->add_option("--confirm", args->confirm,
                    "print how to re-measure only the flagged results on only the flagged machines, in N rounds");
    cmd->add_option("--confirm-dir", args->confirm_dir, "folder for the re-measured reports (default: . when printing)");
    cmd->add_flag("--rerun", args->rerun,
                  "with --confirm: run those re-measurements (here, or through mpirun --host on other hosts) and keep an "
                  "outlier only when it repeats");
    cmd->add_option("--confirmed-by", args->confirmed_by,
                    "re-measured reports of flagged machines: an outlier is kept only when it repeats in them")
        ->expected(1, 1000000)
        ->allow_extra_args(false);
    cmd->add_flag("-q,--quiet", args->quiet,
                  "no notes on stderr, such as each re-measurement as it starts (errors and warnings still go there); the "
                  "output and exit code are unchanged");
    cmd->add_flag("--skip-unreadable", args->skip_unreadable, "leave out (and name) files that are no report instead of failing");
    add_wide_option(cmd, args->wide);
    cmd->callback([args, &out] {
        const Format& format = find_format(args->format, Command::fleet);
        std::vector<std::string> files = args->reports;
        if (!args->files_from.empty())
            for (auto& f : read_list(args->files_from)) files.push_back(std::move(f));
        if (files.empty())
            throw UsageError("fleet needs reports", "write: interopbench fleet A.json B.json C.json (or --files-from LIST)");
        fleet::Options options;
        options.threshold = parse_fraction(args->threshold, "--threshold");
        if (!(options.threshold > 0) || options.threshold >= 1)
            throw UsageError(fmt::format("--threshold '{}' is not between 0 and 100%", args->threshold), "write e.g. --threshold 10%");
        if (!(args->spread_factor >= 0) || args->spread_factor > 100)
            throw UsageError(fmt::format("--spread-factor {} is out of range", args->spread_factor), "write a number from 0 to 100, e.g. 3");
        options.spread_factor = args->spread_factor;
        options.skip_unreadable = args->skip_unreadable;
        options.prepare = limit_report;
        if (args->confirm < 0 || args->confirm > 100)
            throw UsageError(fmt::format("--confirm {} is out of range", args->confirm), "write a number of rounds from 1 to 100, e.g. 3");
        if (args->rerun && args->confirm == 0) throw UsageError("--rerun needs --confirm N", "write e.g. --confirm 3 --rerun");
        for (const auto& path : {args->out_file, args->write_expect})
            if (!path.empty()) {
                check_output_path(path);
                for (const auto& input : files)
                    if (same_file(path, input))
                        throw UsageError(fmt::format("'{}' is the input report '{}': it would be overwritten", path, input),
                                         "write to another file");
                if (!args->expect.empty() && same_file(path, args->expect))
                    throw UsageError(fmt::format("'{}' is the --expect file: it would be overwritten", path), "write to another file");
            }
        if (!args->out_file.empty() && !args->write_expect.empty() &&
            (args->out_file == args->write_expect || same_file(args->out_file, args->write_expect)))
            throw UsageError(fmt::format("--out and --write-expect both name '{}': one would overwrite the other", args->out_file),
                             "give each its own file");
        std::optional<fleet::Expectations> expect;
        if (!args->expect.empty())
            expect = fleet::parse_expectations(
                [&] {
                    try {
                        return parse_json(read_input_file(args->expect, "--expect file", k_max_profile_bytes));
                    } catch (const nlohmann::json::exception& e) {
                        throw UsageError(fmt::format("--expect file '{}' is not valid JSON: {}", args->expect, json_error_text(e)),
                                         "give a file written by 'interopbench fleet --write-expect'");
                    }
                }(),
                fmt::format("--expect file '{}'", args->expect));

        fleet::Outcome outcome = fleet::analyse(files, options, expect ? &*expect : nullptr);
        if (!args->confirmed_by.empty()) fleet::apply_confirmations(outcome, args->confirmed_by);

        std::string plan_text;
        if (args->confirm > 0 && !outcome.outliers.empty()) {
            const std::string dir = !args->confirm_dir.empty() ? args->confirm_dir : args->rerun ? private_dir() : ".";
            const auto steps = fleet::confirm_plan(outcome, args->confirm, dir);
            const std::string exe = args->rerun ? self_path() : "interopbench";
            if (!args->rerun) {
                plan_text = "\nre-measure only the flagged results on only the flagged machines, then judge again:\n";
                std::vector<std::string> outs;
                for (const auto& s : steps) {
                    plan_text += "  " + display_text(shell_quoted(step_command(outcome.members[s.member], s, exe))) + "\n";
                    outs.push_back(s.out);
                }
                std::vector<std::string> again{"interopbench", "fleet"};
                again.insert(again.end(), files.begin(), files.end());
                again.push_back("--confirmed-by");
                again.insert(again.end(), outs.begin(), outs.end());
                plan_text += "  " + display_text(shell_quoted(again)) + "\n";
            } else {
                // Another host writes its report where it runs: only a folder it shares with this
                // one brings the report back. Without --confirm-dir (the private folder here),
                // none would come back: refused before anything runs, naming each.
                std::vector<std::string> unreachable;
                for (const auto& s : steps) {
                    const auto& m = outcome.members[s.member];
                    if (!m.hostname.empty() && m.hostname != this_host())
                        unreachable.push_back(fmt::format("{} ({})", std::filesystem::path(s.out).filename().string(),
                                                          display_text(m.label)));
                }
                if (args->confirm_dir.empty() && !unreachable.empty())
                    throw UsageError(
                        fmt::format("--rerun re-measures on other hosts without --confirm-dir: no confirmation would come "
                                    "back here: {}",
                                    fmt::join(unreachable, ", ")),
                        "give --confirm-dir a folder those hosts share with this one (the same path on each), or run "
                        "without --rerun to print the commands");
                // The re-measurements write into a folder nobody else may change, each to a file
                // made anew here, never through a link found there.
                const TrustedPath folder = open_trusted(dir, TrustRule::confirm_folder);
                if (!folder) throw UsageError(fmt::format("--confirm-dir {}", folder.problem()), folder.fix());
                for (const auto& s : steps) make_fresh_file(folder, std::filesystem::path(s.out).filename().string());
                // A stop signal ends the re-measurement running (passed on to it) and the rest.
                StopSignals::for_process();
                std::vector<std::string> made;
                std::size_t not_run = 0;
                for (const auto& s : steps) {
                    const std::string label = display_text(outcome.members[s.member].label);
                    if (g_interrupted) {
                        ++not_run;
                        continue;
                    }
                    const auto command = step_command(outcome.members[s.member], s, exe);
                    if (!args->quiet)
                        print_stderr(fmt::format("fleet: re-measuring on {}: {}\n", label, display_text(shell_quoted(command))));
                    bool stopped = false;
                    const int rc = run_step(command, stopped);
                    if (stopped)
                        print_stderr(fmt::format("fleet: interrupted: the re-measurement on {} was stopped; its outliers stay "
                                                 "unconfirmed\n",
                                                 label));
                    else if (rc != 0 && rc != 1) // 1: the run measured but had a failure
                        print_stderr(fmt::format("fleet: the re-measurement on {} did not finish (exit {}); its outliers stay "
                                                 "unconfirmed\n",
                                                 label, rc));
                    else if (!written(s.out))
                        print_stderr(fmt::format("fleet: no confirmation from {}: '{}' is still empty{}; its outliers stay "
                                                 "unconfirmed\n",
                                                 label, display_text(s.out),
                                                 outcome.members[s.member].hostname == this_host() || outcome.members[s.member].hostname.empty()
                                                     ? ""
                                                     : " (is --confirm-dir a folder that host shares with this one?)"));
                    else
                        made.push_back(s.out);
                }
                if (not_run > 0)
                    print_stderr(fmt::format("fleet: interrupted: {} re-measurement(s) not run; their outliers stay unconfirmed\n",
                                             not_run));
                if (!made.empty()) fleet::apply_confirmations(outcome, made);
            }
        }

        if (!args->write_expect.empty()) write_file_atomic(args->write_expect, fleet::expectations_json(outcome).dump(2) + "\n");
        const FleetView view{outcome, output_width(args->wide)};
        // What goes to standard output may be painted for a terminal; files never are.
        const FleetView shown{outcome, view.width, color_on(STDOUT_FILENO)};
        if (args->out_file.empty()) {
            fmt::print("{}", format.render(shown) + (format.human ? plan_text : ""));
        } else {
            write_file_atomic(args->out_file, format.render(view) + (format.human ? plan_text : ""));
            // The file has the chosen format; the terminal the table.
            fmt::print("{}", find_format("table", Command::fleet).render(shown) + plan_text);
        }
        out.code = fleet::exit_code(outcome);
    });
}

} // namespace interopbench::cli
