#pragma once
/// Fault injection for tests: makes one chosen CUDA or NCCL call fail, so that the error
/// paths (a failed configuration, a lost context) can be tested on a real GPU.
///
/// The switch is the environment variable INTEROPBENCH_FAULT="KIND:N", read once per
/// process. The N-th call (counted from 1 over the whole process) of KIND fails instead
/// of running; every other call runs normally:
///  - alloc:  CUDA allocations (Malloc, HostAlloc, HostRegister, MemPool calls), failing
///            with cudaErrorMemoryAllocation
///  - copy:   CUDA copies and sets (Memcpy, Memset), failing with cudaErrorInvalidValue
///  - launch: kernel launches (the kernels' launch_* functions), failing with
///            cudaErrorLaunchOutOfResources
///  - sticky: any checked CUDA call, failing with cudaErrorIllegalAddress, which loses the
///            context (FatalDeviceError: the run stops)
///  - nccl:   NCCL collective calls that the NCCL scenarios route through nccl_fault()
/// Only calls checked with IB_CUDA_CHECK count. Each injection is announced on stderr.
#include <cstdint>
#include <string_view>

#include <cuda_runtime.h>

namespace interopbench::gpu {

enum class FaultKind { none, alloc, copy, launch, nccl, sticky };

/// A parsed INTEROPBENCH_FAULT value.
struct FaultSpec {
    FaultKind kind = FaultKind::none;
    std::uint64_t nth = 0; ///< 1 = the first matching call
};

/// Parses "KIND:N" (N >= 1); empty text gives kind none. Throws UsageError otherwise.
FaultSpec parse_fault_spec(std::string_view text);

/// The kind of a checked CUDA call from its expression text: alloc, copy, launch, or none.
FaultKind classify_cuda_call(std::string_view expr);

/// Counts the checked CUDA call `expr` and returns the error to report instead of making
/// the call, or cudaSuccess (make the call). Throws UsageError when INTEROPBENCH_FAULT is
/// malformed.
cudaError_t cuda_fault(const char* expr);

/// Counts one NCCL call; true when it must fail instead of being made.
bool nccl_fault();

} // namespace interopbench::gpu
