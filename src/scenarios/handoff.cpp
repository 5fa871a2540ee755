// placeholder: filled in by its issue
#include "scenarios/scenarios.hpp"
namespace interopbench {
void register_handoff(Registry&) {}
} // namespace interopbench
