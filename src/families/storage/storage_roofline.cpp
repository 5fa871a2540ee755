// After a run: each storage_to_gpu result's efficiency against the same run's roofline,
// min(the best storage_read of the same size, cache state and path family, the best pinned
// copy-engine h2d_copy to the same GPU). A figure is given only when both sides were
// measured in this run; otherwise the details say which side is missing.
#include <algorithm>

#include <fmt/format.h>

#include "interopbench/runner.hpp"
#include "gpu/storage_io.hpp"

namespace interopbench {
namespace {

double median_bandwidth(const Result& r) {
    const MetricResult* m = r.metric("bandwidth");
    return r.status == Status::ok && m && m->stats.n > 0 ? m->stats.median : 0;
}

/// The storage_read paths a GPU path is bounded by: O_DIRECT ones for O_DIRECT and cuFile
/// reads (cuFile's compat mode reads with O_DIRECT too), buffered ones otherwise.
bool same_family(const std::string& gpu_path, const std::string& read_path) {
    const bool direct = gpu_path == "odirect_pipelined" || gpu_path.rfind("cufile", 0) == 0;
    const bool read_direct = read_path == "odirect" || read_path == "io_uring";
    return direct == read_direct;
}

} // namespace

void annotate_storage_results(std::vector<Result>& results) {
    for (Result& r : results) {
        if (r.scenario != "storage_to_gpu" || r.status != Status::ok) continue;
        const std::string size = r.params.get("size"), cache = r.params.get("cache"), path = r.params.get("path");
        const std::string device = r.params.get("device");
        const Result* best_read = nullptr;
        const Result* best_h2d = nullptr;
        for (const Result& o : results) {
            if (o.scenario == "storage_read" && o.params.get("size") == size && o.params.get("cache") == cache &&
                same_family(path, o.params.get("path")) && median_bandwidth(o) > 0 &&
                (!best_read || median_bandwidth(o) > median_bandwidth(*best_read)))
                best_read = &o;
            if (o.scenario == "h2d_copy" && o.params.find("device") == device && o.params.find("host_mem") == "pinned" &&
                o.params.find("engine") == "ce" && median_bandwidth(o) > 0 &&
                (!best_h2d || median_bandwidth(o) > median_bandwidth(*best_h2d)))
                best_h2d = &o;
        }
        nlohmann::json roof = nlohmann::json::object();
        if (best_read) roof["storage_read"] = {{"key", best_read->key}, {"bandwidth", median_bandwidth(*best_read)}};
        if (best_h2d) roof["h2d_copy"] = {{"key", best_h2d->key}, {"bandwidth", median_bandwidth(*best_h2d)}};
        if (!best_read || !best_h2d) {
            roof["note"] = fmt::format("no efficiency: this run has no {}", !best_read ? "storage_read of the same size, cache "
                                                                                       "state and path family"
                                                                                     : "pinned copy-engine h2d_copy to this GPU");
        } else {
            const double limit = std::min(median_bandwidth(*best_read), median_bandwidth(*best_h2d));
            roof["bandwidth"] = limit;
            r.details["efficiency"] = median_bandwidth(r) / limit;
        }
        r.details["roofline"] = roof;
    }
}

} // namespace interopbench
