#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
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

} // namespace

void set_world(World* world) { g_world = world; }
void set_argv(int argc, char** argv) { g_argv.assign(argv, argv + argc); }
const std::vector<std::string>& invocation_argv() { return g_argv; }
World* current_world() { return g_world; }

bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

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

ProgressLine::ProgressLine(bool live) : m_live(live), m_start(std::chrono::steady_clock::now()) {}

double ProgressLine::elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
}

void ProgressLine::show(int round, int rounds, std::size_t index, std::size_t count, const std::string& name) {
    if (round != m_round) {
        if (m_round > 0) m_done_before += m_count;
        m_round = round;
    }
    m_count = count;
    const double spent = elapsed();
    const std::size_t done = m_done_before + index;
    // What is left: the rest of this round and every later round (at this round's count:
    // later rounds measure again only what was measured, so this is an upper estimate).
    const std::size_t left = (count - index) + static_cast<std::size_t>(std::max(0, rounds - round)) * count;
    const std::string eta = done > 0 ? "about " + format_duration(spent / static_cast<double>(done) * static_cast<double>(left)) + " left"
                                     : std::string("estimating");
    const std::string where = rounds > 1 ? fmt::format("{}/{} of round {}/{}", index + 1, count, round, rounds)
                                         : fmt::format("{}/{}", index + 1, count);
    std::string text = fmt::format("[{}, {} elapsed, {}] {}", where, format_duration(spent), eta, display_text(name));
    if (m_live) {
        // One terminal line: cut to the width so that the redraw stays on it.
        const std::size_t width = terminal_width();
        if (text.size() >= width) text = text.substr(0, width > 4 ? width - 4 : 0) + "...";
        print_stderr("\r\033[K" + text);
    } else {
        print_stderr(text + "\n");
    }
}

void ProgressLine::clear() {
    if (m_live && m_round > 0) print_stderr("\r\033[K");
}

void add_format_option(CLI::App* cmd, std::string& format, Command command, const std::string& what) {
    cmd->add_option("-f,--format", format, what + ": " + format_names(command));
    const std::string block = format_help(command);
    cmd->footer(cmd->get_footer().empty() ? block : cmd->get_footer() + "\n\n" + block);
}

void add_table_options(CLI::App* cmd, bool& wide, std::string& metrics) {
    cmd->add_flag("--wide", wide, "tables as wide as their content (default: the terminal's width, 100 when not a terminal)");
    cmd->add_option("--metrics", metrics, "metric columns of tables: compact (those that fit, the default) or all")
        ->capture_default_str();
}

TableStyle table_style(bool wide, const std::string& metrics) {
    // "primary" is show's word for the same default (it also picks the CI formats' metrics).
    if (metrics != "compact" && metrics != "primary" && metrics != "all")
        throw UsageError(fmt::format("unknown --metrics '{}'", metrics), "use --metrics compact or --metrics all");
    TableStyle style;
    style.width = wide ? 0 : terminal_width();
    style.all_metrics = metrics == "all";
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
