#pragma once
/// What the report page (html_report.cpp) and the comparison page (html_compare.cpp) share,
/// from html_charts.cpp: the page's frame and tables, SVG frames and axes, and the charts of a
/// report's results. Internal to the page files; html.hpp is what the rest of the tool sees.
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "interopbench/runner.hpp"
#include "presentation/html.hpp"

namespace interopbench::html {

/// The page up to its body: doctype, the policy that allows no script or fetch, title, style.
std::string page_open(const std::string& title);

/// A table of text cells, the first row the header; cells that start with a digit align right.
std::string table_html(const std::vector<std::vector<std::string>>& rows);

/// A coordinate with one decimal.
std::string f1(double v);

/// About how wide `chars` characters of the pages' font are at `px` pixels (0.64 em each, a
/// little over DejaVu Sans's average): the room a chart leaves for its labels.
double text_width(std::size_t chars, double px);

/// `s` cut to at most `max` bytes on a character boundary, "…" marking the cut.
std::string shorten(const std::string& s, std::size_t max);

/// A chart's area: its size and the margins around the plot.
struct Frame {
    double width = 880, height = 340, left = 78, right = 16, top = 14, bottom = 46;
    double x0() const { return left; }
    double x1() const { return width - right; }
    double y0() const { return height - bottom; }
    double y1() const { return top; }
};

/// The opening <svg> element of a chart of frame `f`, `title` its accessible name.
std::string svg_open(const Frame& f, const std::string& title);

/// Grid lines, tick labels, axis line and title along the frame's bottom; ticks outside the
/// frame are left out.
std::string x_axis(const Frame& f, const LinearScale& sx, const std::vector<Tick>& ticks, const std::string& title);
std::string x_axis(const Frame& f, const LogScale& sx, const std::vector<Tick>& ticks, const std::string& title);

/// A square of `colour` for a legend.
std::string box_swatch(const std::string& colour);

/// A metric with a figure to draw: samples, and a finite median.
bool usable(const MetricResult& m);

/// Parameters that take more than one value among `rows`, minus `skip`, in the order they
/// first appear: what tells the configurations apart.
std::vector<std::string> varying_params(const std::vector<const Result*>& rows, const std::set<std::string>& skip = {});
/// The parameters with one value among `rows`, minus `skip`, as "name=value, ..." (sizes in
/// bytes as sizes): what a chart's caption names once.
std::string constant_params(const std::vector<const Result*>& rows, const std::set<std::string>& skip = {});

/// The charts of one scenario's results, chosen from their parameters, metrics and details:
/// those that moved bytes by size, pair or as bars, those that moved none (zero-copy) by
/// their time alone.
std::string scenario_charts(const std::vector<const Result*>& results);

/// Scenario x size matrices of a family's `scenarios` (their results in `by`) sharing the
/// size axis `size_param` and the bandwidth metric `metric`: one matrix per cache state.
std::string family_heatmap(const std::vector<std::string>& scenarios,
                           const std::map<std::string, std::vector<const Result*>>& by, const std::string& size_param,
                           const std::string& metric);

} // namespace interopbench::html
