// Run-time loading of libnccl.so.2. The build needs only nccl.h (for types); the
// binary runs where NCCL is absent and says so instead of failing to start.
#include "gpu/nccl_loader.hpp"

#include <fmt/format.h>

#if INTEROPBENCH_WITH_NCCL
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#endif

namespace interopbench::gpu {

std::string nccl_version_string(int code) {
    if (code <= 0) return {};
    if (code < 10000) return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
    return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
}

#if INTEROPBENCH_WITH_NCCL

namespace {

// Non-blocking communicators (ncclCommInitRankConfig, ncclCommFinalize) arrived in 2.14;
// the timeout handling depends on them.
constexpr int k_min_version = 21400;

template <class F> bool resolve(void* lib, F& fn, const char* name, std::string& missing) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    if (!fn) missing = name;
    return fn != nullptr;
}

struct Loaded {
    NcclApi api;
    std::string why; ///< empty when the API is usable
};

Loaded load() {
    Loaded out;
    // NVLink multicast can take a host's GPUs out of service; only an explicit user
    // setting turns it on.
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* err = dlerror();
        out.why = fmt::format("libnccl.so.2 could not be loaded ({}); install NCCL or add its directory to "
                              "LD_LIBRARY_PATH",
                              err ? err : "unknown error");
        return out;
    }
    NcclApi& a = out.api;
    std::string missing;
    const bool ok = resolve(lib, a.get_version, "ncclGetVersion", missing) &&
                    resolve(lib, a.get_error_string, "ncclGetErrorString", missing) &&
                    resolve(lib, a.get_last_error, "ncclGetLastError", missing) &&
                    resolve(lib, a.get_unique_id, "ncclGetUniqueId", missing) &&
                    resolve(lib, a.comm_init_rank_config, "ncclCommInitRankConfig", missing) &&
                    resolve(lib, a.comm_get_async_error, "ncclCommGetAsyncError", missing) &&
                    resolve(lib, a.comm_finalize, "ncclCommFinalize", missing) &&
                    resolve(lib, a.comm_destroy, "ncclCommDestroy", missing) &&
                    resolve(lib, a.comm_abort, "ncclCommAbort", missing) &&
                    resolve(lib, a.group_start, "ncclGroupStart", missing) &&
                    resolve(lib, a.group_end, "ncclGroupEnd", missing) &&
                    resolve(lib, a.all_reduce, "ncclAllReduce", missing) &&
                    resolve(lib, a.all_gather, "ncclAllGather", missing) &&
                    resolve(lib, a.reduce_scatter, "ncclReduceScatter", missing) &&
                    resolve(lib, a.broadcast, "ncclBroadcast", missing) &&
                    resolve(lib, a.reduce, "ncclReduce", missing) &&
                    resolve(lib, a.send, "ncclSend", missing) &&
                    resolve(lib, a.recv, "ncclRecv", missing);
    int code = 0;
    if (a.get_version && a.get_version(&code) == ncclSuccess) {
        a.version_code = code;
        a.version = nccl_version_string(code);
    }
    if (!a.version.empty() && code < k_min_version) {
        out.why = fmt::format("NCCL {} is older than 2.14, which the collectives need (non-blocking communicators)",
                              a.version);
    } else if (!ok) {
        out.why = fmt::format("libnccl.so.2{} lacks {}; NCCL 2.14 or newer is needed",
                              a.version.empty() ? "" : " (" + a.version + ")", missing);
    } else if (a.version.empty()) {
        out.why = "libnccl.so.2 loaded but ncclGetVersion failed";
    }
    return out;
}

} // namespace

const NcclApi* nccl_api(std::string* why) {
    static std::once_flag once;
    static Loaded loaded;
    std::call_once(once, [] { loaded = load(); });
    if (!loaded.why.empty()) {
        if (why) *why = loaded.why;
        return nullptr;
    }
    return &loaded.api;
}

void probe_nccl(Machine& machine) {
    std::string why;
    const NcclApi* api = nccl_api(&why);
    machine.set_library({"nccl", api ? api->version : std::string{}, api ? std::string{} : why});
}

#else

void probe_nccl(Machine& machine) {
    machine.set_library({"nccl", "", "built without NCCL (nccl.h was not found, or INTEROPBENCH_WITH_NCCL=OFF)"});
}

#endif

} // namespace interopbench::gpu
