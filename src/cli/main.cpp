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
#include <sstream>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "families/plugin/warden.hpp"
#include "interopbench/params.hpp"
#include "interopbench/report.hpp"
#include "interopbench/text.hpp"
#include "presentation/table.hpp"

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

// ---- CLI11's parse errors in our words: each names the problem (and a near name when the
// user mistyped one) and the --help that shows the right form; CLI11's own wording, which
// lists extras backwards and speaks of "TEXT" and "required", never reaches the user.

// The subcommand CLI11 was reading when it stopped (the last one named), or the top level.
const CLI::App* current_command(const CLI::App& app) {
    const auto subs = app.get_subcommands();
    return subs.empty() ? &app : subs.back();
}

std::string help_hint(const CLI::App& app, const CLI::App* cmd) {
    return cmd == &app ? std::string("see 'interopbench --help'")
                       : fmt::format("see 'interopbench {} --help'", cmd->get_name());
}

std::string command_name(const CLI::App& app, const CLI::App* cmd) {
    return cmd == &app ? std::string("interopbench") : "interopbench " + cmd->get_name();
}

// "; did you mean 'X'?" when `given` is a near miss of one of `names`, else "".
std::string did_you_mean(std::string_view given, const std::vector<std::string>& names) {
    const auto close = closest_match(given, names);
    return close ? fmt::format("; did you mean '{}'?", *close) : std::string{};
}

// An argument no command or option took: the first of them, which is where the user went
// wrong (an option's stray value comes after it).
std::pair<std::string, std::string> describe_extra(const CLI::App& app) {
    const CLI::App* cmd = &app;
    std::vector<std::string> extras = app.remaining(false);
    for (const CLI::App* sub : app.get_subcommands())
        if (extras.empty()) {
            extras = sub->remaining(false);
            cmd = sub;
        }
    if (extras.empty()) return {"unexpected arguments", help_hint(app, current_command(app))};
    const std::string& arg = extras.front();
    if (arg.size() > 1 && arg[0] == '-') {
        const std::string name = arg.substr(0, arg.find('=')); // --ouput=x.json names --ouput
        // Compared without dashes, so that "-x" is no near miss of "-h"; long names only.
        std::vector<std::string> known;
        for (const CLI::Option* opt : cmd->get_options())
            for (const std::string& l : opt->get_lnames()) known.push_back(l);
        const auto close = closest_match(std::string_view(name).substr(std::min(name.find_first_not_of('-'), name.size())), known);
        return {fmt::format("unknown option '{}'{}{}", name, cmd == &app ? "" : " for '" + cmd->get_name() + "'",
                            close ? fmt::format("; did you mean '--{}'?", *close) : ""),
                help_hint(app, cmd)};
    }
    if (cmd == &app) {
        std::vector<std::string> commands;
        for (const CLI::App* sub : app.get_subcommands({}))
            if (!sub->get_name().empty() && sub->get_name()[0] != '_') commands.push_back(sub->get_name()); // _round is internal
        return {fmt::format("unknown command '{}'{}", arg, did_you_mean(arg, commands)),
                "see 'interopbench --help' for the commands"};
    }
    const bool takes_arguments = !cmd->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
    return {fmt::format("unexpected argument '{}': {}", arg,
                        takes_arguments ? fmt::format("more than '{}' takes", command_name(app, cmd))
                                        : fmt::format("'{}' takes options only", command_name(app, cmd))),
            help_hint(app, cmd)};
}

// "NAME: rest" as CLI11 words most errors; NAME is an option ("--out") or a positional ("file").
std::pair<std::string, std::string> split_name(const std::string& what) {
    const auto colon = what.find(": ");
    if (colon == std::string::npos) return {};
    return {what.substr(0, colon), what.substr(colon + 2)};
}

std::string display_name(const std::string& name) {
    return !name.empty() && name[0] == '-' ? fmt::format("option '{}'", name) : fmt::format("argument '{}'", name);
}

std::pair<std::string, std::string> describe_parse_error(const CLI::App& app, const CLI::ParseError& e) {
    const CLI::App* cmd = current_command(app);
    const std::string hint = help_hint(app, cmd);
    const std::string what = e.what();
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) return describe_extra(app);

    if (dynamic_cast<const CLI::ConversionError*>(&e)) {
        // "Could not convert: --min-samples = abc"
        constexpr std::string_view k_convert = "Could not convert: ";
        const auto eq = what.find(" = ");
        if (what.rfind(k_convert, 0) == 0 && eq != std::string::npos) {
            const std::string name = what.substr(k_convert.size(), eq - k_convert.size());
            const std::string value = what.substr(eq + 3);
            if (value.empty()) return {fmt::format("option '{}' has an empty value", name), "give a value, or leave the option out"};
            const CLI::Option* opt = find_option(app, name);
            const std::string type = opt ? opt->get_type_name() : std::string{};
            const char* kind = type == "UINT" ? "a whole number of 0 or more"
                               : type == "INT" ? "a whole number"
                               : type == "FLOAT" ? "a number"
                                                 : "a valid value";
            return {fmt::format("option '{}': '{}' is not {}", name, value, kind),
                    fmt::format("give {}, e.g. {} {}", kind, name, type == "FLOAT" ? "0.5" : "10")};
        }
        // "--quiet: too many inputs for a flag", "--quiet: Should be true/false or a number"
        if (const auto [name, rest] = split_name(what); !name.empty())
            return {fmt::format("option '{}' is a flag and takes no value", name),
                    fmt::format("write {} alone; {}", name, hint)};
        return {"a value could not be read", hint};
    }

    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
        // "--quiet was given a disallowed flag override": `--quiet=yes`
        constexpr std::string_view k_override = " was given a disallowed flag override";
        if (what.ends_with(k_override)) {
            const std::string name = what.substr(0, what.size() - k_override.size());
            return {fmt::format("option '{}' is a flag and takes no value", name), fmt::format("write {} alone; {}", name, hint)};
        }
        const auto [name, rest] = split_name(what);
        const bool positional = !name.empty() && name[0] != '-';
        std::size_t n = 0, got = 0;
        // "--out: 1 required TEXT missing": the value never came.
        if (rest.find(" missing") != std::string::npos)
            return {positional ? fmt::format("'{}' is missing its {} argument", command_name(app, cmd), name)
                               : fmt::format("option '{}' needs a value", name),
                    positional ? hint : fmt::format("write {} VALUE; {}", name, hint)};
        // "reports: At least 2 required but received 1"
        if (std::sscanf(rest.c_str(), "At least %zu required but received %zu", &n, &got) == 2)
            return {fmt::format("{} needs at least {} {}, got {}", positional ? "'" + command_name(app, cmd) + "'" : display_name(name),
                                n, positional ? name : std::string(n == 1 ? "value" : "values"), got),
                    hint};
        // "--format: At Most 1 required but received 2": an option given twice
        if (std::sscanf(rest.c_str(), "At Most %zu required but received %zu", &n, &got) == 2)
            return {n == 1 && !positional ? fmt::format("option '{}' is given {} times; it takes one value", name, got)
                                          : fmt::format("{} takes at most {} value(s), got {}", display_name(name), n, got),
                    hint};
        return {name.empty() ? std::string("wrong number of values") : fmt::format("wrong number of values for {}", display_name(name)),
                hint};
    }

    if (dynamic_cast<const CLI::RequiredError*>(&e)) {
        // "file is required", "--plan is required"
        constexpr std::string_view k_required = " is required";
        if (what.size() > k_required.size() && what.compare(what.size() - k_required.size(), k_required.size(), k_required) == 0) {
            const std::string name = what.substr(0, what.size() - k_required.size());
            return {name[0] == '-' ? fmt::format("option '{}' is required", name)
                                   : fmt::format("'{}' is missing its {} argument", command_name(app, cmd), name),
                    hint};
        }
        return {fmt::format("'{}' is missing a required argument", command_name(app, cmd)), hint};
    }

    if (const auto [name, rest] = split_name(what); !name.empty() && name.find(' ') == std::string::npos)
        return {fmt::format("{} is not valid here", display_name(name)), hint};
    return {fmt::format("the arguments of '{}' could not be read", command_name(app, cmd)), hint};
}

// Help that fits the terminal: descriptions wrapped at word boundaries beside a fixed name
// column (CLI11 indents each new line of a description), defaults shown.
class WrappingFormatter : public CLI::Formatter {
public:
    WrappingFormatter() { column_width(34); }
    std::string make_option_desc(const CLI::Option* opt) const override { return wrapped(CLI::Formatter::make_option_desc(opt)); }
    std::string make_option_opts(const CLI::Option* opt) const override {
        // A list option's empty default says nothing: "--floor TEXT ...", not "TEXT=[] ...".
        std::string s = CLI::Formatter::make_option_opts(opt);
        if (const auto at = s.find("=[]"); at != std::string::npos) s.erase(at, 3);
        return s;
    }
    std::string make_description(const CLI::App* app) const override { return wrapped_lines(CLI::Formatter::make_description(app)); }
    std::string make_footer(const CLI::App* app) const override { return wrapped_lines(CLI::Formatter::make_footer(app)); }
    std::string make_subcommand(const CLI::App* sub) const override {
        std::stringstream out;
        CLI::detail::format_help(out, sub->get_display_name(), wrapped(sub->get_description()), column_width_);
        return out.str();
    }

private:
    // Each line of a block (a description, a footer) laid out as written: a line that fits is
    // kept as it is (the spaces that align an example's comment included), a longer one is
    // broken at its spaces, each piece on a line of its own under the first: under its second
    // column where two spaces start one ("  csv   one row per ..."), else indented by two more.
    // Lines are never joined, so that example lists stay lists.
    static std::string wrapped_lines(const std::string& text) {
        const std::size_t width = terminal_width();
        std::string out;
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);) {
            while (!line.empty() && line.back() == ' ') line.pop_back();
            const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
            const std::size_t column = line.find("  ", indent), second = line.find_first_not_of(' ', column);
            const std::size_t hang = column != std::string::npos && second <= width / 2 ? second : indent + 2;
            out += wrap(line.substr(indent), width, std::string(indent, ' '), std::string(hang, ' '));
        }
        if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
        return out;
    }

    std::string wrapped(const std::string& text) const {
        const std::size_t room = std::max<std::size_t>(30, terminal_width() - column_width_ - 1);
        std::string words; // the description's words, one space apart
        std::istringstream in(text);
        for (std::string w; in >> w;) words += (words.empty() ? "" : " ") + w;
        std::string out = wrap(words, room, "");
        out.pop_back(); // the newline wrap ends with
        return out;
    }
};

// Examples under each subcommand's --help.
void add_examples(CLI::App& app) {
    const std::pair<const char*, const char*> k_examples[] = {
        {"run", "examples:\n  interopbench run                         the default job (about 30 s)\n"
                "  interopbench run -p quick --out r.json   a broader look, report saved\n"
                "  interopbench run -s h2d_copy --size 64M -a host_mem=pageable,pinned\n"
                "  interopbench run -t 'host -> gpu0 1G; file(cold) -> gpu0 1G' --dry-run\n"
                "  interopbench run -p ci --baseline base.json --confirm 3   a CI gate"},
        {"show", "examples:\n  interopbench show r.json\n  interopbench show r.json --wide --metrics all\n"
                 "  interopbench show r.json -f html --out r.html"},
        {"compare", "examples:\n  interopbench compare base.json new.json\n"
                    "  interopbench compare base.json new.json --threshold 5% --fail-on-inconclusive -f junit"},
        {"list", "examples:\n  interopbench list\n  interopbench list -s 'storage*'\n  interopbench list --profiles"},
        {"fleet", "examples:\n  interopbench fleet node*.json                  which machine is the outlier, and why\n"
                  "  interopbench fleet node*.json -f html --out fleet.html\n"
                  "  interopbench fleet node*.json --confirm 3 --rerun   keep only outliers that repeat\n"
                  "  interopbench fleet new-node.json --expect h200.json  against a healthy fleet's figures"},
        {"topo", "examples:\n  interopbench topo\n  interopbench topo -f json"},
        {"doctor", "examples:\n  interopbench doctor\n  interopbench doctor --require-gpu   (on a machine that must have one)"},
    };
    for (const auto& [name, text] : k_examples)
        for (CLI::App* sub : app.get_subcommands({}))
            if (sub->get_name() == name) sub->footer(sub->get_footer().empty() ? text : sub->get_footer() + "\n\n" + text);
}

// `help [COMMAND]`: the same text as `COMMAND --help` (or `--help`), exit 0; an unknown
// COMMAND is a usage error naming the near command.
void print_help(const CLI::App& app, const std::string& command) {
    if (command.empty()) {
        fmt::print("{}", app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal));
        return;
    }
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands({})) {
        if (sub->get_name().empty() || sub->get_name()[0] == '_') continue; // _round is internal
        if (sub->get_name() == command) {
            fmt::print("{}", sub->help(app.get_name()));
            return;
        }
        commands.push_back(sub->get_name());
    }
    throw UsageError(fmt::format("unknown command '{}'{}", command, did_you_mean(command, commands)),
                     "see 'interopbench --help' for the commands");
}

int run(int argc, char** argv) {
    try {
        auto world = cli::make_mpi_world(argc, argv);
        cli::set_world(world.get());
        cli::set_argv(argc, argv);
        CLI::App app{"interopbench: measure and explain data movement on and between GPUs", "interopbench"};
        app.set_version_flag("-V,--version", fmt::format("interopbench {} ({})", tool_version(), tool_git_sha()));
        app.require_subcommand(0, 1);
        app.formatter(std::make_shared<WrappingFormatter>()); // before the subcommands, which copy it
        // Flags take no value: `--quiet=yes` is refused like `--quiet yes`, never read as true.
        app.option_defaults()->always_capture_default()->disable_flag_override();
        cli::Outcome out;
        cli::add_run(app, out);
        cli::add_list(app, out);
        cli::add_show(app, out);
        cli::add_topo(app, out);
        cli::add_doctor(app, out);
        cli::add_compare(app, out);
        cli::add_fleet(app, out);
        cli::add_round(app, out);
        cli::add_completion(app, out);
        app.add_subcommand("version", "print the version and git revision")->callback([] {
            fmt::print("interopbench {} ({})\n", tool_version(), tool_git_sha());
        });
        auto help_command = std::make_shared<std::string>();
        app.add_subcommand("help", "print the help of the tool, or of COMMAND (as COMMAND --help does)")
            ->callback([&app, help_command] { print_help(app, *help_command); })
            ->add_option("command", *help_command, "the command whose help to print");
        add_examples(app);
        // --color is global: the top level and every command take it, into one value.
        auto color = std::make_shared<std::string>("auto");
        cli::add_color_option(&app, *color);
        for (CLI::App* sub : app.get_subcommands({})) cli::add_color_option(sub, *color);
        // After every option is read and before any subcommand runs: one check for all.
        app.parse_complete_callback([&app, color] {
            refuse_empty_values(app);
            cli::set_color_mode(*color);
        });
        try {
            app.parse(argc, argv);
        } catch (const CLI::CallForHelp& e) {
            return app.exit(e);
        } catch (const CLI::CallForAllHelp& e) {
            return app.exit(e);
        } catch (const CLI::CallForVersion& e) {
            return app.exit(e);
        } catch (const CLI::ParseError& e) {
            const auto [what, hint] = describe_parse_error(app, e);
            print_error(what, hint);
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
