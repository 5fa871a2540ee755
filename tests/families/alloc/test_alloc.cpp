// Allocation scenarios: registration, axis expansion, skipping, and the arithmetic behind
// the reported overhead and break-even figures. Nothing here needs a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "interopbench/errors.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "families/alloc/alloc_kernels.hpp"
#include "families/alloc/alloc_model.hpp"
#include "families/builtin.hpp"
#include "../../test_support.hpp"

using namespace interopbench;

namespace {

Registry alloc_registry() {
    return builtin_registry({"alloc"});
}

Params params(const Registry& r, const std::string& id, std::map<std::string, std::string> overrides,
              const Machine& m) {
    std::map<std::string, std::vector<std::string>> axes;
    for (auto& [k, v] : overrides) axes[k] = {v};
    const auto configs = testing::expand(r, id, axes, m);
    REQUIRE(configs.size() == 1);
    return configs[0].params;
}

constexpr std::uint64_t k_gib = std::uint64_t{1} << 30;

} // namespace

TEST_CASE("alloc scenarios are registered with axes, defaults and metric units") {
    const Registry r = alloc_registry();
    const std::vector<std::string> ids = {"alloc_device", "alloc_concurrent", "alloc_host_pinned", "alloc_pipeline"};
    REQUIRE(r.all().size() == ids.size());
    const std::set<std::string> units = {"s", "B/s", "B", "ratio", "1"};
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const auto& info = r.all()[i]->info();
        CAPTURE(info.id);
        CHECK(info.id == ids[i]);
        CHECK(info.family == "alloc");
        CHECK(info.needs_gpu);
        CHECK(!info.summary.empty());
        CHECK(!info.counting.empty());
        bool has_device = false;
        for (const auto& a : info.axes) {
            CAPTURE(a.name);
            CHECK(!a.help.empty());
            has_device = has_device || (a.name == "device" && a.kind == AxisKind::device);
            if (a.kind == AxisKind::device) continue;
            REQUIRE(!a.defaults.empty());
            for (const auto& d : a.defaults) {
                if (a.kind == AxisKind::size) CHECK_NOTHROW(parse_size_list(d));
                if (a.kind == AxisKind::choice)
                    CHECK(std::find(a.choices.begin(), a.choices.end(), d) != a.choices.end());
                if (a.kind == AxisKind::integer) {
                    const auto v = parse_uint(d, a.name);
                    CHECK(v >= a.min_value);
                    CHECK(v <= a.max_value);
                }
            }
        }
        CHECK(has_device);
        REQUIRE(!info.metrics.empty());
        for (const auto& m : info.metrics) {
            CAPTURE(m.name);
            CHECK(units.count(m.unit) == 1);
            CHECK(!m.help.empty());
        }
    }
    // The built-in list carries them too.
    const Registry builtin = builtin_registry();
    for (const auto& id : ids) CHECK(builtin.find(id) != nullptr);
}

TEST_CASE("alloc axes expand into the documented configurations") {
    const Registry r = alloc_registry();
    Machine m; // no GPU: expansion still works, one default device
    SUBCASE("alloc_device: 4 allocators x 2 states x 5 sizes") {
        const auto c = testing::expand(r, "alloc_device", {}, m);
        CHECK(c.size() == 40);
        CHECK(c.front().params.canonical() == "allocator=sync,state=cold,size=256,device=0");
        CHECK(c.back().params.get("size") == std::to_string(k_gib));
    }
    SUBCASE("alloc_pipeline: the pool and shape axes") {
        const auto c = testing::expand(r, "alloc_pipeline", {{"temporaries", {"2,8"}}, {"steps", {"10"}}}, m);
        CHECK(c.size() == 2 * 2 * 3);
        for (const auto& cfg : c) CHECK(cfg.params.get("steps") == "10");
    }
    SUBCASE("an unknown allocator is a usage error naming the choices") {
        try {
            testing::expand(r, "alloc_device", {{"allocator", {"slab"}}}, m);
            FAIL("accepted");
        } catch (const UsageError& e) {
            CHECK(std::string(e.what()).find("slab") != std::string::npos);
            CHECK(e.hint().find("default_pool_keep") != std::string::npos);
        }
    }
    SUBCASE("counts outside an integer axis's range are usage errors") {
        CHECK_THROWS_AS(testing::expand(r, "alloc_pipeline", {{"temporaries", {"0"}}}, m), UsageError);
        CHECK_THROWS_AS(testing::expand(r, "alloc_pipeline", {{"steps", {"0"}}}, m), UsageError);
        CHECK_THROWS_AS(testing::expand(r, "alloc_concurrent", {{"streams", {"65"}}}, m), UsageError);
    }
}

TEST_CASE("without a GPU every alloc configuration is skipped with the reason") {
    const Registry r = alloc_registry();
    Machine m;
    m.cuda_available = false;
    m.cuda_note = "no NVIDIA driver found";
    const auto configs = testing::expand(r, "alloc_*", {}, m);
    REQUIRE(!configs.empty());
    for (const auto& c : configs) {
        CAPTURE(c.key());
        const auto why = c.scenario->unsupported(m, c.params);
        REQUIRE(why.has_value());
        CHECK(*why == "no NVIDIA driver found");
    }
    // And through the runner, as `run` sees it.
    Runner runner(m, RunSettings{});
    const Result res = runner.run_one(configs.front());
    CHECK(res.status == Status::skipped);
    CHECK(res.reason == "no NVIDIA driver found");
}

TEST_CASE("configurations that do not fit in free device memory are skipped with the reason") {
    const Registry r = alloc_registry();
    const Machine m = testing::fake_machine(1, k_gib);
    auto why = [&](const std::string& id, std::map<std::string, std::string> axes) {
        const Params p = params(r, id, std::move(axes), m);
        return r.find(id)->unsupported(m, p);
    };
    CHECK_FALSE(why("alloc_device", {{"allocator", "sync"}, {"state", "warm"}, {"size", "1G"}}));
    const auto big = why("alloc_device", {{"allocator", "sync"}, {"state", "warm"}, {"size", "2G"}});
    REQUIRE(big);
    CHECK(big->find("free") != std::string::npos);
    CHECK(big->find("2.00 GiB") != std::string::npos);

    // The pipeline needs six buffers of the size; the concurrent scenario four per stream.
    CHECK_FALSE(why("alloc_pipeline", {{"pool", "default_pool"}, {"size", "128M"}}));
    CHECK(why("alloc_pipeline", {{"pool", "default_pool"}, {"size", "256M"}}));
    CHECK_FALSE(why("alloc_concurrent", {{"allocator", "sync"}, {"size", "64M"}, {"streams", "4"}}));
    CHECK(why("alloc_concurrent", {{"allocator", "sync"}, {"size", "64M"}, {"streams", "5"}}));
    CHECK(why("alloc_host_pinned", {{"method", "host_alloc"}, {"size", "2G"}}));

    // Less than one float cannot be a temporary.
    const auto tiny = why("alloc_pipeline", {{"pool", "default_pool"}, {"size", "2"}});
    REQUIRE(tiny);
    CHECK(tiny->find("float") != std::string::npos);
}

TEST_CASE("pipeline overhead arithmetic on known timings") {
    SUBCASE("the seed's case: nine tenths of the synchronous run is allocation") {
        const PipelineOverhead o = pipeline_overhead({1.0, 0.2, 0.1});
        CHECK(o.fraction_sync == doctest::Approx(0.9));
        CHECK(o.fraction_pool == doctest::Approx(0.5));
        CHECK(o.speedup == doctest::Approx(5.0));
    }
    SUBCASE("no overhead") {
        const PipelineOverhead o = pipeline_overhead({0.3, 0.3, 0.3});
        CHECK(o.fraction_sync == 0.0);
        CHECK(o.fraction_pool == 0.0);
        CHECK(o.speedup == 1.0);
    }
    SUBCASE("noise below the preallocated run is reported, not hidden") {
        CHECK(pipeline_overhead({0.5, 0.099, 0.1}).fraction_pool < 0);
    }
    SUBCASE("no time measured gives no figure") {
        const PipelineOverhead o = pipeline_overhead({0.0, 0.0, 0.1});
        CHECK(std::isnan(o.fraction_sync));
        CHECK(std::isnan(o.fraction_pool));
        CHECK(std::isnan(o.speedup));
    }
}

TEST_CASE("pinning break-even and time per GiB") {
    // 1 ms to pin; 10 GB/s pageable vs 50 GB/s pinned saves 0.08 ns per byte.
    CHECK(pinning_break_even_bytes(1e-3, 10e9, 50e9) == doctest::Approx(1.25e7));
    CHECK(pinning_break_even_bytes(0.0, 10e9, 50e9) == 0.0);
    CHECK(std::isnan(pinning_break_even_bytes(1e-3, 50e9, 50e9))); // never pays off
    CHECK(std::isnan(pinning_break_even_bytes(1e-3, 50e9, 10e9)));
    CHECK(std::isnan(pinning_break_even_bytes(1e-3, 0.0, 10e9)));
    CHECK(per_gib(0.5, k_gib / 2) == doctest::Approx(1.0));
    CHECK(per_gib(1e-3, 64 << 10) == doctest::Approx(1e-3 * 16384));
}

TEST_CASE("allocator names and memory needs") {
    for (auto k : {AllocatorKind::sync, AllocatorKind::default_pool, AllocatorKind::default_pool_keep,
                   AllocatorKind::own_pool})
        CHECK(parse_allocator(to_string(k)) == k);
    CHECK_FALSE(uses_pool(AllocatorKind::sync));
    CHECK(uses_pool(AllocatorKind::own_pool));
    CHECK_THROWS_AS(parse_allocator("cudaMalloc"), UsageError);
    CHECK(pipeline_device_bytes(k_gib) == 6 * k_gib);
    CHECK(concurrent_device_bytes(k_gib, 4) == 16 * k_gib);
    // A size far beyond any device stays beyond it instead of wrapping around.
    CHECK(concurrent_device_bytes(std::uint64_t{1} << 62, 64) == std::numeric_limits<std::uint64_t>::max());
    CHECK(pipeline_device_bytes(std::numeric_limits<std::uint64_t>::max() / 2) ==
          std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("host twins of the per-element kernel functions") {
    // x -> 0.75x + 0.25 eight times from 0 is 1 - 0.75^8, exact in float.
    CHECK(kernels::work_value(0.0f) == 1.0f - 6561.0f / 65536.0f);
    CHECK(kernels::work_value(1.0f) == 1.0f);
    CHECK(kernels::pipeline_value(1.0f, 1.0f, 1.0f) == 1.0f);
    CHECK(kernels::pipeline_value(0.5f, 1.5f, 0.25f) == 0.5f);
}
