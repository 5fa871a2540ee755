#pragma once
/// Renderings of the doctor's results (topology/doctor.hpp checks).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topology/doctor.hpp"

namespace interopbench {

/// {"checks": [{id, subject, status, evidence, fix}...], "summary": {pass, warn, fail, skip, info}}.
nlohmann::json checks_json(const std::vector<CheckResult>& results);
/// A table (status, check, subject, evidence) with each fix on the line below, then counts.
std::string render_checks(const std::vector<CheckResult>& results, bool markdown = false);

} // namespace interopbench
