#include "gpu/registered_mapping.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "gpu/cuda_util.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/text.hpp"
#include "topology/topology.hpp"

namespace interopbench::gpu {

namespace {
std::int64_t mtime_ns(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}
} // namespace

RegisteredMapping::RegisteredMapping(const std::vector<MappedFile>& files) {
    try {
        for (const MappedFile& f : files) {
            m_maps.push_back({});
            if (f.bytes == 0) continue;
            // The size as the file has it now: a file shorter than the mapping would raise SIGBUS.
            struct stat st {};
            if (::fstat(f.fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < f.bytes)
                throw ConfigError(fmt::format("{} is shorter than the {} bytes to map: it changed during the run", f.path, f.bytes));
            void* map = ::mmap(nullptr, f.bytes, PROT_READ, MAP_SHARED, f.fd, 0);
            if (map == MAP_FAILED) throw ConfigError(fmt::format("mmap of {} failed: {}", f.path, std::strerror(errno)));
            m_maps.back() = {map, f.bytes, false, f.path, f.fd, static_cast<std::int64_t>(st.st_size), mtime_ns(st)};
            const cudaError_t err = cudaHostRegister(map, f.bytes, cudaHostRegisterReadOnly);
            if (err != cudaSuccess) {
                (void)cudaGetLastError();
                throw Unsupported(fmt::format("cudaHostRegister(cudaHostRegisterReadOnly) of the mapped {} failed: {}", f.path,
                                              cudaGetErrorString(err)));
            }
            m_maps.back().registered = true;
        }
    } catch (...) {
        release(); // no destructor runs for an object whose constructor threw
        throw;
    }
}

RegisteredMapping::~RegisteredMapping() { release(); }

void RegisteredMapping::release() noexcept {
    for (Map& m : m_maps) {
        if (m.registered) (void)cudaHostUnregister(m.addr);
        if (m.addr) ::munmap(m.addr, m.bytes);
        m = {};
    }
}

void RegisteredMapping::unregister() {
    for (Map& m : m_maps)
        if (m.registered) {
            IB_CUDA_CHECK(cudaHostUnregister(m.addr));
            m.registered = false;
        }
}

void RegisteredMapping::check_unchanged() const {
    for (const Map& m : m_maps) {
        if (!m.addr) continue;
        struct stat st {};
        if (::fstat(m.fd, &st) != 0)
            throw ConfigError(fmt::format("{} cannot be checked while registered: {}", m.path, std::strerror(errno)));
        if (st.st_size != m.size)
            throw ConfigError(fmt::format("{} changed while registered (size {} -> {} bytes): the copies read pinned pages the "
                                          "file no longer has; keep the dataset unchanged while it is measured",
                                          m.path, m.size, static_cast<std::int64_t>(st.st_size)));
        if (mtime_ns(st) != m.mtime_ns)
            throw ConfigError(fmt::format("{} was written while registered: the bytes copied may mix its old and new "
                                          "contents; keep the dataset unchanged while it is measured",
                                          m.path));
    }
}

std::optional<std::string> registered_mapping_unsupported(int device, std::uint64_t bytes) {
    int ok = 0;
    if (cudaDeviceGetAttribute(&ok, cudaDevAttrHostRegisterReadOnlySupported, device) != cudaSuccess || ok == 0) {
        (void)cudaGetLastError();
        return fmt::format("GPU {} or its driver cannot register read-only host memory "
                           "(cudaDevAttrHostRegisterReadOnlySupported is 0): the copy engine cannot read a file mapping",
                           device);
    }
    rlimit lim{};
    if (::geteuid() != 0 && ::getrlimit(RLIMIT_MEMLOCK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < bytes)
        return fmt::format("registering {} pins it, above this process's memory lock limit ({}): raise ulimit -l",
                           format_size(bytes), format_size(lim.rlim_cur));
    if (const std::uint64_t avail = available_host_memory(); avail > 0 && bytes > avail / 2)
        return fmt::format("registering {} pins it, more than half of the host memory available ({})", format_size(bytes),
                           format_size(avail));
    return std::nullopt;
}

} // namespace interopbench::gpu
