#pragma once
/// Summary statistics of a metric's samples.
#include <cstddef>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace interopbench {

/// Statistics over one metric's samples. All fields are in the metric's unit.
struct Stats {
    std::size_t n = 0;
    double min = 0, max = 0, mean = 0, median = 0;
    double stddev = 0; ///< sample standard deviation (n-1); 0 for n < 2
    double cv = 0;     ///< stddev / mean; 0 when mean is 0
    double p05 = 0, p95 = 0;
    /// 95% confidence interval of the median from order statistics (distribution-free,
    /// binomial); for n < 6 it is [min, max].
    double median_ci_lo = 0, median_ci_hi = 0;

    /// Half-width of the median's CI relative to the median; 0 when median is 0.
    double rel_ci_halfwidth() const;
};

/// Computes Stats; `samples` need not be sorted. Empty input gives n = 0 and zeros.
Stats compute_stats(std::vector<double> samples);

/// Linear-interpolated quantile q in [0,1] of sorted data (type 7, as R and numpy).
double quantile_sorted(const std::vector<double>& sorted, double q);

/// (max - min) / median of the finite values: how far a figure moved between rounds; 0 for
/// fewer than two values or a median that is not positive.
double relative_range(std::vector<double> values);

/// relative_range rescaled to what three rounds of the same noise would show: the range of n
/// values grows with n (about 1.13, 1.69, 2.33, 3.08 standard deviations for 2, 3, 5, 10), so
/// a result measured in more rounds is not judged noisier for it. Equal to relative_range
/// for three values; 0 below two.
double spread_as_three_rounds(const std::vector<double>& values);

/// A round spread at or above this is called noisy in the outputs of `run` and `show`
/// (compare's own mark is relative to its threshold).
inline constexpr double k_noisy_range = 0.05;

/// The bootstrap's bound on work: about this many drawn samples per metric, whatever the
/// sample counts (a report of 100,000 samples per result must not take minutes) ...
inline constexpr std::size_t k_max_bootstrap_draws = 4000000;
/// ... but never fewer resamples than this (an interval from fewer is not worth having).
inline constexpr std::size_t k_min_bootstrap_resamples = 100;

/// The resamples a bootstrap over `base_n` and `fresh_n` samples makes when `requested` are
/// asked for: `requested` (0 when negative), cut to k_max_bootstrap_draws / (base_n + fresh_n)
/// but never by the cut to fewer than k_min_bootstrap_resamples.
std::size_t bootstrap_resamples(int requested, std::size_t base_n, std::size_t fresh_n);

/// Quantile p in (0,1) of Student's t distribution with `df` > 0 degrees of freedom (df may
/// be fractional, as Welch's approximation gives). Accurate to about 1e-9.
double student_t_quantile(double p, double df);

void to_json(nlohmann::json& j, const Stats& s);
/// Reads what to_json writes; a missing field is 0, and a block without its median counts no
/// samples (n = 0): a figure left out is no figure.
void from_json(const nlohmann::json& j, Stats& s);

} // namespace interopbench
