// After a run: the ceiling of the storage or page-cache path each storage_to_gpu result
// declares, measured in the same run the way the path runs: the best of every storage_read and
// every storage_to_gpu of the same size and cache state that reads from the same place (the
// page cache, or the drive for cold, O_DIRECT and cuFile reads), over every method, thread
// count and queue depth measured. A read measured alone is not enough: on a warm path the
// page-cache copy and the DMA share host memory, and a GPU path that reads while it copies
// (the pipelined paths) shows what the two reach together; a ceiling taken over the results it
// bounds is never beaten. It goes into details "measured_limits" (limits.hpp sets it against
// the result with the host link's limit); "roofline" names the result that set it and how it
// read (scenario, method, threads, qd), or why there is none.
#include <stdexcept>

#include <fmt/format.h>

#include "interopbench/limits.hpp"
#include "interopbench/runner.hpp"

namespace interopbench {
namespace {

double median_bandwidth(const Result& r) {
    const MetricResult* m = r.metric("bandwidth");
    return r.status == Status::ok && m && m->stats.n > 0 ? m->stats.median : 0;
}

/// The page-cache or storage path `r` declares, or nothing (also when its declaration does
/// not read).
std::optional<PathUse> read_path(const Result& r) {
    try {
        for (const PathUse& p : declared_paths(r))
            if (p.kind == PathKind::page_cache || p.kind == PathKind::storage) return p;
    } catch (const std::invalid_argument&) {
    }
    return std::nullopt;
}

} // namespace

void annotate_storage_results(std::vector<Result>& results) {
    for (Result& r : results) {
        if (r.scenario != "storage_to_gpu" || r.status != Status::ok) continue;
        const auto from = read_path(r);
        if (!from) continue;
        const std::string size = r.params.get("size"), cache = r.params.get("cache");
        const Result* best = nullptr;
        for (const Result& o : results) {
            if ((o.scenario != "storage_read" && o.scenario != "storage_to_gpu") || o.params.get("size") != size ||
                o.params.get("cache") != cache || median_bandwidth(o) <= 0)
                continue;
            const auto o_from = read_path(o);
            if (o_from && o_from->kind == from->kind && (!best || median_bandwidth(o) > median_bandwidth(*best))) best = &o;
        }
        nlohmann::json roof = nlohmann::json::object();
        if (best) {
            const std::string how = fmt::format("{} path={} threads={} qd={}", best->scenario,
                                                best->params.find("path").value_or("?"),
                                                best->params.find("threads").value_or("1"),
                                                best->params.find("qd").value_or("0"));
            roof["best"] = {{"key", best->key}, {"bandwidth", median_bandwidth(*best)}, {"how", how}};
            r.details["measured_limits"] = nlohmann::json::array(
                {{{"path", from->id()},
                  {"bandwidth", median_bandwidth(*best)},
                  {"source", fmt::format("the best read of this size and cache state from the {} in this run, alone "
                                         "(storage_read) or while copying to the GPU (storage_to_gpu): {}",
                                         from->label(), how)}}});
        } else {
            r.details.erase("measured_limits");
            roof["note"] = fmt::format("no ceiling for the {}: this run has no storage_read or storage_to_gpu of size {} "
                                       "with cache {} reading from it",
                                       from->label(), size, cache);
        }
        r.details["roofline"] = roof;
    }
}

} // namespace interopbench
