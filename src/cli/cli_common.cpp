#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "families/builtin.hpp"
#include "gpu/cuda_util.hpp"
#include "gpu/cufile_loader.hpp"
#include "gpu/nccl_loader.hpp"
#include "interopbench/params.hpp"
#include "interopbench/registry.hpp"
#include "topology/nvml.hpp"

namespace interopbench::cli {
namespace {
World* g_world = nullptr;
std::vector<std::string> g_argv;
ColorMode g_color = ColorMode::auto_;

} // namespace

void set_world(World* world) { g_world = world; }
void set_argv(int argc, char** argv) { g_argv.assign(argv, argv + argc); }
const std::vector<std::string>& invocation_argv() { return g_argv; }
World* current_world() { return g_world; }

bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

void add_color_option(CLI::App* cmd, std::string& word) {
    cmd->add_option("--color", word,
                    "colour verdicts on a terminal: auto (when stdout is one and NO_COLOR is unset), always or never")
        ->capture_default_str();
}

void set_color_mode(const std::string& word) { g_color = parse_color_mode(word); }

bool color_on(int fd) { return color_wanted(g_color, isatty(fd) == 1); }

void print_stderr(std::string_view text) noexcept {
    while (!text.empty()) {
        const ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return; // closed or full: the message is lost, nothing else
        text.remove_prefix(static_cast<std::size_t>(n));
    }
}

bool progress_allowed() {
    // Progress redraws its line with CR and ANSI erase codes: only for a terminal that
    // understands them, and never when the user asked for no colour or escape codes.
    if (!stderr_is_tty()) return false;
    const char* term = std::getenv("TERM");
    if (!term || !*term || std::string_view(term) == "dumb") return false;
    return std::getenv("NO_COLOR") == nullptr;
}

Ticker::Ticker(std::chrono::milliseconds interval, std::function<void()> tick) {
    // The thread starts with every signal blocked (it inherits this thread's mask, which is
    // restored at once), so that a stop signal interrupts the measuring thread, never this one.
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    try {
        m_thread = std::thread([this, interval, tick = std::move(tick)] {
            std::unique_lock lock(m_mutex);
            while (!m_wake.wait_for(lock, interval, [this] { return m_stopping; })) {
                lock.unlock();
                tick();
                lock.lock();
            }
        });
    } catch (...) {
        pthread_sigmask(SIG_SETMASK, &saved, nullptr);
        throw;
    }
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
}

Ticker::~Ticker() { stop(); }

void Ticker::stop() {
    {
        const std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    if (m_thread.joinable()) m_thread.join();
}

ProgressStyle progress_style(const std::string& value) {
    if (value.empty()) return ProgressStyle::none;
    if (value == "true") return ProgressStyle::lines; // the flag alone
    if (value == "json") return ProgressStyle::json;
    throw UsageError(fmt::format("unknown --progress '{}'", value),
                     "write --progress for plain lines, or --progress=json for one JSON object a line");
}

namespace {
double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
/// Milliseconds are enough for a progress line's times.
double ms_rounded(double s) { return std::round(s * 1e3) / 1e3; }
/// `s` in at most `bytes` bytes, its end "..." when cut (a UTF-8 character is never cut in two).
std::string cut_to(const std::string& s, std::size_t bytes) {
    if (s.size() <= bytes) return s;
    std::size_t n = bytes > 3 ? bytes - 3 : 0;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) --n;
    return s.substr(0, n) + "...";
}
} // namespace

ProgressLine::ProgressLine(ProgressStyle style, const LiveProgress& live, const Machine& machine)
    : m_style(style), m_live(live), m_machine(machine), m_start(clock::now()) {}

double ProgressLine::elapsed() const { return seconds(clock::now() - m_start); }

void ProgressLine::set_round(int round, int rounds, const std::vector<Config>& configs) {
    m_rounds = rounds;
    if (round == m_round && configs.size() == m_configs.size()) return; // the same list, told again
    m_round = round;
    m_configs.clear();
    m_configs.reserve(configs.size());
    for (const Config& c : configs)
        m_configs.push_back({c.key(), short_label(c.scenario->info().id, c.params), needs_missing_gpu(c, m_machine)});
}

void ProgressLine::finish_config(clock::time_point now) {
    if (m_state != State::running) return;
    const Entry& e = m_configs[m_index];
    m_estimate.took(e.key, seconds(now - m_since), e.skipped);
    m_state = State::idle;
}

void TimeEstimate::took(const std::string& key, double seconds, bool skipped) {
    m_took[key] = seconds;
    if (!skipped) {
        m_took_sum += seconds;
        ++m_took_n;
    }
}

std::optional<double> TimeEstimate::expected(const std::string& key, bool skipped) const {
    if (const auto it = m_took.find(key); it != m_took.end()) return it->second;
    if (skipped) return 0.0;
    if (m_took_n > 0) return m_took_sum / static_cast<double>(m_took_n);
    return std::nullopt;
}

std::optional<double> ProgressLine::eta(clock::time_point now) const {
    // This round from here, then every later round over this round's configurations (later
    // rounds measure again only those that ended ok: an upper estimate), each with the start
    // of its process once one was seen.
    const double since = seconds(now - m_since);
    double left = 0, round_total = 0;
    std::size_t first = 0; // this round's first configuration not begun
    if (m_state == State::running) {
        const Entry& e = m_configs[m_index];
        const auto x = m_estimate.expected(e.key, e.skipped);
        if (!x) return std::nullopt;
        left += std::max(0.0, *x - since);
        first = m_index + 1;
    } else if (m_state == State::starting) {
        left += std::max(0.0, m_estimate.process_start() - since);
    } else {
        return std::nullopt;
    }
    for (std::size_t j = 0; j < m_configs.size(); ++j) {
        const auto x = m_estimate.expected(m_configs[j].key, m_configs[j].skipped);
        if (!x) return std::nullopt;
        round_total += *x;
        if (j >= first) left += *x;
    }
    return left + m_estimate.later_rounds(round_total, m_rounds - m_round);
}

void ProgressLine::update(bool forced) {
    const auto now = clock::now();
    if (m_style == ProgressStyle::none || (m_state != State::running && m_state != State::starting)) return;
    const LiveProgress::Snapshot snap = m_live.snapshot();
    const bool running = m_state == State::running;
    // The runner is in this configuration once it started one after it was announced;
    // before, it is about to set it up.
    const bool begun = running && snap.configuration > m_seq;
    const std::string phase = !running ? "starting" : !begun ? to_string(Phase::setup) : snap.running ? to_string(snap.phase) : "done";
    const int samples = begun ? snap.samples : 0;
    const bool past = begun && snap.past_budget();
    const std::string what = fmt::format("{} {} {} {} {} {}", m_round, m_index, phase, samples, past, running);
    if (!forced && m_style != ProgressStyle::live &&
        (what == m_printed_what || seconds(now - m_printed) < (m_style == ProgressStyle::json ? 1.0 : 10.0)))
        return;
    m_printed = now;
    m_printed_what = what;
    const double spent = seconds(now - m_start);
    const std::optional<double> left = eta(now);
    const Entry* e = running ? &m_configs[m_index] : nullptr;

    if (m_style == ProgressStyle::json) {
        using json = nlohmann::ordered_json; // the fields in the order documented
        const json unknown = nullptr;
        const json j = {{"elapsed_s", ms_rounded(spent)},
                        {"round", m_round},
                        {"rounds", m_rounds},
                        {"index", running ? m_index + 1 : 0},
                        {"count", m_configs.size()},
                        {"key", e ? json(e->key) : unknown},
                        {"phase", phase},
                        {"samples", samples},
                        {"max_samples", begun ? json(snap.max_samples) : unknown},
                        {"budget_s", begun ? json(snap.budget_s) : unknown},
                        {"past_budget", past},
                        {"eta_s", left ? json(ms_rounded(*left)) : unknown}};
        print_stderr(j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
        return;
    }
    const std::string where = !running      ? fmt::format("round {}/{}: starting its process", m_round, m_rounds)
                              : m_rounds > 1 ? fmt::format("{}/{} of round {}/{}", m_index + 1, m_configs.size(), m_round, m_rounds)
                                             : fmt::format("{}/{}", m_index + 1, m_configs.size());
    const std::string head = fmt::format("[{}, {} elapsed, {}] ", where, format_duration(spent),
                                         left ? "about " + format_duration(*left) + " left" : std::string("estimating"));
    std::string name = e ? display_text(e->label)
                         : fmt::format("{} configuration{}", m_configs.size(), m_configs.size() == 1 ? "" : "s");
    std::string doing;
    if (e) {
        doing = ": " + (begun && snap.running && snap.phase == Phase::sampling
                            ? fmt::format("sampling {}/{}", samples, snap.max_samples)
                            : phase);
        if (past) doing += fmt::format(", past its {} budget", format_duration(snap.budget_s));
    }
    if (m_style == ProgressStyle::live) {
        // One terminal line, so that the redraw stays on it: the configuration's name is
        // shortened first, then the line is cut.
        const std::size_t width = terminal_width();
        if (head.size() + name.size() + doing.size() >= width) {
            const std::size_t room = head.size() + doing.size() + 12 < width ? width - 1 - head.size() - doing.size() : 12;
            name = cut_to(name, room);
        }
        const std::string text = head + name + doing;
        print_stderr("\r\033[K" + (text.size() >= width ? cut_to(text, width - 1) : text));
        m_drawn = true;
    } else {
        print_stderr(head + name + doing + "\n");
    }
}

void ProgressLine::show(int round, int rounds, std::size_t index, const std::vector<Config>& configs) {
    const std::lock_guard lock(m_mutex);
    const auto now = clock::now();
    finish_config(now);
    if (m_state == State::starting && round == m_round) m_estimate.process_started(seconds(now - m_since));
    set_round(round, rounds, configs);
    m_index = std::min(index, m_configs.empty() ? 0 : m_configs.size() - 1);
    m_since = now;
    m_seq = m_live.snapshot().configuration;
    m_state = m_configs.empty() ? State::idle : State::running;
    update(true);
}

void ProgressLine::round_starts(int round, int rounds, const std::vector<Config>& configs) {
    const std::lock_guard lock(m_mutex);
    const auto now = clock::now();
    finish_config(now);
    set_round(round, rounds, configs);
    m_index = 0;
    m_since = now;
    m_state = State::starting;
    update(true);
}

void ProgressLine::round_ends() {
    const std::lock_guard lock(m_mutex);
    finish_config(clock::now());
}

void ProgressLine::tick() {
    const std::lock_guard lock(m_mutex);
    update(false);
}

void ProgressLine::say(const std::string& text) {
    const std::lock_guard lock(m_mutex);
    finish_config(clock::now());
    m_state = State::paused;
    if (m_drawn) print_stderr("\r\033[K");
    m_drawn = false;
    print_stderr(text + "\n");
}

void ProgressLine::clear() {
    const std::lock_guard lock(m_mutex);
    m_state = State::idle;
    if (m_drawn) print_stderr("\r\033[K");
    m_drawn = false;
}

void add_format_option(CLI::App* cmd, std::string& format, Command command, const std::string& what) {
    cmd->add_option("-f,--format", format, what + ": " + format_names(command));
    const std::string block = format_help(command);
    cmd->footer(cmd->get_footer().empty() ? block : cmd->get_footer() + "\n\n" + block);
}

void add_wide_option(CLI::App* cmd, bool& wide) {
    cmd->add_flag("--wide", wide, "tables as wide as their content (default: the terminal's width, 100 when not a terminal)");
}

std::size_t output_width(bool wide) { return wide ? 0 : terminal_width(); }

void add_table_options(CLI::App* cmd, bool& wide, std::string& metrics) {
    add_wide_option(cmd, wide);
    cmd->add_option("--metrics", metrics,
                    "primary (the default: tables show the primary metric and the others that fit, CI formats each "
                    "result's primary metric) or all")
        ->capture_default_str();
}

TableStyle table_style(bool wide, const std::string& metrics) {
    TableStyle style;
    style.width = output_width(wide);
    style.all_metrics = parse_ci_metrics(metrics) == CiMetrics::all;
    style.color = color_on(STDOUT_FILENO);
    return style;
}

Machine probe_machine(const std::string& devices) {
    Machine m;
    gpu::probe_cuda(m);
    gpu::probe_nccl(m);
    gpu::probe_cufile(m);
    // NVML is loaded at run time too: its version, or why it is missing, goes in the list.
    const bool nvml_ok = nvml::available();
    m.driver_release = nvml::driver_release();
    m.set_library({"nvml", nvml_ok ? nvml::version() : std::string{}, nvml_ok ? std::string{} : nvml::note()});
    m.host_cores = std::max(1u, std::thread::hardware_concurrency());
    m.world = g_world;
    if (m.cuda_available) {
        if (devices.empty()) {
            for (const auto& d : m.devices) m.selected.push_back(d.ordinal);
        } else {
            m.selected = parse_device_list(devices, m.devices);
        }
        if (m.world) {
            // One GPU per rank: the rank's local index picks from the selection.
            const int local = m.world->local_rank();
            if (local >= static_cast<int>(m.selected.size()))
                throw UsageError(fmt::format("MPI rank {} is local rank {} but only {} GPU(s) are selected on this node",
                                             m.world->rank(), local, m.selected.size()),
                                 "start at most one rank per GPU on each node (mpirun -np N with N <= GPUs per node)");
            m.selected = {m.selected[static_cast<std::size_t>(local)]};
        }
    } else if (!devices.empty()) {
        // Validate the syntax even without a GPU; the GPU scenarios are skipped anyway.
        check_device_list_syntax(devices);
    }
    return m;
}

} // namespace interopbench::cli

namespace interopbench::cli {

void add_family_options(CLI::App* cmd, FamilyOptions& values, bool list_only) {
    for (const FamilyOption& opt : builtin_families().options()) {
        if (list_only && !opt.on_list) continue;
        const std::string flag = "--" + opt.name, name = opt.name;
        switch (opt.kind) {
        case OptionKind::flag:
            cmd->add_flag_callback(flag, [&values, name] { values.set_flag(name, true); }, opt.help);
            break;
        case OptionKind::text:
            cmd->add_option_function<std::string>(flag, [&values, name](const std::string& v) { values.set_text(name, v); },
                                                  opt.help);
            break;
        case OptionKind::texts:
            cmd->add_option_function<std::vector<std::string>>(
                   flag, [&values, name](const std::vector<std::string>& v) { values.set_texts(name, v); }, opt.help)
                ->allow_extra_args(false);
            break;
        case OptionKind::number:
            cmd->add_option_function<double>(flag, [&values, name](double v) { values.set_number(name, v); }, opt.help);
            break;
        }
    }
}

} // namespace interopbench::cli
