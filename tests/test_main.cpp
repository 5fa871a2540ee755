// The test runner. Every test's scratch files go under one directory of this process
// (TMPDIR is pointed there, so fs::temp_directory_path() and the binaries the tests start
// use it too), and that directory is removed when the tests end, pass or fail. A run that
// names test cases (-tc, as CTest does for each one) and runs none fails: a name CTest cut
// short (at a ';') would otherwise pass without testing anything. The "gpu scenario: FAMILY"
// cases are added from the registry before the run (test_gpu_scenarios.cpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "families/plugin/warden.hpp"
#include "test_support.hpp"

namespace {

int g_started = 0;
std::string g_current;                 // the running test case
std::vector<std::string> g_skipped;    // "case: reason" of each case that skipped itself

struct CountCases : doctest::IReporter {
    explicit CountCases(const doctest::ContextOptions&) {}
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
    void test_case_start(const doctest::TestCaseData& d) override {
        ++g_started;
        g_current = d.m_name;
    }
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("count_cases", 1, CountCases);

} // namespace

const std::string& interopbench::testing::current_test_case() { return g_current; }

void interopbench::testing::skip(const std::string& reason) {
    g_skipped.push_back(g_current + ": " + reason);
    std::fprintf(stderr, "skipped: %s\n", reason.c_str());
}

int main(int argc, char** argv) {
    // Plugins started by tests in this process have their warden in this binary too.
    if (argc > 1 && argv[1] == interopbench::plugin::k_warden_command) return interopbench::plugin::warden_main(argc, argv);
    namespace fs = std::filesystem;
    const char* outer = std::getenv("TMPDIR");
    const fs::path root = fs::path(outer && *outer ? outer : "/tmp") / ("interopbench-tests-" + std::to_string(::getpid()));
    std::error_code ec;
    fs::create_directories(root, ec);
    if (!ec) ::setenv("TMPDIR", root.c_str(), 1);
    interopbench::testing::register_gpu_scenario_cases();
    doctest::Context context(argc, argv);
    int code = context.run();
    bool named = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        named = named || a.rfind("-tc=", 0) == 0 || a.rfind("--test-case=", 0) == 0;
    }
    if (named && g_started == 0 && !context.shouldExit()) {
        std::fprintf(stderr, "no test case matches the names given: a name with ';' is cut short by CTest\n");
        code = code ? code : 1;
    }
    if (!g_skipped.empty()) {
        std::fprintf(stderr, "[interopbench] %zu test case(s) skipped themselves (nothing checked):\n", g_skipped.size());
        for (const auto& s : g_skipped) std::fprintf(stderr, "  %s\n", s.c_str());
    }
    // Every case that ran skipped itself: CTest's skip code, not a pass.
    if (code == 0 && g_started > 0 && g_skipped.size() == static_cast<std::size_t>(g_started)) code = 77;
    if (!ec) fs::remove_all(root, ec);
    return code;
}
