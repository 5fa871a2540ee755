// After a run: each storage_to_gpu result's efficiency against the machine's ceiling measured
// in the same run, min(read ceiling, copy ceiling):
//  - the read ceiling is the best storage_read of the same size and cache state over every
//    method, thread count and queue depth the run measured (warm: the page cache; cold: the
//    drives), never a one-thread reader unless that was the best;
//  - the copy ceiling is the best pinned copy-engine h2d_copy to the same GPU.
// The details name the results that set each side and how they read (method, threads, qd).
// A figure is given only when both sides were measured in this run; otherwise the details
// say which side is missing.
#include <algorithm>

#include <fmt/format.h>

#include "interopbench/runner.hpp"

namespace interopbench {
namespace {

double median_bandwidth(const Result& r) {
    const MetricResult* m = r.metric("bandwidth");
    return r.status == Status::ok && m && m->stats.n > 0 ? m->stats.median : 0;
}

nlohmann::json side(const Result& r, std::initializer_list<const char*> how) {
    nlohmann::json j{{"key", r.key}, {"bandwidth", median_bandwidth(r)}};
    for (const char* k : how)
        if (const auto v = r.params.find(k)) j[k] = *v;
    return j;
}

} // namespace

void annotate_storage_results(std::vector<Result>& results) {
    for (Result& r : results) {
        if (r.scenario != "storage_to_gpu" || r.status != Status::ok) continue;
        const std::string size = r.params.get("size"), cache = r.params.get("cache");
        const std::string device = r.params.get("device");
        const Result* best_read = nullptr;
        const Result* best_h2d = nullptr;
        for (const Result& o : results) {
            if (o.scenario == "storage_read" && o.params.get("size") == size && o.params.get("cache") == cache &&
                median_bandwidth(o) > 0 && (!best_read || median_bandwidth(o) > median_bandwidth(*best_read)))
                best_read = &o;
            if (o.scenario == "h2d_copy" && o.params.find("device") == device && o.params.find("host_mem") == "pinned" &&
                o.params.find("engine") == "ce" && median_bandwidth(o) > 0 &&
                (!best_h2d || median_bandwidth(o) > median_bandwidth(*best_h2d)))
                best_h2d = &o;
        }
        nlohmann::json roof = nlohmann::json::object();
        if (best_read) roof["storage_read"] = side(*best_read, {"path", "threads", "qd", "chunk"});
        if (best_h2d) roof["h2d_copy"] = side(*best_h2d, {"size"});
        if (!best_read || !best_h2d) {
            roof["note"] = fmt::format("no efficiency: this run has no {}",
                                       !best_read ? fmt::format("storage_read of size {} with cache {}", size, cache)
                                                  : std::string("pinned copy-engine h2d_copy to this GPU"));
        } else {
            const bool read_bound = median_bandwidth(*best_read) <= median_bandwidth(*best_h2d);
            const Result& limit = read_bound ? *best_read : *best_h2d;
            roof["bandwidth"] = median_bandwidth(limit);
            roof["set_by"] = read_bound ? fmt::format("storage_read path={} threads={} qd={}",
                                                      best_read->params.find("path").value_or("?"),
                                                      best_read->params.find("threads").value_or("1"),
                                                      best_read->params.find("qd").value_or("0"))
                                        : std::string("h2d_copy pinned, copy engine");
            r.details["efficiency"] = median_bandwidth(r) / median_bandwidth(limit);
        }
        r.details["roofline"] = roof;
    }
}

} // namespace interopbench
