// libFuzzer entry point; the harness is in harness.hpp.
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    interopbench::fuzz::fleet(data, size);
    return 0;
}
