#pragma once
/// The built-in scenario families, handed by the command line (and the tests) to the core:
/// the core itself knows no family.
#include <string>
#include <vector>

#include "interopbench/family.hpp"

namespace interopbench {

/// Every family, in `list` order: the one explicit list (families/builtin.cpp).
const Families& builtin_families();

/// The scenarios of every family, plugins included, with the run's family options (where
/// to look for plugins): what `list`, `run` and the round processes use.
Registry scenario_registry(const FamilyOptions& options, std::vector<std::string>& warnings);

/// The scenarios of the named families (tests), in list order, with their profile entries;
/// of every family but the plugin one when `families` is empty.
Registry builtin_registry(const std::vector<std::string>& families = {});

} // namespace interopbench
