#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include "interopbench/compare.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/html.hpp"
#include "interopbench/report.hpp"

using namespace interopbench;
namespace fs = std::filesystem;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

const fs::path k_src = INTEROPBENCH_SOURCE_DIR;

} // namespace

TEST_CASE("html escape: markup, quotes, controls and broken UTF-8 become text") {
    CHECK(html::escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;");
    CHECK(html::escape("\" onload=\"x") == "&quot; onload=&quot;x");
    CHECK(html::escape("a'b&c") == "a&#39;b&amp;c");
    CHECK(html::escape("tab\tline\n") == "tab\tline\n");
    CHECK(html::escape(std::string("\x1b[31m", 5)) == "\xef\xbf\xbd[31m");
    CHECK(html::escape("caf\xc3\xa9 \xe2\x86\x92") == "caf\xc3\xa9 \xe2\x86\x92"); // valid UTF-8 kept
    CHECK(html::escape("\xff\xc3") == "\xef\xbf\xbd\xef\xbf\xbd");                // invalid bytes replaced
    CHECK(html::escape("\xc2\x9b") == "\xef\xbf\xbd");                            // C1 control (CSI)
}

TEST_CASE("html scales map domains onto ranges") {
    const html::LinearScale lin{0, 10, 100, 200};
    CHECK(lin(0) == doctest::Approx(100));
    CHECK(lin(5) == doctest::Approx(150));
    CHECK(lin(10) == doctest::Approx(200));
    const html::LinearScale flat{3, 3, 0, 10};
    CHECK(flat(3) == doctest::Approx(5));
    const html::LogScale lg{1, 1000, 300, 0}; // a y axis: up is smaller
    CHECK(lg(1) == doctest::Approx(300));
    CHECK(lg(10) == doctest::Approx(200));
    CHECK(lg(1000) == doctest::Approx(0));
    CHECK(lg(0) == doctest::Approx(300)); // non-positive values sit on the axis, never NaN
    CHECK(lg(-5) == doctest::Approx(300));
    CHECK(std::isfinite(lg(NAN)));
}

TEST_CASE("html log ticks: powers of two for bytes, decades otherwise") {
    const auto bytes = html::log_ticks(4096, 1 << 30, "B", 8);
    REQUIRE(!bytes.empty());
    CHECK(bytes.front().value == 4096);
    CHECK(bytes.front().label == "4 KiB");
    CHECK(bytes.back().value == doctest::Approx(1 << 30));
    std::size_t labelled = 0;
    for (const auto& t : bytes) {
        labelled += !t.label.empty();
        CHECK(std::log2(t.value) == doctest::Approx(std::round(std::log2(t.value))));
    }
    CHECK(labelled <= 8);
    CHECK(labelled >= 2);

    const auto bw = html::log_ticks(2e8, 6e11, "B/s");
    std::vector<std::string> labels;
    for (const auto& t : bw)
        if (!t.label.empty()) labels.push_back(t.label);
    CHECK(labels == std::vector<std::string>{"1 GB/s", "10 GB/s", "100 GB/s"});

    // Inside one decade: 2 and 5 labelled, and never fewer than two labels.
    const auto narrow = html::log_ticks(1.5e-6, 6e-6, "s");
    labels.clear();
    for (const auto& t : narrow)
        if (!t.label.empty()) labels.push_back(t.label);
    CHECK(labels == std::vector<std::string>{"2 us", "5 us"});
    const auto tiny = html::log_ticks(51e9, 55e9, "B/s");
    labels.clear();
    for (const auto& t : tiny)
        if (!t.label.empty()) labels.push_back(t.label);
    CHECK(labels.size() >= 2);

    CHECK(html::log_ticks(0, 10, "s").empty());
    CHECK(html::log_ticks(NAN, 10, "s").empty());
}

TEST_CASE("html linear ticks and labels") {
    const auto t = html::linear_ticks(0, 57e9, "B/s", 6);
    REQUIRE(t.size() >= 3);
    CHECK(t.front().label == "0 B/s");
    CHECK(t[1].label == "10 GB/s");
    CHECK(html::tick_label(0.5, "ratio") == "50%");
    CHECK(html::tick_label(2.5e-3, "s") == "2.5 ms");
    CHECK(html::tick_label(478.116e9, "B/s") == "478.12 GB/s");
    CHECK(html::tick_label(150109880320.0, "B") == "139.8 GiB");
    CHECK(html::tick_label(NAN, "s") == "-");
}

TEST_CASE("html palette cycles colours, then dash patterns") {
    CHECK(std::string(html::series_colour(0)) == html::series_colour(8));
    CHECK(std::string(html::dash_pattern(0)).empty());
    CHECK(!std::string(html::dash_pattern(8)).empty());
    CHECK(html::sequential_colour(0) == "#440154");
    CHECK(html::sequential_colour(1) == "#fde725");
    CHECK(html::sequential_colour(5) == "#fde725"); // clamped
    CHECK(html::sequential_colour(NAN) == "#440154");
}

TEST_CASE("html embedded JSON cannot close its block and reads back the same") {
    nlohmann::json doc = {{"s", "</script><script>alert(1)</script><!--"}, {"n", 1.5}};
    const std::string e = html::embed_json(doc);
    CHECK(e.find('<') == std::string::npos);
    CHECK(nlohmann::json::parse(e) == doc);
    const std::string page = std::string("<html><script type=\"application/json\" id=\"") + html::k_report_block_id + "\">" + e +
                             "</script></html>";
    const auto back = html::extract_embedded_report(page);
    REQUIRE(back);
    CHECK(nlohmann::json::parse(*back) == doc);
    CHECK(!html::extract_embedded_report("<html><p>no report</p></html>"));
    CHECK(html::looks_like_html("  \n<!DOCTYPE html>"));
    CHECK(!html::looks_like_html("{\"schema\":1}"));
}

TEST_CASE("html report page: escaped, one script block, one chart per family, round trip through load_report") {
    const fs::path src = k_src / "tests/data/html/hostile.json";
    const auto doc = load_report(src.string());
    const std::string page = html::render_report_page(doc);
    CHECK(count(page, "<script") == 1);
    CHECK(count(page, "<script type=\"application/json\" id=\"interopbench-report\">") == 1);
    CHECK(page.find("<script>alert") == std::string::npos);
    CHECK(page.find("\" onload=\"") == std::string::npos);
    CHECK(page.find("<img") == std::string::npos);
    CHECK(page.find("<b>p") == std::string::npos);
    CHECK(page.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
    CHECK(page.find("http://") == page.find("http://www.w3.org/2000/svg")); // the SVG namespace only
    CHECK(page.find("https://") == std::string::npos);
    // Skipped and failed listed with their reasons.
    CHECK(page.find("needs 2 GPUs &quot; onload=&quot;alert(2)") != std::string::npos);
    CHECK(page.find("every configuration failed") != std::string::npos);
    CHECK(page.find("ok, no figure") != std::string::npos); // the NaN result is named, not dropped
    CHECK(count(page, "<section class=\"family\">") <= count(page, "<svg class=\"chart\""));

    const fs::path dir = fs::temp_directory_path() / ("interopbench_html_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    write_file_atomic((dir / "page.html").string(), page);
    const auto back = load_report((dir / "page.html").string());
    CHECK(back == doc);
    write_file_atomic((dir / "plain.html").string(), "<!DOCTYPE html><p>hello</p>");
    CHECK_THROWS_AS(load_report((dir / "plain.html").string()), UsageError);
    fs::remove_all(dir);
}

TEST_CASE("html pages of every committed reference report") {
    for (const auto& e : fs::directory_iterator(k_src / "reports")) {
        if (e.path().extension() != ".json" || e.path().filename() == "report.schema.json") continue;
        CAPTURE(e.path().string());
        const auto doc = load_report(e.path().string());
        const std::string page = html::render_report_page(doc);
        std::set<std::string> families;
        for (const auto& r : doc["results"]) families.insert(r.value("family", r["scenario"].get<std::string>()));
        CHECK(count(page, "<svg class=\"chart\"") >= families.size());
        CHECK(count(page, "<script") == 1);
        // "nan" as a value, not inside a word ("tenants" in a profile's description).
        CHECK_FALSE(std::regex_search(page, std::regex("[^A-Za-z]nan[^A-Za-z]")));
        CHECK(page.find("inf\"") == std::string::npos);
    }
}

TEST_CASE("html comparison page: differences first, geomean and ratios, escaped labels") {
    const auto base = load_report((k_src / "reports/h200x2-ci-1.json").string());
    const auto fresh = load_report((k_src / "reports/h200x2-ci-2.json").string());
    CompareOptions o;
    o.base_label = "<script>alert(1)</script>";
    const auto outcome = compare_reports(base, fresh, o);
    const std::string page = render_comparison(outcome, parse_compare_format("html"));
    CHECK(count(page, "<script") == 1);
    CHECK(count(page, "<script type=\"application/json\" id=\"interopbench-comparison\">") == 1);
    CHECK(page.find("<script>alert") == std::string::npos);
    CHECK(page.find("&lt;script&gt;alert(1)") != std::string::npos);
    const auto diff = page.find("Machine differences"), summary = page.find("Summary"), results = page.find("<h2>Results");
    CHECK(diff < summary);
    CHECK(summary < results);
    CHECK(count(page, "<svg class=\"chart\"") >= 2);
    CHECK(page.find("geometric mean") != std::string::npos);
}

namespace {

struct Cli {
    int code;
    std::string out, err;
};

Cli run_cli(const std::string& args, const fs::path& dir) {
    const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
    const std::string cmd = std::string(INTEROPBENCH_BINARY) + " " + args + " >" + out + " 2>" + err + " </dev/null";
    const int status = std::system(cmd.c_str());
    auto slurp = [](const std::string& p) {
        std::ifstream in(p, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), {});
    };
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

} // namespace

TEST_CASE("html through the command line: run --html, show --format html, show PAGE, compare --format html") {
    const fs::path dir = fs::temp_directory_path() / ("interopbench_html_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string json = (dir / "r.json").string(), page = (dir / "r.html").string();
    const Cli run = run_cli("run -q -s host_memcpy --size 4K,64K --max-time 0.05 --min-samples 3 --out " + json + " --html " + page, dir);
    REQUIRE(run.code == 0);
    const auto from_json = load_report(json);
    const auto from_page = load_report(page);
    CHECK(from_json == from_page);

    const Cli same = run_cli("run -q -s host_memcpy --size 4K --out " + json + " --html " + json, dir);
    CHECK(same.code == 2);
    CHECK(same.err.find("--html") != std::string::npos);

    const std::string hostile = (k_src / "tests/data/html/hostile.json").string();
    const Cli show = run_cli("show --format html " + hostile, dir);
    CHECK(show.code == 0);
    CHECK(show.out.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(count(show.out, "<script") == 1);
    const Cli back = run_cli("show " + page, dir);
    CHECK(back.code == 0);
    CHECK(back.out.find("host_memcpy") != std::string::npos);

    const Cli cmp = run_cli("compare --format html " + (k_src / "reports/h200x2-ci-1.json").string() + " " +
                                (k_src / "reports/h200x2-ci-2.json").string(),
                            dir);
    CHECK((cmp.code == 0 || cmp.code == 1));
    CHECK(cmp.out.find("Machine differences") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("html stage breakdown from details.stages, bounding stage outlined") {
    auto doc = load_report((k_src / "tests/data/html/hostile.json").string());
    nlohmann::json r = doc["results"][0];
    r["scenario"] = "staged_pipeline";
    r["family"] = "pipeline";
    r["details"]["stages"] = {{"read", 0.004}, {"h2d", 0.002}, {"kernel", 0.001}};
    r["key"] = "staged_pipeline/a";
    nlohmann::json r2 = r;
    r2["key"] = "staged_pipeline/b";
    r2["params"]["size"] = "1";
    r2["details"]["stages"] = nlohmann::json::array({{{"name", "read"}, {"time", 0.001}}, {{"name", "h2d"}, {"time", 0.003}}});
    r2["details"]["bounding_stage"] = "h2d";
    doc["results"] = nlohmann::json::array({r, r2});
    const std::string page = html::render_report_page(doc);
    CHECK(page.find("stage breakdown") != std::string::npos);
    CHECK(count(page, "class=\"bound\"") == 2);
    CHECK(page.find("read: 4.00 ms (bounding)") != std::string::npos);
    CHECK(page.find("h2d: 3.00 ms (bounding)") != std::string::npos);
}
