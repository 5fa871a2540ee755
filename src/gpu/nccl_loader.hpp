#pragma once
/// NCCL, loaded at run time: `libnccl.so.2` is opened with dlopen on first use, so the
/// tool starts (and skips the collectives with the reason) where NCCL is missing. The
/// entry points are only declared when the build has NCCL's header
/// (INTEROPBENCH_WITH_NCCL); the probe and the version decoding are always there.
#include <string>

#include "interopbench/scenario.hpp"

#if INTEROPBENCH_WITH_NCCL
#include <nccl.h>
#endif

namespace interopbench::gpu {

/// Records library "nccl" in machine.libraries: its version ("2.28.3") when NCCL loads, else
/// an empty version and the reason (not built with NCCL, library missing, too old).
/// Never throws.
void probe_nccl(Machine& machine);

/// Decodes an NCCL version code as ncclGetVersion returns it: 2.8.4 and older are
/// X*1000+Y*100+Z, later ones X*10000+Y*100+Z (22803 -> "2.28.3", 2804 -> "2.8.4").
std::string nccl_version_string(int code);

#if INTEROPBENCH_WITH_NCCL
/// The NCCL entry points this tool uses, resolved from the loaded library.
struct NcclApi {
    int version_code = 0;
    std::string version; ///< "2.28.3"

    ncclResult_t (*get_version)(int*) = nullptr;
    const char* (*get_error_string)(ncclResult_t) = nullptr;
    const char* (*get_last_error)(ncclComm_t) = nullptr;
    ncclResult_t (*get_unique_id)(ncclUniqueId*) = nullptr;
    ncclResult_t (*comm_init_rank_config)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*) = nullptr;
    ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t*) = nullptr;
    ncclResult_t (*comm_finalize)(ncclComm_t) = nullptr;
    ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
    ncclResult_t (*comm_abort)(ncclComm_t) = nullptr;
    ncclResult_t (*group_start)() = nullptr;
    ncclResult_t (*group_end)() = nullptr;
    ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                              cudaStream_t) = nullptr;
    ncclResult_t (*all_gather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) = nullptr;
    ncclResult_t (*reduce_scatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                  cudaStream_t) = nullptr;
    ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
    ncclResult_t (*reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                           cudaStream_t) = nullptr;
    ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
    ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
};

/// The loaded API, or nullptr with the reason in `why`. Loads once per process (the
/// library stays loaded: NCCL keeps threads). Before the first load, NCCL_NVLS_ENABLE is
/// set to 0 unless the user set it: NVLink SHARP (multicast) is never switched on by
/// this tool.
const NcclApi* nccl_api(std::string* why);
#endif

} // namespace interopbench::gpu
