// Pipeline family without a GPU: the .npy header writer and reader (round trip, every kind of
// damage named with the file and the byte), the dataset files and their values, the host
// conversion and consumer reference, the bad inputs of the issue (batch larger than the
// dataset, zero batches, device memory on a fake machine, storage directories), the GPU
// variants skipped with the reason, the after-run speedup, efficiency and diagnosis, and the
// table printing the diagnosis.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "families/builtin.hpp"
#include "families/pipeline/dataset.hpp"
#include "families/pipeline/npy.hpp"
#include "families/pipeline/pipeline.hpp"
#include "hostio/storage_io.hpp"
#include "interopbench/errors.hpp"
#include "presentation/formats.hpp"
#include "presentation/output.hpp"
#include "interopbench/runner.hpp"
#include "../../test_support.hpp"

using namespace interopbench;
using namespace interopbench::pipeline;
namespace fs = std::filesystem;

namespace {

/// Writes `bytes` to the file `name` in `dir` and returns its path.
std::string write_file(const fs::path& dir, const std::string& name, const std::string& bytes) {
    const std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
}

/// The pipeline family's scenarios on a site in `dir` (the default site without one).
Registry pipeline_registry(const std::string& dir = {}) {
    FamilyOptions options;
    if (!dir.empty()) options.set_texts("storage-dir", {dir});
    return builtin_registry({"pipeline"}, options);
}

Result fake_result(const std::string& scenario, std::vector<std::pair<std::string, std::string>> params,
                   std::map<std::string, double> medians) {
    Result r;
    r.scenario = scenario;
    r.key = scenario + "/x";
    r.params = Params(params);
    for (const auto& [name, v] : medians) {
        MetricResult m;
        m.info.name = name;
        m.stats.n = 5;
        m.stats.median = v;
        r.metrics.push_back(m);
    }
    return r;
}

} // namespace

TEST_CASE("pipeline: .npy headers round trip and start the data at a multiple of 64") {
    for (ColType t : {ColType::f32, ColType::i64, ColType::f16, ColType::i8}) {
        for (std::uint64_t n : {1ull, 1000ull, 123456789012ull}) {
            const std::string h = npy_header(t, n);
            CHECK(h.size() % 64 == 0);
            CHECK(h.substr(0, 6) == "\x93NUMPY");
            CHECK(h.back() == '\n');
            const NpyHeader got = parse_npy_header(h, "x.npy");
            CHECK(got.type == t);
            CHECK(got.length == n);
            CHECK(got.data_offset == h.size());
        }
    }
    // What NumPy itself writes (version 1.0, '<f4', a shape with a trailing comma) is read.
    std::string np = std::string("\x93NUMPY\x01\x00", 8);
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    dict.append(128 - 10 - dict.size() - 1, ' ');
    dict += "\n";
    np += std::string(1, static_cast<char>(dict.size())) + std::string(1, '\0') + dict;
    const NpyHeader h = parse_npy_header(np, "numpy.npy");
    CHECK(h.length == 3);
    CHECK(h.data_offset == 128);
}

TEST_CASE("pipeline: a damaged .npy header is an error naming the file and the byte") {
    testing::ScratchDir s("pipeline");
    const std::string good = npy_header(ColType::i64, 10);
    auto fails_with = [&](std::string bytes, const std::string& what, std::uint64_t byte) {
        const std::string path = write_file(s.dir, "bad.npy", bytes);
        CAPTURE(what);
        try {
            read_npy_header(path);
            FAIL("no error");
        } catch (const ConfigError& e) {
            const std::string msg = e.what();
            CAPTURE(msg);
            CHECK(msg.find(path) != std::string::npos);
            CHECK(msg.find(fmt::format("byte {}:", byte)) != std::string::npos);
            CHECK(msg.find(what) != std::string::npos);
        }
    };
    std::string b = good + std::string(80, '\0');
    fails_with("PK\x03\x04 a zip file", "not an .npy file", 0);
    b = good + std::string(80, '\0');
    b[6] = 9;
    fails_with(b, "unsupported .npy version 9", 6);
    fails_with(good.substr(0, 30), "the file ends inside the header", 30);
    b = good + std::string(80, '\0');
    b.replace(b.find("<i8"), 3, "<c8");
    fails_with(b, "descr '<c8'", good.find("'<i8'"));
    b = good + std::string(80, '\0');
    b.replace(b.find("False"), 5, "True,");
    fails_with(b, "fortran_order must be False", good.find("False"));
    b = good + std::string(80, '\0');
    b.replace(b.find("(10,)"), 5, "(2,5)");
    fails_with(b, "only one-dimensional", good.find("(10,)") + 3);
    b = good + std::string(80, '\0');
    b.replace(b.find("'shape'"), 7, "'shapo'");
    fails_with(b, "no 'shape' entry", 10);
    fails_with(good + std::string(8 * 9, '\0'), "the file is truncated", good.size() + 72);
    CHECK_THROWS_WITH_AS(read_npy_header((s.dir / "missing.npy").string()), doctest::Contains("cannot open"), ConfigError);
}

TEST_CASE("pipeline: half floats, the casts and the host reference agree with the dataset files") {
    for (float f : {0.0f, 1.0f, -2.5f, 31.984375f, -32.0f, 0.015625f, 1e-5f})
        CHECK(half_to_float(float_to_half(f)) == doctest::Approx(f).epsilon(1e-3));
    CHECK(half_to_float(0x3c00) == 1.0f);
    CHECK(half_to_float(0xc000) == -2.0f);
    CHECK(file_row_bytes() == 30);
    CHECK(matrix_row_bytes() == 32);

    testing::ScratchDir s("pipeline");
    const std::uint64_t rows = 5000;
    {
        auto sets = std::make_unique<Datasets>(std::make_shared<storage::Site>(std::vector<std::string>{s.dir.string()}));
        auto ds = sets->get(rows);
        REQUIRE(ds->paths().size() == columns().size());
        // Read every column file back through the reader and the host conversion, batch by
        // batch, and consume: the result equals the reference computed from the generator.
        const std::uint64_t batch = 1777;
        double total = 0;
        for (std::uint64_t r0 = 0; r0 < rows; r0 += batch) {
            const std::uint64_t n = std::min(batch, rows - r0);
            const SoaBatch lay = soa_batch_layout(n);
            std::vector<unsigned char> buf(lay.bytes);
            for (std::size_t c = 0; c < columns().size(); ++c) {
                const NpyHeader h = read_npy_header(ds->paths()[c]);
                CHECK(h.type == columns()[c]);
                CHECK(h.length == rows);
                std::ifstream in(ds->paths()[c], std::ios::binary);
                in.seekg(static_cast<std::streamoff>(h.data_offset + r0 * col_width(h.type)));
                in.read(reinterpret_cast<char*>(buf.data() + lay.offsets[c]), static_cast<std::streamsize>(n * col_width(h.type)));
                REQUIRE(in.good());
            }
            std::vector<unsigned char> gen(lay.bytes);
            fill_batch(gen.data(), lay, r0, n);
            for (std::size_t c = 0; c < columns().size(); ++c)
                CHECK(std::memcmp(buf.data() + lay.offsets[c], gen.data() + lay.offsets[c], n * col_width(columns()[c])) == 0);
            std::vector<float> mat(n * columns().size());
            convert_host(buf.data(), lay, n, mat.data());
            for (std::uint64_t r = 0; r < n; r += 97)
                for (std::size_t c = 0; c < columns().size(); ++c) CHECK(mat[r * columns().size() + c] == value_float(c, r0 + r));
            total += consume_host(mat.data(), n, columns().size());
        }
        double abs_sum = 0;
        const double ref = reference_sum(rows, &abs_sum);
        CHECK(abs_sum > 0);
        CHECK(std::fabs(total - ref) <= 1e-9 * abs_sum);
        // Every type really occurs with both signs (no column of zeros).
        for (std::size_t c = 0; c < columns().size(); ++c) {
            bool neg = false, pos = false;
            for (std::uint64_t r = 0; r < 200; ++r) (value_float(c, r) < 0 ? neg : pos) = true;
            CHECK((neg && pos));
        }
        // The files are guarded: removed when the dataset is forgotten (no --keep-files).
        sets.reset();
        ds.reset();
    }
    for (std::size_t c = 0; c < columns().size(); ++c) CHECK(!fs::exists(s.dir / Dataset::file_name(rows, c)));
}

TEST_CASE("pipeline: kept dataset files are reused / a damaged kept file is an error naming it") {
    testing::ScratchDir s("pipeline");
    // Each Datasets is one run's: a kept dataset is found by the next.
    const auto next_run = [&] { return Datasets(std::make_shared<storage::Site>(std::vector<std::string>{s.dir.string()}, true)); };
    { CHECK(!next_run().get(1000)->reused()); }
    { CHECK(next_run().get(1000)->reused()); }
    const fs::path f = s.dir / Dataset::file_name(1000, 2);
    {
        std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
        io.seekp(20);
        io.write("<x9", 3);
    }
    CHECK_THROWS_WITH_AS(next_run().get(1000), doctest::Contains(f.string().c_str()), ConfigError);
}

TEST_CASE("pipeline: batch larger than the dataset and zero batches are usage errors before measuring") {
    const Registry r = pipeline_registry();
    const Machine m = testing::fake_machine(1, 80ull << 30);
    CHECK_THROWS_WITH_AS(site_bytes(testing::expand(r, "pipeline", {{"dataset", {"1M"}}, {"batch", {"2M"}}}, m)),
                         doctest::Contains("larger than the dataset"), UsageError);
    CHECK_THROWS_WITH_AS(site_bytes(testing::expand(r, "pipeline", {{"dataset", {"16"}}, {"batch", {"16"}}}, m)),
                         doctest::Contains("zero batches"), UsageError);
    CHECK_THROWS_WITH_AS(site_bytes(testing::expand(r, "pipeline", {{"dataset", {"1M"}}, {"batch", {"8"}}}, m)),
                         doctest::Contains("zero batches"), UsageError);
    CHECK_THROWS_AS(geometry(0, 0), UsageError);
    const Geometry g = geometry(1000 * 30 + 7, 300 * 30);
    CHECK(g.rows == 1000);
    CHECK(g.batch_rows == 300);
    CHECK(g.batches == 4);
    CHECK(!site_bytes(testing::expand(r, "pipeline_convert", {}, m)));
    const auto bytes = site_bytes(testing::expand(r, "pipeline", {{"variant", {"naive", "tuned"}}, {"dataset", {"300K"}}, {"batch", {"30K"}}}, m));
    REQUIRE(bytes);
    CHECK(*bytes >= (300 * 1024 / 30) * 30); // one dataset for both variants
    CHECK(*bytes < 2 * 300 * 1024);
    CHECK_THROWS_AS(parse_variant("fast"), UsageError);
}

TEST_CASE("pipeline: a configuration that does not fit in free device memory is skipped with the memory needed") {
    const Registry r = pipeline_registry();
    const Machine m = testing::fake_machine(1, 64ull << 20);
    const auto configs = testing::expand(r, "pipeline", {{"variant", {"naive", "tuned"}}, {"cache", {"warm"}}, {"dataset", {"4G"}}, {"batch", {"1G"}}}, m);
    REQUIRE(configs.size() == 2);
    for (const Config& c : configs) {
        const auto why = c.scenario->unsupported(m, c.params);
        REQUIRE(why);
        CHECK(why->find("device memory") != std::string::npos);
        CHECK(why->find("64MiB free") != std::string::npos);
        CHECK(why->find(format_size(device_bytes_needed(parse_variant(c.params.get("variant")),
                                                        geometry(4ull << 30, 1ull << 30)))) != std::string::npos);
    }
    // tuned holds three slots but no handoff copy and no host matrix.
    const Geometry g = geometry(4ull << 30, 1ull << 30);
    CHECK(device_bytes_needed(parse_variant("tuned"), g) > device_bytes_needed(parse_variant("naive"), g));
    CHECK(host_bytes_needed(parse_variant("+gpu_convert"), g) < host_bytes_needed(parse_variant("naive"), g));
}

TEST_CASE("pipeline: without a GPU every configuration is skipped with the reason") {
    const Registry r = pipeline_registry();
    Machine m;
    m.cuda_note = "no NVIDIA driver";
    for (const Config& c : testing::expand(r, "pipeline*", {{"variant", variant_names()}}, m)) {
        const auto why = c.scenario->unsupported(m, c.params);
        REQUIRE(why);
        CHECK(*why == "no NVIDIA driver");
    }
}

TEST_CASE("pipeline: bad storage directories are usage errors before measuring, with a pipeline configuration alone") {
    testing::ScratchDir s("pipeline");
    const Machine m = testing::fake_machine(1, 80ull << 30);
    const RunSettings set;
    const auto refused = [&](const std::string& dir, const char* dataset, const char* what) {
        const Registry r = pipeline_registry(dir);
        CHECK_THROWS_WITH_AS(builtin_families().preflight(set, testing::expand(r, "pipeline", {{"dataset", {dataset}}, {"batch", {"1M"}}}, m)),
                             doctest::Contains(what), UsageError);
    };
    refused((s.dir / "missing").string(), "1G", "does not exist");
    std::ofstream(s.dir / "file") << "x";
    refused((s.dir / "file").string(), "1G", "is not a directory");
    refused(s.dir.string(), "1000T", "free but");
    const Registry r = pipeline_registry(s.dir.string());
    const auto configs = testing::expand(r, "pipeline", {}, m);
    builtin_families().preflight(set, configs);
    CHECK(storage::site_of(configs).dir() == s.dir.string());
}

TEST_CASE("pipeline: after the run, speedup over naive, efficiency against the slowest standalone stage, the finding") {
    const std::vector<std::pair<std::string, std::string>> common{{"cache", "warm"}, {"dataset", "1073741824"}, {"batch", "67108864"}, {"device", "0"}};
    auto pipe = [&](const std::string& variant, double tp, double alloc_share, double read_share) {
        auto p = common;
        p.insert(p.begin(), {"variant", variant});
        return fake_result("pipeline", p, {{"throughput", tp}, {"time", 1.07e9 / tp}, {"alloc_share", alloc_share},
                                           {"read_share", read_share}, {"overlap", 1.0}});
    };
    std::vector<Result> results{pipe("naive", 1e9, 0.6, 0.2), pipe("+pinned", 1.5e9, 0.5, 0.3), pipe("+pool", 2.5e9, 0.05, 0.5),
                                pipe("tuned", 9e9, 0.01, 0.9)};
    builtin_families().find("pipeline")->annotate(results);
    CHECK(results[0].details["speedup_over_naive"].get<double>() == doctest::Approx(1.0));
    CHECK(results[3].details["speedup_over_naive"].get<double>() == doctest::Approx(9.0));
    CHECK(results[3].details["standalone_bound"].contains("note"));
    // One finding for the cache state, dataset, batch and GPU, on each of its configurations:
    // naive's bound, the best single fix, tuned's speedup and bound; in words and as numbers.
    const nlohmann::json& f = results[0].details["finding"];
    for (const auto& r : results) CHECK(r.details["finding"] == f);
    CHECK(f["text"] == "naive is alloc-bound (60% of its pass); best single fix +pool 2.50x; tuned 9.00x (9.00 GB/s), "
                       "read-bound (90% of its pass)");
    CHECK(f["scope"] == nlohmann::json{{"cache", "warm"}, {"dataset", "1073741824"}, {"batch", "67108864"}, {"device", "0"}});
    CHECK(f["naive"]["bound"] == "alloc");
    CHECK(f["best_fix"]["variant"] == "+pool");
    CHECK(f["best_fix"]["speedup"].get<double>() == doctest::Approx(2.5));
    CHECK(f["tuned"]["speedup"].get<double>() == doctest::Approx(9.0));
    CHECK(f["tuned"]["bound"] == "read");
    CHECK(!f["tuned"].contains("of_slowest_stage"));
    // A configuration's own diagnosis only where it has something of its own to say: nothing
    // here beyond the finding.
    for (const auto& r : results) CHECK(!r.details.contains("diagnosis"));

    // The read bound is the pipeline's own read alone: a storage_read, or a pipeline_read of
    // another dataset, is another workload. No efficiency against them, and the note says
    // which read is missing.
    results.push_back(fake_result("storage_read", {{"size", "1073741824"}, {"path", "buffered"}, {"cache", "warm"}, {"chunk", "16777216"}, {"threads", "1"}, {"qd", "0"}},
                                  {{"bandwidth", 5e9}}));
    auto read = [&](const std::string& dataset, const std::string& host_mem, const std::string& threads, double bw) {
        return fake_result("pipeline_read",
                           {{"cache", "warm"}, {"dataset", dataset}, {"batch", "67108864"}, {"host_mem", host_mem}, {"threads", threads}},
                           {{"bandwidth", bw}});
    };
    results.push_back(read("268435456", "pinned", "8", 50e9));
    results.push_back(fake_result("h2d_copy", {{"size", "67108864"}, {"host_mem", "pinned"}, {"engine", "ce"}, {"device", "0"}}, {{"bandwidth", 55e9}}));
    results.push_back(fake_result("pipeline_convert", {{"batch", "67108864"}, {"device", "0"}}, {{"bandwidth", 400e9}}));
    builtin_families().find("pipeline")->annotate(results);
    REQUIRE(results[3].details["measured_limits"].size() == 1); // the conversion kernel's only
    CHECK(results[3].details["measured_limits"][0]["path"] == "gpu_memory:0");
    CHECK(results[3].details["standalone_bound"]["note"].get<std::string>().find("pipeline_read of this dataset, batch and cache state") != std::string::npos);
    CHECK(results[3].details["finding"]["text"].get<std::string>().find("slowest stage") == std::string::npos);

    // The read ceiling is the best pipeline_read of the same dataset over the thread counts and
    // staging kinds measured, never the one-thread read when more readers read faster: every
    // variant, naive included, is measured against it. A variant that reads on many threads is
    // measured only against a read on as many (threads 0, the same automatic count): the
    // 8-thread read bounds naive, not tuned, until the automatic one is there.
    results.push_back(read("1073741824", "pageable", "1", 6e9));
    results.push_back(read("1073741824", "pinned", "8", 10e9));
    builtin_families().find("pipeline")->annotate(results);
    CHECK(results[0].details["measured_limits"][0]["path"] == "page_cache");
    CHECK(results[0].details["measured_limits"][0]["bandwidth"].get<double>() == doctest::Approx(10e9));
    CHECK(results[3].details["standalone_bound"].contains("note"));
    results.push_back(read("1073741824", "pinned", "0", 10e9));
    builtin_families().find("pipeline")->annotate(results);
    CHECK(results[3].details["measured_limits"][0]["bandwidth"].get<double>() == doctest::Approx(10e9));
    CHECK(results[3].details["standalone_bound"]["stage"] == "pipeline_read");
    CHECK(results[3].details["standalone_bound"]["pipeline_read"]["threads"] == "0");
    const std::string t = results[3].details["finding"]["text"];
    CHECK(t.find("tuned 9.00x (9.00 GB/s), read-bound (90% of its pass), at 90% of its slowest stage alone (pipeline_read "
                 "10.00 GB/s)") != std::string::npos);
    CHECK(results[3].details["finding"]["tuned"]["of_slowest_stage"].get<double>() == doctest::Approx(0.9));

    // A pass whose read is the largest stage while pipeline_read shows the machine reads
    // faster names more readers as the fix.
    auto p = common;
    p.insert(p.begin(), {"variant", "+pinned"});
    Result slow = fake_result("pipeline", p, {{"throughput", 1.5e9}, {"time", 0.7}, {"read_share", 0.8}, {"alloc_share", 0.1},
                                              {"read_time", 0.5}, {"overlap", 1.0}}); // read at 2 GB/s
    slow.details["file_bytes"] = 1.0e9;
    std::vector<Result> two{slow, read("1073741824", "pinned", "8", 10e9)};
    builtin_families().find("pipeline")->annotate(two);
    const std::string fix = two[0].details["diagnosis"];
    CAPTURE(fix);
    CHECK(fix.find("pipeline_read with 8 thread(s) reaches 10.00 GB/s, this pass read at 2.00 GB/s (the fix: +parallel_read)") !=
          std::string::npos);

    // The table prints the finding once under it (wrapped to the width; whole with no width
    // limit), and each distinct diagnosis once; the summary states the finding in its line.
    for (auto& r : results) r.status = Status::ok;
    TableStyle unlimited;
    unlimited.width = 0;
    const std::string table = render_results(results, find_format("table", Command::show), unlimited);
    CAPTURE(table);
    CHECK(table.find("  all: " + t + "\n") != std::string::npos);
    CHECK(table.find(t) == table.rfind(t));
    CHECK(render_results(results, find_format("markdown", Command::show)).find("- `all`: " + t) != std::string::npos);
    const auto lines = summary_lines(results);
    CHECK(std::count(lines.begin(), lines.end(), fmt::format("{:<9} {}", "pipeline", t)) == 1);
}

TEST_CASE("pipeline: the h200 report's finding in one summary line, each distinct finding and diagnosis once under the table") {
    Report report = read_report(INTEROPBENCH_SOURCE_DIR "/reports/h200x1-pipeline-ad09f1b.json");
    limit_report(report); // annotated again as show does
    const auto lines = summary_lines(report.results);
    std::vector<std::string> pipeline;
    for (const auto& l : lines)
        if (l.rfind("pipeline ", 0) == 0) pipeline.push_back(l);
    REQUIRE(pipeline.size() == 1);
    CAPTURE(pipeline[0]);
    // The finding of the most configurations (cold and warm 1 GiB in 64 MiB batches, seven
    // variants each; warm has the better figure) names its group, since the run found other
    // things for its other groups.
    CHECK(pipeline[0].find("pipeline  warm 1GiB 64MiB: naive is convert-bound (82% of its pass); best single fix "
                           "+gpu_convert 6.07x; tuned 10.30x (5.29 GB/s), read-bound (99% of its pass)") == 0);
    CHECK(pipeline[0].find("(3 more findings under the tables)") != std::string::npos);
    TableStyle style;
    style.width = 100;
    const std::string text = render_results(report.results, find_format("table", Command::show), style);
    CAPTURE(text);
    // Four groups, four findings, each once, named by its group.
    for (const char* scope : {"  cold 1GiB 64MiB: naive is convert-bound", "  warm 1GiB 64MiB: naive is convert-bound",
                              "  warm 256MiB 64KiB: naive is", "  warm 256MiB 1MiB: naive is"})
        CHECK(text.find(scope) != std::string::npos);
    CHECK(text.find("best single fix +gpu_convert 6.07x") == text.rfind("best single fix +gpu_convert 6.07x"));
    CHECK(text.find("gives") == std::string::npos); // no sentence per configuration repeats the group's
}

TEST_CASE("pipeline: the registered cache: warm only, the host link alone, its cost paid back, and named where it would help") {
    const Variant v = parse_variant("+registered_cache");
    CHECK(v.registered_cache);
    CHECK(v.gpu_convert); // the host never holds the bytes: the conversion runs on the GPU
    CHECK(!v.pinned);
    CHECK(parse_variant("tuned").registered_cache);
    const Registry r = pipeline_registry();
    const Scenario* pipe = r.find("pipeline");
    REQUIRE(pipe);
    const Machine m = testing::fake_machine(1, 80ull << 30);
    const auto params = [&](const char* variant, const char* cache) {
        const auto configs = testing::expand(r, "pipeline", {{"variant", {variant}}, {"cache", {cache}}, {"dataset", {"1G"}}, {"batch", {"64M"}}}, m);
        REQUIRE(configs.size() == 1);
        return configs.front().params;
    };
    const auto why = pipe->unsupported(m, params("+registered_cache", "cold"));
    REQUIRE(why);
    CHECK(why->find("warm only") != std::string::npos);
    // Warm, registered: read by the copy engine, so no page-cache path; cold tuned reads the drive.
    const auto has = [](const std::vector<PathUse>& paths, PathKind k) {
        return std::any_of(paths.begin(), paths.end(), [k](const PathUse& p) { return p.kind == k; });
    };
    CHECK(!has(pipe->paths(params("tuned", "warm")), PathKind::page_cache));
    CHECK(has(pipe->paths(params("tuned", "warm")), PathKind::host_link));
    CHECK(has(pipe->paths(params("tuned", "cold")), PathKind::storage));
    CHECK(has(pipe->paths(params("+gpu_convert", "warm")), PathKind::page_cache));

    const std::vector<std::pair<std::string, std::string>> common{{"cache", "warm"}, {"dataset", "1073741824"}, {"batch", "67108864"}, {"device", "0"}};
    auto pass = [&](const std::string& variant, double time, double read_share, double read_time) {
        auto p = common;
        p.insert(p.begin(), {"variant", variant});
        Result res = fake_result("pipeline", p, {{"throughput", 1e9 / time}, {"time", time}, {"read_share", read_share},
                                                 {"read_time", read_time}, {"overlap", 1.0}});
        res.details["file_bytes"] = 1.0e9;
        res.details["fixes"] = {{"registered_cache", variant == "+registered_cache"}};
        return res;
    };
    std::vector<Result> results{pass("+gpu_convert", 0.05, 0.8, 0.04), pass("+registered_cache", 0.02, 0.0, 0.0)};
    results[1].details["register_s"] = 0.09;
    results.push_back(fake_result("h2d_copy", {{"size", "67108864"}, {"host_mem", "pinned"}, {"engine", "ce"}, {"device", "0"}}, {{"bandwidth", 50e9}}));
    results.push_back(fake_result("pipeline_convert", {{"batch", "67108864"}, {"device", "0"}}, {{"bandwidth", 400e9}}));
    results.push_back(fake_result("pipeline_read", {{"cache", "warm"}, {"dataset", "1073741824"}, {"batch", "67108864"}, {"host_mem", "pinned"}, {"threads", "1"}}, {{"bandwidth", 25e9}}));
    builtin_families().find("pipeline")->annotate(results);
    // 0.09 s once against 0.03 s saved per pass: three passes.
    CHECK(results[1].details["break_even_passes"].get<double>() == doctest::Approx(3.0));
    CHECK(results[1].details["standalone_bound"]["stage"] == "h2d_copy"); // the read is no stage of it
    for (const auto& l : results[1].details["measured_limits"]) CHECK(l["path"] != "page_cache");
    const std::string d = results[0].details["diagnosis"];
    CAPTURE(d);
    CHECK(d.find("registering the cached dataset would remove the host read and copy (+registered_cache): pass bound 0.04 s -> 0.02 s") !=
          std::string::npos);
}

TEST_CASE("pipeline: pipeline_read reads the column files without a GPU, cold and warm, and checks the bytes") {
    testing::ScratchDir s("pipeline");
    const Registry r = pipeline_registry(s.dir.string());
    Machine m;
    m.cuda_note = "no NVIDIA driver";
    RunSettings set;
    set.warmup = 0;
    set.min_samples = 2;
    set.max_samples = 2;
    set.max_time_s = 5;
    set.options.set_text("storage-dir", s.dir.string());
    const auto configs = testing::expand(r, "pipeline_read", {{"cache", {"cold", "warm"}}, {"dataset", {"300K"}}, {"batch", {"64K"}}, {"host_mem", {"pageable", "pinned"}}}, m);
    REQUIRE(configs.size() == 4);
    const auto bytes = site_bytes(configs);
    REQUIRE(bytes);
    CHECK(*bytes >= (300 * 1024 / 30) * 30);
    builtin_families().preflight(set, configs);
    Runner runner(m, set);
    int measured = 0;
    for (const Config& c : configs) {
        const Result res = runner.run_one(c);
        INFO(res.key << ": " << res.reason);
        if (c.params.get("host_mem") == "pinned") {
            CHECK(res.status == Status::skipped);
            CHECK(res.reason == "no NVIDIA driver");
            continue;
        }
        if (res.status == Status::skipped && res.reason.find("cold cannot") != std::string::npos) continue; // this directory
        REQUIRE(res.status == Status::ok);
        ++measured;
        const MetricResult* bw = res.metric("bandwidth");
        REQUIRE(bw);
        CHECK(bw->stats.median > 0);
        CHECK(res.details["batches"] == 5);
        CHECK(res.details["path"].get<std::string>().find("pageable host staging") != std::string::npos);
        if (c.params.get("cache") == "warm") CHECK(res.metric("resident_before")->stats.median == 1.0);
        else CHECK(res.metric("resident_before")->stats.median == 0.0);
    }
    CHECK(measured >= 1);
}

TEST_CASE("pipeline: the command line refuses a batch larger than the dataset and zero batches with exit 2") {
    testing::ScratchDir s("pipeline");
    auto run = [&](const std::string& args) {
        const std::string err = (s.dir / "err.txt").string();
        const std::string cmd = std::string(INTEROPBENCH_BINARY) + " run -s pipeline --no-topology --storage-dir '" +
                                s.dir.string() + "' " + args + " >/dev/null 2>'" + err + "'";
        const int rc = interopbench::testing::run_shell(cmd);
        std::ifstream in(err);
        std::string text((std::istreambuf_iterator<char>(in)), {});
        return std::make_pair(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text);
    };
    auto [rc1, e1] = run("-a dataset=1M -a batch=2M");
    CHECK(rc1 == 2);
    CHECK(e1.find("batch 2MiB is larger than the dataset 1MiB") != std::string::npos);
    auto [rc2, e2] = run("-a dataset=1M -a batch=16");
    CHECK(rc2 == 2);
    CHECK(e2.find("zero batches") != std::string::npos);
    auto [rc3, e3] = run("-a variant=fast");
    CHECK(rc3 == 2);
}

TEST_CASE("pipeline: a kept column damaged in its middle is found before reuse and made again") {
    testing::ScratchDir s("pipeline");
    const std::vector<std::string> dirs{s.dir.string()};
    const std::uint64_t rows = 3u << 20; // more than one check chunk of rows
    {
        Dataset first(dirs, dirs, rows, true);
        CHECK_FALSE(first.reused());
    }
    {
        Dataset again(dirs, dirs, rows, true);
        CHECK(again.reused());
        CHECK(again.notes().empty());
        // Damage column 0 in its second million rows: a check of the header or of one batch
        // would not see it.
        std::fstream f(again.paths()[0], std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(again.headers()[0].data_offset + (3u << 19) * col_width(columns()[0])));
        f.write("\xff\xff\xff\xff", 4);
    }
    Dataset repaired(dirs, dirs, rows, true);
    CHECK_FALSE(repaired.reused());
    REQUIRE(repaired.notes().size() == 1);
    CHECK(repaired.notes()[0].find("differed from the generator's values") != std::string::npos);
    Dataset checked(dirs, dirs, rows, true);
    CHECK(checked.reused());
}
