// Completion scripts and the man page from the command line's description (completion.hpp).
// Every text that comes from the tool (help, known values) is quoted for the shell or escaped
// for roff here; the scripts do no more work at completion time than matching words.
#include "presentation/completion.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace interopbench {
namespace {

/// A name usable in a shell function's name: "interopbench" stays, other characters become _.
std::string function_name(const std::string& tool) {
    std::string out = tool;
    for (char& c : out)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return out;
}

/// One line of help for a completion menu: up to the end of its first clause (". ", "; " or
/// " (" after a few words), cut to 80 characters.
std::string short_help(const std::string& help) {
    std::string out = help.substr(0, help.find('\n'));
    for (const char* end : {". ", "; ", " ("}) {
        auto at = out.find(end);
        // "e.g. " and "i.e. " end no clause.
        while (at != std::string::npos && at >= 3 && (out.compare(at - 3, 3, "e.g") == 0 || out.compare(at - 3, 3, "i.e") == 0))
            at = out.find(end, at + 1);
        if (at != std::string::npos && at >= 12) out.erase(at);
    }
    if (!out.empty() && out.back() == '.') out.pop_back();
    if (out.size() > 80) {
        std::size_t cut = out.rfind(' ', 77);
        if (cut == std::string::npos || cut < 40) cut = 77;
        out = out.substr(0, cut) + "...";
    }
    return out;
}

std::string joined(const std::vector<std::string>& words, const char* separator = " ") {
    return fmt::format("{}", fmt::join(words, separator));
}

/// The option names of `options`, every spelling.
std::vector<std::string> all_names(const std::vector<CliOption>& options) {
    std::vector<std::string> out;
    for (const CliOption& o : options) out.insert(out.end(), o.names.begin(), o.names.end());
    return out;
}

std::vector<std::string> command_names(const CommandLine& cli) {
    std::vector<std::string> out;
    for (const CliCommand& c : cli.commands) out.push_back(c.name);
    return out;
}

bool glued(const ValueHint& v) {
    return std::any_of(v.words.begin(), v.words.end(), [](const std::string& w) { return !w.empty() && w.back() == '='; });
}

// ---- bash -----------------------------------------------------------------------------

/// The `case $prev` arms of one command (or of the tool itself): each option that takes a
/// value, completed from what is known, or nothing.
std::string bash_value_arms(const std::string& reply, const std::vector<CliOption>& options) {
    std::string out;
    for (const CliOption& o : options) {
        if (o.value.empty()) continue;
        const char* paths = o.values.paths == ValueHint::Paths::files         ? " files"
                            : o.values.paths == ValueHint::Paths::directories ? " dirs"
                                                                              : "";
        out += fmt::format("                {}) ", joined(o.names, "|"));
        if (o.values.words.empty() && !*paths) out += "return 0 ;;\n"; // a value the tool cannot list
        else out += fmt::format("{} '{}'{}; return 0 ;;\n", reply, shell_single_quoted(joined(o.values.words)), paths);
    }
    return out;
}

std::string bash_arguments(const std::string& reply, const std::vector<CliOption>& arguments) {
    // The first argument's values; later ones (and repeated ones) alike.
    for (const CliOption& a : arguments) {
        const char* paths = a.values.paths == ValueHint::Paths::files         ? " files"
                            : a.values.paths == ValueHint::Paths::directories ? " dirs"
                                                                              : "";
        if (a.values.words.empty() && !*paths) return {};
        return fmt::format("            {} '{}'{}\n", reply, shell_single_quoted(joined(a.values.words)), paths);
    }
    return {};
}

// ---- zsh ------------------------------------------------------------------------------

/// Text inside an _arguments description ([...]) or message: brackets, colons and backslashes
/// escaped.
std::string zsh_escaped(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '\\' || c == '[' || c == ']' || c == ':') out += '\\';
        out += c;
    }
    return out;
}

std::string zsh_action(const CliOption& o) {
    const ValueHint& v = o.values;
    const bool files = v.paths == ValueHint::Paths::files, dirs = v.paths == ValueHint::Paths::directories;
    const std::string path_action = files ? "_files" : dirs ? "_files -/" : "";
    if (v.words.empty()) return path_action.empty() ? " " : path_action;
    if (!glued(v) && path_action.empty()) return fmt::format("({})", joined(v.words));
    std::string action = fmt::format("{{compadd{} -- {}", glued(v) ? " -S \"\"" : "", joined(v.words));
    if (!path_action.empty()) action += "; " + path_action;
    return action + "}";
}

/// One _arguments spec, single-quoted where it holds text.
std::string zsh_spec(const CliOption& o) {
    const std::string help = "[" + zsh_escaped(short_help(o.help)) + "]";
    const std::string value = o.value.empty() ? "" : fmt::format(":{}:{}", zsh_escaped(o.value), zsh_action(o));
    if (o.names.size() == 1) return "'" + shell_single_quoted((o.repeatable ? "*" : "") + o.names[0] + help + value) + "'";
    const std::string rest = "'" + shell_single_quoted(help + value) + "'";
    const std::string exclusive = o.repeatable ? "'*'" : fmt::format("'({})'", joined(o.names));
    return fmt::format("{}{{{}}}{}", exclusive, joined(o.names, ","), rest);
}

std::string zsh_argument_spec(const CliOption& a, std::size_t position) {
    const std::string spec = fmt::format(":{}:{}", zsh_escaped(a.value.empty() ? a.names[0] : a.value), zsh_action(a));
    return "'" + shell_single_quoted((a.repeatable ? std::string("*") : std::to_string(position)) + spec) + "'";
}

// ---- fish -----------------------------------------------------------------------------

/// A fish single-quoted word: backslashes and quotes escaped.
std::string fish_quoted(const std::string& text) {
    std::string out = "'";
    for (char c : text) {
        if (c == '\\' || c == '\'') out += '\\';
        out += c;
    }
    return out + "'";
}

/// The flags of `complete` for what a value may be.
std::string fish_values(const ValueHint& v, bool takes_value) {
    if (!takes_value) return {};
    std::string out;
    if (v.paths == ValueHint::Paths::files) out += " -r -F";
    else if (v.paths == ValueHint::Paths::directories) out += " -x -a '(__fish_complete_directories)'";
    else out += " -x";
    if (!v.words.empty()) out += " -a " + fish_quoted(joined(v.words));
    return out;
}

std::string fish_option(const std::string& head, const CliOption& o) {
    std::string names;
    for (const std::string& n : o.names) {
        if (n.rfind("--", 0) == 0) names += " -l " + n.substr(2);
        else if (n.size() == 2 && n[0] == '-') names += fmt::format(" -s {}", n[1]);
        else names += " -o " + n.substr(1);
    }
    return fmt::format("{}{}{} -d {}\n", head, names, fish_values(o.values, !o.value.empty()), fish_quoted(short_help(o.help)));
}

// ---- man ------------------------------------------------------------------------------

/// An option's names and value, bold and italic: "\fB\-s\fR, \fB\-\-scenario\fR \fISCENARIO\fR".
std::string man_option_head(const CliOption& o) {
    std::vector<std::string> names;
    for (const std::string& n : o.names) names.push_back("\\fB" + roff_text(n) + "\\fR");
    std::string head = joined(names, ", ");
    if (!o.value.empty()) head += " \\fI" + roff_text(o.value) + "\\fR";
    return head;
}

/// Known values said after an option's help, when it has any that its help does not name and
/// they are few.
std::string man_values(const CliOption& o) {
    if (o.values.words.empty()) return {};
    std::vector<std::string> unnamed;
    for (const std::string& w : o.values.words)
        if (o.help.find(w) == std::string::npos) unnamed.push_back(w);
    if (unnamed.empty() || o.values.words.size() > 12) return {}; // long lists (scenario ids) have a section
    return fmt::format("\n.br\nValues: {}.", roff_text(joined(o.values.words, ", ")));
}

/// A block laid out as written (a help footer: formats, examples), lines kept.
std::string man_verbatim(const std::string& text) {
    std::string out = ".PP\n.nf\n";
    std::size_t start = 0;
    while (start <= text.size()) {
        const auto end = std::min(text.find('\n', start), text.size());
        const std::string line = text.substr(start, end - start);
        out += line.empty() ? "\n" : roff_text(line) + "\n";
        start = end + 1;
    }
    return out + ".fi\n";
}

std::string man_options(const std::vector<CliOption>& options) {
    std::string out;
    for (const CliOption& o : options)
        out += fmt::format(".TP\n{}\n{}{}\n", man_option_head(o), roff_text(o.help), man_values(o));
    return out;
}

} // namespace

std::string shell_single_quoted(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '\'') out += "'\\''";
        else out += c;
    }
    return out;
}

std::string roff_text(std::string_view text) {
    std::string out;
    bool line_start = true;
    for (char c : text) {
        if (line_start && (c == '.' || c == '\'')) out += "\\&";
        line_start = c == '\n';
        if (c == '\\') out += "\\e";
        else if (c == '-') out += "\\-";
        else out += c;
    }
    return out;
}

std::string render_bash_completion(const CommandLine& cli) {
    const std::string fn = "_" + function_name(cli.tool), reply = fn + "_reply";
    std::string out = fmt::format(
        "# bash completion for {0}: generated by '{0} completion bash' from its command line.\n"
        "\n"
        "# COMPREPLY from the words $1 that start with $cur, and with files or folders when $2 says\n"
        "# so; a word ending in '=' (NAME=) takes no space after it.\n"
        "{1}() {{\n"
        "    local IFS=$' \\t\\n'\n"
        "    COMPREPLY=($(compgen -W \"${{1-}}\" -- \"$cur\"))\n"
        "    if [[ ${{2-}} == files || ${{2-}} == dirs ]]; then\n"
        "        local IFS=$'\\n' kind=-f\n"
        "        [[ $2 == dirs ]] && kind=-d\n"
        "        COMPREPLY+=($(compgen \"$kind\" -- \"$cur\"))\n"
        "        compopt -o filenames 2>/dev/null\n"
        "    fi\n"
        "    if [[ \" ${{COMPREPLY[*]}} \" == *\"= \"* ]]; then compopt -o nospace 2>/dev/null; fi\n"
        "    return 0\n"
        "}}\n"
        "\n"
        "{2}() {{\n"
        "    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=\"\" cmd=\"\" i\n"
        "    COMPREPLY=()\n"
        "    # bash splits --option=value at '=' (COMP_WORDBREAKS): the option is the word before it.\n"
        "    if [[ $cur == = ]]; then\n"
        "        prev=${{COMP_WORDS[COMP_CWORD-1]}}\n"
        "        cur=\"\"\n"
        "    elif ((COMP_CWORD >= 2)) && [[ ${{COMP_WORDS[COMP_CWORD-1]}} == = ]]; then\n"
        "        prev=${{COMP_WORDS[COMP_CWORD-2]}}\n"
        "    elif ((COMP_CWORD >= 1)); then\n"
        "        prev=${{COMP_WORDS[COMP_CWORD-1]}}\n"
        "    fi\n"
        "    # The command: the first word that is no option (nor an option's value).\n"
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        "        case ${{COMP_WORDS[i]}} in\n",
        cli.tool, reply, fn);
    for (const CliOption& o : cli.options)
        if (!o.value.empty()) out += fmt::format("            {}) ((i++)) ;;\n", joined(o.names, "|"));
    out += "            -*) ;;\n"
           "            *) cmd=${COMP_WORDS[i]}; break ;;\n"
           "        esac\n"
           "    done\n"
           "    case $cmd in\n"
           "        \"\")\n"
           "            case $prev in\n";
    out += bash_value_arms(reply, cli.options);
    out += fmt::format("            esac\n"
                       "            if [[ $cur == -* ]]; then {} '{}'; else {} '{}'; fi\n"
                       "            ;;\n",
                       reply, shell_single_quoted(joined(all_names(cli.options))), reply,
                       shell_single_quoted(joined(command_names(cli))));
    for (const CliCommand& c : cli.commands) {
        out += fmt::format("        {})\n", c.name);
        const std::string arms = bash_value_arms(reply, c.options);
        if (!arms.empty()) out += "            case $prev in\n" + arms + "            esac\n";
        out += fmt::format("            if [[ $cur == -* ]]; then {} '{}'; return 0; fi\n", reply,
                           shell_single_quoted(joined(all_names(c.options))));
        out += bash_arguments(reply, c.arguments);
        out += "            ;;\n";
    }
    out += fmt::format("    esac\n"
                       "    return 0\n"
                       "}}\n"
                       "\n"
                       "complete -F {} {}\n",
                       fn, cli.tool);
    return out;
}

std::string render_zsh_completion(const CommandLine& cli) {
    const std::string fn = "_" + function_name(cli.tool);
    std::string out = fmt::format("#compdef {0}\n"
                                  "# zsh completion for {0}: generated by '{0} completion zsh' from its command line.\n"
                                  "\n"
                                  "{1}() {{\n"
                                  "  local curcontext=\"$curcontext\" state line ret=1\n"
                                  "  typeset -A opt_args\n"
                                  "  _arguments -C \\\n",
                                  cli.tool, fn);
    for (const CliOption& o : cli.options) out += "    " + zsh_spec(o) + " \\\n";
    out += "    '1: :->command' \\\n"
           "    '*:: :->argument' && ret=0\n"
           "  case $state in\n"
           "    command)\n"
           "      local -a commands\n"
           "      commands=(\n";
    for (const CliCommand& c : cli.commands)
        out += fmt::format("        '{}'\n", shell_single_quoted(c.name + ":" + zsh_escaped(short_help(c.help))));
    out += fmt::format("      )\n"
                       "      _describe -t commands '{} command' commands && ret=0\n"
                       "      ;;\n"
                       "    argument)\n"
                       "      curcontext=\"${{curcontext%:*:*}}:{}-$words[1]:\"\n"
                       "      case $words[1] in\n",
                       cli.tool, cli.tool);
    for (const CliCommand& c : cli.commands) {
        out += fmt::format("        {})\n          _arguments \\\n", c.name);
        for (const CliOption& o : c.options) out += "            " + zsh_spec(o) + " \\\n";
        for (std::size_t i = 0; i < c.arguments.size(); ++i) out += "            " + zsh_argument_spec(c.arguments[i], i + 1) + " \\\n";
        out += "            && ret=0\n          ;;\n";
    }
    out += fmt::format("      esac\n"
                       "      ;;\n"
                       "  esac\n"
                       "  return ret\n"
                       "}}\n"
                       "\n"
                       "{} \"$@\"\n",
                       fn);
    return out;
}

std::string render_fish_completion(const CommandLine& cli) {
    std::string out = fmt::format("# fish completion for {0}: generated by '{0} completion fish' from its command line.\n"
                                  "\n"
                                  "complete -c {0} -f\n",
                                  cli.tool);
    const std::string top = fmt::format("complete -c {} -n __fish_use_subcommand", cli.tool);
    for (const CliOption& o : cli.options) out += fish_option(top, o);
    for (const CliCommand& c : cli.commands)
        out += fmt::format("{} -a {} -d {}\n", top, c.name, fish_quoted(short_help(c.help)));
    for (const CliCommand& c : cli.commands) {
        const std::string head = fmt::format("complete -c {} -n {}", cli.tool, fish_quoted("__fish_seen_subcommand_from " + c.name));
        out += "\n";
        for (const CliOption& o : c.options) out += fish_option(head, o);
        if (!c.arguments.empty()) {
            const CliOption& a = c.arguments.front();
            if (a.values.paths == ValueHint::Paths::files) out += head + " -F\n";
            else if (a.values.paths == ValueHint::Paths::directories) out += head + " -a '(__fish_complete_directories)'\n";
            if (!a.values.words.empty()) out += fmt::format("{} -a {}\n", head, fish_quoted(joined(a.values.words)));
        }
    }
    return out;
}

std::string render_man_page(const CommandLine& cli) {
    std::string upper = cli.tool;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::string out = fmt::format(".\\\" {0}(1): generated by '{0} man' from its command line.\n"
                                  ".TH {1} 1 \"\" \"{0} {2}\" \"User Commands\"\n"
                                  // Identifiers (scenario ids, options) are neither hyphenated nor spread.
                                  ".nh\n"
                                  ".ad l\n"
                                  ".SH NAME\n"
                                  "{0} \\- {3}\n"
                                  ".SH SYNOPSIS\n"
                                  ".B {0}\n"
                                  ".RI [ OPTIONS ]\n"
                                  ".I COMMAND\n"
                                  ".RI [ ARGUMENTS ]\n",
                                  cli.tool, upper, roff_text(cli.version), roff_text(cli.summary));
    out += ".SH OPTIONS\n" + man_options(cli.options);
    out += ".SH COMMANDS\n";
    for (const CliCommand& c : cli.commands) {
        std::string synopsis = "\\fB" + roff_text(cli.tool + " " + c.name) + "\\fR";
        if (!c.options.empty()) synopsis += " [\\fIOPTIONS\\fR]";
        for (const CliOption& a : c.arguments) synopsis += fmt::format(" \\fI{}\\fR{}", roff_text(a.value), a.repeatable ? "..." : "");
        out += fmt::format(".SS {}\n{}\n.PP\n{}\n", roff_text(c.name), synopsis, roff_text(c.help));
        for (const CliOption& a : c.arguments) out += fmt::format(".TP\n\\fI{}\\fR\n{}{}\n", roff_text(a.value), roff_text(a.help), man_values(a));
        out += man_options(c.options);
        if (!c.footer.empty()) out += man_verbatim(c.footer);
    }
    for (const ManSection& s : cli.sections) {
        out += ".SH " + roff_text(s.title) + "\n";
        if (!s.text.empty()) out += roff_text(s.text) + "\n";
        for (const auto& [name, text] : s.items) out += fmt::format(".TP\n.B {}\n{}\n", roff_text(name), roff_text(text));
    }
    return out;
}

} // namespace interopbench
