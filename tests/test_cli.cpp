// The command line through the real binary: exit codes, one-line errors, the no-GPU path.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "families/builtin.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/report.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/text.hpp"
#include "presentation/formats.hpp"
#include "test_support.hpp"

using namespace interopbench;
namespace fs = std::filesystem;

namespace {

using Run = testing::CliRun;
using testing::run_cli;

fs::path scratch() {
    fs::path d = fs::temp_directory_path() / ("ib_cli_data_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
}

void expect_usage_error(const std::string& args, const std::string& words) {
    CAPTURE(args);
    const Run r = run_cli(args);
    CHECK(r.code == 2);
    CAPTURE(r.err);
    CHECK(r.err.rfind("error: ", 0) == 0);
    CHECK(r.err.find(words) != std::string::npos);
    CHECK(r.out.empty());
}

} // namespace

TEST_CASE("version, list and help work anywhere") {
    const Run v = run_cli("version");
    CHECK(v.code == 0);
    CHECK(v.out.find("interopbench") == 0);
    const Run l = run_cli("list");
    CHECK(l.code == 0);
    CHECK(l.out.find("host_memcpy") != std::string::npos);
    CHECK(l.out.find("h2d_copy") != std::string::npos);
    const Run j = run_cli("list --format json");
    CHECK(j.code == 0);
    CHECK(nlohmann::json::parse(j.out).is_array());
    CHECK(run_cli("--help").code == 0);
    CHECK(run_cli("list --profiles").code == 0);
    // Every family once, with the options it declares (the storage site's, on storage and pipeline).
    const Run f = run_cli("list --families --format json");
    REQUIRE(f.code == 0);
    const auto families = nlohmann::json::parse(f.out);
    REQUIRE(families.is_array());
    std::vector<std::string> names;
    for (const auto& e : families) names.push_back(e["name"].get<std::string>());
    std::vector<std::string> listed; // the one explicit list, in its order
    for (const Family& family : builtin_families().all()) listed.push_back(family.name);
    CHECK(names == listed);
    for (const auto& e : families)
        if (e["name"] == "storage") CHECK(e["options"] == nlohmann::json::array({"--storage-dir", "--keep-files"}));
}

TEST_CASE("help fits the terminal, shows defaults and gives examples") {
    for (const char* cmd : {"run", "show", "compare", "list", "topo", "doctor"}) {
        CAPTURE(cmd);
        const Run h = run_cli(std::string(cmd) + " --help");
        CHECK(h.code == 0);
        CHECK(h.out.find("examples:") != std::string::npos);
    }
    // COLUMNS is read by the binary: std::system passes this process's environment on.
    ::setenv("COLUMNS", "80", 1);
    const Run h = run_cli("run --help");
    ::unsetenv("COLUMNS");
    CHECK(h.code == 0);
    std::istringstream lines(h.out);
    std::size_t widest = 0;
    for (std::string l; std::getline(lines, l);) widest = std::max(widest, l.size());
    CHECK(widest <= 80);
    CHECK(run_cli("run --help").out.find("TEXT=table") != std::string::npos); // --format's default
}

TEST_CASE("bad sizes, names and options are one-line errors with exit 2") {
    expect_usage_error("run --scenario host_memcpy --size 0", "invalid size '0'");
    expect_usage_error("run --scenario host_memcpy --size -1", "invalid size '-1'");
    expect_usage_error("run --scenario host_memcpy --size 12Q", "unknown unit");
    expect_usage_error("run --scenario host_memcpy --size 1G:4K", "start is larger than the end");
    expect_usage_error("run --scenario h2d_cpy", "unknown scenario 'h2d_cpy'");
    expect_usage_error("run --bogus-option", "bogus");
    expect_usage_error("run --scenario host_memcpy --format xml", "unknown format 'xml' for run; formats: table, json, csv, markdown");
    expect_usage_error("run --scenario host_memcpy --axis colour=red", "axis named 'colour'");
    expect_usage_error("run --scenario host_memcpy --axis threads=many", "invalid value 'many'");
    expect_usage_error("run --scenario host_memcpy --min-samples 10 --max-samples 5", "below the minimum");
    const Run s = run_cli("run --scenario h2d_cpy");
    CHECK(s.err.find("hint: did you mean h2d_copy") != std::string::npos);
}

TEST_CASE("--only takes one literal full key, never a pattern, a list, a range or all") {
    // A key read from a report is data: it must name exactly one configuration.
    expect_usage_error("run --only 'host_*/size=4096,threads=single'", "is a pattern, not one scenario id");
    expect_usage_error("run --only 'host_memcpy/size=4096:1G:x4,threads=single'", "is a pattern or a range, not one value");
    expect_usage_error("run --only 'host_memcpy/size=all,threads=single'", "is a pattern or a range, not one value");
    expect_usage_error("run --only 'host_memcpy/size=4096'", "axis 'threads' is missing");
    expect_usage_error("run --only 'host_memcpy/size=4096,size=8192,threads=single'", "axis 'size' is given twice");
    expect_usage_error("run --only 'host_memcpy/size=4096,threads=single,colour=red'", "host_memcpy has no axis 'colour'");
    expect_usage_error("run --only 'host_memcpyy/size=4096,threads=single'", "unknown scenario 'host_memcpyy'");
}

TEST_CASE("typos of a command, an option or an axis name: exit 2 and the near name") {
    expect_usage_error("rn", "unknown command 'rn'; did you mean 'run'?");
    expect_usage_error("comapre a.json b.json", "did you mean 'compare'?");
    expect_usage_error("run --ouput r.json", "unknown option '--ouput' for 'run'; did you mean '--out'?");
    expect_usage_error("run --ouput=r.json", "did you mean '--out'?");
    expect_usage_error("doctor --formt json", "did you mean '--format'?");
    expect_usage_error("run --scenario host_memcpy --axis thread=2", "axis named 'thread'; did you mean 'threads'?");
    expect_usage_error("run --scenario h2d_copy -a hostmem=pinned", "did you mean 'host_mem'?");
    // An axis of a profile file is checked against the scenarios its entry selects.
    const auto profile = scratch() / "typo-profile.json";
    std::ofstream(profile) << R"({"name": "t", "scenarios": [{"pattern": "host_memcpy", "axes": {"thread": ["single"]}}]})";
    expect_usage_error("run -p " + profile.string(), "has an axis named 'thread'");
    CHECK(run_cli("run -p " + profile.string()).err.find("did you mean 'threads'?") != std::string::npos);
    // Nothing near: no guess, still the --help to read.
    const Run far = run_cli("benchmark");
    CHECK(far.code == 2);
    CHECK(far.err.find("did you mean") == std::string::npos);
    CHECK(far.err.find("--help") != std::string::npos);
    const Run dash = run_cli("topo -x");
    CHECK(dash.code == 2);
    CHECK(dash.err.find("did you mean") == std::string::npos); // "-x" is no typo of "-h"
    // The internal round command is never suggested.
    CHECK(run_cli("_rond").err.find("_round") == std::string::npos);
}

TEST_CASE("CLI11's wording never reaches the user: each parse error is ours, with the command's --help") {
    struct Case {
        const char* args;
        const char* words;
        const char* help;
    };
    const Case cases[] = {
        {"list --bogus", "unknown option '--bogus' for 'list'", "interopbench list --help"},
        {"run --out", "option '--out' needs a value", "interopbench run --help"},
        {"doctor --format", "option '--format' needs a value", "interopbench doctor --help"},
        {"run --min-samples abc", "'abc' is not a whole number", "--min-samples"},
        {"run extra_argument", "unexpected argument 'extra_argument'", "interopbench run --help"},
        {"show a.json b.json", "unexpected argument 'b.json'", "interopbench show --help"},
        {"show", "'interopbench show' is missing its file argument", "interopbench show --help"},
        {"compare a.json", "needs at least 2 reports, got 1", "interopbench compare --help"},
        {"topo --format json --format table", "option '--format' is given 2 times", "interopbench topo --help"},
        {"--bogus", "unknown option '--bogus'", "interopbench --help"},
    };
    for (const Case& c : cases) {
        expect_usage_error(c.args, c.words);
        const Run r = run_cli(c.args);
        CAPTURE(r.err);
        CHECK(r.err.find(c.help) != std::string::npos);
        // One error line and at most one hint line; none of CLI11's phrases.
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') <= 2);
        for (const char* cli11 : {"not expected", "required", "TEXT", "At least", "At Most", "Could not convert"})
            CHECK(r.err.find(cli11) == std::string::npos);
    }
}

TEST_CASE("the format table: unique names, a renderer for every command a format names") {
    std::set<std::string_view> names;
    for (const Format& f : formats()) {
        CAPTURE(f.name);
        CHECK(names.insert(f.name).second);
        if (!f.alias.empty()) CHECK(names.insert(f.alias).second);
        CHECK(!f.help.empty());
        CHECK(f.commands != 0);
        if (f.accepts(Command::run) || f.accepts(Command::show) || f.accepts(Command::export_file)) CHECK(static_cast<bool>(f.report));
        if (f.accepts(Command::compare) || f.accepts(Command::export_file)) CHECK(static_cast<bool>(f.comparison));
        if (f.accepts(Command::list)) CHECK(static_cast<bool>(f.listing));
        if (f.accepts(Command::topo)) CHECK(static_cast<bool>(f.topology));
        if (f.accepts(Command::doctor)) CHECK(static_cast<bool>(f.checks));
        if (f.accepts(Command::fleet)) CHECK(static_cast<bool>(f.fleet));
        CHECK(f.ci() == f.accepts(Command::export_file)); // --export writes the CI formats
        if (f.markdown) CHECK(f.human);
        if (f.human) CHECK(f.accepts(Command::compare)); // run prints its baseline's comparison in it
    }
    for (const Command c : k_commands) {
        CAPTURE(std::string(to_string(c)));
        CHECK(!format_names(c).empty());
        for (const Format& f : formats()) {
            if (f.accepts(c)) CHECK(&find_format(f.name, c) == &f);
            else CHECK_THROWS_AS(find_format(f.name, c), UsageError);
        }
    }
    CHECK(find_format("md", Command::show).name == "markdown");
    CHECK(format_names(Command::topo) == "table, json, markdown");
}

TEST_CASE("every command's --help lists exactly its formats") {
    for (const Command c : {Command::run, Command::show, Command::compare, Command::list, Command::topo, Command::doctor,
                            Command::fleet}) {
        CAPTURE(std::string(to_string(c)));
        const Run h = run_cli(std::string(to_string(c)) + " --help");
        REQUIRE(h.code == 0);
        const auto at = h.out.find("\nformats:\n");
        REQUIRE(at != std::string::npos);
        // One line per format, "  NAME  help" (a wrapped help goes on indented further).
        std::set<std::string> listed, expected;
        std::istringstream lines(h.out.substr(at + 10));
        for (std::string line; std::getline(lines, line) && !line.empty();)
            if (line.size() > 2 && line.rfind("  ", 0) == 0 && line[2] != ' ') listed.insert(line.substr(2, line.find(' ', 2) - 2));
        for (const Format& f : formats())
            if (f.accepts(c)) expected.insert(std::string(f.name));
        CHECK(listed == expected);
    }
}

TEST_CASE("a format unknown to a command: exit 2, one line naming the command's formats") {
    const std::pair<const char*, const char*> commands[] = {
        {"run -s host_memcpy", "run"}, {"show missing.json", "show"}, {"compare a.json b.json", "compare"},
        {"list", "list"},              {"topo", "topo"},              {"doctor", "doctor"},
        {"fleet a.json b.json c.json", "fleet"},
    };
    for (const auto& [args, name] : commands) {
        const Command c = [&] {
            for (const Command k : k_commands)
                if (std::string_view(to_string(k)) == name) return k;
            return Command::run;
        }();
        const Run r = run_cli(std::string(args) + " -f jsn");
        CAPTURE(r.err);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err == fmt::format("error: unknown format 'jsn' for {}; formats: {} (did you mean 'json'?)\n", name,
                                   format_names(c)));
    }
    const Run csv = run_cli("topo -f csv");
    CHECK(csv.code == 2);
    CHECK(csv.err == "error: topo has no format 'csv'; formats: table, json, markdown\n");
    const Run junit = run_cli("show missing.json --format junit");
    CHECK(junit.code == 2);
    CHECK(junit.err.find("show has no format 'junit'; formats: table, json, csv, markdown, html, benchmark-action-bigger") == 7);
}

TEST_CASE("a flag takes no value: --quiet=yes is refused like any other value") {
    for (const char* args : {"run -s host_memcpy --quiet=yes", "run -s host_memcpy --quiet=maybe", "list --profiles=yes",
                             "doctor --require-gpu=no"}) {
        CAPTURE(args);
        const Run r = run_cli(args);
        CAPTURE(r.err);
        CHECK(r.code == 2);
        CHECK(r.err.find("is a flag and takes no value") != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') <= 2);
    }
}

TEST_CASE("-f is --format on every command that prints") {
    const auto dir = scratch();
    const auto out = (dir / "r.json").string();
    REQUIRE(run_cli("run --scenario host_memcpy --size 4K --min-samples 3 --max-time 0.2 --quiet --out " + out).code == 0);
    const Run c = run_cli("compare -f json " + out + " " + out);
    CHECK(c.code == 0);
    CHECK(nlohmann::json::parse(c.out).is_object());
    CHECK(run_cli("show -f csv " + out).code == 0);
    CHECK(run_cli("list -f json").code == 0);
    CHECK(nlohmann::json::parse(run_cli("topo -f json").out).is_object());
    CHECK(nlohmann::json::parse(run_cli("doctor -f json").out).contains("checks"));
    fs::remove_all(dir);
}

TEST_CASE("--out into a missing or unwritable directory fails before measuring") {
    expect_usage_error("run --scenario host_memcpy --size 4K --out /nonexistent/dir/r.json", "does not exist");
    const auto dir = scratch();
    expect_usage_error("run --scenario host_memcpy --size 4K --out " + dir.string(), "is a directory");
    // A directory this process really cannot write into: read-only for an ordinary user;
    // for root (who may write anywhere permissions allow) sysfs, which refuses new files.
    const fs::path locked = dir / "locked";
    fs::create_directories(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    const fs::path target = ::geteuid() == 0 ? fs::path("/sys/kernel") : locked;
    expect_usage_error("run --scenario host_memcpy --size 4K --out " + (target / "r.json").string(), "not writable");
    CHECK_FALSE(fs::exists(target / "r.json"));
    fs::permissions(locked, fs::perms::owner_all);
    fs::remove_all(dir);
}

TEST_CASE("show rejects missing, empty, truncated, foreign and newer reports") {
    const auto dir = scratch();
    auto put = [&](const char* name, const std::string& text) {
        std::ofstream(dir / name) << text;
        return (dir / name).string();
    };
    expect_usage_error("show " + (dir / "missing.json").string(), "no such file");
    expect_usage_error("show " + put("empty.json", ""), "is empty");
    expect_usage_error("show " + put("trunc.json", R"({"schema": {"name": "interopbench.rep)"), "not valid JSON");
    expect_usage_error("show " + put("other.json", R"({"name": "package", "version": "1.0"})"), "not an interopbench report");
    expect_usage_error("show " + put("newer.json", R"({"schema": {"name": "interopbench.report", "version": "2.0"}, "results": []})"),
                       "newer than this interopbench");
    fs::remove_all(dir);
}

TEST_CASE("a run without a GPU: host scenarios measure, GPU scenarios skip, the report is valid") {
    const auto dir = scratch();
    const auto out = (dir / "r.json").string();
    const Run r = run_cli("run --scenario host_memcpy,h2d_copy --size 64K --min-samples 3 --max-time 0.5 --out " + out);
    const auto doc = load_report(out);
    const bool gpu = doc["software"]["cuda_available"].get<bool>();
    CHECK(r.code == 0);
    CHECK(r.out.find("== host_memcpy ==") != std::string::npos);
    bool host_ok = false, gpu_skipped = false;
    for (const auto& res : doc["results"]) {
        if (res["scenario"] == "host_memcpy") host_ok = res["status"] == "ok";
        if (res["scenario"] == "h2d_copy") gpu_skipped = res["status"] == "skipped" && !res["reason"].get<std::string>().empty();
    }
    CHECK(host_ok);
    if (!gpu) {
        CHECK(gpu_skipped);
        CHECK(r.err.find("note:") != std::string::npos);
        const Run req = run_cli("run --scenario host_memcpy --size 4K --min-samples 3 --max-time 0.2 --require-gpu --quiet");
        CHECK(req.code == 1);
        CHECK(req.err.find("--require-gpu") != std::string::npos);
    }
    const Run shown = run_cli("show " + out);
    CHECK(shown.code == 0);
    CHECK(shown.out.find("host_memcpy") != std::string::npos);
    for (const char* f : {"csv", "markdown", "json"}) CHECK(run_cli(std::string("show --format ") + f + " " + out).code == 0);
    fs::remove_all(dir);
}

TEST_CASE("a size larger than device memory skips that configuration only") {
    const Registry reg = builtin_registry();
    const Machine m = testing::fake_machine(1, 64ull << 20);
    const Scenario* h2d = reg.find("h2d_copy");
    REQUIRE(h2d);
    const Params big = typed_params(h2d->info(), {{"size", std::to_string(1ull << 30)}, {"host_mem", "pinned"}, {"engine", "ce"}, {"device", "0"}}, m);
    const Params small = typed_params(h2d->info(), {{"size", "4096"}, {"host_mem", "pinned"}, {"engine", "ce"}, {"device", "0"}}, m);
    const auto why = h2d->unsupported(m, big);
    REQUIRE(why);
    CHECK(why->find("does not fit") != std::string::npos);
    CHECK_FALSE(h2d->unsupported(m, small));
    const Params sm_pageable = typed_params(h2d->info(), {{"size", "4096"}, {"host_mem", "pageable"}, {"engine", "sm"}, {"device", "0"}}, m);
    CHECK(h2d->unsupported(m, sm_pageable));
}

TEST_CASE("help footers keep their lines: one example a line, none wider than the terminal") {
    for (const char* width : {"80", "120"}) {
        ::setenv("COLUMNS", width, 1);
        for (const char* cmd : {"", "run", "show", "compare", "list", "fleet", "topo", "doctor", "version", "help"}) {
            CAPTURE(width);
            CAPTURE(cmd);
            const Run h = run_cli(std::string(cmd) + " --help");
            CHECK(h.code == 0);
            std::istringstream lines(h.out);
            for (std::string l; std::getline(lines, l);) {
                CAPTURE(l);
                CHECK(l.size() <= std::stoul(width));
                const auto first = l.find("interopbench ");
                CHECK((first == std::string::npos || l.find("interopbench ", first + 1) == std::string::npos));
            }
        }
        // An example and its comment on one line, aligned as written.
        const Run run = run_cli("run --help");
        CHECK(run.out.find("\n  interopbench run -p quick --out r.json   a broader look, report saved\n") != std::string::npos);
        CHECK(run.out.find("\n  interopbench run                         the default job (about 30 s)\n") != std::string::npos);
    }
    // Too narrow for a line: it is broken at a space, the rest indented under it; never joined.
    ::setenv("COLUMNS", "60", 1);
    const Run narrow = run_cli("run --help");
    ::unsetenv("COLUMNS");
    CHECK(narrow.code == 0);
    CHECK(narrow.out.find("\n  interopbench run -t 'host -> gpu0 1G; file(cold) -> gpu0\n    1G' --dry-run\n") != std::string::npos);
}

TEST_CASE("help: -V and --version are version, help COMMAND is COMMAND --help") {
    const Run v = run_cli("version");
    REQUIRE(v.code == 0);
    for (const char* flag : {"-V", "--version"}) {
        CAPTURE(flag);
        const Run f = run_cli(flag);
        CHECK(f.code == 0);
        CHECK(f.out == v.out);
    }
    for (const char* cmd : {"run", "show", "compare", "fleet", "list", "topo", "doctor", "version"}) {
        CAPTURE(cmd);
        const Run h = run_cli(std::string("help ") + cmd);
        CHECK(h.code == 0);
        CHECK(h.err.empty());
        CHECK(h.out == run_cli(std::string(cmd) + " --help").out);
        CHECK(h.out.find(std::string("interopbench ") + cmd) != std::string::npos);
    }
    const Run top = run_cli("help");
    CHECK(top.code == 0);
    CHECK(top.out == run_cli("--help").out);
    CHECK(top.out.find("help") != std::string::npos);
    expect_usage_error("help shwo", "unknown command 'shwo'; did you mean 'show'?");
    expect_usage_error("help frobnicate", "unknown command 'frobnicate'");
    expect_usage_error("help _round", "unknown command '_round'"); // internal, not a command to ask about
    expect_usage_error("help run show", "unexpected argument 'show'");
}

TEST_CASE("cli: show --out writes what show prints to a file, -q on show, compare and fleet drops notes only") {
    const std::string base = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/base.json";
    const std::string fresh = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/regression.json";
    const auto dir = scratch();
    auto slurp = [](const fs::path& p) {
        std::ifstream in(p);
        return std::string((std::istreambuf_iterator<char>(in)), {});
    };
    for (const char* format : {"table", "json", "csv", "markdown", "html"}) {
        CAPTURE(format);
        const fs::path file = dir / (std::string("shown.") + format);
        const Run printed = run_cli(fmt::format("show {} -f {} --wide", base, format));
        REQUIRE(printed.code == 0);
        const Run written = run_cli(fmt::format("show {} -f {} --wide --out {}", base, format, file.string()));
        CHECK(written.code == 0);
        CHECK(written.out.empty());
        CHECK(written.err.empty());
        CHECK(slurp(file) == printed.out);
    }
    // The same checks as every other --out, before the report is read.
    expect_usage_error("show " + base + " --out /nonexistent-dir/x.txt", "does not exist");
    expect_usage_error("show " + base + " --out " + dir.string(), "is a directory");
    const fs::path copy = dir / "copy.json";
    fs::copy_file(base, copy);
    const std::string before = slurp(copy);
    expect_usage_error("show " + copy.string() + " --out " + (dir / "." / "copy.json").string(), "it would be overwritten");
    CHECK(slurp(copy) == before);
    expect_usage_error("show " + base + " --out", "needs a value");

    // -q: the same output and exit code; errors (fleet's, on too few machines) still said.
    for (const std::string& args : {"show " + base, "compare " + base + " " + fresh, "fleet " + base + " " + fresh}) {
        CAPTURE(args);
        const Run plain = run_cli(args);
        for (const char* quiet : {" -q", " --quiet"}) {
            const Run q = run_cli(args + quiet);
            CHECK(q.code == plain.code);
            CHECK(q.out == plain.out);
            CHECK(q.err == plain.err);
            if (q.code != 2) CHECK(q.err.empty());
        }
    }
    expect_usage_error("show " + base + " --quiet=yes", "is a flag and takes no value");
    fs::remove_all(dir);
}

TEST_CASE("--color: auto paints a terminal only, never under NO_COLOR or TERM=dumb, always and never win") {
    const char* saved_term = std::getenv("TERM");
    const std::string term = saved_term ? saved_term : "";
    ::setenv("TERM", "xterm", 1);
    ::unsetenv("NO_COLOR");
    CHECK(color_wanted(ColorMode::auto_, true));
    CHECK_FALSE(color_wanted(ColorMode::auto_, false)); // a file or a pipe
    CHECK(color_wanted(ColorMode::always, false));
    CHECK_FALSE(color_wanted(ColorMode::never, true));
    for (const char* value : {"1", "0", ""}) { // whatever its value (no-color.org)
        ::setenv("NO_COLOR", value, 1);
        CHECK_FALSE(color_wanted(ColorMode::auto_, true));
        CHECK(color_wanted(ColorMode::always, true));
    }
    ::unsetenv("NO_COLOR");
    ::setenv("TERM", "dumb", 1);
    CHECK_FALSE(color_wanted(ColorMode::auto_, true));
    if (saved_term) ::setenv("TERM", term.c_str(), 1);
    else ::unsetenv("TERM");
    CHECK(paint("FAIL", Tone::bad, true) == "\x1b[31mFAIL\x1b[0m");
    CHECK(paint("PASS", Tone::good, true) == "\x1b[32mPASS\x1b[0m");
    CHECK(paint("inconclusive", Tone::unsure, true) == "\x1b[33minconclusive\x1b[0m");
    CHECK(paint("FAIL", Tone::bad, false) == "FAIL");
    CHECK(parse_color_mode("never") == ColorMode::never);
    CHECK_THROWS_AS(parse_color_mode("yes"), UsageError);
}

TEST_CASE("--color on the command line: verdicts painted when asked, never in files, JSON or markdown") {
    const std::string base = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/base.json";
    const std::string fresh = INTEROPBENCH_SOURCE_DIR "/tests/data/reports/regression.json";
    const std::string pipeline = INTEROPBENCH_SOURCE_DIR "/reports/h200x1-pipeline-ad09f1b.json";
    const auto has_escape = [](const std::string& s) { return s.find('\x1b') != std::string::npos; };
    // stdout is a file here: auto paints nothing, whatever NO_COLOR says.
    const Run plain = run_cli("compare " + base + " " + fresh);
    CHECK(plain.code == 1);
    CHECK_FALSE(has_escape(plain.out));
    // A global option: before or after the command, = or a space.
    for (const std::string& args : {"compare " + base + " " + fresh + " --color=always", "--color=always compare " + base + " " + fresh,
                                    "compare --color always " + base + " " + fresh}) {
        CAPTURE(args);
        const Run r = run_cli(args);
        CHECK(r.code == 1); // the exit code is the verdict's, painted or not
        CHECK(r.out.rfind("\x1b[31mFAIL\x1b[0m: ", 0) == 0);
    }
    CHECK(run_cli("compare " + base + " " + fresh + " --color=never").out == plain.out);
    // NO_COLOR (any value) wins over auto, not over always.
    ::setenv("NO_COLOR", "1", 1);
    CHECK_FALSE(has_escape(run_cli("compare " + base + " " + fresh + " --color=auto").out));
    CHECK(has_escape(run_cli("compare " + base + " " + fresh + " --color=always").out));
    ::unsetenv("NO_COLOR");
    // Machine formats and markdown never carry escape codes; a file never does.
    for (const char* format : {"json", "markdown", "junit", "html", "bmf", "openmetrics"}) {
        CAPTURE(format);
        const Run r = run_cli(fmt::format("compare {} {} -f {} --color=always", base, fresh, format));
        CHECK(r.code == 1);
        CHECK_FALSE(has_escape(r.out));
    }
    const auto dir = scratch();
    const std::string file = (dir / "compare.txt").string();
    const Run to_file = run_cli(fmt::format("compare {} {} --out {} --color=always", base, fresh, file));
    CHECK(to_file.code == 1);
    CHECK(to_file.out.rfind("\x1b[31mFAIL", 0) == 0); // the terminal's copy
    std::ifstream in(file);
    const std::string written((std::istreambuf_iterator<char>(in)), {});
    CHECK(written.rfind("FAIL: ", 0) == 0);
    // show: the summary's "! " lines yellow; markdown, JSON and --out files never painted.
    const Run shown = run_cli("show " + pipeline + " --color=always");
    CHECK(shown.code == 0);
    CHECK(shown.out.find("  \x1b[33m! ") != std::string::npos);
    CHECK_FALSE(has_escape(run_cli("show " + pipeline).out));
    for (const char* format : {"json", "markdown", "csv"}) CHECK_FALSE(has_escape(run_cli(fmt::format("show {} -f {} --color=always", pipeline, format)).out));
    const std::string shown_file = (dir / "shown.txt").string();
    CHECK(run_cli(fmt::format("show {} --out {} --color=always", pipeline, shown_file)).code == 0);
    std::ifstream shown_in(shown_file);
    CHECK_FALSE(has_escape(std::string((std::istreambuf_iterator<char>(shown_in)), {})));
    expect_usage_error("compare " + base + " " + fresh + " --color=sometimes", "unknown --color 'sometimes'");
    fs::remove_all(dir);
}

TEST_CASE("run ends with its summary again, naming the report and the page it wrote") {
    const auto dir = scratch();
    const auto out = (dir / "r.json").string(), page = (dir / "r.html").string();
    const Run r = run_cli("run --scenario host_memcpy --size 4K --min-samples 3 --max-time 0.2 --out " + out + " --html " + page);
    REQUIRE(r.code == 0);
    CAPTURE(r.out);
    // The summary opens the output and closes it, the files it wrote last.
    const auto first = r.out.find("== summary ==");
    const auto last = r.out.rfind("== summary ==");
    REQUIRE(first != std::string::npos);
    CHECK(last > first);
    CHECK(r.out.find("== host_memcpy ==") < last);
    CHECK(r.out.substr(last).find("  report: " + out + "\n  page: " + page + "\n") != std::string::npos);
    CHECK(r.out.compare(r.out.size() - page.size() - 1, page.size() + 1, page + "\n") == 0);
    CHECK(r.err.find("report written to") == std::string::npos); // said once, on stdout
    // Machine formats end as they are, and the report is named on stderr instead.
    const Run json = run_cli("run --scenario host_memcpy --size 4K --min-samples 3 --max-time 0.2 -f json --out " + out);
    REQUIRE(json.code == 0);
    CHECK(nlohmann::json::parse(json.out).is_object());
    CHECK(json.err.find("report written to " + out) != std::string::npos);
    const Run md = run_cli("run --scenario host_memcpy --size 4K --min-samples 3 --max-time 0.2 -f markdown --out " + out);
    REQUIRE(md.code == 0);
    CHECK(md.out.find("### Summary") == md.out.rfind("### Summary"));
    // -q: nothing on stdout.
    CHECK(run_cli("run --scenario host_memcpy --size 4K --min-samples 3 --max-time 0.2 -q --out " + out).out.empty());
    fs::remove_all(dir);
}
