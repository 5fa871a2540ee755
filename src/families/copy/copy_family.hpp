#pragma once
// The copy family's private registration pieces (builtin.cpp names only the public ones).
#include "interopbench/registry.hpp"

namespace interopbench {
/// d2d_copy (device_local_copy.cpp); registered by register_host_device_copy, after the
/// host<->device copies.
void register_device_local_copy(Registry& r);
} // namespace interopbench
