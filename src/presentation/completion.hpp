#pragma once
/// The command line as shells and the manual see it: its commands, their options and
/// arguments, and the values the tool knows for them (scenario ids, profiles, formats...),
/// rendered as bash, zsh and fish completion and as a man page. The command line walks its
/// parser into a CommandLine (cli/cmd_completion.cpp); everything here is text from that.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace interopbench {

/// What an option's value (or an argument) may be, for completion.
struct ValueHint {
    std::vector<std::string> words; ///< known values; a word ending in '=' is a prefix (NAME=)
    enum class Paths { none, files, directories } paths = Paths::none;
};

/// One option, or one positional argument (its `names` is its name alone, `positional`).
struct CliOption {
    std::vector<std::string> names; ///< "-s", "--scenario"; an argument: "file"
    std::string help;
    std::string value;              ///< what its value is called ("FILE", "SCENARIO"); empty for a flag
    ValueHint values;
    bool repeatable = false;        ///< may be given more than once (or takes several values)
    bool positional = false;
};

/// One subcommand.
struct CliCommand {
    std::string name, help;
    std::string footer; ///< the text under its --help (formats, examples), as laid out there
    std::vector<CliOption> options;    ///< options, in --help order
    std::vector<CliOption> arguments;  ///< positional arguments, in order
};

/// A section of the manual beyond the commands: a paragraph, then items (a name and its text).
struct ManSection {
    std::string title;
    std::string text;
    std::vector<std::pair<std::string, std::string>> items;
};

struct CommandLine {
    std::string tool;    ///< "interopbench"
    std::string summary; ///< one line
    std::string version; ///< for the manual's header
    std::vector<CliOption> options; ///< the tool's own options (before the command)
    std::vector<CliCommand> commands;
    std::vector<ManSection> sections; ///< the manual's sections after the commands
};

/// A bash completion script: a function completing the commands, each command's options, and
/// the values of options and arguments; `complete -F` binds it to the tool's name.
std::string render_bash_completion(const CommandLine& cli);
/// A zsh completion function (#compdef), for site-functions/_TOOL.
std::string render_zsh_completion(const CommandLine& cli);
/// fish completions, for vendor_completions.d/TOOL.fish.
std::string render_fish_completion(const CommandLine& cli);
/// The man page (man(7) macros): name, synopsis, the tool's options, every command with its
/// options and its help's footer, then `sections`.
std::string render_man_page(const CommandLine& cli);

/// `text` as roff text: backslashes and minus signs escaped, a line that would start with a
/// control character ('.' or '\'') protected.
std::string roff_text(std::string_view text);
/// `text` inside a single-quoted shell word: every ' written as '\''.
std::string shell_single_quoted(std::string_view text);

} // namespace interopbench
