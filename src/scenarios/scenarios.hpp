#pragma once
/// One registration function per scenario family file; builtin.cpp calls them in order.
#include "interopbench/registry.hpp"

namespace interopbench {
void register_host_memcpy(Registry& r);
void register_host_device_copy(Registry& r);
void register_alloc(Registry& r);
void register_peer(Registry& r);
void register_nccl(Registry& r);
void register_layout(Registry& r);
void register_handoff(Registry& r);
} // namespace interopbench
