#pragma once
/// The built-in scenario families, handed by the command line (and the tests) to the core's
/// session: the core itself knows no family.
#include "interopbench/registry.hpp"

namespace interopbench {

/// Every built-in scenario, in a fixed order (the `list` order): families/builtin.cpp.
Registry builtin_registry();

/// Each family's registration, defined in its folder; builtin_registry calls them in order.
void register_host_memcpy(Registry& r);      // families/copy
void register_host_device_copy(Registry& r); // families/copy
void register_alloc(Registry& r);            // families/alloc
void register_peer(Registry& r);             // families/peer
void register_nccl(Registry& r);             // families/nccl
void register_layout(Registry& r);           // families/layout
void register_handoff(Registry& r);          // families/handoff

} // namespace interopbench
