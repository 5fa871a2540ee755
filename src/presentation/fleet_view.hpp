#pragma once
/// Renderings of a fleet verdict (fleet.hpp): terminal table, markdown, JSON and one
/// self-contained page (a machines x results heatmap coloured by the ratio to the fleet's
/// median, the causes on hover). Every human rendering opens with the verdict line.
#include <string>

#include <nlohmann/json.hpp>

#include "interopbench/fleet.hpp"

namespace interopbench::fleet {

/// The terminal table (markdown = false) or a markdown document.
std::string render_text(const Outcome& outcome, bool markdown);
/// Everything the verdict rests on, for programs: schema "interopbench.fleet".
nlohmann::json render_json(const Outcome& outcome);
/// One HTML page, nothing fetched.
std::string render_page(const Outcome& outcome);

} // namespace interopbench::fleet
