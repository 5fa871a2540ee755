#pragma once
/// Renderings of a fleet verdict (fleet.hpp): terminal table, markdown and JSON (the page is
/// html.hpp's). Every human rendering opens with the verdict line.
#include <string>

#include <nlohmann/json.hpp>

#include "interopbench/fleet.hpp"

namespace interopbench {
struct Format;
struct FleetView;
}

namespace interopbench::fleet {

/// Everything the verdict rests on, for programs: schema "interopbench.fleet".
nlohmann::json outcome_json(const Outcome& outcome);

/// The terminal table, or a markdown document where `format.markdown`.
std::string render_text(const Format& format, const FleetView& view);
/// outcome_json as text.
std::string render_json(const Format& format, const FleetView& view);
/// A result key as the tables name it: "d2d_copy 256MiB ce".
std::string row_label(const Row& row);
/// One outlier in words, as every rendering lists it: where, what, its share of the median and
/// the bar it fell below, and its re-measurement.
std::string outlier_line(const Outcome& outcome, const Outlier& outlier);

} // namespace interopbench::fleet
