// Every table and list for people fits the terminal: at COLUMNS=80 and 120, no line that show,
// compare, fleet, list, topo, doctor or help print is wider (in display columns, not bytes),
// over every committed report, every scenario and every command.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "interopbench/text.hpp"
#include "presentation/table.hpp"
#include "test_support.hpp"

using namespace interopbench;
namespace fs = std::filesystem;

namespace {

const fs::path k_src = INTEROPBENCH_SOURCE_DIR;
constexpr const char* k_widths[] = {"80", "120"};

// Checks that `args` exits with a status other than 2 (bad input) and that no line of its
// standard output is wider than COLUMNS.
void fits(const std::string& args, std::size_t width) {
    CAPTURE(args);
    CAPTURE(width);
    const testing::CliRun r = testing::run_cli(args);
    CHECK(r.code != 2);
    CHECK(r.code != -1);
    CHECK(!r.out.empty());
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        CAPTURE(line);
        CHECK(display_width(line) <= width);
    }
}

// `paths` quoted for the shell, one argument each.
std::string quoted(const std::vector<fs::path>& paths) {
    std::string out;
    for (const auto& p : paths) out += " '" + p.string() + "'";
    return out;
}

// Every committed report: the JSON under reports/ (its folders too) that has a "schema" (the
// rest is fio's output, gate-pairs summaries and profiles), and the fixtures of
// tests/data/reports but bad/ (what show must refuse).
std::vector<fs::path> committed_reports() {
    std::vector<fs::path> out;
    for (const char* root : {"reports", "tests/data/reports"})
        for (const auto& e : fs::recursive_directory_iterator(k_src / root)) {
            if (e.path().extension() != ".json" || e.path().filename() == "report.schema.json" ||
                e.path().parent_path().filename() == "bad")
                continue;
            if (nlohmann::json::parse(testing::slurp(e.path()), nullptr, false).contains("schema")) out.push_back(e.path());
        }
    std::sort(out.begin(), out.end());
    return out;
}

// Runs `check` once at each width, with COLUMNS set for the binary.
template <class Check> void at_each_width(Check check) {
    for (const char* w : k_widths) {
        ::setenv("COLUMNS", w, 1);
        check(static_cast<std::size_t>(std::stoul(w)));
    }
    ::unsetenv("COLUMNS");
}

} // namespace

TEST_CASE("widths: show of every committed report fits 80 and 120 columns") {
    const auto reports = committed_reports();
    REQUIRE(reports.size() > 50);
    at_each_width([&](std::size_t width) {
        for (const auto& r : reports) fits("show '" + r.string() + "'", width);
    });
}

TEST_CASE("widths: compare of every committed pair of one machine, and fleet, fit 80 and 120 columns") {
    const std::vector<std::pair<const char*, const char*>> pairs = {
        {"reports/h200x2-ci-1.json", "reports/h200x2-ci-2.json"},
        {"reports/h200x2-host-device-copy-1.json", "reports/h200x2-host-device-copy-2.json"},
        {"reports/h200x1-d2d-4ce2209.json", "reports/h200x1-d2d-51c5c47.json"},
        {"reports/h100x1-1b489ab/quick.json", "reports/h100x1-a9957d6/quick.json"},
        {"reports/h200x1-family-move/quick-before.json", "reports/h200x1-family-move/quick-after.json"},
        {"reports/h200x1-family-move/layout-before-1.json", "reports/h200x1-family-move/layout-after-1.json"},
        {"reports/smoke-51c5c47/ci-1.json", "reports/smoke-51c5c47/ci-2.json"},
        {"reports/smoke-51c5c47/copy-1.json", "reports/smoke-51c5c47/copy-2.json"},
        {"reports/gate-pairs/h200x1-ci/run-0.json", "reports/gate-pairs/h200x1-ci/run-1.json"},
        {"reports/layout-kernels/h200x1-transpose-before.json", "reports/layout-kernels/h200x1-transpose-after.json"},
        {"tests/data/reports/base.json", "tests/data/reports/regression.json"},
        {"tests/data/reports/base.json", "tests/data/reports/noisy.json"},
    };
    std::vector<fs::path> h200x1;
    for (const auto& e : fs::directory_iterator(k_src / "reports"))
        if (e.path().filename().string().starts_with("h200x1-") && e.path().extension() == ".json") h200x1.push_back(e.path());
    std::sort(h200x1.begin(), h200x1.end());
    REQUIRE(h200x1.size() >= 5);
    at_each_width([&](std::size_t width) {
        for (const auto& [base, fresh] : pairs) fits("compare" + quoted({k_src / base, k_src / fresh}), width);
        fits("compare --cross-machine" + quoted({k_src / "tests/data/reports/base.json", k_src / "tests/data/reports/other_machine.json"}),
             width);
        fits("fleet" + quoted(h200x1), width);
    });
}

TEST_CASE("widths: list, list -s of every scenario, --profiles and --families fit 80 and 120 columns") {
    const testing::CliRun all = testing::run_cli("list -f json");
    REQUIRE(all.code == 0);
    std::vector<std::string> ids;
    for (const auto& s : nlohmann::json::parse(all.out)) ids.push_back(s["id"].get<std::string>());
    REQUIRE(ids.size() > 20);
    at_each_width([&](std::size_t width) {
        fits("list", width);
        for (const auto& id : ids) fits("list -s '" + id + "'", width);
        fits("list --profiles", width);
        fits("list --families", width);
    });
}

TEST_CASE("widths: help of every command, doctor and topo fit 80 and 120 columns") {
    std::vector<fs::path> topologies;
    for (const auto& e : fs::directory_iterator(k_src / "tests/data/topology"))
        if (e.path().extension() == ".xml") topologies.push_back(e.path());
    std::sort(topologies.begin(), topologies.end());
    at_each_width([&](std::size_t width) {
        fits("help", width);
        for (const char* cmd : {"run", "show", "compare", "list", "fleet", "topo", "doctor", "version", "help"})
            fits(std::string("help ") + cmd, width);
        fits("doctor", width);
        fits("topo", width);
        for (const auto& t : topologies) fits("topo --from '" + t.string() + "'", width);
    });
}

TEST_CASE("widths: a table too wide wraps its cells under their column, leaves out what may go and says so") {
    std::vector<TableColumn> cols{{"name", {"a", "bb"}},
                                  {"figure", {"1.00 GB/s", "22.0 GB/s"}},
                                  {"a_long_secondary_metric", {"7", "8"}, true},
                                  {"note", {"a reason in many words, long enough to wrap at forty columns", ""}, false, true}};
    TableLayout layout;
    layout.width = 40;
    const std::string t = fit_table(cols, layout);
    CAPTURE(t);
    std::istringstream lines(t);
    std::string words; // every word the table shows, in order
    for (std::string l; std::getline(lines, l);) {
        CHECK(display_width(l) <= 40);
        std::istringstream in(l);
        for (std::string w; in >> w;) words += w + " ";
    }
    // The note wrapped under its column, whole; the extra column named, not shown.
    CHECK(words.find("a 1.00 GB/s a reason in many") != std::string::npos);
    for (const char* w : {"long", "enough", "wrap", "forty", "columns", "bb 22.0 GB/s"}) {
        CAPTURE(w);
        CHECK(words.find(w) != std::string::npos);
    }
    CHECK(words.find("not shown to fit 40 columns: a_long_secondary_metric (--wide)") != std::string::npos);
    // Without a limit the table is as wide as its content, every column shown.
    layout.width = 0;
    CHECK(fit_table(cols, layout).find("a_long_secondary_metric") != std::string::npos);
    // Wide characters take two columns; a word longer than a line is broken, never lost.
    CHECK(display_width("\u00b1") == 1);
    CHECK(display_width("\u6f22\u5b57") == 4);
    const std::string long_word = wrap(std::string(50, 'x'), 20, "  ");
    CHECK(std::count(long_word.begin(), long_word.end(), 'x') == 50);
    std::istringstream wrapped(long_word);
    for (std::string l; std::getline(wrapped, l);) CHECK(display_width(l) <= 20);
}
