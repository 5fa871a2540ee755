// The explicit list of scenario families, in `list` order. A family file registers its
// scenarios in a fixed order; nothing registers itself through static initialisation.
#include "scenarios/scenarios.hpp"

namespace interopbench {

Registry builtin_registry() {
    Registry r;
    register_host_memcpy(r);
    register_host_device_copy(r);
    register_alloc(r);
    register_peer(r);
    register_nccl(r);
    register_layout(r);
    register_handoff(r);
    return r;
}

} // namespace interopbench
