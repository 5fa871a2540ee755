#pragma once
/// Renderings of the doctor's results (topology/doctor.hpp checks).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topology/doctor.hpp"

namespace interopbench {

struct Format;
struct ChecksView;

/// {"checks": [{id, subject, status, evidence, fix}...], "summary": {pass, warn, fail, skip, info}}.
nlohmann::json checks_json(const std::vector<CheckResult>& results);
/// A table (status, check, subject, evidence) with each fix on the line below, then counts
/// (a GitHub table where `format.markdown`).
std::string render_checks(const Format& format, const ChecksView& view);
/// checks_json as text.
std::string render_checks_json(const Format& format, const ChecksView& view);

} // namespace interopbench
