#pragma once
/// What the storage scenarios share: axes, metrics, the support checks that depend on the
/// storage directory, and the per-sample byte accounting turned into metric values.
#include <unistd.h>

#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "hostio/readers.hpp"
#include "hostio/storage_io.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/params.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench::storage {

inline Axis size_axis() { return {"size", "file bytes per sample (the whole file is moved)", AxisKind::size, {"1G"}, {}}; }
inline Axis cache_axis() {
    return choice_axis("cache",
                       "cold: pages dropped before each sample and mincore shows none cached; warm: one untimed pass, "
                       "mincore shows all cached",
                       {"cold", "warm"});
}
inline Axis chunk_axis() { return {"chunk", "bytes per I/O (and per pipeline slot)", AxisKind::size, {"16M"}, {}}; }
inline Axis threads_axis(const char* help, const char* default_value = "1", std::uint64_t min = 1) {
    return {"threads", help, AxisKind::integer, {default_value}, {}, min, 1024};
}
/// Reads in flight per thread on the io_uring path `path`; 0 = `default_qd`.
inline Axis qd_axis(const char* path, unsigned default_qd) {
    return {"qd",
            fmt::format("io_uring reads in flight per reader thread (path={} only; 0 = {}, other paths take only 0)", path,
                        default_qd),
            AxisKind::integer, {"0"}, {}, 0, 4096};
}

/// The readers' axes against this machine: threads (0 = automatic where the axis allows it)
/// at most 4 per hardware thread, qd only on io_uring paths.
inline std::optional<std::string> readers_unsupported(const Machine& m, const Params& p, bool uring) {
    if (const auto t = p.get_uint("threads"); t != 0)
        if (auto why = threads_refused(t, m.host_cores)) return why;
    if (const auto qd = p.find("qd"); qd && std::stoull(*qd) != 0) {
        if (!uring) return fmt::format("qd applies to the io_uring paths only (path={})", p.get("path"));
        if (auto why = queue_depth_refused(std::stoull(*qd))) return why;
    }
    return std::nullopt;
}

inline std::vector<MetricInfo> accounting_metrics(bool reads) {
    const char* dir = reads ? "read" : "written";
    return {{"cpu_time_per_gb", "s", Better::lower, "user + system CPU seconds of the process per 1e9 file bytes"},
            {"device_bytes", "B", Better::higher,
             fmt::format("bytes the process {} from or to the block layer (/proc/self/io {}_bytes) per sample", dir,
                         reads ? "read" : "write")},
            {"disk_bytes", "B", Better::higher,
             "bytes the block device under the file transferred (its sector counters, every process) per sample"},
            {"cache_bytes", "B", Better::higher, "file bytes not accounted to the device: served by the page cache"},
            {"resident_before", "ratio", Better::lower, "fraction of the file's pages cached before the sample (mincore)"}};
}

/// The accounting metric values in accounting_metrics() order.
inline void push_accounting(Sample& s, const Accounting& a, std::uint64_t file_bytes, double seconds_cpu,
                            const Residency& before, bool reads) {
    const double dev = reads ? a.device_read_bytes() : a.device_write_bytes();
    s.push_back(seconds_cpu / (static_cast<double>(file_bytes) / 1e9));
    s.push_back(dev);
    s.push_back(reads ? a.disk_read_bytes() : a.disk_write_bytes());
    s.push_back(std::isnan(dev) ? std::nan("") : std::max(0.0, static_cast<double>(file_bytes) - dev));
    s.push_back(reads ? before.fraction() : std::nan(""));
}

/// Support checks shared by every storage scenario, from the site's probes.
/// `direct`: the path reads with O_DIRECT; `uses_cache_axis`: the scenario has a cache axis.
inline std::optional<std::string> storage_unsupported(Site& site, const Params& p, bool direct, bool uses_cache_axis) {
    const std::uint64_t size = p.get_uint("size");
    if (size < 8) return std::string("size must be at least 8 bytes");
    if (direct) {
        if (auto why = site.odirect_unsupported()) return why;
        const std::uint64_t a = site.dio_alignment();
        if (size % a != 0)
            return fmt::format("size {} is not a multiple of the direct-I/O alignment {} of {}; give a multiple, e.g. {}",
                               format_size(size), format_size(a), site.dir(), format_size((size + a - 1) / a * a));
        if (auto c = p.find("chunk"); c && std::stoull(*c) % a != 0)
            return fmt::format("chunk {} is not a multiple of the direct-I/O alignment {}", format_size(std::stoull(*c)),
                               format_size(a));
    }
    if (uses_cache_axis) {
        const std::string cache = p.get("cache");
        if (cache == "warm" && direct)
            return std::string("O_DIRECT bypasses the page cache: warm is the same measurement as cold for this path");
        if (cache == "cold")
            if (auto why = site.cold_unreachable()) return why;
        const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
        const double mem = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
        if (cache == "warm" && mem > 0 && 2.5 * static_cast<double>(size) > mem)
            return fmt::format("warm needs the file and its destination in memory: {} is too large for {} of RAM",
                               format_size(size), format_size(static_cast<std::uint64_t>(mem)));
    }
    return std::nullopt;
}

} // namespace interopbench::storage
