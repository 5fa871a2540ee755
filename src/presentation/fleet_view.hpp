#pragma once
/// Renderings of a fleet verdict (fleet.hpp): terminal table, markdown, JSON and one
/// self-contained page (a machines x results heatmap coloured by the ratio to the fleet's
/// median, the causes on hover). Every human rendering opens with the verdict line.
#include <string>

#include <nlohmann/json.hpp>

#include "interopbench/fleet.hpp"

namespace interopbench {
struct Format;
}

namespace interopbench::fleet {

/// Everything the verdict rests on, for programs: schema "interopbench.fleet".
nlohmann::json outcome_json(const Outcome& outcome);

/// The terminal table, or a markdown document where `format.markdown`.
std::string render_text(const Format& format, const Outcome& outcome);
/// outcome_json as text.
std::string render_json(const Format& format, const Outcome& outcome);
/// One HTML page, nothing fetched.
std::string render_page(const Format& format, const Outcome& outcome);

} // namespace interopbench::fleet
