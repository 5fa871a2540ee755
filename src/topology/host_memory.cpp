// Host memory this process can still take: MemAvailable from /proc/meminfo, bounded by the
// cgroup (v2, then v1) memory limit less what the cgroup already uses. Overcommit lets a
// huge allocation succeed and the kernel kill the process later, so callers check first.
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "interopbench/text.hpp"
#include "interopbench/params.hpp"
#include "topology/topology.hpp"

namespace interopbench {
namespace {

std::optional<std::uint64_t> read_number(const char* path) {
    std::ifstream in(path);
    std::string word;
    if (!(in >> word) || word == "max") return std::nullopt;
    try {
        return std::stoull(word);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::optional<std::uint64_t> mem_available() {
    std::ifstream in("/proc/meminfo");
    std::string key, unit;
    std::uint64_t kib = 0;
    while (in >> key >> kib) {
        std::getline(in, unit);
        if (key == "MemAvailable:") return kib * 1024;
    }
    return std::nullopt;
}

} // namespace

std::uint64_t available_host_memory() {
    std::uint64_t avail = mem_available().value_or(std::numeric_limits<std::uint64_t>::max());
    const std::pair<const char*, const char*> cgroups[] = {
        {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
        {"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}};
    for (const auto& [limit_path, used_path] : cgroups) {
        const auto limit = read_number(limit_path);
        if (!limit) continue;
        const std::uint64_t used = read_number(used_path).value_or(0);
        avail = std::min(avail, *limit > used ? *limit - used : 0);
        break;
    }
    return avail;
}

std::optional<std::string> host_memory_shortfall(std::uint64_t bytes) {
    // Keep a margin for the tool itself, the driver and the page cache's minimum.
    constexpr std::uint64_t k_margin = 256ull << 20;
    const std::uint64_t avail = available_host_memory();
    if (bytes <= avail && avail - bytes >= k_margin) return std::nullopt;
    return fmt::format("needs {} of host memory, {} available", format_value(static_cast<double>(bytes), "B"),
                       format_value(static_cast<double>(avail), "B"));
}

} // namespace interopbench
