#include "interopbench/merge.hpp"
#include "interopbench/file_io.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace interopbench {

namespace {

struct RankResults {
    RankIdentity who;
    std::vector<Result> results;
    std::map<std::string, const Result*> by_key;
};

RankResults decode(const std::string& text, std::size_t index) {
    RankResults out;
    try {
        const auto j = parse_json(text);
        out.who.rank = j.at("rank").get<int>();
        out.who.local_rank = j.value("local_rank", 0);
        out.who.host = j.value("host", std::string{});
        out.who.device = j.value("device", std::string{});
        if (const auto f = j.find("fingerprint"); f != j.end()) out.who.fingerprint = *f;
        out.results = j.at("results").get<std::vector<Result>>();
    } catch (const std::exception& e) {
        throw std::runtime_error(
            fmt::format("the results gathered from rank {} cannot be read: {}", index, e.what()));
    }
    for (const auto& r : out.results) out.by_key.emplace(r.key, &r);
    return out;
}

/// Index of the slowest rank for this key, or -1 when no rank has primary figures.
int slowest(const std::vector<const Result*>& per_rank) {
    int best = -1;
    double best_median = 0;
    for (std::size_t i = 0; i < per_rank.size(); ++i) {
        const Result* r = per_rank[i];
        if (!r || r->status != Status::ok || r->metrics.empty() || r->metrics[0].stats.n == 0) continue;
        const double median = r->metrics[0].stats.median;
        const bool lower_is_better = r->metrics[0].info.better == Better::lower;
        if (best < 0 || (lower_is_better ? median > best_median : median < best_median)) {
            best = static_cast<int>(i);
            best_median = median;
        }
    }
    return best;
}

nlohmann::json rank_entry(const RankIdentity& who, const Result* r) {
    nlohmann::json e = {{"rank", who.rank}, {"local_rank", who.local_rank}, {"host", who.host}, {"device", who.device}};
    if (!r) {
        e["status"] = "missing";
        e["reason"] = "no result from this rank";
        return e;
    }
    e["status"] = to_string(r->status);
    e["reason"] = r->reason;
    e["stop_reason"] = r->stop_reason;
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& m : r->metrics)
        metrics[m.info.name] = {{"n", m.stats.n},     {"median", m.stats.median}, {"mean", m.stats.mean},
                                {"min", m.stats.min}, {"max", m.stats.max}};
    e["metrics"] = std::move(metrics);
    return e;
}

/// The ranks' reasons: once when every rank of the world gave the same one, else each
/// prefixed by its rank.
std::string joined_reason(const std::vector<std::string>& reasons, const std::vector<int>& ranks,
                          std::size_t world_size) {
    const bool shared = std::all_of(reasons.begin(), reasons.end(), [&](const auto& r) { return r == reasons.front(); });
    if (shared && reasons.size() == world_size) return reasons.front();
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < reasons.size(); ++i) parts.push_back(fmt::format("rank {}: {}", ranks[i], reasons[i]));
    return fmt::format("{}", fmt::join(parts, "; "));
}

} // namespace

std::string encode_rank_results(const RankIdentity& who, const std::vector<Result>& results) {
    const nlohmann::json j = {{"rank", who.rank},
                              {"local_rank", who.local_rank},
                              {"host", who.host},
                              {"device", who.device},
                              {"fingerprint", who.fingerprint},
                              {"results", results}};
    return j.dump();
}

std::string slowest_rank_words(const nlohmann::json& details) {
    // Read from reports, so every field may be missing or of another type.
    const auto integer = [](const nlohmann::json& obj, const char* key) -> std::optional<std::int64_t> {
        const auto it = obj.find(key);
        if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
        return it->get<std::int64_t>();
    };
    if (!details.is_object() || integer(details, "world_size").value_or(0) < 2) return {};
    const auto slow = integer(details, "slowest_rank");
    const auto ranks = details.find("ranks");
    if (!slow || ranks == details.end() || !ranks->is_array()) return {};
    std::string words = fmt::format("rank {}", *slow);
    for (const auto& e : *ranks)
        if (e.is_object() && integer(e, "rank") == slow) {
            if (const auto h = e.find("host"); h != e.end() && h->is_string() && !h->get_ref<const std::string&>().empty())
                words += " on " + h->get<std::string>();
            if (const auto d = e.find("device"); d != e.end() && d->is_string() && !d->get_ref<const std::string&>().empty())
                words += fmt::format(" (GPU {})", d->get<std::string>());
            break;
        }
    return words;
}

MergedRanks merge_rank_results(const std::vector<std::string>& gathered) {
    std::vector<RankResults> ranks;
    ranks.reserve(gathered.size());
    for (std::size_t i = 0; i < gathered.size(); ++i) ranks.push_back(decode(gathered[i], i));

    MergedRanks out;
    for (const auto& rank : ranks) {
        nlohmann::json entry = {{"rank", rank.who.rank}, {"local_rank", rank.who.local_rank}, {"device", rank.who.device}};
        if (rank.who.fingerprint.is_object()) entry.update(rank.who.fingerprint);
        out.hosts.push_back(std::move(entry));
    }

    std::vector<std::string> keys;
    for (const auto& rank : ranks)
        for (const auto& r : rank.results)
            if (std::find(keys.begin(), keys.end(), r.key) == keys.end()) keys.push_back(r.key);

    for (const auto& key : keys) {
        std::vector<const Result*> per_rank;
        for (const auto& rank : ranks) {
            const auto it = rank.by_key.find(key);
            per_rank.push_back(it == rank.by_key.end() ? nullptr : it->second);
        }
        const int slow = slowest(per_rank);
        const Result* base = slow >= 0 ? per_rank[static_cast<std::size_t>(slow)]
                                       : *std::find_if(per_rank.begin(), per_rank.end(), [](auto* r) { return r; });
        Result merged = *base;

        // Status: a result missing on any rank cannot be trusted, so it counts as failed.
        std::vector<std::string> failed, interrupted, skipped;
        std::vector<int> failed_ranks, interrupted_ranks, skipped_ranks;
        for (std::size_t i = 0; i < ranks.size(); ++i) {
            const Result* r = per_rank[i];
            const int id = ranks[i].who.rank;
            if (!r) {
                failed.push_back("no result (the rank stopped before this configuration)");
                failed_ranks.push_back(id);
            } else if (r->status == Status::failed) {
                failed.push_back(r->reason);
                failed_ranks.push_back(id);
            } else if (r->status == Status::interrupted) {
                interrupted.push_back(r->reason);
                interrupted_ranks.push_back(id);
            } else if (r->status == Status::skipped) {
                skipped.push_back(r->reason);
                skipped_ranks.push_back(id);
            }
        }
        if (!failed.empty()) {
            merged.status = Status::failed;
            merged.reason = joined_reason(failed, failed_ranks, ranks.size());
        } else if (!interrupted.empty()) {
            merged.status = Status::interrupted;
            merged.reason = joined_reason(interrupted, interrupted_ranks, ranks.size());
        } else if (!skipped.empty()) {
            merged.status = Status::skipped;
            merged.reason = joined_reason(skipped, skipped_ranks, ranks.size());
        } else {
            merged.status = Status::ok;
            merged.reason.clear();
        }

        nlohmann::json entries = nlohmann::json::array();
        for (std::size_t i = 0; i < ranks.size(); ++i) {
            entries.push_back(rank_entry(ranks[i].who, per_rank[i]));
            if (per_rank[i]) merged.wall_time_s = std::max(merged.wall_time_s, per_rank[i]->wall_time_s);
        }
        if (!merged.details.is_object()) merged.details = nlohmann::json::object();
        merged.details["world_size"] = ranks.size();
        if (slow >= 0) merged.details["slowest_rank"] = ranks[static_cast<std::size_t>(slow)].who.rank;
        merged.details["ranks"] = std::move(entries);
        out.results.push_back(std::move(merged));
    }
    return out;
}

} // namespace interopbench
