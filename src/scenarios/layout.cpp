// placeholder: filled in by its issue
#include "scenarios/scenarios.hpp"
namespace interopbench {
void register_layout(Registry&) {}
} // namespace interopbench
