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

namespace {

// Regularized incomplete beta I_x(a, b) by its continued fraction (modified Lentz).
double incomplete_beta(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    if (x > (a + 1) / (a + b + 2)) return 1 - incomplete_beta(b, a, 1 - x);
    const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x)) / a;
    constexpr double tiny = 1e-300;
    double f = 1, c = 1, d = 0;
    for (int i = 0; i <= 400; ++i) {
        const int m = i / 2;
        double num;
        if (i == 0) num = 1;
        else if (i % 2 == 0) num = m * (b - m) * x / ((a + 2.0 * m - 1) * (a + 2.0 * m));
        else num = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1));
        d = 1 + num * d;
        d = std::fabs(d) < tiny ? tiny : d;
        d = 1 / d;
        c = 1 + num / c;
        c = std::fabs(c) < tiny ? tiny : c;
        const double cd = c * d;
        f *= cd;
        if (std::fabs(1 - cd) < 1e-12) break;
    }
    return front * (f - 1);
}

double student_t_cdf(double t, double df) {
    const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
    return t >= 0 ? 1 - tail : tail;
}

} // namespace

double relative_range(std::vector<double> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
    if (v.size() < 2) return 0;
    std::sort(v.begin(), v.end());
    const double mid = quantile_sorted(v, 0.5);
    return mid > 0 ? (v.back() - v.front()) / mid : 0;
}

double spread_as_three_rounds(const std::vector<double>& values) {
    // d2(n): the expected range of n standard normal values (n = 2..20).
    static constexpr double k_d2[] = {0,     0,     1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078,
                                      3.173, 3.258, 3.336, 3.407, 3.472, 3.532, 3.588, 3.640, 3.689, 3.735};
    const auto n = static_cast<std::size_t>(
        std::count_if(values.begin(), values.end(), [](double x) { return std::isfinite(x); }));
    if (n < 2) return 0;
    const double d2 = k_d2[std::min<std::size_t>(n, std::size(k_d2) - 1)];
    return relative_range(values) * k_d2[3] / d2;
}

std::size_t bootstrap_resamples(int requested, std::size_t base_n, std::size_t fresh_n) {
    const std::size_t per = std::max<std::size_t>(1, base_n + fresh_n);
    return std::min<std::size_t>(static_cast<std::size_t>(std::max(requested, 0)),
                                 std::max(k_min_bootstrap_resamples, k_max_bootstrap_draws / per));
}

double student_t_quantile(double p, double df) {
    if (!(p > 0 && p < 1) || !(df > 0)) return std::nan("");
    if (p < 0.5) return -student_t_quantile(1 - p, df);
    double lo = 0, hi = 1;
    while (student_t_cdf(hi, df) < p && hi < 1e12) hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-10 * std::max(1.0, hi); ++i) {
        const double mid = (lo + hi) / 2;
        (student_t_cdf(mid, df) < p ? lo : hi) = mid;
    }
    return (lo + hi) / 2;
}

double quantile_sorted(const std::vector<double>& s, double q) {
    if (s.empty()) return 0;
    const double h = (static_cast<double>(s.size()) - 1) * std::clamp(q, 0.0, 1.0);
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const auto hi = std::min(lo + 1, s.size() - 1);
    const double t = h - static_cast<double>(lo);
    // Weighted, never a difference: values near the largest double do not overflow.
    return t == 0 ? s[lo] : s[lo] * (1 - t) + s[hi] * t;
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
    // Only finite values are samples (a plugin may send 1e400, which reads as infinity).
    samples.erase(std::remove_if(samples.begin(), samples.end(), [](double v) { return !std::isfinite(v); }),
                  samples.end());
    s.n = samples.size();
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.min = samples.front();
    s.max = samples.back();
    // Sums on values scaled by the largest magnitude: no overflow for values near 1.8e308,
    // whose statistics would otherwise be infinite (and null in the report).
    const double scale = std::max(std::fabs(s.min), std::fabs(s.max));
    const double k = scale > 0 ? scale : 1;
    double sum = 0;
    for (double v : samples) sum += v / k;
    const double mean_scaled = sum / static_cast<double>(s.n);
    s.mean = mean_scaled * k;
    s.median = quantile_sorted(samples, 0.5);
    if (s.n > 1) {
        double ss = 0;
        for (double v : samples) ss += (v / k - mean_scaled) * (v / k - mean_scaled);
        s.stddev = std::sqrt(ss / static_cast<double>(s.n - 1)) * k;
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
    // A median left out (a report edited by hand) is no figure: no samples count, never a 0.
    s.n = j.contains("median") ? j.value("n", std::size_t{0}) : 0;
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
