#include "interopbench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

namespace interopbench {

double Stats::rel_ci_halfwidth() const {
    if (median == 0) return 0;
    return (median_ci_hi - median_ci_lo) / 2.0 / std::fabs(median);
}

double quantile_sorted(const std::vector<double>& s, double q) {
    if (s.empty()) return 0;
    const double h = (static_cast<double>(s.size()) - 1) * std::clamp(q, 0.0, 1.0);
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const auto hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (h - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

namespace {

// Order-statistic ranks (1-based, lo < hi) bracketing the median with at least 95%
// coverage: the largest k with P(Binomial(n, 1/2) < k) <= 2.5%, and n + 1 - k.
std::pair<std::size_t, std::size_t> median_ci_ranks(std::size_t n) {
    // Cumulative binomial probabilities in log space for numerical safety.
    double cdf = 0;
    std::size_t k = 0;
    const double log_half_n = static_cast<double>(n) * std::log(0.5);
    for (std::size_t i = 0; i < n; ++i) {
        const double log_p = std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1) -
                             std::lgamma(static_cast<double>(n - i) + 1) + log_half_n;
        if (cdf + std::exp(log_p) > 0.025) break;
        cdf += std::exp(log_p);
        k = i + 1;
    }
    // P(X <= k-1) <= 2.5%: the interval [x_(k), x_(n+1-k)] covers the median with >= 95%.
    if (k == 0) return {1, n};
    return {k, n + 1 - k};
}

} // namespace

Stats compute_stats(std::vector<double> samples) {
    Stats s;
    samples.erase(std::remove_if(samples.begin(), samples.end(), [](double v) { return std::isnan(v); }),
                  samples.end());
    s.n = samples.size();
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.min = samples.front();
    s.max = samples.back();
    s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.n);
    s.median = quantile_sorted(samples, 0.5);
    if (s.n > 1) {
        double ss = 0;
        for (double v : samples) ss += (v - s.mean) * (v - s.mean);
        s.stddev = std::sqrt(ss / static_cast<double>(s.n - 1));
    }
    s.cv = s.mean != 0 ? s.stddev / std::fabs(s.mean) : 0;
    s.p05 = quantile_sorted(samples, 0.05);
    s.p95 = quantile_sorted(samples, 0.95);
    const auto [lo, hi] = median_ci_ranks(s.n);
    s.median_ci_lo = samples[lo - 1];
    s.median_ci_hi = samples[hi - 1];
    return s;
}

void to_json(nlohmann::json& j, const Stats& s) {
    j = nlohmann::json{{"n", s.n},          {"min", s.min},       {"max", s.max},
                       {"mean", s.mean},    {"median", s.median}, {"stddev", s.stddev},
                       {"cv", s.cv},        {"p05", s.p05},       {"p95", s.p95},
                       {"median_ci", {s.median_ci_lo, s.median_ci_hi}}};
}

void from_json(const nlohmann::json& j, Stats& s) {
    s.n = j.value("n", std::size_t{0});
    s.min = j.value("min", 0.0);
    s.max = j.value("max", 0.0);
    s.mean = j.value("mean", 0.0);
    s.median = j.value("median", 0.0);
    s.stddev = j.value("stddev", 0.0);
    s.cv = j.value("cv", 0.0);
    s.p05 = j.value("p05", 0.0);
    s.p95 = j.value("p95", 0.0);
    if (j.contains("median_ci") && j["median_ci"].is_array() && j["median_ci"].size() == 2) {
        s.median_ci_lo = j["median_ci"][0].get<double>();
        s.median_ci_hi = j["median_ci"][1].get<double>();
    }
}

} // namespace interopbench
