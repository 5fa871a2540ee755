// `interopbench completion bash|zsh|fish` and `interopbench man` (hidden from --help): shell
// completion and the man page, both from the parser itself: every visible command, option and
// argument with its help, and the values the tool knows (scenario ids, axis names, profiles,
// formats, metric selections). The build runs them (CMakeLists.txt) and `cmake --install`
// installs what they wrote; run by hand, they also know the plugins found on this machine.
#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "families/builtin.hpp"
#include "interopbench/params.hpp"
#include "interopbench/profile.hpp"
#include "interopbench/report.hpp"
#include "presentation/completion.hpp"

namespace interopbench::cli {
namespace {

/// What the tool knows of the values of its options and arguments, by name (an option's long
/// name without dashes, or an argument's name), the same for every command that has it. An
/// option that is not here completes its name only.
struct KnownValues {
    std::vector<std::string> scenarios, axes, profiles, commands;

    ValueHint operator()(const std::string& command, const std::string& name) const {
        using Paths = ValueHint::Paths;
        static const std::set<std::string> k_files = {"out",   "html",         "baseline",  "expect", "write-expect",
                                                      "from",  "export-xml",   "files-from", "file",  "reports",
                                                      "confirmed-by"};
        static const std::set<std::string> k_directories = {"storage-dir", "plugin-path", "confirm-dir"};
        if (k_files.count(name)) return {{}, Paths::files};
        if (k_directories.count(name)) return {{}, Paths::directories};
        if (name == "format") {
            for (const Command c : k_commands)
                if (to_string(c) == command) return {names(c, ""), Paths::none};
            return {};
        }
        if (name == "export") return {names(Command::export_file, "="), Paths::none};
        if (name == "metrics" || name == "export-metrics") return {{"primary", "all"}, Paths::none};
        if (name == "profile") return {profiles, Paths::files}; // a name, or a profile file
        if (name == "scenario") return {scenarios, Paths::none};
        if (name == "axis") return {axes, Paths::none};
        if (name == "command") return {commands, Paths::none};
        if (name == "shell") return {{"bash", "zsh", "fish"}, Paths::none};
        if (name == "color") return {{"auto", "always", "never"}, Paths::none}; // parse_color_mode's words
        return {};
    }

    /// The formats `command` takes, each followed by `suffix`.
    static std::vector<std::string> names(Command command, const char* suffix) {
        std::vector<std::string> out;
        for (const Format& f : formats())
            if (f.accepts(command)) out.push_back(std::string(f.name) + suffix);
        return out;
    }
};

bool hidden(const CLI::App* sub) { return sub->get_group().empty() || sub->get_name().empty(); }

std::string upper(std::string s) {
    for (char& c : s) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

CliOption describe_option(const CLI::Option* opt, const std::string& command, const KnownValues& known) {
    CliOption o;
    o.help = opt->get_description();
    o.repeatable = opt->get_expected_max() > 1 || opt->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
    if (opt->get_positional()) {
        const std::string name = opt->get_name();
        o.positional = true;
        o.names = {name};
        o.values = known(command, name);
        std::string value = upper(name);
        if (o.repeatable && value.size() > 1 && value.back() == 'S') value.pop_back(); // REPORTS... as REPORT...
        o.value = value;
        return o;
    }
    for (const std::string& s : opt->get_snames()) o.names.push_back("-" + s);
    for (const std::string& l : opt->get_lnames()) o.names.push_back("--" + l);
    const std::string name = opt->get_lnames().empty() ? opt->get_snames().front() : opt->get_lnames().front();
    if (opt->get_expected_max() == 0) return o; // a flag
    o.values = known(command, name);
    o.value = !opt->get_option_text().empty()                           ? opt->get_option_text()
              : o.values.paths == ValueHint::Paths::files               ? std::string("FILE")
              : o.values.paths == ValueHint::Paths::directories         ? std::string("DIR")
                                                                        : upper(name);
    return o;
}

/// The options (and arguments) of `app`, in --help order, hidden ones left out.
void describe_options(const CLI::App& app, const std::string& command, const KnownValues& known, std::vector<CliOption>& options,
                      std::vector<CliOption>* arguments) {
    for (const CLI::Option* opt : app.get_options()) {
        if (opt->get_group().empty()) continue;
        CliOption o = describe_option(opt, command, known);
        if (o.positional) {
            if (arguments) arguments->push_back(std::move(o));
        } else {
            options.push_back(std::move(o));
        }
    }
}

/// The manual's sections after the commands: what `list` would show of scenarios, profiles and
/// families, the exit codes and the environment.
std::vector<ManSection> man_sections(const Registry& registry) {
    std::vector<ManSection> out;
    ManSection scenarios{"SCENARIOS", "What run -s selects (ids or globs); 'interopbench list' shows their axes and metrics.", {}};
    for (const auto& s : registry.all())
        scenarios.items.push_back({s->id(), s->info().summary + (s->origin().empty() ? "" : " (plugin)")});
    out.push_back(std::move(scenarios));
    ManSection profiles{"PROFILES", "Named run presets (run -p NAME); a profile may also be a JSON file.", {}};
    for (const auto& name : builtin_profile_names())
        profiles.items.push_back({name, resolve_profile(name, Registry{}).value("description", std::string{}) +
                                            (name == default_profile_name() ? " (the default)" : "")});
    out.push_back(std::move(profiles));
    ManSection families{"FAMILIES", "The scenario families, what each measures and the run options it reads.", {}};
    for (const Family& f : builtin_families().all()) {
        std::vector<std::string> options;
        for (const auto& opt : f.options) options.push_back("--" + opt.name);
        families.items.push_back({f.name, f.summary + (options.empty() ? "" : fmt::format(". Options: {}.", fmt::join(options, ", ")))});
    }
    out.push_back(std::move(families));
    out.push_back({"EXIT STATUS",
                   "Every error is one 'error:' line on stderr; a usage or input error adds at most one 'hint:' line.",
                   {{"0", "success"},
                    {"1", "a gate, check or configuration failed; a file could not be written; output was lost"},
                    {"2", "usage or input error"},
                    {"3", "inconclusive comparison, with --fail-on-inconclusive"}}});
    out.push_back({"ENVIRONMENT",
                   "",
                   {{"INTEROPBENCH_PLUGIN_PATH", "folders of plugin manifests, colon separated, searched after --plugin-path"},
                    {"COLUMNS", "the width help and tables fit (else the terminal's, else 100)"},
                    {"NO_COLOR", "set: no live progress line (plain lines with run --progress)"},
                    {"LANG, LC_ALL", "a locale that is not UTF-8 makes human output plain ASCII"}}});
    out.push_back({"SEE ALSO", "README.md and docs/USAGE.md of the interopbench sources.", {}});
    return out;
}

CommandLine describe_command_line(const CLI::App& app) {
    std::vector<std::string> warnings;
    const Registry registry = scenario_registry(FamilyOptions{}, warnings); // ids only: no plugin is started
    for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", display_text(w));
    KnownValues known;
    std::set<std::string> axes;
    for (const auto& s : registry.all()) {
        known.scenarios.push_back(s->id());
        for (const Axis& a : s->info().axes) axes.insert(a.name + "=");
    }
    known.axes.assign(axes.begin(), axes.end());
    known.profiles = builtin_profile_names();
    for (const CLI::App* sub : app.get_subcommands({}))
        if (!hidden(sub)) known.commands.push_back(sub->get_name());

    CommandLine cli;
    cli.tool = app.get_name();
    cli.summary = app.get_description();
    if (const auto colon = cli.summary.find(": "); colon != std::string::npos) cli.summary.erase(0, colon + 2);
    cli.version = tool_version();
    describe_options(app, "", known, cli.options, nullptr);
    for (const CLI::App* sub : app.get_subcommands({})) {
        if (hidden(sub)) continue;
        CliCommand c;
        c.name = sub->get_name();
        c.help = sub->get_description();
        c.footer = sub->get_footer();
        describe_options(*sub, c.name, known, c.options, &c.arguments);
        cli.commands.push_back(std::move(c));
    }
    cli.sections = man_sections(registry);
    return cli;
}

/// Prints `text`, or writes it to `out` (atomically) when given.
void emit(const std::string& text, const std::string& out) {
    if (out.empty()) fmt::print("{}", text);
    else write_file_atomic(out, text);
}

} // namespace

void add_completion(CLI::App& app, Outcome& out) {
    struct Options {
        std::string shell, out;
    };
    auto o = std::make_shared<Options>();
    auto* completion = app.add_subcommand("completion", "print a shell's completion script: bash, zsh or fish");
    completion->group(""); // installed by `cmake --install`; not listed in --help
    completion->add_option("shell", o->shell, "bash, zsh or fish")->required();
    completion->add_option("-o,--out", o->out, "write it to FILE (atomically) instead of stdout");
    completion->callback([&app, o, &out] {
        if (!o->out.empty()) check_output_path(o->out);
        const std::vector<std::string> shells = {"bash", "zsh", "fish"};
        if (std::find(shells.begin(), shells.end(), o->shell) == shells.end()) {
            const auto near = closest_match(o->shell, shells);
            throw UsageError(fmt::format("unknown shell '{}'{}", o->shell, near ? fmt::format("; did you mean '{}'?", *near) : ""),
                             "give bash, zsh or fish");
        }
        const CommandLine cli = describe_command_line(app);
        emit(o->shell == "bash" ? render_bash_completion(cli) : o->shell == "zsh" ? render_zsh_completion(cli) : render_fish_completion(cli),
             o->out);
        out.code = 0;
    });
    auto man_out = std::make_shared<std::string>();
    auto* man = app.add_subcommand("man", "print the man page (roff)");
    man->group("");
    man->add_option("-o,--out", *man_out, "write it to FILE (atomically) instead of stdout");
    man->callback([&app, man_out, &out] {
        if (!man_out->empty()) check_output_path(*man_out);
        emit(render_man_page(describe_command_line(app)), *man_out);
        out.code = 0;
    });
}

} // namespace interopbench::cli
