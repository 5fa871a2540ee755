#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>

#include "interopbench/compare.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/fleet.hpp"
#include "presentation/html.hpp"
#include "interopbench/report.hpp"
#include "test_support.hpp"
#include "presentation/comparison.hpp"

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

TEST_CASE("html report page: escaped, one script block, one chart per family, round trip through read_report") {
    const fs::path src = k_src / "tests/data/html/hostile.json";
    const Report doc = read_report(src.string());
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
    const Report back = read_report((dir / "page.html").string());
    CHECK(report_document(back) == report_document(doc));
    write_file_atomic((dir / "plain.html").string(), "<!DOCTYPE html><p>hello</p>");
    CHECK_THROWS_AS(read_report((dir / "plain.html").string()), UsageError);
    fs::remove_all(dir);
}

TEST_CASE("html pages of every committed reference report") {
    for (const auto& e : fs::directory_iterator(k_src / "reports")) {
        if (e.path().extension() != ".json" || e.path().filename() == "report.schema.json") continue;
        CAPTURE(e.path().string());
        const Report doc = read_report(e.path().string());
        const std::string page = html::render_report_page(doc);
        std::set<std::string> families;
        for (const auto& r : doc.results) families.insert(r.family.empty() ? r.scenario : r.family);
        CHECK(count(page, "<svg class=\"chart\"") >= families.size());
        CHECK(count(page, "<script") == 1);
        // "nan" as a value, not inside a word ("tenants" in a profile's description).
        CHECK_FALSE(std::regex_search(page, std::regex("[^A-Za-z]nan[^A-Za-z]")));
        CHECK(page.find("inf\"") == std::string::npos);
    }
}

TEST_CASE("html comparison page: differences first, geomean and ratios, escaped labels") {
    const Report base = read_report((k_src / "reports/h200x2-ci-1.json").string());
    const Report fresh = read_report((k_src / "reports/h200x2-ci-2.json").string());
    CompareOptions o;
    o.base_label = "<script>alert(1)</script>";
    const auto outcome = compare_reports(base, fresh, o);
    const std::string page = html::render_comparison_page(outcome);
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

TEST_CASE("html through the command line: run --html, show --format html, show PAGE, compare --format html") {
    const fs::path dir = fs::temp_directory_path() / ("interopbench_html_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string json = (dir / "r.json").string(), page = (dir / "r.html").string();
    const testing::CliRun run = testing::run_cli("run -q -s host_memcpy --size 4K,64K --max-time 0.05 --min-samples 3 --out " + json + " --html " + page);
    REQUIRE(run.code == 0);
    const Report from_json = read_report(json);
    const Report from_page = read_report(page);
    CHECK(report_document(from_json) == report_document(from_page));
    CHECK(load_report(json) == load_report(page)); // the page embeds the report as written

    const testing::CliRun same = testing::run_cli("run -q -s host_memcpy --size 4K --out " + json + " --html " + json);
    CHECK(same.code == 2);
    CHECK(same.err.find("--html") != std::string::npos);

    const std::string hostile = (k_src / "tests/data/html/hostile.json").string();
    const testing::CliRun show = testing::run_cli("show --format html " + hostile);
    CHECK(show.code == 0);
    CHECK(show.out.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(count(show.out, "<script") == 1);
    const testing::CliRun back = testing::run_cli("show " + page);
    CHECK(back.code == 0);
    CHECK(back.out.find("host_memcpy") != std::string::npos);

    const testing::CliRun cmp = testing::run_cli("compare --format html " + (k_src / "reports/h200x2-ci-1.json").string() +
                                                 " " + (k_src / "reports/h200x2-ci-2.json").string());
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
    r["key"] = "staged_pipeline/size=67108864,host_mem=pinned,engine=ce,device=0";
    nlohmann::json r2 = r;
    r2["key"] = "staged_pipeline/size=1,host_mem=pinned,engine=ce,device=0";
    r2["params"]["size"] = "1";
    r2["details"]["stages"] = nlohmann::json::array({{{"name", "read"}, {"time", 0.001}}, {{"name", "h2d"}, {"time", 0.003}}});
    r2["details"]["bounding_stage"] = "h2d";
    doc["results"] = nlohmann::json::array({r, r2});
    const std::string page = html::render_report_page(read_report_json(doc, "staged"));
    CHECK(page.find("stage shares") != std::string::npos);
    CHECK(count(page, "class=\"bound\"") == 2);
    CHECK(page.find("read: 4.00 ms (bounding)") != std::string::npos);
    CHECK(page.find("h2d: 3.00 ms (bounding)") != std::string::npos);
}

// ---- what the charts claim: synthetic reports, one rule each ----------------------------------

namespace {

using nlohmann::json;

/// One metric as a report stores it: median, its 95% interval, n and, for several rounds,
/// each round's median.
json metric(const std::string& name, const std::string& unit, double median, double lo, double hi, int n = 10,
            std::vector<double> rounds = {}) {
    json m = {{"name", name},
              {"unit", unit},
              {"better", unit == "s" || unit == "B" ? "lower" : "higher"},
              {"stats", {{"median", median}, {"n", n}, {"median_ci", {lo, hi}}}},
              {"samples", json::array()}};
    if (!rounds.empty()) m["round_medians"] = rounds;
    return m;
}

json result(const std::string& scenario, const std::string& family, const std::vector<std::pair<std::string, std::string>>& params,
            json metrics, const std::string& status = "ok", const std::string& reason = "") {
    json p = json::object(), order = json::array();
    std::string key = scenario + "/";
    for (const auto& [k, v] : params) {
        p[k] = v;
        order.push_back(k);
        key += (key.back() == '/' ? "" : ",") + k + "=" + v;
    }
    return {{"key", key},         {"scenario", scenario}, {"family", family}, {"params", p},
            {"param_order", order}, {"status", status},   {"reason", reason}, {"rounds", 1},
            {"details", json::object()}, {"metrics", status == "ok" ? metrics : json::array()}};
}

/// A report of `results`, read as the tool reads one.
Report report_of(json results) {
    return read_report_json({{"schema", {{"name", "interopbench.report"}, {"version", "1.1"}}}, {"results", std::move(results)}},
                            "test report");
}

/// The SVG charts of a page, each from "<svg class=\"chart\"" to its "</svg>".
std::vector<std::string> charts(const std::string& page) {
    std::vector<std::string> out;
    for (auto p = page.find("<svg class=\"chart\""); p != std::string::npos; p = page.find("<svg class=\"chart\"", p + 1))
        out.push_back(page.substr(p, page.find("</svg>", p) - p));
    return out;
}

} // namespace

TEST_CASE("html bars: a linear axis from zero, bars named by what varies, by the scenario when nothing does") {
    // Times 1000x apart, which a log axis used to take.
    const auto page = html::render_report_page(report_of(
        {result("alloc_device", "alloc", {{"allocator", "cudaMalloc"}, {"size", "1048576"}},
                json::array({metric("pair_time", "s", 1e-3, 0.9e-3, 1.1e-3)})),
         result("alloc_device", "alloc", {{"allocator", "pool"}, {"size", "1048576"}},
                json::array({metric("pair_time", "s", 1e-6, 0.9e-6, 1.1e-6)})),
         result("bidir_copy", "copy", {{"size", "67108864"}}, json::array({metric("bandwidth_sum", "B/s", 50e9, 49e9, 51e9)}))}));
    const auto svgs = charts(page);
    REQUIRE(svgs.size() == 2);
    for (const auto& svg : svgs) {
        CAPTURE(svg);
        CHECK(svg.find(", log") == std::string::npos);
        CHECK(svg.find("class=\"grid2\"") == std::string::npos); // unlabelled minor ticks: a log axis's
        const std::string axis_at = "<line class=\"axis\" x1=\"";
        const auto axis = svg.find(axis_at) + axis_at.size();
        const std::string zero = svg.substr(axis, svg.find('"', axis) - axis);
        CHECK(svg.find("<rect x=\"" + zero + "\"") != std::string::npos); // every bar starts at the axis's zero
    }
    CHECK(svgs[0].find(">0 s</text>") != std::string::npos);
    CHECK(svgs[1].find(">0 B/s</text>") != std::string::npos);
    CHECK(svgs[0].find(">cudaMalloc</text>") != std::string::npos);
    CHECK(svgs[0].find(">pool</text>") != std::string::npos);
    CHECK(svgs[1].find(">bidir_copy</text>") != std::string::npos);
    CHECK(page.find("the configuration") == std::string::npos);
}

TEST_CASE("html lines against size: one or two sizes are bars, fewer than 3 points are points, identical series named together") {
    json results = json::array();
    // Two sizes seven decades apart: no configuration has 3 sizes, so bars on a linear axis.
    for (const char* size : {"1024", "8589934592"})
        results.push_back(result("nccl_all_reduce", "nccl", {{"op", "sum"}, {"size", size}},
                                 json::array({metric("busbw", "B/s", std::string(size) == "1024" ? 1e8 : 3e11, 0.9e8, 3.1e11)})));
    const auto two = html::render_report_page(report_of(results));
    REQUIRE(charts(two).size() == 1);
    CHECK(two.find("<polyline") == std::string::npos);
    CHECK(count(charts(two)[0], "<circle") == 0);
    CHECK(charts(two)[0].find(", log") == std::string::npos);
    CHECK(count(charts(two)[0], "<rect x=") == 2);
    // Three sizes, but 1000x apart and more: points as well.
    results.push_back(result("nccl_all_reduce", "nccl", {{"op", "sum"}, {"size", "1073741824"}},
                             json::array({metric("busbw", "B/s", 2.9e11, 2.8e11, 3e11)})));
    const auto gap = html::render_report_page(report_of(results));
    CHECK(gap.find("<polyline") == std::string::npos);
    CHECK(count(charts(gap)[0], "<circle") == 3);

    // Three sizes, two ops with the same median at every size and one that differs.
    results = json::array();
    for (const char* op : {"sum", "max", "min"})
        for (double size : {1e6, 1e7, 1e8}) {
            const double v = size / 1e-3 * (std::string(op) == "min" ? 0.5 : 1);
            results.push_back(result("nccl_all_reduce", "nccl", {{"op", op}, {"size", fmt::format("{:.0f}", size)}},
                                     json::array({metric("busbw", "B/s", v, v * 0.9, v * 1.1)})));
        }
    const auto three = html::render_report_page(report_of(results));
    CHECK(count(three, "<polyline") == 2); // sum and max drawn once, min
    CHECK(three.find("sum = max") != std::string::npos);
    CHECK(three.find("the same median at every size") != std::string::npos);
}

TEST_CASE("html heatmaps: a colour scale from zero or the data's range, cold and warm cache never on one") {
    json results = json::array();
    for (const char* sc : {"storage_read", "storage_to_gpu", "gpu_to_storage"})
        for (const char* cache : {"cold", "warm"})
            for (const char* size : {"16777216", "67108864"}) {
                const bool warm = std::string(cache) == "warm";
                const double v = (warm ? 20e9 : 1e9) * (size[0] == '6' ? 1.5 : 1);
                auto params = std::vector<std::pair<std::string, std::string>>{{"cache", cache}, {"size", size}};
                if (std::string(sc) == "gpu_to_storage") params.erase(params.begin()); // no cache axis
                if (std::string(sc) == "gpu_to_storage" && warm) continue;
                results.push_back(result(sc, "storage", params, json::array({metric("bandwidth", "B/s", v, v * 0.95, v * 1.05)})));
            }
    const auto page = html::render_report_page(report_of(results));
    CHECK(page.find("<div class=\"facet\">cache=cold</div>") != std::string::npos);
    CHECK(page.find("<div class=\"facet\">cache=warm</div>") != std::string::npos);
    CHECK(page.find("<div class=\"facet\">without a cache axis</div>") != std::string::npos);
    // Each map's scale runs from zero to its own largest value, and says how far apart its
    // values are: cold 1 to 1.5 GB/s, warm 20 to 30 GB/s.
    CHECK(page.find("colour: linear from 0 B/s to 1.5 GB/s (a cell&#39;s share of the largest); values 1 GB/s to 1.5 GB/s, 50% apart") !=
          std::string::npos);
    CHECK(page.find("colour: linear from 0 B/s to 30 GB/s (a cell&#39;s share of the largest); values 20 GB/s to 30 GB/s, 50% apart") !=
          std::string::npos);
    CHECK(page.find(">1 TB/s</text>") == std::string::npos); // the old fixed scale's top
    CHECK(page.find("fixed colour scale") == std::string::npos);
    // More than 10x apart: a log scale.
    results = json::array();
    for (const char* sc : {"nccl_all_reduce", "nccl_all_gather", "nccl_broadcast"})
        for (const char* size : {"1024", "1073741824"})
            results.push_back(result(sc, "nccl", {{"size", size}},
                                     json::array({metric("busbw", "B/s", std::string(size) == "1024" ? 1e8 : 3e11, 1e8, 3e11)})));
    CHECK(html::render_report_page(report_of(results)).find("colour: 100 MB/s to 300 GB/s, log scale") != std::string::npos);
}

TEST_CASE("html zero-copy: shown by its time, never as a bandwidth") {
    json results = json::array();
    for (const char* path : {"dlpack", "deep_copy"})
        for (const char* size : {"1048576", "16777216", "268435456"}) {
            const bool zero = std::string(path) == "dlpack";
            const double bytes = std::stod(size), t = zero ? 1.2e-6 : bytes / 2e11;
            json r = result("handoff", "handoff", {{"path", path}, {"consumer", "same"}, {"size", size}},
                            json::array({metric("time", "s", t, t * 0.9, t * 1.1), metric("bytes_moved", "B", zero ? 0 : bytes, 0, 0),
                                         metric("delivered_bandwidth", "B/s", bytes / t, bytes / t * 0.9, bytes / t * 1.1)}));
            r["details"] = {{"pointer_shared", zero}, {"bytes_moved", zero ? 0.0 : bytes}};
            results.push_back(r);
        }
    const auto page = html::render_report_page(report_of(results));
    const auto svgs = charts(page);
    REQUIRE(svgs.size() == 2);
    CHECK(svgs[0].find("delivered_bandwidth") != std::string::npos);
    CHECK(svgs[0].find("dlpack") == std::string::npos); // the bandwidth chart: deep copies only
    CHECK(svgs[1].find("(time)") != std::string::npos);
    CHECK(svgs[1].find("B/s") == std::string::npos);
    CHECK(svgs[1].find("zero-copy: no bytes moved") != std::string::npos);
    CHECK(page.find("<div class=\"facet\">zero-copy: no bytes moved</div>") != std::string::npos);
    CHECK(page.find("TB/s") == std::string::npos); // 224 TB/s "bandwidths" of a pointer exchange nowhere
}

TEST_CASE("html hover text: the value, its interval or round spread, whichever is larger, and n") {
    json r = result("bidir_copy", "copy", {{"size", "67108864"}},
                    json::array({metric("bandwidth_sum", "B/s", 100e9, 98e9, 102e9, 10, {99e9, 104e9, 100e9})}));
    r["rounds"] = 3;
    json q = result("bidir_copy", "copy", {{"size", "1048576"}}, json::array({metric("bandwidth_sum", "B/s", 50e9, 49e9, 51e9, 6)}));
    const auto page = html::render_report_page(report_of({r, q}));
    // 2% interval, 5% spread between rounds: half the spread (2.5%) is shown.
    CHECK(page.find("100 GB/s \xc2\xb1 2.5% (half the spread between rounds), n = 10 samples in 3 rounds") != std::string::npos);
    CHECK(page.find("50.0 GB/s \xc2\xb1 2% (95% interval), n = 6 samples in 1 round") != std::string::npos);
}

TEST_CASE("html no GPU: one block for the scenarios skipped for one reason, no empty sections") {
    const std::string why = "no NVIDIA driver: libcuda.so.1 could not be loaded";
    json results = json::array({result("host_memcpy", "copy", {{"size", "1048576"}},
                                       json::array({metric("bandwidth", "B/s", 10e9, 9e9, 11e9)}))});
    for (const char* sc : {"h2d_copy", "d2h_copy", "nccl_all_reduce"})
        for (const char* size : {"1048576", "67108864"})
            results.push_back(result(sc, sc[0] == 'n' ? "nccl" : "copy", {{"size", size}}, json::array(), "skipped", why));
    const auto page = html::render_report_page(report_of(results));
    CHECK(count(page, "class=\"skipblock\"") == 1);
    CHECK(page.find("<b>Skipped: " + why + "</b><br>6 configurations of 3 scenarios: h2d_copy, d2h_copy, nccl_all_reduce") !=
          std::string::npos);
    CHECK(page.find("<h3>h2d_copy") == std::string::npos);
    CHECK(page.find("<h3>nccl_all_reduce") == std::string::npos);
    CHECK(page.find("nothing to plot") == std::string::npos);
    CHECK(count(page, "<section class=\"family\">") == 1); // copy, for host_memcpy
}

TEST_CASE("html bars carry their path's limit: one line when shared, a mark on each bar otherwise") {
    json results = json::array();
    for (const auto& [mem, bw, eff] : {std::tuple{"pinned", 55.3e9, 0.88}, std::tuple{"pageable", 8.63e9, 0.14}}) {
        json r = result("h2d_copy", "copy", {{"size", "67108864"}, {"host_mem", mem}},
                        json::array({metric("bandwidth", "B/s", bw, bw * 0.99, bw * 1.01)}));
        r["details"] = {{"path", "host link of GPU 0 (h2d)"}, {"path_bandwidth", 63.02e9}, {"efficiency", eff}};
        results.push_back(r);
    }
    const auto page = html::render_report_page(report_of(results));
    REQUIRE(charts(page).size() == 1);
    const auto svg = charts(page)[0];
    CHECK(count(svg, "class=\"limit\"") == 1);
    CHECK(svg.find(">limit host link of GPU 0 (h2d) 63.02 GB/s</text>") != std::string::npos);
    CHECK(svg.find("55.3 GB/s (88%)") != std::string::npos);
    CHECK(page.find("dashed: the path&#39;s theoretical limit") != std::string::npos);
    // Each bar its own limit: a mark on each, named on hover.
    results[1]["details"]["path_bandwidth"] = 20e9;
    results[1]["details"]["path"] = "page cache";
    const auto marks = charts(html::render_report_page(report_of(results)))[0];
    CHECK(count(marks, "class=\"limit\"") == 2);
    CHECK(marks.find("<title>limit page cache 20 GB/s</title>") != std::string::npos);
}

namespace {

/// The page without its embedded document (the report or comparison as JSON).
std::string shown_part(const std::string& page) { return page.substr(0, page.find("<script")); }

/// The number of entries of the largest legend a reader sees (legends folded in <details> left out).
std::size_t largest_legend(const std::string& page) {
    std::size_t most = 0;
    for (auto p = page.find("<ul class=\"legend\">"); p != std::string::npos; p = page.find("<ul class=\"legend\">", p + 1)) {
        const auto open = page.rfind("<details>", p), close = page.rfind("</details>", p);
        if (open != std::string::npos && (close == std::string::npos || close < open)) continue;
        most = std::max(most, count(page.substr(p, page.find("</ul>", p) - p), "<li>"));
    }
    return most;
}

std::string section(const std::string& page, const std::string& heading) {
    const auto at = page.find(heading);
    if (at == std::string::npos) return {};
    return page.substr(at, page.find("<h3>", at + heading.size()) - at);
}

} // namespace

TEST_CASE("html pipeline variants: bars by variant against their limits and stage shares, not points at one size") {
    // Through show, which sets the results against their paths' limits as a run does.
    const testing::CliRun show = testing::run_cli("show --format html " + (k_src / "reports/h200x1-pipeline-ad09f1b.json").string());
    REQUIRE(show.code == 0);
    const auto& page = show.out;
    const auto pipeline = section(page, "<h3>pipeline</h3>");
    REQUIRE(!pipeline.empty());
    CHECK(pipeline.find("<circle") == std::string::npos); // no dots over one or two sizes
    CHECK(pipeline.find("stage shares") != std::string::npos);
    CHECK(pipeline.find("<div class=\"facet\">cache=cold</div>") != std::string::npos);
    CHECK(pipeline.find("<div class=\"facet\">cache=warm</div>") != std::string::npos);
    CHECK(pipeline.find(">naive 1GiB 64MiB</text>") != std::string::npos);
    CHECK(pipeline.find("<title>limit storage 1.96 GB/s</title>") != std::string::npos); // each bar against its path's limit
    CHECK(section(page, "<h3>pipeline_read</h3>").find("<circle") == std::string::npos);
    CHECK(largest_legend(page) <= 12);
}

TEST_CASE("html every committed report's page: legends of at most 12 entries, no zero-copy bandwidth") {
    for (const auto& e : fs::directory_iterator(k_src / "reports")) {
        if (e.path().extension() != ".json" || e.path().filename() == "report.schema.json") continue;
        CAPTURE(e.path().string());
        const auto page = html::render_report_page(read_report(e.path().string()));
        CHECK(largest_legend(page) <= 12);
    }
    // The framework handoffs: the zero-copy ones by their time (a 64 MiB pointer exchange in
    // 1 us is no "66.6 TB/s"), the ones that fell back to a copy named as such.
    const auto page = shown_part(html::render_report_page(read_report((k_src / "reports/h200x1-frameworks.json").string())));
    CHECK(page.find("TB/s") == std::string::npos);
    CHECK(page.find("<b>fell back to a copy</b>") != std::string::npos);
    CHECK(page.find("</title>fallback: torch numba 64MiB</text>") != std::string::npos);
    CHECK(page.find("torch numba dlpack") != std::string::npos);
    CHECK(page.find("Refused: numba.cuda has no from_dlpack; through host memory") != std::string::npos);
}

TEST_CASE("html peer matrices: a colour scale that shows how far apart the cells are, skips by design on one line") {
    const auto page = html::render_report_page(read_report((k_src / "reports/h200x2-peer.json").string()));
    const auto shown = shown_part(page);
    // 370 to 397 GB/s: 7% apart, so no cell takes the scale's bottom colour.
    CHECK(shown.find("values 370.07 GB/s to 396.75 GB/s, 7.21% apart") != std::string::npos);
    CHECK(shown.find("fill=\"" + html::sequential_colour(0) + "\"><title>") == std::string::npos);
    // The 24 configurations of peer_bidir skipped because both directions run under 0>1: one line.
    CHECK(count(shown, "<td>skipped</td><td>peer_bidir</td>") == 1);
    CHECK(shown.find("<td>skipped</td><td>peer_bidir</td><td>pair=1&gt;0; over engine, mode, size (24)</td>") != std::string::npos);
    CHECK(shown.find("24 of 48 configuration(s) measured; 24 skipped: both directions are measured under pair 0&gt;1") != std::string::npos);
    CHECK(shown.find("1&gt;0: skipped: both directions are measured under pair 0&gt;1</title>") != std::string::npos);
}

TEST_CASE("html comparison page: one ratio orientation, above 1 better, colours are the verdicts") {
    const auto outcome = compare_reports(read_report((k_src / "reports/h200x2-ci-1.json").string()),
                                         read_report((k_src / "reports/h200x2-ci-2.json").string()), CompareOptions{});
    const auto page = shown_part(html::render_comparison_page(outcome));
    CHECK(page.find("Every ratio on this page: above 1 is better") != std::string::npos);
    CHECK(page.find("new / base") == std::string::npos);
    // A time that went up 36% regressed: its ratio is below 1, as its verdict says; one that
    // went down 32% improved: above 1.
    const auto row = [&](const std::string& start) {
        std::vector<std::string> cells;
        const auto at = page.find("<tr><td>" + start);
        if (at == std::string::npos) return cells;
        const std::string tr = page.substr(at, page.find("</tr>", at) - at);
        const std::regex td("<td[^>]*>([^<]*)</td>");
        for (auto it = std::sregex_iterator(tr.begin(), tr.end(), td); it != std::sregex_iterator(); ++it) cells.push_back((*it)[1]);
        return cells;
    };
    const auto regression = row("regression</td><td class=\"long\">alloc_device/allocator=sync,state=warm,size=1048576,device=0");
    REQUIRE(regression.size() == 8);
    CHECK(regression[2] == "pair_time, lower better");
    CHECK(std::stod(regression[5]) < 1);
    const auto improvement = row("improvement</td><td class=\"long\">alloc_host_pinned/method=host_register");
    REQUIRE(improvement.size() == 8);
    CHECK(std::stod(improvement[5]) > 1);
    // The alloc family's mean (1.031, better) is a neutral dot; its verdicts are listed in their colours.
    CHECK(page.find("r=\"5\" fill=\"#222\"><title>alloc (6 compared): geometric mean 1.03") != std::string::npos);
    CHECK(page.find("<tspan fill=\"#D55E00\" font-weight=\"bold\">1 regression</tspan>") != std::string::npos);
    CHECK(page.find("<tspan fill=\"#009E73\" font-weight=\"bold\">, 1 improvement</tspan>") != std::string::npos);
}

TEST_CASE("html fleet page: a row per machine, headers written across, the fleet embedded") {
    std::vector<std::string> files;
    for (const auto& dir : {k_src / "reports", k_src / "reports/h200x1-family-move"})
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".json" && e.path().filename().string().rfind("h200x2", 0) != 0 &&
                e.path().filename() != "report.schema.json")
                files.push_back(e.path().string());
    fleet::Options options;
    options.skip_unreadable = true;
    const auto outcome = fleet::analyse(files, options);
    const auto page = html::render_fleet_page(outcome);
    CHECK(count(page, "<script") == 1);
    CHECK(page.find("<script type=\"application/json\" id=\"interopbench-fleet\">") != std::string::npos);
    CHECK(page.find("writing-mode") == std::string::npos);
    CHECK(page.find("Content-Security-Policy") != std::string::npos);
    // Every machine once per table, however many GPUs or host-only results it has.
    std::size_t tables = 0;
    for (auto p = page.find("<table class=\"heat\">"); p != std::string::npos; p = page.find("<table class=\"heat\">", p + 1), ++tables) {
        const std::string table = page.substr(p, page.find("</table>", p) - p);
        CHECK(count(table, "<th class=\"col\"") <= 6);
        for (const auto& m : outcome.members) CHECK(count(table, "<th class=\"m\">" + html::escape(m.label) + "</th>") <= 1);
    }
    CHECK(tables >= 2);
}
