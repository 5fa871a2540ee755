// Shell completion and the man page from a description of the command line
// (presentation/completion.hpp): what comes from the tool is quoted for each shell and escaped
// for roff, footers keep their lines. The installed files, driven by bash and rendered by man,
// are tests/shell/completion.sh; here the binary's own commands.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <string>

#include "presentation/completion.hpp"
#include "test_support.hpp"

using namespace interopbench;

namespace {

CommandLine tiny() {
    CommandLine cli;
    cli.tool = "tool";
    cli.summary = "does things";
    cli.version = "1.0";
    cli.options = {{{"-h", "--help"}, "print help", "", {}, false, false}};
    CliCommand run{"run", "runs the thing (the 'best' way)", "examples:\n  tool run -x 1\n.starts with a dot", {}, {}};
    run.options.push_back({{"-s", "--scenario"}, "which one's [first]: a, b", "SCENARIO", {{"a", "b'c"}, ValueHint::Paths::none}, true, false});
    run.options.push_back({{"--axis"}, "an axis", "AXIS", {{"size=", "mode="}, ValueHint::Paths::none}, true, false});
    run.options.push_back({{"--out"}, "write to FILE", "FILE", {{}, ValueHint::Paths::files}, false, false});
    run.options.push_back({{"--wide"}, "wide tables", "", {}, false, false});
    run.arguments.push_back({{"file"}, "a report", "FILE", {{}, ValueHint::Paths::files}, false, true});
    cli.commands.push_back(run);
    cli.sections.push_back({"EXIT STATUS", "", {{"0", "success"}, {"2", "usage error\\n"}}});
    return cli;
}

using testing::run_cli;

} // namespace

TEST_CASE("completion: roff and shell quoting") {
    CHECK(roff_text("a-b \\ c") == "a\\-b \\e c");
    CHECK(roff_text(".TH\n'x\ny.") == "\\&.TH\n\\&'x\ny.");
    CHECK(shell_single_quoted("it's") == "it'\\''s");
}

TEST_CASE("completion: bash, zsh and fish quote what the tool says, and know each option's values") {
    const CommandLine cli = tiny();
    const std::string bash = render_bash_completion(cli);
    CHECK(bash.find("complete -F _tool tool\n") != std::string::npos);
    CHECK(bash.find("-s|--scenario) _tool_reply 'a b'\\''c'; return 0 ;;") != std::string::npos);
    CHECK(bash.find("--out) _tool_reply '' files; return 0 ;;") != std::string::npos);
    CHECK(bash.find("_tool_reply '-s --scenario --axis --out --wide'") != std::string::npos);
    CHECK(bash.find("_tool_reply '' files\n") != std::string::npos); // the report argument
    CHECK(bash.find("_tool_reply 'run'") != std::string::npos);

    const std::string zsh = render_zsh_completion(cli);
    CHECK(zsh.rfind("#compdef tool\n", 0) == 0);
    // Brackets and colons of the help escaped, the quote of a value closed and reopened.
    CHECK(zsh.find("'*'{-s,--scenario}'[which one'\\''s \\[first\\]\\: a, b]:SCENARIO:(a b'\\''c)'") != std::string::npos);
    CHECK(zsh.find("'*--axis[an axis]:AXIS:{compadd -S \"\" -- size= mode=}'") != std::string::npos);
    CHECK(zsh.find("'--out[write to FILE]:FILE:_files'") != std::string::npos);
    CHECK(zsh.find("'run:runs the thing'") != std::string::npos); // the first clause of its help

    const std::string fish = render_fish_completion(cli);
    CHECK(fish.find("complete -c tool -n '__fish_seen_subcommand_from run' -s s -l scenario -x -a 'a b\\'c'") != std::string::npos);
    CHECK(fish.find("-l out -r -F -d 'write to FILE'") != std::string::npos);
    CHECK(fish.find("complete -c tool -n __fish_use_subcommand -a run -d 'runs the thing'") != std::string::npos);
}

TEST_CASE("completion: the man page keeps a footer's lines and escapes what roff would read") {
    const std::string man = render_man_page(tiny());
    CHECK(man.find(".TH TOOL 1 \"\" \"tool 1.0\" \"User Commands\"\n") != std::string::npos);
    CHECK(man.find("tool \\- does things\n") != std::string::npos);
    CHECK(man.find(".TP\n\\fB\\-s\\fR, \\fB\\-\\-scenario\\fR \\fISCENARIO\\fR\n") != std::string::npos);
    CHECK(man.find(".nf\nexamples:\n  tool run \\-x 1\n\\&.starts with a dot\n.fi\n") != std::string::npos);
    CHECK(man.find("usage error\\en") != std::string::npos);
    CHECK(man.find("Values: a, b'c.") != std::string::npos);
}

TEST_CASE("completion: the tool's own commands") {
    const auto bash = run_cli("completion bash");
    CHECK(bash.code == 0);
    CHECK(bash.out.find("complete -F _interopbench interopbench") != std::string::npos);
    CHECK(bash.out.find("h2d_copy") != std::string::npos);
    CHECK(bash.out.find("_round") == std::string::npos); // hidden commands are not completed
    const auto man = run_cli("man");
    CHECK(man.code == 0);
    CHECK(man.out.find(".SS run\n") != std::string::npos);
    CHECK(man.out.find(".SS completion") == std::string::npos);
    const auto bad = run_cli("completion powershell");
    CHECK(bad.code == 2);
    CHECK(bad.err == "error: unknown shell 'powershell'\nhint: give bash, zsh or fish\n");
    const auto near = run_cli("completion zhs");
    CHECK(near.err.rfind("error: unknown shell 'zhs'; did you mean 'zsh'?\n", 0) == 0);
    CHECK(run_cli("--help").out.find("completion") == std::string::npos); // not listed
}
