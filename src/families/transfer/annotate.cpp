// After a run: what sharing cost each set of several transfers (transfer.hpp,
// annotate_transfer_results). Host-only: it reads results, declared paths and limits.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "families/transfer/spec.hpp"
#include "families/transfer/transfer.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/limits.hpp"

namespace interopbench::transfer {
namespace {

/// A transfer slower together than alone by more than this (relative) was slowed by sharing.
constexpr double k_slowed = 0.03;

double median_of(const Result& r, const std::string& metric) {
    const MetricResult* m = r.metric(metric);
    return m && m->stats.n > 0 ? m->stats.median : std::numeric_limits<double>::quiet_NaN();
}

std::string gbps(double v) { return fmt::format("{:.1f} GB/s", v / 1e9); }
std::string figures(const std::vector<double>& v) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i)
        out += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + (std::isnan(v[i]) ? std::string("?") : fmt::format("{:.1f}", v[i] / 1e9));
    return out + " GB/s";
}

/// "#2 file:warm->gpu0", "#1 gpu0->gpu1&host:pinned": a transfer's place and its endpoints.
std::string name(const TransferSet& set, std::size_t i) {
    return fmt::format("#{} {}->{}", i + 1, set.transfers[i].src.text(), set.transfers[i].destinations_text());
}

/// A broadcast's bandwidth counts its bytes once per destination: the rate its source was read
/// at is that over the destinations, into its transfer's details ("source_read_bandwidth").
void source_read_rates(Result& r, const TransferSet& set) {
    auto transfers = r.details.find("transfers");
    if (transfers == r.details.end() || !transfers->is_array()) return;
    for (std::size_t i = 0; i < set.transfers.size() && i < transfers->size(); ++i) {
        const Transfer& t = set.transfers[i];
        auto& j = (*transfers)[i];
        if (!t.broadcast() || !j.is_object()) continue;
        const double bw = median_of(r, transfer_metric(i + 1));
        if (std::isnan(bw)) j.erase("source_read_bandwidth");
        else j["source_read_bandwidth"] = bw / static_cast<double>(t.destinations().size());
    }
}

/// One path two or more transfers of a set cross.
struct Shared {
    PathUse path;
    std::vector<std::size_t> members;
    std::vector<double> loads; ///< each member's bytes per second on the path (bandwidth x traffic)
    double total = 0;
    double capacity = 0;       ///< its limit, else the most one member moved on it alone
    std::string source;
    bool known = false;        ///< the limit is the machine's (or a ceiling measured in the run)
    double utilization() const { return capacity > 0 ? total / capacity : 0; }
};

} // namespace

void annotate_transfer_results(std::vector<Result>& results) {
    // The machine's limits apply_limits gave paths on any result of the run, by path id (a
    // ceiling measured for one result is that result's, and is not there before the annotations
    // of a run).
    std::map<std::string, std::pair<double, std::string>> limits;
    for (const Result& r : results) {
        const auto paths = r.details.find("paths");
        if (paths == r.details.end() || !paths->is_array()) continue;
        for (const auto& e : *paths) {
            if (!e.is_object() || !e.contains("limit") || !e["limit"].is_number() || e["limit"].get<double>() <= 0 ||
                e.value("measured", false))
                continue;
            try {
                const PathUse p = e.get<PathUse>();
                limits.emplace(p.id(), std::make_pair(e["limit"].get<double>(), e.value("source", std::string())));
            } catch (const std::exception&) {
            }
        }
    }
    // Each transfer measured alone: a result of one transfer, by its canonical text.
    std::map<std::string, const Result*> alone;
    for (const Result& r : results)
        if (r.scenario == k_scenario && r.status == Status::ok && !std::isnan(median_of(r, "bandwidth")))
            if (const auto text = r.params.find(k_axis); text && text->find('+') == std::string::npos) alone.emplace(*text, &r);

    for (Result& r : results) {
        if (r.scenario != k_scenario) continue;
        r.details.erase("sharing");
        r.details.erase("diagnosis");
        if (r.status != Status::ok) continue;
        TransferSet set;
        try {
            set = parse_set(r.params.find(k_axis).value_or(""));
        } catch (const UsageError&) {
            continue;
        }
        source_read_rates(r, set);
        const std::size_t n = set.transfers.size();
        if (n < 2) continue;
        std::vector<double> together(n), solo(n, std::numeric_limits<double>::quiet_NaN());
        std::vector<std::string> solo_key(n);
        for (std::size_t i = 0; i < n; ++i) {
            together[i] = median_of(r, transfer_metric(i + 1));
            if (const auto it = alone.find(set.transfers[i].text()); it != alone.end()) {
                solo[i] = median_of(*it->second, "bandwidth");
                solo_key[i] = it->second->key;
            }
        }
        // The paths two or more transfers cross, with each one's load on them.
        std::map<std::string, Shared> crossed;
        std::vector<std::string> order;
        for (std::size_t i = 0; i < n; ++i)
            for (const PathUse& p : set.transfers[i].paths()) {
                const std::string key = share_key(set.transfers[i], p);
                auto [it, fresh] = crossed.try_emplace(key);
                if (fresh) {
                    it->second.path = p;
                    order.push_back(key);
                }
                it->second.members.push_back(i);
                it->second.loads.push_back(together[i] * p.traffic);
                if (!std::isnan(solo[i])) it->second.capacity = std::max(it->second.capacity, solo[i] * p.traffic);
            }
        std::vector<Shared*> shared;
        for (const std::string& key : order) {
            Shared& s = crossed[key];
            if (s.members.size() < 2) continue;
            for (double l : s.loads)
                if (!std::isnan(l)) s.total += l;
            if (const auto it = limits.find(s.path.id()); it != limits.end()) {
                s.capacity = it->second.first;
                s.source = it->second.second;
                s.known = true;
            } else {
                s.source = "no known limit: the most one of them moved on it alone in this run";
            }
            shared.push_back(&s);
        }
        // The shared path that limited each slowed transfer: of those it crosses, the fullest
        // one with a known limit, else the one carrying the most.
        std::vector<Shared*> limiter(n, nullptr);
        std::vector<bool> slowed(n, false);
        double cost = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (std::isnan(solo[i]) || std::isnan(together[i])) continue;
            cost += solo[i] - together[i];
            slowed[i] = together[i] < solo[i] * (1 - k_slowed);
            if (!slowed[i]) continue;
            for (Shared* s : shared) {
                if (std::find(s->members.begin(), s->members.end(), i) == s->members.end()) continue;
                const Shared* b = limiter[i];
                if (!b || (s->known && !b->known) ||
                    (s->known == b->known && (s->known ? s->utilization() > b->utilization() : s->total > b->total)))
                    limiter[i] = s;
            }
        }

        nlohmann::json paths_json = nlohmann::json::array();
        for (const Shared* s : shared) {
            nlohmann::json members = nlohmann::json::array(), loads = nlohmann::json::array();
            for (std::size_t k = 0; k < s->members.size(); ++k) {
                members.push_back(s->members[k] + 1);
                loads.push_back(std::isnan(s->loads[k]) ? nlohmann::json(nullptr) : nlohmann::json(s->loads[k]));
            }
            nlohmann::json j{{"path", s->path.id()}, {"label", s->path.label()}, {"transfers", members}, {"loads", loads},
                             {"total", s->total}, {"limit_known", s->known}, {"source", s->source}};
            if (s->capacity > 0) {
                j["capacity"] = s->capacity;
                j["utilization"] = s->utilization();
            }
            paths_json.push_back(std::move(j));
        }
        nlohmann::json transfers_json = nlohmann::json::array();
        for (std::size_t i = 0; i < n; ++i) {
            nlohmann::json j{{"index", i + 1}, {"transfer", set.transfers[i].text()}};
            if (!std::isnan(together[i])) j["together"] = together[i];
            if (!std::isnan(solo[i])) {
                j["alone"] = solo[i];
                j["alone_key"] = solo_key[i];
                if (!std::isnan(together[i])) j["cost"] = solo[i] - together[i];
            }
            j["slowed"] = static_cast<bool>(slowed[i]);
            if (limiter[i]) j["limited_by"] = limiter[i]->path.id();
            transfers_json.push_back(std::move(j));
        }

        // One sentence: each limiting path and its transfers' shares of it, then the figures.
        std::vector<std::string> parts;
        std::vector<const Shared*> said;
        for (std::size_t i = 0; i < n; ++i) {
            const Shared* s = limiter[i];
            if (!s || std::find(said.begin(), said.end(), s) != said.end()) continue;
            said.push_back(s);
            std::vector<std::string> shares, whom;
            for (std::size_t k = 0; k < s->members.size(); ++k) {
                const std::size_t m = s->members[k];
                shares.push_back(s->capacity > 0 && !std::isnan(s->loads[k])
                                     ? fmt::format("{} {:.0f}%", name(set, m), 100 * s->loads[k] / s->capacity)
                                     : name(set, m));
                if (limiter[m] == s) whom.push_back(fmt::format("#{}", m + 1));
            }
            std::string share_list;
            for (std::size_t k = 0; k < shares.size(); ++k)
                share_list += (k == 0 ? "" : k + 1 == shares.size() ? " and " : ", ") + shares[k];
            std::string whom_list;
            for (std::size_t k = 0; k < whom.size(); ++k) whom_list += (k == 0 ? "" : k + 1 == whom.size() ? " and " : ", ") + whom[k];
            parts.push_back(s->known ? fmt::format("the {} limited {}: {} of its {} ({})", s->path.label(), whom_list, share_list,
                                                   gbps(s->capacity), s->source)
                                     : fmt::format("the {} limited {}: {} of the most one of them moved on it alone ({}; it has "
                                                   "no known limit)",
                                                   s->path.label(), whom_list, share_list, gbps(s->capacity)));
        }
        for (std::size_t i = 0; i < n; ++i)
            if (slowed[i] && !limiter[i])
                parts.push_back(fmt::format("{} slowed without a declared path shared (host memory, the CPU or the driver)", name(set, i)));
        if (parts.empty())
            parts.push_back(shared.empty() ? std::string("no declared path is shared")
                                           : std::string("no transfer slowed by more than 3% beside the others"));
        std::vector<std::size_t> missing;
        for (std::size_t i = 0; i < n; ++i)
            if (std::isnan(solo[i])) missing.push_back(i);
        std::string text;
        for (std::size_t k = 0; k < parts.size(); ++k) text += (k == 0 ? "" : "; ") + parts[k];
        if (missing.size() < n)
            text += fmt::format("; alone {}, together {}: sharing cost {}", figures(solo), figures(together), gbps(cost));
        if (!missing.empty()) {
            std::string list;
            for (std::size_t k = 0; k < missing.size(); ++k) list += (k == 0 ? "" : ", ") + name(set, missing[k]);
            text += fmt::format("; no alone figure for {} (measured with --no-alone, or that configuration did not end ok)", list);
        }
        r.details["sharing"] = {{"cost", cost}, {"transfers", transfers_json}, {"shared_paths", paths_json}};
        r.details["diagnosis"] = text + ".";
    }
}

} // namespace interopbench::transfer
