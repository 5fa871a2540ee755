#include "gpu/fault.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "interopbench/errors.hpp"
#include "interopbench/params.hpp"

namespace interopbench::gpu {
namespace {

constexpr const char* k_variable = "INTEROPBENCH_FAULT";

const char* name_of(FaultKind k) {
    switch (k) {
    case FaultKind::none: return "none";
    case FaultKind::alloc: return "alloc";
    case FaultKind::copy: return "copy";
    case FaultKind::launch: return "launch";
    case FaultKind::nccl: return "nccl";
    case FaultKind::sticky: return "sticky";
    }
    return "none";
}

// The one place the variable is read; a malformed value throws here on every call, so
// the configurations that would have been tested fail loudly instead of passing.
const FaultSpec& active() {
    static const FaultSpec spec = [] {
        const char* text = std::getenv(k_variable);
        return parse_fault_spec(text ? text : "");
    }();
    return spec;
}

std::atomic<std::uint64_t> g_calls{0};

// True on the call that must fail: counts calls of the active kind.
bool hit(FaultKind kind, const char* what, const char* error) {
    const FaultSpec& spec = active();
    if (spec.kind != kind) return false;
    if (++g_calls != spec.nth) return false;
    fmt::print(stderr, "fault injection: {}={}:{} makes '{}' fail with {}\n", k_variable, name_of(kind), spec.nth,
               what, error);
    return true;
}

} // namespace

FaultSpec parse_fault_spec(std::string_view text) {
    if (text.empty()) return {};
    const std::string hint = "write KIND:N with KIND alloc, copy, launch, nccl or sticky and N >= 1, e.g. alloc:1";
    const auto colon = text.find(':');
    if (colon == std::string_view::npos)
        throw UsageError(fmt::format("invalid {} '{}': no ':N'", k_variable, text), hint);
    const std::string_view kind = text.substr(0, colon);
    FaultSpec spec;
    for (FaultKind k : {FaultKind::alloc, FaultKind::copy, FaultKind::launch, FaultKind::nccl, FaultKind::sticky})
        if (kind == name_of(k)) spec.kind = k;
    if (spec.kind == FaultKind::none)
        throw UsageError(fmt::format("invalid {} '{}': unknown kind '{}'", k_variable, text, kind), hint);
    spec.nth = parse_uint(text.substr(colon + 1), std::string(k_variable) + " count");
    if (spec.nth == 0) throw UsageError(fmt::format("invalid {} '{}': N must be at least 1", k_variable, text), hint);
    return spec;
}

FaultKind classify_cuda_call(std::string_view expr) {
    auto has = [&](std::string_view word) { return expr.find(word) != std::string_view::npos; };
    if (has("Malloc") || has("HostAlloc") || has("HostRegister") || has("MemPool")) return FaultKind::alloc;
    if (has("Memcpy") || has("Memset")) return FaultKind::copy;
    if (has("launch_")) return FaultKind::launch;
    return FaultKind::none;
}

cudaError_t cuda_fault(const char* expr) {
    const FaultKind active_kind = active().kind;
    if (active_kind == FaultKind::none || active_kind == FaultKind::nccl) return cudaSuccess;
    if (active_kind == FaultKind::sticky)
        return hit(FaultKind::sticky, expr, "cudaErrorIllegalAddress") ? cudaErrorIllegalAddress : cudaSuccess;
    const FaultKind kind = classify_cuda_call(expr);
    switch (kind) {
    case FaultKind::alloc:
        return hit(kind, expr, "cudaErrorMemoryAllocation") ? cudaErrorMemoryAllocation : cudaSuccess;
    case FaultKind::copy: return hit(kind, expr, "cudaErrorInvalidValue") ? cudaErrorInvalidValue : cudaSuccess;
    case FaultKind::launch:
        return hit(kind, expr, "cudaErrorLaunchOutOfResources") ? cudaErrorLaunchOutOfResources : cudaSuccess;
    default: return cudaSuccess;
    }
}

bool nccl_fault() { return hit(FaultKind::nccl, "an NCCL call", "ncclSystemError"); }

} // namespace interopbench::gpu
