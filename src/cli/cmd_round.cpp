// Later rounds of `run --rounds N` in a new process each: the parent writes the round's
// configurations and settings to a plan file and starts this binary's hidden `_round`
// command on it, which measures them with a fresh CUDA context, fresh buffers, threads and
// pools, and writes a report the parent pools (merge_rounds). What moves between these
// processes is what moves between two runs of the tool: the gate needs to know it.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string_view>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "families/builtin.hpp"
#include "interopbench/cleanup.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/private_dir.hpp"
#include "interopbench/report.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/session.hpp"

extern char** environ;

namespace interopbench::cli {
namespace {

constexpr int k_plan_version = 1;

/// The round's files, in the run's private directory (mode 0700, a name nobody can guess):
/// the plan says which plugin folders the child trusts, so no other user may write it.
std::string temp_path(const char* what, int round) { return fmt::format("{}/round-{}-{}.json", private_dir(), round, what); }

int round_command(const std::string& plan_file, const std::string& out_file, int progress_fd) {
    // The parent waits for this process; if the parent dies first, stop (and leave nothing).
    const pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) return static_cast<int>(ExitCode::failed);
    StopSignals::for_process(); // as `run`: no file of this round is left by a stop signal
    const nlohmann::json plan = parse_json(read_input_file(plan_file, "round plan", k_max_profile_bytes));
    if (plan.value("version", 0) != k_plan_version)
        throw UsageError(fmt::format("round plan '{}' has another version", plan_file),
                         "the round plan is written by 'interopbench run --rounds'; do not start _round by hand");
    const FamilyOptions family = FamilyOptions::from_json(plan.value("family_options", nlohmann::json::object()));
    std::vector<std::string> warnings; // said once, by the parent
    const Registry registry = scenario_registry(family, warnings);
    Machine machine = probe_machine(plan.value("devices", std::string{}));
    RunRecord rec;
    rec.plan.settings.apply_json(plan.at("settings"), "round plan");
    rec.plan.settings.options = family;
    std::vector<Config> configs;
    for (const auto& c : plan.at("configs")) {
        const std::string id = c.at("scenario").get<std::string>();
        const Scenario* s = registry.find(id);
        if (!s) throw UsageError(fmt::format("round plan names unknown scenario '{}'", id));
        configs.push_back({s, typed_params(s->info(), c.at("params").get<std::vector<std::pair<std::string, std::string>>>(),
                                           machine)});
    }
    // The families' pre-flight again, in this process: the storage site must be the parent's.
    builtin_families().preflight(rec.plan.settings, configs);
    SessionOptions options;
    options.out = out_file;
    SessionHooks hooks;
    // Progress goes to the parent, which shows it: a line "INDEX COUNT PHASE SAMPLES" as each
    // configuration starts and whenever its phase or samples changed (checked five times a
    // second); PHASE is the Phase's number, or -1 once the configuration ended.
    LiveProgress live;
    std::mutex relay_mutex;
    std::size_t at = 0, of = 0;
    std::uint64_t announced = 0; // live's configurations started before the one at `at`
    std::string sent;
    auto relay = [&] { // under relay_mutex
        const LiveProgress::Snapshot snap = live.snapshot();
        const bool begun = snap.configuration > announced;
        const int phase = !begun ? static_cast<int>(Phase::setup) : snap.running ? static_cast<int>(snap.phase) : -1;
        const std::string line = fmt::format("{} {} {} {}\n", at, of, phase, begun ? snap.samples : 0);
        if (line == sent) return;
        sent = line;
        (void)!write(progress_fd, line.data(), line.size());
    };
    std::optional<Ticker> ticker;
    if (progress_fd >= 0) {
        hooks.live = &live;
        hooks.progress = [&](int, int, std::size_t i, const std::vector<Config>& cs) {
            const std::lock_guard lock(relay_mutex);
            at = i;
            of = cs.size();
            announced = live.snapshot().configuration;
            relay();
        };
        ticker.emplace(std::chrono::milliseconds(200), [&] {
            const std::lock_guard lock(relay_mutex);
            if (of > 0) relay();
        });
    }
    const SessionResult run = run_session(configs, std::move(rec), machine, options, hooks);
    ticker.reset();
    if (getppid() != parent) { // orphaned: nobody reads the report
        unlink(out_file.c_str());
        return static_cast<int>(ExitCode::failed);
    }
    return run.written == out_file ? 0 : static_cast<int>(ExitCode::failed);
}

} // namespace

std::vector<Result> run_round_process(const std::vector<Config>& configs, const RunSettings& settings, int round,
                                      const std::string& devices,
                                      const std::function<void(std::size_t index, std::size_t count)>& progress,
                                      LiveProgress* live) {
    nlohmann::json plan = {{"version", k_plan_version}, {"round", round}, {"devices", devices}};
    plan["family_options"] = settings.options.to_json();
    nlohmann::json s = settings.to_json();
    s["rounds"] = 1;
    plan["settings"] = std::move(s);
    nlohmann::json list = nlohmann::json::array();
    for (const auto& c : configs) list.push_back({{"scenario", c.scenario->info().id}, {"params", c.params.items()}});
    plan["configs"] = std::move(list);

    const std::string plan_file = temp_path("plan", round), out_file = temp_path("results", round);
    cleanup::Guard plan_guard(plan_file), out_guard(out_file);
    write_file_atomic(plan_file, plan.dump() + "\n");
    const std::string exe = self_path();
    std::vector<std::string> args{"interopbench", "_round", "--plan", plan_file, "--out", out_file};
    // The child's progress comes back on a pipe, its descriptor 3 there.
    int pipe_fds[2] = {-1, -1};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (progress && pipe2(pipe_fds, O_CLOEXEC) == 0) {
        posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 3);
        args.insert(args.end(), {"--progress-fd", "3"});
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (pipe_fds[1] >= 0) close(pipe_fds[1]);
    if (spawned != 0) {
        if (pipe_fds[0] >= 0) close(pipe_fds[0]);
        throw std::runtime_error(fmt::format("cannot start {}: {}", exe, std::strerror(spawned)));
    }
    if (pipe_fds[0] >= 0) fcntl(pipe_fds[0], F_SETFL, fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
    std::string pending;
    std::optional<unsigned long> current; // the configuration the child is in
    auto read_progress = [&] {
        char buf[512];
        ssize_t n;
        while (pipe_fds[0] >= 0 && (n = read(pipe_fds[0], buf, sizeof buf)) > 0) pending.append(buf, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
            // "INDEX COUNT PHASE SAMPLES" (round_command); a new index is a new configuration.
            unsigned long i = 0, count = 0;
            int phase = 0, samples = 0;
            if (std::sscanf(pending.c_str(), "%lu %lu %d %d", &i, &count, &phase, &samples) == 4 && i < count &&
                count == configs.size() && phase >= -1 && phase <= static_cast<int>(Phase::teardown) && samples >= 0) {
                if (current != i) {
                    current = i;
                    progress(i, count);
                    if (live) live->start(settings.max_samples, settings.max_time_s);
                }
                if (live && phase < 0) live->stop();
                else if (live) live->set(static_cast<Phase>(phase), samples);
            }
            pending.erase(0, nl + 1);
        }
    };
    // Wait; a stop signal of ours is passed on once, and the round ends after its sample.
    bool told = false;
    int status = 0;
    while (true) {
        const pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) break;
        if (got < 0 && errno != EINTR) {
            if (pipe_fds[0] >= 0) close(pipe_fds[0]);
            throw std::runtime_error(fmt::format("waiting for round {}: {}", round, std::strerror(errno)));
        }
        if (g_interrupted && !told) {
            kill(pid, SIGINT);
            told = true;
        }
        read_progress();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (pipe_fds[0] >= 0) close(pipe_fds[0]);
    if (live) live->stop();
    if (access(out_file.c_str(), F_OK) != 0) {
        if (WIFSIGNALED(status))
            throw std::runtime_error(fmt::format("its process ended by signal {}", WTERMSIG(status)));
        throw std::runtime_error(fmt::format("its process exited with status {} and wrote no results", WEXITSTATUS(status)));
    }
    return read_report(out_file).results;
}

void add_round(CLI::App& app, Outcome& out) {
    struct Options {
        std::string plan, out;
        int progress_fd = -1;
    };
    auto o = std::make_shared<Options>();
    auto* cmd = app.add_subcommand("_round", "");
    cmd->group(""); // internal: started by 'run --rounds', not listed in --help
    cmd->add_option("--plan", o->plan)->required();
    cmd->add_option("--out", o->out)->required();
    cmd->add_option("--progress-fd", o->progress_fd);
    cmd->callback([o, &out] { out.code = round_command(o->plan, o->out, o->progress_fd); });
}

std::string self_path() {
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) throw std::runtime_error("cannot find this executable (/proc/self/exe)");
    buf[n] = '\0';
    return buf;
}

} // namespace interopbench::cli
