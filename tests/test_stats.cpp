#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "interopbench/stats.hpp"

using namespace interopbench;

TEST_CASE("statistics on known inputs") {
    const Stats s = compute_stats({5, 1, 4, 2, 3});
    CHECK(s.n == 5);
    CHECK(s.min == 1);
    CHECK(s.max == 5);
    CHECK(s.mean == doctest::Approx(3));
    CHECK(s.median == doctest::Approx(3));
    CHECK(s.stddev == doctest::Approx(std::sqrt(2.5)));
    CHECK(s.cv == doctest::Approx(std::sqrt(2.5) / 3));
    CHECK(s.p05 == doctest::Approx(1.2));
    CHECK(s.p95 == doctest::Approx(4.8));
    // n = 5 is too few for a 95% order-statistic interval narrower than the range.
    CHECK(s.median_ci_lo == 1);
    CHECK(s.median_ci_hi == 5);
}

TEST_CASE("median confidence interval from order statistics") {
    std::vector<double> v;
    for (int i = 1; i <= 100; ++i) v.push_back(i);
    const Stats s = compute_stats(v);
    CHECK(s.median == doctest::Approx(50.5));
    // For n = 100 the distribution-free 95% interval is [x(40), x(61)].
    CHECK(s.median_ci_lo == 40);
    CHECK(s.median_ci_hi == 61);
    CHECK(s.rel_ci_halfwidth() == doctest::Approx(10.5 / 50.5));
}

TEST_CASE("empty, single and NaN samples") {
    CHECK(compute_stats({}).n == 0);
    const Stats one = compute_stats({7});
    CHECK(one.n == 1);
    CHECK(one.median == 7);
    CHECK(one.stddev == 0);
    const Stats nan = compute_stats({NAN, 2, NAN, 4});
    CHECK(nan.n == 2);
    CHECK(nan.median == 3);
}

TEST_CASE("stats round-trip through JSON") {
    const Stats s = compute_stats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    const Stats back = nlohmann::json(s).get<Stats>();
    CHECK(back.n == s.n);
    CHECK(back.median == s.median);
    CHECK(back.median_ci_lo == s.median_ci_lo);
    CHECK(back.median_ci_hi == s.median_ci_hi);
    CHECK(back.p95 == s.p95);
}

TEST_CASE("statistics of values near the largest double stay finite, infinities are not samples") {
    const double big = 1e308;
    const Stats s = compute_stats({big, big, big * 1.5, -big, std::numeric_limits<double>::infinity()});
    CHECK(s.n == 4);
    CHECK(std::isfinite(s.mean));
    CHECK(std::isfinite(s.stddev));
    CHECK(std::isfinite(s.median));
    CHECK(std::isfinite(s.p05));
    CHECK(std::isfinite(s.p95));
    CHECK(s.mean == doctest::Approx(0.625e308));
    const nlohmann::json j = s;
    for (const char* k : {"mean", "median", "stddev", "p05", "p95", "cv"}) CHECK(j[k].is_number());
}
