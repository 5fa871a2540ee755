#pragma once
/// The HTML reporter: one self-contained page (inline SVG charts and style, no script besides
/// the embedded report, nothing fetched) for a report or a comparison, and the building
/// blocks its charts are made of (escaping, scales, axis ticks, colours), each testable on its
/// own. html_charts.cpp holds the building blocks and the charts, html_report.cpp the report
/// page, html_compare.cpp the comparison page, html_fleet.cpp the fleet page; html_charts.hpp
/// is what they share.
///
/// Charts are chosen from what the results say, never from family names: a size axis along
/// which some configuration has 3 sizes or more gives bandwidth (or time) against size on log
/// axes (a series of fewer than 3 sizes, or with a gap over 1000x, as points, not a line;
/// series with the same median at every size as one line named "A = B"), a `pair` axis
/// ("0>1") a source x destination heatmap, several scenarios of a family sharing a size axis
/// and a bandwidth metric a scenario x size heatmap (one per cache state), other results bars
/// on a linear axis from zero (one or two sizes: bars compare the configurations, those of one
/// size side by side), details.path_bandwidth the dashed theoretical limit (of lines and of
/// bars), details.efficiency the efficiency, details.stages each stage's share per
/// configuration. Log axes are for lines against size only: a bar's length is its value.
/// Heatmaps are coloured linearly from zero to their largest value, so cells 7% apart differ
/// by 7% of the scale (log over their own range when the largest is more than 10 times the
/// smallest); the caption states the range. A result that moved no bytes (zero-copy) is shown
/// by its time, never as a bandwidth; a handoff that fell back to a copy (details.fallback)
/// says so. Every plotted median's hover text gives its uncertainty (as the terminal table:
/// the larger of the 95% interval and half the round spread) and n. More than 6 lines against
/// size, or more than 12 bars, are split into charts side by side by the varying parameter
/// with the fewest (2 to 4) values. Scenarios of which every configuration was skipped are one
/// block per reason, not a section each; skipped and failed configurations are listed one line
/// per scenario and reason.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "interopbench/compare.hpp"
#include "interopbench/html_embed.hpp"
#include "interopbench/report.hpp"

namespace interopbench::fleet {
struct Outcome;
}

namespace interopbench::html {

/// Text for HTML element content and attribute values (quoted with "): & < > " ' become
/// entities; control characters other than TAB and LF and bytes that are not UTF-8 become
/// U+FFFD, so no report string can open a tag, close an attribute or hide text.
std::string escape(std::string_view text);

/// Maps a domain [d0, d1] linearly onto a range [r0, r1] (r1 < r0 for a y axis).
struct LinearScale {
    double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
    double operator()(double v) const;
};

/// Maps a positive domain [d0, d1] logarithmically onto [r0, r1]. Values <= 0 map to r0.
struct LogScale {
    double d0 = 1, d1 = 10, r0 = 0, r1 = 1;
    double operator()(double v) const;
};

struct Tick {
    double value = 0;
    std::string label; ///< empty for minor ticks (drawn, not labelled)
};

/// Ticks of a log axis over [lo, hi] (lo > 0) for values in `unit`: bytes ("B") on powers
/// of two (every 2nd, 4th... so at most about `max_labels` are labelled), other units on
/// decades, with 2 and 5 added when the range spans less than two decades. At least two
/// labelled ticks whenever lo < hi; labels by tick_label.
std::vector<Tick> log_ticks(double lo, double hi, const std::string& unit, int max_labels = 8);

/// Ticks of a linear axis over [lo, hi]: 1, 2 or 5 times a power of ten apart, about
/// `target` of them, all labelled.
std::vector<Tick> linear_ticks(double lo, double hi, const std::string& unit, int target = 5);

/// Short label of an axis value: "4 KiB", "1 GB/s" (GB = 1e9), "10 us", "50%", "0.5".
std::string tick_label(double value, const std::string& unit);

/// The n-th colour of the series palette (Okabe-Ito, safe for the common colour-vision
/// deficiencies), cycling; dash_pattern gives the n-th stroke pattern ("" = solid), changing
/// every palette cycle so 100 series stay told apart in print.
const char* series_colour(std::size_t n);
const char* dash_pattern(std::size_t n);

/// Colour of a fixed sequential scale (0 = low, 1 = high; clamped), the same on every page.
std::string sequential_colour(double t);

/// The whole page of a report (see read_report), embedding the report (report_document) so
/// that read_report reads the page back as it. Details of odd types are left out.
std::string render_report_page(const Report& report);

/// The page of a comparison: machine differences first, warnings, counts, the geometric
/// mean and the verdicts per family, then every result's ratio with its interval, coloured by
/// verdict; every ratio oriented so that above 1 is better, as the page says.
std::string render_comparison_page(const CompareOutcome& outcome);

/// The page of a fleet verdict (fleet.hpp): the verdict, per hardware class its outliers and
/// tables of its judged results, a row per machine and a column per result.
std::string render_fleet_page(const fleet::Outcome& outcome);

} // namespace interopbench::html
