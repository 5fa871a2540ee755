// The copy family's host side, and the multi-threaded host routines at awkward sizes: one
// more than a multiple of the split, primes, a single byte, with thread counts that do not
// divide them.
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "../../fake_scenario.hpp"
#include "../../test_support.hpp"
#include "families/builtin.hpp"
#include "gpu/convert.hpp"
#include "interopbench/runner.hpp"

using namespace interopbench;

namespace {

const std::vector<std::uint64_t> k_odd_sizes{1, 7, 63, 65, 127, 129, 257, 4097, 65537, 1048577, 1000003};

RunSettings fast() { return testing::sampling(0, 1, 1, 1, 0.0005); }

} // namespace

TEST_CASE("host_memcpy copies every byte at odd sizes with any number of threads") {
    const Registry r = builtin_registry({"copy"});
    for (unsigned cores : {2u, 3u, 7u, 64u}) {
        CAPTURE(cores);
        Machine m;
        m.host_cores = cores;
        RunPlan plan;
        std::string sizes;
        for (auto s : k_odd_sizes) sizes += (sizes.empty() ? "" : ",") + std::to_string(s);
        plan.entries = {{"host_memcpy", {{"size", {sizes}}, {"threads", {"multi"}}}}};
        plan.settings = fast();
        const auto results = testing::run_plan(r, plan, m);
        REQUIRE(results.size() == k_odd_sizes.size());
        for (const auto& res : results) {
            CAPTURE(res.key);
            CHECK(res.status == Status::ok);
            CHECK(res.reason == "");
        }
    }
}

TEST_CASE("a host size beyond memory is skipped with the memory needed, never allocated") {
    const Registry r = builtin_registry({"copy"});
    Machine m;
    RunPlan plan;
    plan.entries = {{"host_memcpy", {{"size", {"4K,18446744073709551615"}}, {"threads", {"single"}}}}};
    plan.settings = fast();
    const auto results = testing::run_plan(r, plan, m);
    REQUIRE(results.size() == 2);
    CHECK(results[0].status == Status::ok);
    CHECK(results[1].status == Status::skipped);
    CHECK(results[1].reason.find("of host memory") != std::string::npos);
}

TEST_CASE("parallel host copies and fills are exact at odd sizes and thread counts") {
    for (auto n : k_odd_sizes) {
        for (unsigned threads : {1u, 2u, 3u, 7u}) {
            CAPTURE(n);
            CAPTURE(threads);
            std::vector<std::uint8_t> src(n), dst(n, 0), again(n, 0);
            fill_random(src.data(), n, 42, threads);
            fill_random(again.data(), n, 42, 1);
            CHECK(src == again); // the fill does not depend on the split
            parallel_copy(dst.data(), src.data(), n, threads);
            CHECK(dst == src);
        }
    }
}
