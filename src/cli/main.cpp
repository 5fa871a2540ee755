// interopbench: benchmarks and diagnoses data movement on and between GPUs.
// main parses the command line, runs one subcommand and decides the exit code; nothing
// deeper exits the process.
//
// Messages: every error is an `error:` line, and for usage errors usually a `hint:` line
// saying how to fix it; both go through display_text (one line each, nothing raw from a
// file reaches the terminal) and print_stderr (printing never throws nor changes the exit
// code). The standard output is checked at the end: output that could not be written
// (a full disk, a closed stdout) is an error, exit 1.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "families/plugin/warden.hpp"
#include "interopbench/output.hpp"
#include "interopbench/report.hpp"

namespace {

using namespace interopbench;

bool g_stdout_closed = false;
int g_stdout_errno = 0; // the OS error of a failed write to stdout that ended the command

// A standard descriptor closed at start (`>&-`, `2>&-`) would be taken by the next file the
// tool opens: a report's temporary would then receive the table or the error messages.
// stdin and stderr get /dev/null; stdout gets /dev/full, so that output written to a closed
// stdout is still found lost by the final check.
void reserve_standard_fds() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int n = fd == 1 ? ::open("/dev/full", O_WRONLY) : -1;
        if (n < 0) n = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (n >= 0 && n != fd) {
            ::dup2(n, fd);
            ::close(n);
        }
        if (fd == 1) g_stdout_closed = true;
    }
}

ssize_t stderr_cookie_write(void*, const char* buf, std::size_t size) {
    cli::print_stderr({buf, size});
    return static_cast<ssize_t>(size); // a message that cannot be shown is not a failure
}

// fmt::print(stderr, ...) throws when the write fails (a full or closed stderr), which would
// turn a note into a crash. stderr becomes an unbuffered stream whose writes never fail, so
// every message anywhere in the tool is best-effort.
void make_stderr_infallible() {
    cookie_io_functions_t io{};
    io.write = stderr_cookie_write;
    if (FILE* f = ::fopencookie(nullptr, "w", io)) {
        std::setvbuf(f, nullptr, _IONBF, 0);
        stderr = f;
    }
}

void print_error(std::string_view what, std::string_view hint = {}) noexcept {
    try {
        std::string text = "error: " + display_text(what) + "\n";
        if (!hint.empty()) text += "hint: " + display_text(hint) + "\n";
        cli::print_stderr(text);
    } catch (...) {
        cli::print_stderr("error: out of memory\n");
    }
}

// Every option of the chosen subcommand (and the top level) given an empty value, e.g.
// `--out ''` or `show ''`: a usage error, never "not given".
void refuse_empty_values(const CLI::App& app) {
    std::vector<const CLI::App*> apps{&app};
    for (const CLI::App* sub : app.get_subcommands()) apps.push_back(sub);
    for (const CLI::App* a : apps)
        for (const CLI::Option* opt : a->get_options()) {
            if (opt->count() == 0 || opt->get_type_size_max() == 0) continue; // not given, or a flag
            for (const std::string& value : opt->results())
                if (value.empty())
                    throw UsageError(fmt::format("{} '{}' has an empty value", opt->get_positional() && opt->get_name().find('-') != 0
                                                                                    ? "argument"
                                                                                    : "option",
                                                 opt->get_name()),
                                     "give a value, or leave the option out");
        }
}

const CLI::Option* find_option(const CLI::App& app, const std::string& name) {
    std::vector<const CLI::App*> apps{&app};
    for (const CLI::App* sub : app.get_subcommands()) apps.push_back(sub);
    for (const CLI::App* a : apps)
        for (const CLI::Option* opt : a->get_options())
            if (opt->get_name() == name || opt->check_name(name)) return opt;
    return nullptr;
}

// CLI11's conversion message ("Could not convert: --min-samples = abc") in our words.
void print_parse_error(const CLI::App& app, const CLI::ParseError& e) {
    const std::string hint = "run 'interopbench --help' or 'interopbench <command> --help'";
    const std::string what = e.what();
    constexpr std::string_view k_convert = "Could not convert: ";
    const auto eq = what.find(" = ");
    if (what.rfind(k_convert, 0) == 0 && eq != std::string::npos) {
        const std::string name = what.substr(k_convert.size(), eq - k_convert.size());
        const std::string value = what.substr(eq + 3);
        if (value.empty()) {
            print_error(fmt::format("option '{}' has an empty value", name), "give a value, or leave the option out");
            return;
        }
        const CLI::Option* opt = find_option(app, name);
        const std::string type = opt ? opt->get_type_name() : std::string{};
        const char* kind = type == "UINT"                      ? "a whole number of 0 or more"
                           : type == "INT"                     ? "a whole number"
                           : type == "FLOAT"                   ? "a number"
                                                               : "a valid value";
        print_error(fmt::format("option '{}': '{}' is not {}", name, value, kind),
                    fmt::format("give {}, e.g. {} {}", kind, name, type == "FLOAT" ? "0.5" : "10"));
        return;
    }
    print_error(what, hint);
}

int run(int argc, char** argv) {
    try {
        auto world = cli::make_mpi_world(argc, argv);
        cli::set_world(world.get());
        cli::set_argv(argc, argv);
        CLI::App app{"interopbench: measure and explain data movement on and between GPUs", "interopbench"};
        app.set_version_flag("--version", fmt::format("interopbench {} ({})", tool_version(), tool_git_sha()));
        app.require_subcommand(0, 1);
        cli::Outcome out;
        cli::add_run(app, out);
        cli::add_list(app, out);
        cli::add_show(app, out);
        cli::add_topo(app, out);
        cli::add_doctor(app, out);
        cli::add_compare(app, out);
        cli::add_round(app, out);
        app.add_subcommand("version", "print the version and git revision")->callback([] {
            fmt::print("interopbench {} ({})\n", tool_version(), tool_git_sha());
        });
        // After every option is read and before any subcommand runs: one check for all.
        app.parse_complete_callback([&app] { refuse_empty_values(app); });
        try {
            app.parse(argc, argv);
        } catch (const CLI::CallForHelp& e) {
            return app.exit(e);
        } catch (const CLI::CallForAllHelp& e) {
            return app.exit(e);
        } catch (const CLI::CallForVersion& e) {
            return app.exit(e);
        } catch (const CLI::ParseError& e) {
            print_parse_error(app, e);
            return static_cast<int>(ExitCode::usage);
        }
        if (app.get_subcommands().empty()) {
            fmt::print("{}", app.help());
            return 0;
        }
        return out.code;
    } catch (const UsageError& e) {
        print_error(e.what(), e.hint());
        return static_cast<int>(ExitCode::usage);
    } catch (const WriteError& e) {
        print_error(e.what());
        return static_cast<int>(ExitCode::failed);
    } catch (const std::bad_alloc&) {
        print_error("out of memory", "use smaller sizes, fewer configurations or smaller files, or free memory");
        return static_cast<int>(ExitCode::failed);
    } catch (const nlohmann::json::exception& e) {
        print_error(fmt::format("unexpected data: {}", json_error_text(e)));
        return static_cast<int>(ExitCode::failed);
    } catch (const std::system_error& e) {
        if (std::ferror(stdout)) { // fmt::print to stdout failed: said once, by the check in main
            g_stdout_errno = e.code().value();
            return static_cast<int>(ExitCode::failed);
        }
        print_error(e.what());
        return static_cast<int>(ExitCode::failed);
    } catch (const std::exception& e) {
        if (std::ferror(stdout)) return static_cast<int>(ExitCode::failed); // said once, by the check in main
        print_error(e.what());
        return static_cast<int>(ExitCode::failed);
    }
}

} // namespace

int main(int argc, char** argv) {
    // The plugin warden is this binary started again (families/plugin/warden.hpp).
    if (argc > 1 && argv[1] == plugin::k_warden_command) return plugin::warden_main(argc, argv);
    reserve_standard_fds();
    make_stderr_infallible();
    const int code = run(argc, argv);
    // Output that did not reach stdout is a failure of the command, whatever it was.
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    if (!flushed || std::ferror(stdout)) {
        const int err = flushed && g_stdout_errno ? g_stdout_errno : errno;
        print_error(g_stdout_closed ? std::string("standard output is closed: the output was lost")
                                    : fmt::format("could not write standard output: {}",
                                                  err ? std::strerror(err) : "a write failed"),
                    "write to a file with enough space, or use --out FILE where the command has it");
        return code == static_cast<int>(ExitCode::usage) ? code : static_cast<int>(ExitCode::failed);
    }
    return code;
}
