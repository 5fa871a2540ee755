#include "interopbench/compare.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "interopbench/fnv1a.hpp"
#include "interopbench/params.hpp"
#include "interopbench/report.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/stats.hpp"
#include "interopbench/splitmix.hpp"

namespace interopbench {

const char* to_string(Verdict v) {
    switch (v) {
    case Verdict::regression: return "regression";
    case Verdict::improvement: return "improvement";
    case Verdict::unchanged: return "unchanged";
    case Verdict::inconclusive: return "inconclusive";
    case Verdict::missing: return "missing";
    case Verdict::added: return "new";
    }
    return "inconclusive";
}

// ---- options ------------------------------------------------------------------------------

namespace {

// A whole-string decimal number (no suffix); nullopt otherwise.
std::optional<double> parse_number(std::string_view text) {
    const std::string s(trim(text));
    if (s.empty()) return std::nullopt;
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(s, &used);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    if (used != s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
}

} // namespace

void add_threshold(CompareOptions& options, std::string_view spec) {
    const auto eq = spec.rfind('=');
    if (eq == std::string_view::npos) {
        options.threshold = parse_fraction(spec, "threshold");
        return;
    }
    const std::string_view target = trim(spec.substr(0, eq));
    const auto dot = target.find('.');
    ThresholdRule rule;
    rule.scenario = std::string(trim(target.substr(0, dot)));
    if (dot != std::string_view::npos) rule.metric = std::string(trim(target.substr(dot + 1)));
    if (rule.scenario.empty() || (dot != std::string_view::npos && rule.metric.empty()))
        throw UsageError(fmt::format("invalid threshold '{}'", spec),
                         "write 5%, SCENARIO=3% or SCENARIO.METRIC=3% (e.g. h2d_copy.bandwidth=3%)");
    rule.value = parse_fraction(spec.substr(eq + 1), "threshold");
    options.rules.push_back(std::move(rule));
}

void add_floor(CompareOptions& options, std::string_view spec) {
    const std::string hint = "write UNIT=VALUE, e.g. s=2us, s=100ns or B/s=1e6; UNIT=0 removes the floor";
    const auto eq = spec.rfind('=');
    if (eq == std::string_view::npos || trim(spec.substr(0, eq)).empty())
        throw UsageError(fmt::format("invalid floor '{}'", spec), hint);
    const std::string unit(trim(spec.substr(0, eq)));
    std::string_view value = trim(spec.substr(eq + 1));
    double scale = 1;
    if (unit == "s") {
        static const std::pair<const char*, double> k_suffixes[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
        for (const auto& [suffix, factor] : k_suffixes) {
            const std::string_view sv(suffix);
            if (value.size() > sv.size() && value.substr(value.size() - sv.size()) == sv) {
                value.remove_suffix(sv.size());
                scale = factor;
                break;
            }
        }
    }
    const auto v = parse_number(value);
    if (!v || *v < 0) throw UsageError(fmt::format("invalid floor '{}'", spec), hint);
    if (*v == 0) options.floors.erase(unit);
    else options.floors[unit] = *v * scale;
}

double threshold_for(const CompareOptions& options, const std::string& scenario, const std::string& metric) {
    const ThresholdRule* by_scenario = nullptr;
    const ThresholdRule* by_metric = nullptr;
    for (const auto& r : options.rules) {
        if (!glob_match(r.scenario, scenario)) continue;
        if (r.metric.empty()) by_scenario = &r;
        else if (r.metric == metric) by_metric = &r;
    }
    if (by_metric) return by_metric->value;
    if (by_scenario) return by_scenario->value;
    return options.threshold;
}

// ---- bootstrap ----------------------------------------------------------------------------

namespace {

// splitmix64: tiny, fully specified, so the same seed gives the same stream everywhere
// (std distributions are implementation-defined).
struct SplitMix64 {
    std::uint64_t state;
    std::uint64_t next() {
        const std::uint64_t z = splitmix64(state);
        state += k_splitmix_gamma;
        return z;
    }
    // Modulo bias is below n / 2^64: irrelevant for sample counts.
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

double median_inplace(std::vector<double>& v) {
    const std::size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    const double upper = v[mid];
    if (v.size() % 2 == 1) return upper;
    const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
    return lower / 2 + upper / 2; // (lower + upper) / 2 overflows for samples near 1.8e308
}

// a / b where it fits a double; the largest double where it would overflow.
double bounded_ratio(double a, double b) {
    const double r = a / b;
    return std::isinf(r) ? std::copysign(std::numeric_limits<double>::max(), r) : r;
}

/// Rounds on each side from which a result with too few samples is still decided.
constexpr std::size_t k_min_decisive_rounds = 3;

std::size_t count_positive(const std::vector<double>& v) {
    return static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [](double x) { return std::isfinite(x) && x > 0; }));
}

std::vector<double> finite(std::vector<double> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
    return v;
}

/// Samples sorted once, with each sample's place among them: a resample's median is then read
/// from how often each place was drawn, in time linear in the count and without sorting
/// values. The same draws give the same median as the resample's values would (ties are
/// equal values).
class RankedSamples {
public:
    explicit RankedSamples(const std::vector<double>& v) : m_sorted(v.size()), m_place(v.size()), m_drawn(v.size()) {
        std::vector<std::uint32_t> order(v.size());
        for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&v](std::uint32_t a, std::uint32_t b) { return v[a] < v[b]; });
        for (std::uint32_t at = 0; at < order.size(); ++at) {
            m_sorted[at] = v[order[at]];
            m_place[order[at]] = at;
        }
    }
    /// Draws as many samples as there are, with replacement: one draw of `rng` each, an index
    /// into the samples in the order they were given.
    void draw(SplitMix64& rng) {
        std::fill(m_drawn.begin(), m_drawn.end(), 0u);
        for (std::size_t i = 0; i < m_place.size(); ++i) ++m_drawn[m_place[rng.below(m_place.size())]];
    }
    /// The median of the samples themselves.
    double median_of_all() const {
        const std::size_t n = m_sorted.size();
        return n % 2 == 1 ? m_sorted[n / 2] : m_sorted[n / 2 - 1] / 2 + m_sorted[n / 2] / 2;
    }
    /// The median of the last draw, as median_inplace computes it.
    double median() const {
        const std::size_t n = m_sorted.size(), mid = n / 2;
        // The values at sorted positions mid-1 and mid of the drawn multiset.
        double lower = 0, upper = 0;
        std::size_t seen = 0;
        for (std::size_t at = 0; at < n; ++at) {
            const std::size_t before = seen;
            seen += m_drawn[at];
            if (n % 2 == 0 && before <= mid - 1 && mid - 1 < seen) lower = m_sorted[at];
            if (before <= mid && mid < seen) {
                upper = m_sorted[at];
                break;
            }
        }
        return n % 2 == 1 ? upper : lower / 2 + upper / 2;
    }

private:
    std::vector<double> m_sorted;
    std::vector<std::uint32_t> m_place, m_drawn;
};

} // namespace

RatioEstimate bootstrap_median_ratio(std::vector<double> base, std::vector<double> fresh, int resamples,
                                     std::uint64_t seed, double confidence) {
    base = finite(std::move(base));
    fresh = finite(std::move(fresh));
    RatioEstimate est;
    if (base.empty() || fresh.empty()) return est;
    RankedSamples b(base), f(fresh);
    const double base_median = b.median_of_all();
    if (base_median == 0) return est;
    est.ratio = bounded_ratio(f.median_of_all(), base_median);
    SplitMix64 rng{seed};
    // Bounded work, whatever the sample counts (stats.hpp).
    resamples = static_cast<int>(bootstrap_resamples(resamples, base.size(), fresh.size()));
    std::vector<double> ratios;
    ratios.reserve(static_cast<std::size_t>(std::max(resamples, 1)));
    for (int i = 0; i < resamples; ++i) {
        b.draw(rng);
        f.draw(rng);
        const double bm = b.median();
        if (bm != 0) ratios.push_back(bounded_ratio(f.median(), bm));
    }
    if (ratios.empty()) {
        est.lo = est.hi = est.ratio;
        return est;
    }
    std::sort(ratios.begin(), ratios.end());
    const double tail = (1 - confidence) / 2;
    est.lo = quantile_sorted(ratios, tail);
    est.hi = quantile_sorted(ratios, 1 - tail);
    return est;
}

// ---- fingerprint --------------------------------------------------------------------------

std::map<std::string, std::pair<std::string, bool>> fingerprint(const ReportHeader& h) {
    std::map<std::string, std::pair<std::string, bool>> fp;
    fp["GPU count"] = {std::to_string(h.devices.size()), true};
    for (const auto& d : h.devices) {
        const std::string gpu = fmt::format("GPU{}", d.ordinal);
        fp[gpu + " model"] = {d.name, true};
        if (d.pcie_gen_max > 0) // 0: unknown
            fp[gpu + " PCIe"] = {fmt::format("Gen{} x{}", d.pcie_gen_max, d.pcie_width_max), true};
    }
    // From the topology block: existing NVLinks are hardware; how many are up is state
    // (a link that went down should show as a regression, with its cause listed first).
    for (const auto& g : h.topology.gpus) {
        if (!g.nvlink_known) continue;
        fp[g.label + " NVLinks"] = {std::to_string(g.nvlinks), true};
        fp[g.label + " NVLinks active"] = {std::to_string(g.nvlinks_active), false};
    }
    for (const auto& p : h.topology.pairs) fp[p.label + " path"] = {p.path_class, true};
    const auto& sw = h.software;
    for (const auto& [field, value] : {std::pair{"driver", &sw.driver_release}, std::pair{"CUDA driver", &sw.cuda_driver},
                                       std::pair{"CUDA runtime", &sw.cuda_runtime}})
        if (!value->empty()) fp[field] = {*value, false};
    for (const auto& l : sw.libraries)
        if (!l.version.empty()) fp[l.name == "nccl" ? std::string("NCCL") : l.name] = {l.version, false};
    return fp;
}

std::vector<FingerprintDiff> compare_fingerprints(const ReportHeader& base, const ReportHeader& fresh) {
    // Only facts both reports hold: a run without topology discovery is not other hardware.
    const auto a = fingerprint(base), b = fingerprint(fresh);
    std::vector<FingerprintDiff> out;
    for (const auto& [field, va] : a) {
        const auto ib = b.find(field);
        if (ib == b.end() || va.first == ib->second.first) continue;
        out.push_back({field, va.first, ib->second.first, va.second || ib->second.second});
    }
    std::stable_partition(out.begin(), out.end(), [](const FingerprintDiff& d) { return d.hardware; });
    return out;
}

// ---- comparing ----------------------------------------------------------------------------

namespace {

// Readers of a result's details and keys, whatever their JSON types.
std::string text_of(const nlohmann::json& j) {
    if (j.is_string()) return j.get<std::string>();
    if (j.is_null()) return {};
    return j.dump();
}

const nlohmann::json& member(const nlohmann::json& j, const char* name) {
    static const nlohmann::json k_null;
    return j.is_object() && j.contains(name) ? j[name] : k_null;
}

// Verdict of a ratio interval [lo, hi] against a relative threshold t.
Verdict decide(Better better, double lo, double hi, double t) {
    const bool below = hi < 1 - t, above = lo > 1 + t;
    if (below) return better == Better::higher ? Verdict::regression : Verdict::improvement;
    if (above) return better == Better::higher ? Verdict::improvement : Verdict::regression;
    if (lo >= 1 - t && hi <= 1 + t) return Verdict::unchanged;
    return Verdict::inconclusive;
}

// Mean and sample variance of the logarithms of positive values.
std::pair<double, double> log_mean_var(const std::vector<double>& v) {
    double sum = 0, sq = 0;
    for (double x : v) sum += std::log(x);
    const double n = static_cast<double>(v.size()), mean = sum / n;
    for (double x : v) sq += (std::log(x) - mean) * (std::log(x) - mean);
    return {mean, v.size() > 1 ? sq / (n - 1) : 0};
}

// The spread between rounds: the noise (range of the round medians, the noisier side) and
// the ratio interval widened to Welch's t interval of the log round medians. With rounds
// on one side only, that side's variance stands for both.
void add_round_spread(MetricComparison& m, const std::vector<double>& base_rounds, const std::vector<double>& new_rounds,
                      double confidence) {
    auto positive = [](const std::vector<double>& v) {
        std::vector<double> out;
        for (double x : v)
            if (std::isfinite(x) && x > 0) out.push_back(x);
        return out.size() > 1 ? out : std::vector<double>{};
    };
    const auto b = positive(base_rounds), f = positive(new_rounds);
    m.base_rounds = b.size();
    m.new_rounds = f.size();
    m.noise = std::max(relative_range(b), relative_range(f));
    m.noise_scaled = std::max(spread_as_three_rounds(b), spread_as_three_rounds(f));
    if (b.empty() && f.empty()) return;
    if (!m.has_ratio || !(m.base_median > 0) || !(m.new_median > 0)) return;
    double se2 = 0, df = 0;
    if (!b.empty() && !f.empty()) {
        const auto [mb, vb] = log_mean_var(b);
        const auto [mf, vf] = log_mean_var(f);
        const double nb = static_cast<double>(b.size()), nf = static_cast<double>(f.size());
        se2 = vb / nb + vf / nf;
        const double den = (vb / nb) * (vb / nb) / (nb - 1) + (vf / nf) * (vf / nf) / (nf - 1);
        df = den > 0 ? se2 * se2 / den : nb + nf - 2;
    } else {
        const auto& one = b.empty() ? f : b;
        const auto [mean, var] = log_mean_var(one);
        (void)mean;
        se2 = var * (1 / static_cast<double>(one.size()) + 1);
        df = static_cast<double>(one.size()) - 1;
    }
    if (!(se2 > 0)) return;
    const double t = student_t_quantile(0.5 + confidence / 2, df);
    const double half = t * std::sqrt(se2);
    const double center = std::log(m.new_median / m.base_median);
    m.ci_lo = std::min(m.ci_lo, std::exp(center - half));
    m.ci_hi = std::max(m.ci_hi, std::exp(center + half));
}

MetricComparison compare_metric(const MetricResult& base, const MetricResult& fresh, const std::string& key,
                                const std::string& scenario, const CompareOptions& opt) {
    MetricComparison m;
    m.name = base.info.name;
    m.unit = base.info.unit;
    m.better = base.info.better;
    const auto b = finite(base.samples), f = finite(fresh.samples);
    const bool have_samples = !b.empty() && !f.empty();
    m.base_n = have_samples ? b.size() : base.stats.n;
    m.new_n = have_samples ? f.size() : fresh.stats.n;
    m.base_median = base.stats.median;
    m.new_median = fresh.stats.median;
    // Few samples but rounds on both sides (a long sample that fills a round's time budget):
    // the round medians are the observations, each from its own process, and the interval is
    // Welch's over them alone (add_round_spread below).
    const bool by_rounds = (m.base_n < opt.min_samples || m.new_n < opt.min_samples) &&
                           count_positive(base.round_medians) >= k_min_decisive_rounds &&
                           count_positive(fresh.round_medians) >= k_min_decisive_rounds;
    if ((m.base_n < opt.min_samples || m.new_n < opt.min_samples) && !by_rounds) {
        m.verdict = Verdict::inconclusive;
        m.note = fmt::format("too few samples (base {}, new {}; need {}, or {} rounds on each side)", m.base_n, m.new_n,
                             opt.min_samples, k_min_decisive_rounds);
        return m;
    }
    if (by_rounds) {
        if (m.base_median > 0 && m.new_median >= 0) {
            m.ratio = m.ci_lo = m.ci_hi = bounded_ratio(m.new_median, m.base_median);
            m.has_ratio = true;
        }
        m.note = fmt::format("decided on round medians ({} and {} rounds): too few samples within a round",
                             count_positive(base.round_medians), count_positive(fresh.round_medians));
    } else if (have_samples) {
        const auto est = bootstrap_median_ratio(b, f, opt.resamples, fnv1a(m.name, fnv1a(key)) ^ opt.seed, opt.confidence);
        auto bs = b, fs = f;
        m.base_median = median_inplace(bs);
        m.new_median = median_inplace(fs);
        m.ratio = est.ratio;
        m.ci_lo = est.lo;
        m.ci_hi = est.hi;
        m.has_ratio = true;
    } else if (base.stats.median_ci_lo > 0 && base.stats.median_ci_hi > 0) {
        // No samples kept: the widest ratio the two medians' intervals allow.
        m.ratio = bounded_ratio(fresh.stats.median, base.stats.median);
        m.ci_lo = bounded_ratio(fresh.stats.median_ci_lo, base.stats.median_ci_hi);
        m.ci_hi = bounded_ratio(fresh.stats.median_ci_hi, base.stats.median_ci_lo);
        m.note = "interval from the reports' median intervals (no samples kept)";
        m.has_ratio = true;
    }
    const auto no_ratio = [&](const char* why) {
        m.verdict = Verdict::inconclusive;
        m.note = why;
        m.ratio = m.ci_lo = m.ci_hi = 0;
        m.has_ratio = false;
        return m;
    };
    if (!(m.base_median > 0)) return no_ratio("base median is not positive: no ratio");
    if (!m.has_ratio) return no_ratio("the reports keep neither samples nor median intervals: no ratio");
    if (!(m.new_median >= 0) || !(m.ratio >= 0) || !(m.ci_lo >= 0) || !(m.ci_hi >= 0))
        return no_ratio("new median is negative: no ratio");
    // A drop to zero is a ratio of 0: decided like any other (a regression where higher is better).
    constexpr double k_max = std::numeric_limits<double>::max();
    if (m.ratio == k_max || m.ci_hi == k_max)
        m.note = "the ratio exceeds the range of a double: shown as a bound";
    m.threshold = threshold_for(opt, scenario, m.name);
    add_round_spread(m, base.round_medians, fresh.round_medians, opt.confidence);
    // The unit's floor stands in for the noise between processes where neither side measured
    // it; with rounds, what moved between processes is known and gated beyond instead (a
    // pointer chase of 0.6 us that moves 0.1% between processes can show a 10% change).
    if (const auto fl = opt.floors.find(m.unit); fl != opt.floors.end() && m.base_rounds == 0 && m.new_rounds == 0)
        m.threshold = std::max(m.threshold, fl->second / m.base_median);
    const double configured = m.threshold;
    m.threshold = std::max(m.threshold, opt.noise_factor * m.noise_scaled);
    m.noisy = opt.noise_factor * m.noise_scaled > configured;
    m.verdict = decide(m.better, m.ci_lo, m.ci_hi, m.threshold);
    if (m.ratio > 0 && m.ci_lo > 0 && m.ci_hi > 0)
        m.detectable = m.better == Better::higher ? 1 - (1 - m.threshold) * m.ratio / m.ci_hi
                                                  : (1 + m.threshold) * m.ratio / m.ci_lo - 1;
    if (m.noisy)
        m.note = fmt::format("noisy: round medians moved {:.1f}% between processes; gated beyond {:.1f}%", m.noise * 100,
                             m.threshold * 100);
    if (m.noisy && m.verdict == Verdict::unchanged) {
        // Within the noise is not "unchanged": a change smaller than the noise is invisible.
        m.verdict = Verdict::inconclusive;
        m.note = fmt::format("noisy: round medians moved {:.1f}% between processes, so only a change beyond {:.1f}% "
                             "would show",
                             m.noise * 100, m.threshold * 100);
    } else if (m.verdict == Verdict::inconclusive)
        m.note = fmt::format("too noisy: the interval straddles the \u00b1{:.1f}% threshold{}", m.threshold * 100,
                             m.noisy ? fmt::format(" (round medians moved {:.1f}%)", m.noise * 100) : std::string{});
    return m;
}

// Efficiency against each machine's theoretical path bandwidth, from the topology
// annotation of the results: the bandwidth interval rescaled by the path ratio.
void add_efficiency(ResultComparison& rc, const Result& base, const Result& fresh) {
    const auto& be = member(base.details, "efficiency");
    const auto& fe = member(fresh.details, "efficiency");
    if (!be.is_number() || !fe.is_number() || be.get<double>() <= 0) return;
    const auto bw = std::find_if(rc.metrics.begin(), rc.metrics.end(),
                                 [](const MetricComparison& m) { return m.name == "bandwidth"; });
    if (bw == rc.metrics.end() || !bw->has_ratio || !(bw->ratio > 0)) return;
    MetricComparison e = *bw;
    e.name = "efficiency";
    e.unit = "ratio";
    e.better = Better::higher;
    e.base_median = be.get<double>();
    e.new_median = fe.get<double>();
    const double scale = (e.new_median / e.base_median) / bw->ratio;
    e.ratio = bw->ratio * scale;
    e.ci_lo = bw->ci_lo * scale;
    e.ci_hi = bw->ci_hi * scale;
    e.threshold = bw->threshold;
    e.verdict = decide(e.better, e.ci_lo, e.ci_hi, e.threshold);
    e.gated = true;
    e.note = fmt::format("bandwidth over the path's theoretical bandwidth ({} vs {})",
                         text_of(member(base.details, "path")), text_of(member(fresh.details, "path")));
    rc.metrics.push_back(std::move(e));
}

int severity(Verdict v) {
    switch (v) {
    case Verdict::regression: return 3;
    case Verdict::inconclusive: return 2;
    case Verdict::improvement: return 1;
    default: return 0;
    }
}

void decide_result(ResultComparison& rc) {
    // When the primary metric was produced by neither side, every metric decides.
    if (std::none_of(rc.metrics.begin(), rc.metrics.end(), [](const MetricComparison& m) { return m.gated; }))
        for (auto& m : rc.metrics) m.gated = true;
    rc.verdict = Verdict::unchanged;
    for (const auto& m : rc.metrics)
        if (m.gated && severity(m.verdict) > severity(rc.verdict)) rc.verdict = m.verdict;
    if (const auto* d = rc.deciding()) {
        if (rc.verdict == Verdict::inconclusive) rc.reason = d->name + ": " + d->note;
        else rc.reason = fmt::format("{} {} ±{:.1f}%{}", d->name, rc.verdict == Verdict::unchanged ? "within" : "beyond",
                                     d->threshold * 100,
                                     d->noisy ? fmt::format(" (noisy: round medians moved {:.1f}%)", d->noise * 100)
                                              : std::string{});
    }
}

} // namespace

ResultComparison compare_result(const Result& base, const Result& fresh, const CompareOptions& opt) {
    ResultComparison rc{base.key, base.scenario, base.family.empty() ? fresh.family : base.family};
    if (base.status != Status::ok || fresh.status != Status::ok) {
        auto side = [](const Result& r) {
            return r.reason.empty() ? std::string(to_string(r.status)) : fmt::format("{} ({})", to_string(r.status), r.reason);
        };
        if (base.status == Status::ok && fresh.status == Status::failed) {
            rc.verdict = Verdict::regression;
            rc.reason = "now fails: " + side(fresh);
        } else if (base.status == Status::skipped && fresh.status == Status::skipped) {
            rc.verdict = Verdict::unchanged;
            rc.reason = "skipped in both: " + fresh.reason;
        } else {
            rc.verdict = Verdict::inconclusive;
            rc.reason = fmt::format("base {}, new {}", side(base), side(fresh));
        }
        return rc;
    }
    for (const auto& bm : base.metrics) {
        // The primary metric (the one sampling converged on) decides; others are shown, and
        // decide too when a threshold rule names them.
        const bool gated = &bm == &base.metrics.front() ||
                           std::any_of(opt.rules.begin(), opt.rules.end(), [&](const ThresholdRule& r) {
                               return r.metric == bm.info.name && glob_match(r.scenario, base.scenario);
                           });
        const auto* fm = fresh.metric(bm.info.name);
        const bool base_has = !finite(bm.samples).empty() || bm.stats.n > 0;
        const bool new_has = fm && (!finite(fm->samples).empty() || fm->stats.n > 0);
        if (!base_has && !new_has) continue; // produced by neither configuration
        if (!base_has || !new_has) {
            MetricComparison m{bm.info.name, bm.info.unit, bm.info.better};
            m.note = base_has ? "not measured in new" : "not measured in base";
            m.gated = gated;
            rc.metrics.push_back(std::move(m));
            continue;
        }
        if (fm->info.unit != bm.info.unit) {
            // Two units of one metric are two quantities: no ratio, and the gate cannot pass it.
            MetricComparison m{bm.info.name, bm.info.unit, bm.info.better};
            m.note = fmt::format("units differ (base {}, new {}): not compared", bm.info.unit, fm->info.unit);
            m.gated = gated;
            rc.metrics.push_back(std::move(m));
            continue;
        }
        rc.metrics.push_back(compare_metric(bm, *fm, base.key, base.scenario, opt));
        rc.metrics.back().gated = gated;
    }
    if (opt.cross_machine) add_efficiency(rc, base, fresh);
    if (rc.metrics.empty()) {
        rc.verdict = Verdict::inconclusive;
        rc.reason = "no metric measured on both sides";
        return rc;
    }
    decide_result(rc);
    return rc;
}

double power_change(double threshold) { return 2 * threshold; }

bool weak_pass(const CompareOutcome& o) {
    if (o.count(Verdict::regression) > 0 || o.count(Verdict::missing) > 0) return false;
    const std::size_t unsure = o.count(Verdict::inconclusive);
    return unsure > 0 && 4 * unsure >= o.results.size();
}

const MetricComparison* shown_metric(const ResultComparison& r) {
    const auto* m = r.deciding();
    for (const auto& g : r.metrics)
        if (!m && g.gated) m = &g;
    return m && m->has_ratio ? m : nullptr;
}

namespace {

// Whether a result would see a change of `change`: its shown metric would call that change in
// the bad direction a regression.
bool can_see(const ResultComparison& r, double change) {
    const MetricComparison* m = shown_metric(r);
    return m && m->detectable > 0 && m->detectable <= change + 1e-12;
}

void summarise(CompareOutcome& out) {
    out.counts.fill(0);
    out.families.clear();
    out.in_both = out.sensitive = 0;
    std::map<std::string, std::pair<std::size_t, std::size_t>> power; // family: results, sensitive
    for (const auto& r : out.results) {
        // Power is over what was measured on both sides: a result skipped in both (no GPU, one
        // GPU where two are needed) cannot see a change, and is not a result that could.
        if (r.verdict == Verdict::missing || r.verdict == Verdict::added || r.metrics.empty()) continue;
        const bool sees = can_see(r, out.power_change);
        ++out.in_both;
        out.sensitive += sees;
        auto& [n, k] = power[r.family.empty() ? r.scenario : r.family];
        ++n;
        k += sees;
    }
    std::map<std::string, std::pair<double, std::size_t>> logs;
    for (const auto& r : out.results) {
        ++out.counts[static_cast<std::size_t>(r.verdict)];
        if (r.metrics.empty() || !r.metrics.front().has_ratio || !(r.metrics.front().ratio > 0)) continue;
        const auto& m = r.metrics.front();
        const std::string family = r.family.empty() ? r.scenario : r.family;
        if (!logs.count(family)) out.families.push_back({family});
        auto& [sum, n] = logs[family];
        sum += std::log(m.better == Better::higher ? m.ratio : 1 / m.ratio);
        ++n;
    }
    for (auto& f : out.families) {
        const auto& [sum, n] = logs[f.family];
        f.compared = n;
        f.geomean = std::exp(sum / static_cast<double>(n));
    }
    for (auto& f : out.families) std::tie(f.results, f.sensitive) = power[f.family];
}

std::string profile_label(const ReportHeader::Invocation& inv) {
    if (inv.profile.empty() && inv.profile_hash.empty()) return "none";
    return fmt::format("'{}' {}", inv.profile.empty() ? "(custom)" : inv.profile, inv.profile_hash.substr(0, 12));
}

} // namespace

const MetricComparison* ResultComparison::deciding() const {
    for (const auto& m : metrics)
        if (m.gated && m.verdict == verdict) return &m;
    return nullptr;
}

void check_unique_keys(const Report& report, const std::string& label) {
    std::set<std::string> seen;
    for (const Result& r : report.results)
        if (!seen.insert(r.key).second)
            throw UsageError(fmt::format("report '{}' has result key '{}' twice", label, r.key),
                             "give a report written by one 'interopbench run'; merged or edited reports must keep keys unique");
}

Report pool_baselines(const std::vector<Report>& reports, const std::vector<std::string>& labels) {
    if (reports.empty()) throw UsageError("no baseline report given");
    for (std::size_t i = 0; i < reports.size(); ++i) check_unique_keys(reports[i], labels.at(i));
    for (std::size_t i = 1; i < reports.size(); ++i)
        for (const auto& d : compare_fingerprints(reports[0].header, reports[i].header))
            if (d.hardware)
                throw UsageError(fmt::format("baselines '{}' and '{}' come from different hardware ({}: '{}' vs '{}')",
                                             labels[0], labels[i], d.field, d.base, d.fresh),
                                 "give baselines of one machine; several reports of the same build measure its noise");
    if (reports.size() == 1) return reports[0];
    // Every report's results by key, in the order keys first appear.
    std::vector<std::string> order;
    std::map<std::string, std::vector<Result>> by_key;
    for (const auto& rep : reports)
        for (const auto& r : rep.results) {
            if (!by_key.count(r.key)) order.push_back(r.key);
            by_key[r.key].push_back(r);
        }
    Report pooled = reports[0];
    pooled.results.clear();
    for (const auto& key : order) {
        auto& all = by_key[key];
        const auto first_ok = std::find_if(all.begin(), all.end(), [](const Result& r) { return r.status == Status::ok; });
        if (first_ok == all.end()) {
            pooled.results.push_back(all.front());
            continue;
        }
        Result out = *first_ok;
        int rounds = 0;
        for (auto& m : out.metrics) {
            std::vector<const MetricResult*> parts;
            for (const auto& r : all)
                if (r.status == Status::ok)
                    if (const MetricResult* rm = r.metric(m.info.name)) parts.push_back(rm);
            pool_metric(m, parts);
        }
        for (const auto& r : all)
            if (r.status == Status::ok) rounds += std::max(1, r.rounds);
        out.rounds = rounds;
        if (!out.details.is_object()) out.details = nlohmann::json::object();
        out.details["baseline_reports"] = std::count_if(all.begin(), all.end(), [](const Result& r) { return r.status == Status::ok; });
        pooled.results.push_back(std::move(out));
    }
    return pooled;
}

namespace {

/// Each pair compared (compare_result), in order. The pairs are independent (every bootstrap is
/// seeded by its result's key), so they are spread over the machine's cores: a gate over
/// hundreds of results with a thousand samples each takes seconds, not minutes. An exception
/// in any pair is thrown here, after every thread has ended.
std::vector<ResultComparison> compare_pairs(const std::vector<std::pair<const Result*, const Result*>>& pairs,
                                            const CompareOptions& opt) {
    std::vector<ResultComparison> out(pairs.size());
    std::atomic<std::size_t> next{0};
    std::mutex failed_at;
    std::exception_ptr failure;
    const auto work = [&] {
        for (std::size_t i; (i = next++) < pairs.size();) {
            const auto [b, f] = pairs[i];
            try {
                out[i] = f ? compare_result(*b, *f, opt)
                           : ResultComparison{b->key, b->scenario, b->family, Verdict::missing, "only in base"};
            } catch (...) {
                const std::lock_guard lock(failed_at);
                if (!failure) failure = std::current_exception();
                next = pairs.size(); // the others stop at their next pair
            }
        }
    };
    // This thread and at most one more per pair beyond the first, up to one per core.
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t helpers = pairs.size() > 1 ? std::min(pairs.size(), cores) - 1 : 0;
    std::vector<std::thread> threads;
    for (std::size_t k = 0; k < helpers; ++k) {
        try {
            threads.emplace_back(work);
        } catch (const std::system_error&) {
            break; // no more threads to be had: the ones started and this one do the rest
        }
    }
    work();
    for (auto& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
    return out;
}

} // namespace

CompareOutcome compare_reports(const Report& base, const Report& fresh, const CompareOptions& opt) {
    CompareOutcome out;
    out.base_label = opt.base_label;
    out.new_label = opt.new_label;
    out.cross_machine = opt.cross_machine;
    out.threshold = opt.threshold;
    out.power_change = power_change(opt.threshold);
    out.fingerprint = compare_fingerprints(base.header, fresh.header);
    const auto hw = std::find_if(out.fingerprint.begin(), out.fingerprint.end(),
                                 [](const FingerprintDiff& d) { return d.hardware; });
    if (hw != out.fingerprint.end() && !opt.cross_machine) {
        // One line: the first differences, and how many more.
        std::vector<std::string> shown;
        std::size_t count = 0;
        for (const auto& d : out.fingerprint) {
            if (!d.hardware) continue;
            if (++count <= 3) shown.push_back(fmt::format("{}: '{}' vs '{}'", d.field, d.base, d.fresh));
        }
        throw UsageError(fmt::format("the reports come from different hardware ({}{}); refusing to gate", fmt::join(shown, "; "),
                                     count > shown.size() ? fmt::format("; {} more", count - shown.size()) : std::string{}),
                         "compare reports from the same machine, or pass --cross-machine to compare anyway "
                         "(efficiency against each machine's path bandwidth is compared too)");
    }
    check_unique_keys(base, opt.base_label);
    check_unique_keys(fresh, opt.new_label);
    const auto& base_results = base.results;
    const auto& new_results = fresh.results;
    const ReportHeader& base_header = base.header;
    const ReportHeader& new_header = fresh.header;
    const auto& base_inv = base_header.invocation;
    const auto& new_inv = new_header.invocation;
    if (profile_label(base_inv) != profile_label(new_inv) || base_inv.profile_hash != new_inv.profile_hash)
        out.warnings.push_back(fmt::format("the resolved profiles differ (base {}, new {}): settings or sweeps changed",
                                           profile_label(base_inv), profile_label(new_inv)));
    // The allow-listed environment (CUDA_*, NCCL_*) changes figures without changing hardware.
    std::set<std::string> env_names;
    for (const auto* h : {&base_header, &new_header})
        for (const auto& [name, value] : h->environment) env_names.insert(name);
    const auto env = [](const ReportHeader& h, const std::string& name) {
        const auto it = h.environment.find(name);
        return it == h.environment.end() ? std::string{} : it->second;
    };
    for (const auto& name : env_names) {
        const std::string a = env(base_header, name), b = env(new_header, name);
        if (a != b)
            out.warnings.push_back(fmt::format("environment variable {} differs (base '{}', new '{}')", name, a, b));
    }
    for (const auto* h : {&base_header, &new_header}) {
        const std::string& status = h->invocation.status;
        if (!status.empty() && status != "complete")
            out.warnings.push_back(fmt::format("the {} run is {}: some results may be missing",
                                               h == &base_header ? opt.base_label : opt.new_label, status));
    }
    for (const auto& rule : opt.rules) {
        auto matches = [&](const Result& r) {
            return glob_match(rule.scenario, r.scenario) && (rule.metric.empty() || r.metric(rule.metric));
        };
        if (std::none_of(base_results.begin(), base_results.end(), matches) &&
            std::none_of(new_results.begin(), new_results.end(), matches))
            out.warnings.push_back(fmt::format("threshold rule '{}{}{}' matches no result", rule.scenario,
                                               rule.metric.empty() ? "" : ".", rule.metric));
    }

    std::map<std::string, const Result*> by_key;
    for (const auto& r : new_results) by_key[r.key] = &r;
    std::set<std::string> base_keys;
    std::vector<std::pair<const Result*, const Result*>> pairs; // base, new (nullptr: only in base)
    for (const auto& b : base_results) {
        base_keys.insert(b.key);
        const auto it = by_key.find(b.key);
        pairs.emplace_back(&b, it == by_key.end() ? nullptr : it->second);
    }
    out.results = compare_pairs(pairs, opt);
    for (const auto& r : new_results)
        if (!base_keys.count(r.key)) out.results.push_back({r.key, r.scenario, r.family, Verdict::added, "only in new"});
    // Two reports with nothing in common compared nothing: a gate that passes on that is
    // broken. (A new report that lost every result is a failure: `missing`, exit 1.)
    if (!new_results.empty() &&
        std::none_of(out.results.begin(), out.results.end(),
                     [](const ResultComparison& r) { return r.verdict != Verdict::missing && r.verdict != Verdict::added; }))
        throw UsageError(fmt::format("the reports have no result in common ({} has {} result(s), {} has {}): nothing was compared",
                                     opt.base_label, base_results.size(), opt.new_label, new_results.size()),
                         "compare reports of the same scenarios and axes (the same profile), e.g. a baseline of this job");
    summarise(out);
    return out;
}

std::vector<std::string> flagged_keys(const CompareOutcome& outcome) {
    std::vector<std::string> keys;
    for (const auto& r : outcome.results) {
        const auto* d = r.deciding();
        const bool noisy = r.verdict == Verdict::inconclusive && d && d->has_ratio;
        if (r.verdict == Verdict::regression || noisy) keys.push_back(r.key);
    }
    return keys;
}

void apply_confirmations(CompareOutcome& outcome, const Report& base,
                         const std::map<std::string, std::vector<Result>>& reruns, const CompareOptions& opt) {
    std::map<std::string, const Result*> base_by_key;
    for (const auto& r : base.results) base_by_key.emplace(r.key, &r);
    for (auto& rc : outcome.results) {
        const auto runs = reruns.find(rc.key);
        const auto b = base_by_key.find(rc.key);
        if (runs == reruns.end() || runs->second.empty() || b == base_by_key.end()) continue;
        std::array<std::size_t, k_verdict_count> seen{};
        ResultComparison last;
        for (const auto& rerun : runs->second) {
            last = compare_result(*b->second, rerun, opt);
            ++seen[static_cast<std::size_t>(last.verdict)];
        }
        const std::size_t n = runs->second.size();
        const std::size_t regressions = seen[static_cast<std::size_t>(Verdict::regression)];
        if (rc.verdict == Verdict::regression) {
            if (regressions == n) {
                rc.reason += fmt::format("; confirmed by {} of {} re-measurements", n, n);
            } else {
                rc.verdict = Verdict::inconclusive;
                rc.reason = fmt::format("not confirmed: {} of {} re-measurements regressed", regressions, n);
            }
        } else {
            for (std::size_t v = 0; v < k_verdict_count; ++v)
                if (seen[v] == n) {
                    rc.verdict = static_cast<Verdict>(v);
                    rc.metrics = last.metrics; // show the figures of the last re-measurement
                    rc.reason = fmt::format("{} in all {} re-measurements", to_string(rc.verdict), n);
                }
        }
    }
    summarise(outcome);
}

ExitCode compare_exit_code(const CompareOutcome& outcome, bool fail_on_inconclusive) {
    // A result the new run lost is a failure of the gate, never a pass by saying nothing.
    if (outcome.count(Verdict::regression) > 0 || outcome.count(Verdict::missing) > 0) return ExitCode::failed;
    if (fail_on_inconclusive && outcome.count(Verdict::inconclusive) > 0) return ExitCode::inconclusive;
    return ExitCode::ok;
}

} // namespace interopbench
