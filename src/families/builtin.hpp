#pragma once
/// The built-in scenario families, handed by the command line (and the tests) to the core:
/// the core itself knows no family.
#include <string>
#include <vector>

#include "interopbench/family.hpp"
#include "interopbench/report.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {

/// Every family, in `list` order: the one explicit list (families/builtin.cpp).
const Families& builtin_families();

/// The scenarios of every family, plugins included, with the run's family options (where
/// to look for plugins): what `list`, `run` and the round processes use.
Registry scenario_registry(const FamilyOptions& options, std::vector<std::string>& warnings);

/// The scenarios of the named families (tests), in list order, with their profile entries;
/// of every family but the plugin one when `families` is empty.
Registry builtin_registry(const std::vector<std::string>& families = {}, const FamilyOptions& options = {});

/// Every result against the limits of the paths it crosses (interopbench/limits.hpp): the
/// paths its scenario in `registry` declares (kept where a result has them), the ceilings the
/// families measured in the same results (their annotate hooks), the machine's limits from
/// `topology` and `devices` (a report's documents).
void limit_results(std::vector<Result>& results, const nlohmann::json& topology, const nlohmann::json& devices,
                   const Registry& registry);

/// limit_results over a report's results, in place, with its topology and devices: a report
/// written before paths were declared (or by an older rule) reads with today's limits. The
/// built-in scenarios declare; a plugin's results keep the paths they carry.
void limit_report(Report& report);

} // namespace interopbench
