// interopbench: benchmarks and diagnoses data movement on and between GPUs.
// main parses the command line, runs one subcommand and decides the exit code; nothing
// deeper exits the process.
#include <cstdio>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "interopbench/report.hpp"

int main(int argc, char** argv) {
    using namespace interopbench;
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
        app.add_subcommand("version", "print the version and git revision")->callback([] {
            fmt::print("interopbench {} ({})\n", tool_version(), tool_git_sha());
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
            fmt::print(stderr, "error: {}\nhint: run 'interopbench --help' or 'interopbench <command> --help'\n", e.what());
            return static_cast<int>(ExitCode::usage);
        }
        if (app.get_subcommands().empty()) {
            fmt::print("{}", app.help());
            return 0;
        }
        return out.code;
    } catch (const UsageError& e) {
        fmt::print(stderr, "error: {}\n", e.what());
        if (!e.hint().empty()) fmt::print(stderr, "hint: {}\n", e.hint());
        return static_cast<int>(ExitCode::usage);
    } catch (const std::exception& e) {
        fmt::print(stderr, "error: {}\n", e.what());
        return static_cast<int>(ExitCode::failed);
    }
}
