// The fleet analysis: many machines' reports, classes, reference medians, outliers and their
// probable causes (see fleet.hpp).
#include "interopbench/fleet.hpp"
#include "interopbench/limits.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "interopbench/conditions.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/text.hpp"
#include "interopbench/report.hpp"
#include "interopbench/stats.hpp"

namespace interopbench::fleet {

namespace {

constexpr std::size_t k_min_fleet = 3; // figures a fleet median needs
constexpr double k_mad_to_sigma = 1.4826;
constexpr const char* k_expect_schema = "interopbench.fleet-expect";

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return quantile_sorted(v, 0.5);
}

std::string gpu_label(const std::string& pci_bus_id, int ordinal) {
    return pci_bus_id.empty() ? fmt::format("GPU{}", ordinal) : pci_bus_id;
}

/// "gen5 x16", "" when unknown.
std::string link_text(int gen, int width) { return gen > 0 && width > 0 ? fmt::format("gen{} x{}", gen, width) : ""; }

std::string hardware_class_of(const Member& m) {
    std::vector<std::string> parts;
    if (m.gpus.empty()) {
        parts.push_back("no GPU");
    } else {
        std::map<std::string, int> models;
        for (const auto& g : m.gpus) ++models[g.name.empty() ? "unknown GPU" : g.name];
        std::vector<std::string> names;
        for (const auto& [name, count] : models) names.push_back(fmt::format("{}x {}", count, name));
        parts.push_back(fmt::format("{}", fmt::join(names, " + ")));
        std::set<std::string> links;
        for (const auto& g : m.gpus) {
            const std::string link = link_text(g.pcie_gen_max, g.pcie_width_max);
            links.insert(link.empty() ? "PCIe link unknown" : "PCIe " + link);
        }
        parts.push_back(fmt::format("{}", fmt::join(links, " + ")));
        int nvlinks = 0;
        for (const auto& g : m.gpus) nvlinks = std::max(nvlinks, g.nvlinks);
        if (nvlinks > 0) parts.push_back(fmt::format("{} NVLinks per GPU", nvlinks));
    }
    parts.push_back(m.cpu.empty() ? "unknown CPU" : m.cpu);
    return fmt::format("{}", fmt::join(parts, ", "));
}

/// Host name and GPU UUIDs; empty without a host name (anonymized).
std::string identity_of(const Member& m) {
    if (m.hostname.empty()) return {};
    std::vector<std::string> uuids;
    for (const auto& g : m.gpus)
        if (!g.uuid.empty()) uuids.push_back(g.uuid);
    std::sort(uuids.begin(), uuids.end());
    return fmt::format("{} {}", m.hostname, fmt::join(uuids, ","));
}

/// A member from a report header (the top-level host, or one host entry of a multi-node
/// report read as a header).
Member member_from_header(const ReportHeader& h, const std::string& file) {
    Member m;
    m.file = file;
    m.hostname = h.host.hostname;
    m.finished = h.invocation.finished.empty() ? h.invocation.started : h.invocation.finished;
    m.cpu = h.host.cpu;
    m.kernel = h.host.kernel;
    m.logical_cpus = h.host.logical_cpus;
    m.memory_bytes = h.host.memory_bytes;
    m.driver = h.software.driver_release;
    m.cuda_runtime = h.software.cuda_runtime;
    m.nccl = h.software.version_of("nccl");
    m.tool_revision = h.tool.git_sha.empty() ? h.tool.version : h.tool.git_sha;
    for (const auto& d : h.devices) {
        Gpu g;
        g.ordinal = d.ordinal;
        g.label = gpu_label(d.pci_bus_id, d.ordinal);
        g.name = d.name;
        g.uuid = d.uuid;
        g.pcie_gen_current = d.pcie_gen_current;
        g.pcie_width_current = d.pcie_width_current;
        g.pcie_gen_max = d.pcie_gen_max;
        g.pcie_width_max = d.pcie_width_max;
        const std::string topo_label = fmt::format("GPU{}", d.ordinal);
        for (const auto& t : h.topology.gpus)
            if (t.label == topo_label && t.nvlink_known) {
                g.nvlinks = t.nvlinks;
                g.nvlinks_active = t.nvlinks_active;
            }
        m.gpus.push_back(std::move(g));
    }
    m.conditions = h.conditions;
    m.warnings = h.warnings;
    m.hardware_class = hardware_class_of(m);
    m.identity = identity_of(m);
    return m;
}

/// The result key without its `device` axis: the GPUs of a machine share a row.
std::string row_key(const Result& r) {
    std::vector<std::string> parts;
    for (const auto& [name, text] : r.params.items())
        if (name != "device") parts.push_back(name + "=" + text);
    return fmt::format("{}/{}", r.scenario, fmt::join(parts, ","));
}

std::string text_field(const nlohmann::json& j, const char* name) {
    return j.is_object() && j.contains(name) && j[name].is_string() ? j[name].get<std::string>() : std::string();
}

/// Everything read from one report: its machines and their figures (row id, figure).
struct Loaded {
    std::vector<Member> members;
    struct Item {
        std::string row_id; ///< class \x1f key \x1f metric
        Row shape;          ///< row fields (no figures)
        Figure figure;      ///< member indexes into `members`
    };
    std::vector<Item> items;
};

std::string row_id(const std::string& klass, const std::string& key, const std::string& metric) {
    return klass + '\x1f' + key + '\x1f' + metric;
}

/// The hosts of a multi-node report (its "hosts" fingerprints), by host name; several ranks
/// on one host give one member with each rank's GPU.
std::map<std::string, Member> hosts_of(const ReportHeader& h, const std::string& file) {
    std::map<std::string, Member> out;
    std::map<std::string, std::set<std::string>> labels; // per host: its GPUs' labels (linear in the ranks)
    for (const auto& rank : h.hosts) {
        if (rank.host.hostname.empty()) continue;
        ReportHeader one;
        one.tool = h.tool;
        one.invocation = h.invocation;
        one.host = rank.host;
        one.software = rank.software;
        one.devices = rank.devices;
        one.conditions = rank.conditions;
        Member m = member_from_header(one, file);
        auto it = out.find(m.hostname);
        std::set<std::string>& seen = labels[m.hostname];
        if (it == out.end()) {
            for (const auto& g : m.gpus) seen.insert(g.label);
            out.emplace(m.hostname, std::move(m));
            continue;
        }
        for (auto& g : m.gpus)
            if (seen.insert(g.label).second) it->second.gpus.push_back(g);
        if (m.conditions && it->second.conditions)
            for (auto& g : m.conditions->gpus) it->second.conditions->gpus.push_back(g);
    }
    for (auto& [name, m] : out) {
        m.hardware_class = hardware_class_of(m);
        m.identity = identity_of(m);
    }
    return out;
}

Loaded load_one(const std::string& file, const std::function<void(Report&)>& prepare = {}) {
    Report report = read_report(file);
    if (prepare) prepare(report);
    const ReportHeader& header = report.header;
    Loaded out;
    out.members.push_back(member_from_header(header, file));
    const auto hosts = hosts_of(header, file);
    // A multi-node report: rank 0's host too is described by its fingerprint (the GPUs its
    // ranks used), like every other host, so that hosts of one kind share a class.
    if (const auto own = hosts.find(out.members[0].hostname); own != hosts.end()) out.members[0] = own->second;
    std::map<std::string, std::size_t> by_host; // multi-node: host name -> member index
    const auto member_of_host = [&](const std::string& host) -> std::size_t {
        if (host.empty() || host == out.members[0].hostname) return 0;
        if (const auto it = by_host.find(host); it != by_host.end()) return it->second;
        Member m;
        if (const auto h = hosts.find(host); h != hosts.end()) {
            m = h->second;
        } else { // no fingerprint: rank 0's hardware, the rank's host name
            m = out.members[0];
            m.hostname = host;
            m.conditions.reset();
            m.identity = host;
            m.warnings = {"no fingerprint of this host in the report (a multi-node report of an older version)"};
        }
        out.members.push_back(std::move(m));
        by_host.emplace(host, out.members.size() - 1);
        return out.members.size() - 1;
    };

    for (const Result& r : report.results) {
        if (r.status == Status::skipped || r.status == Status::interrupted || r.metrics.empty()) continue;
        const MetricResult& primary = r.metrics[0];
        Row shape;
        shape.key = row_key(r);
        shape.scenario = r.scenario;
        shape.family = r.family;
        shape.metric = primary.info.name;
        shape.unit = primary.info.unit;
        shape.higher_is_better = primary.info.better != Better::lower;
        Figure base;
        // Built from the scenario and parameters, never taken from the report's key text: a key is
        // data, and what --rerun re-measures must be what the result measured.
        base.key = r.scenario + "/" + r.params.canonical();
        base.axes = nlohmann::json::object();
        for (const auto& [name, text] : r.params.items()) base.axes[name] = text;
        if (r.details.is_object()) {
            if (r.details.contains("efficiency") && r.details["efficiency"].is_number())
                base.efficiency = r.details["efficiency"].get<double>();
            base.path = text_field(r.details, "path");
            try {
                for (const PathUse& p : declared_paths(r)) base.crosses.push_back(p.kind);
            } catch (const std::invalid_argument&) {
                // a declaration that does not read crosses nothing known: judged by its GPU alone
            }
            base.device_number = text_field(r.details, "device_number");
        }
        const auto add = [&](Figure f) {
            const Member& m = out.members[f.member];
            Loaded::Item item{row_id(m.hardware_class, shape.key, shape.metric), shape, std::move(f)};
            item.shape.hardware_class = m.hardware_class;
            out.items.push_back(std::move(item));
        };
        const nlohmann::json* ranks = r.details.is_object() && r.details.contains("ranks") && r.details["ranks"].is_array() &&
                                              r.details["ranks"].size() > 1
                                          ? &r.details["ranks"]
                                          : nullptr;
        if (ranks) { // a multi-process result: one figure per rank
            for (const auto& e : *ranks) {
                if (!e.is_object()) continue;
                Figure f = base;
                f.member = member_of_host(text_field(e, "host"));
                f.gpu = text_field(e, "device");
                const std::string status = text_field(e, "status");
                if (status == "skipped" || status == "interrupted") continue;
                if (status != "ok") {
                    f.failed = true;
                    f.reason = text_field(e, "reason");
                } else {
                    const auto& m = e.value("metrics", nlohmann::json::object());
                    if (!m.contains(shape.metric) || !m[shape.metric].is_object()) continue;
                    const double v = m[shape.metric].value("median", 0.0);
                    if (!(v > 0) || !std::isfinite(v)) continue;
                    f.value = v;
                }
                add(std::move(f));
            }
            continue;
        }
        Figure f = base;
        f.member = 0;
        if (const auto d = r.params.find("device")) {
            const auto dev = std::find_if(out.members[0].gpus.begin(), out.members[0].gpus.end(),
                                          [&](const Gpu& g) { return std::to_string(g.ordinal) == *d; });
            f.gpu = dev != out.members[0].gpus.end() ? dev->label : "GPU" + *d;
        }
        if (r.status == Status::failed) {
            f.failed = true;
            f.reason = r.reason;
        } else {
            if (primary.stats.n == 0 || !(primary.stats.median > 0) || !std::isfinite(primary.stats.median)) continue;
            f.value = primary.stats.median;
            if (primary.round_medians.size() > 1) f.own_spread = relative_range(primary.round_medians);
        }
        add(std::move(f));
    }
    return out;
}

/// The conditions of the GPU labelled `gpu` (PCI bus id or "GPU<ordinal>").
const ReportConditions::Gpu* condition_gpu(const Member& m, const std::string& gpu) {
    if (!m.conditions) return nullptr;
    for (const auto& g : m.conditions->gpus)
        if ((!g.pci_bus_id.empty() && g.pci_bus_id == gpu) || (g.ordinal && fmt::format("GPU{}", *g.ordinal) == gpu))
            return &g;
    return nullptr;
}

/// The larger of a start and an end reading, or nothing.
template <typename T>
std::optional<T> larger(const std::optional<T>& a, const std::optional<T>& b) {
    if (a && b) return std::max(*a, *b);
    return a ? a : b;
}

/// What the result moves through, from the paths its scenario declares (limits.hpp): never
/// from family or scenario names. A result that declares none (a plugin's) is judged by
/// whether it ran on a GPU.
struct Uses {
    bool gpu = false, host_link = false, gpu_links = false, storage = false, host_cpu = false, nccl = false;
};

Uses uses_of(const Figure& f) {
    Uses u;
    u.gpu = !f.gpu.empty();
    bool host_memory = false;
    for (const PathKind kind : f.crosses) {
        switch (kind) {
        case PathKind::host_link: u.host_link = u.gpu = true; break;
        case PathKind::gpu_memory: u.gpu = true; break;
        case PathKind::peer_link: u.gpu_links = u.gpu = true; break;
        case PathKind::nccl_bus: u.gpu_links = u.nccl = u.gpu = true; break;
        case PathKind::page_cache:
        case PathKind::storage: u.storage = true; break;
        case PathKind::host_memory:
        case PathKind::nic: host_memory = true; break;
        }
    }
    u.host_cpu = !u.gpu || u.storage || u.host_link || host_memory;
    return u;
}

/// The most common value of `field` over the members of a class, when most share it.
std::string majority(const std::vector<const Member*>& members, std::string Member::*field) {
    std::map<std::string, std::size_t> counts;
    for (const auto* m : members) ++counts[m->*field];
    std::string best;
    std::size_t n = 0;
    for (const auto& [v, c] : counts)
        if (c > n) {
            best = v;
            n = c;
        }
    return n * 2 > members.size() ? best : std::string();
}

std::string rate_text(double bytes_per_s) { return format_value(bytes_per_s, "B/s"); }

/// The busiest of the start and end load averages of a member; 0 when unknown.
double load_of(const Member& m) {
    return m.conditions ? larger(m.conditions->load_average_start, m.conditions->load_average_end).value_or(0) : 0;
}

std::vector<std::string> causes_of(const Figure& f, const Member& m,
                                   const std::vector<const Member*>& class_members) {
    std::vector<std::string> out;
    if (f.failed) out.push_back(fmt::format("the configuration failed there: {}", f.reason.empty() ? "no reason given" : f.reason));
    const Uses u = uses_of(f);
    const Gpu* gpu = nullptr;
    for (const auto& g : m.gpus)
        if (g.label == f.gpu) gpu = &g;
    const ReportConditions::Gpu* cg = u.gpu ? condition_gpu(m, f.gpu) : nullptr;

    if (u.gpu && u.host_link) {
        PcieState link;
        if (gpu) link = {gpu->pcie_gen_current, gpu->pcie_width_current, gpu->pcie_gen_max, gpu->pcie_width_max};
        if (cg && cg->pcie) link = *cg->pcie; // read at the end of the run
        if (link.gen_current > 0 && link.width_current > 0 && link.gen_max > 0 && link.width_max > 0 &&
            (link.gen_current < link.gen_max || link.width_current < link.width_max))
            out.push_back(fmt::format("{}'s PCIe link runs at {}, below its maximum {}", f.gpu,
                                      link_text(link.gen_current, link.width_current), link_text(link.gen_max, link.width_max)));
    }
    if (u.gpu && u.gpu_links) {
        if (cg && cg->nvlinks_down.value_or(0) > 0)
            out.push_back(fmt::format("{} NVLink(s) of {} down", *cg->nvlinks_down, f.gpu));
        else if (gpu && gpu->nvlinks > 0 && gpu->nvlinks_active >= 0 && gpu->nvlinks_active < gpu->nvlinks)
            out.push_back(fmt::format("{} of {}'s {} NVLinks active", gpu->nvlinks_active, f.gpu, gpu->nvlinks));
    }
    if (cg) {
        if (const int others = larger(cg->other_processes_start, cg->other_processes_end).value_or(0); others > 0)
            out.push_back(fmt::format("{} other process(es) used {} during the run", others, f.gpu));
        if (!cg->clock_reason_names.empty())
            out.push_back(fmt::format("{}'s clocks were held back: {}", f.gpu, fmt::join(cg->clock_reason_names, ", ")));
        if (cg->ecc_uncorrected_volatile.value_or(0) > 0)
            out.push_back(fmt::format("{} uncorrected ECC error(s) on {} since the driver loaded", *cg->ecc_uncorrected_volatile, f.gpu));
        if (u.host_link && cg->local_cpus_allowed && !*cg->local_cpus_allowed)
            out.push_back(fmt::format("the process could not run on the CPUs near {} (NUMA placement)", f.gpu));
    }
    if (u.storage && m.conditions)
        for (const auto& l : m.conditions->io_limits) {
            const bool read = l.kind.rfind("read", 0) == 0;
            if (!read && l.kind.rfind("write", 0) != 0) continue;
            if (!f.device_number.empty() && !l.device.empty() && l.device != f.device_number) continue;
            const double v = static_cast<double>(l.value);
            const std::string what = l.kind.find("bps") != std::string::npos ? rate_text(v) : fmt::format("{:.0f} IO/s", v);
            out.push_back(fmt::format("{} limited to {} by a cgroup on device {} ({})", read ? "reads" : "writes", what,
                                      l.device, l.source));
        }
    if (u.host_cpu && m.conditions) {
        const int cpus = m.conditions->logical_cpus.value_or(m.logical_cpus);
        if (m.conditions->cpu_quota_cpus && cpus > 0 && *m.conditions->cpu_quota_cpus < cpus)
            out.push_back(fmt::format("a cgroup CPU quota of {:.3g} CPUs (of {})", *m.conditions->cpu_quota_cpus, cpus));
        if (m.conditions->cpus_allowed_count && cpus > 0 && *m.conditions->cpus_allowed_count < cpus)
            out.push_back(fmt::format("the process was allowed {} of {} CPUs", *m.conditions->cpus_allowed_count, cpus));
        // Busy: more than half the CPUs and twice what is usual in its class.
        std::vector<double> loads;
        for (const auto* other : class_members) loads.push_back(load_of(*other));
        const double load = load_of(m), usual = median_of(loads);
        if (cpus > 0 && load > 0.5 * cpus && load > 2 * usual)
            out.push_back(fmt::format("the host was busy: load average {:.3g} on {} CPUs (its class: {:.3g})", load, cpus, usual));
    }
    // Software that differs from most of its class.
    const auto differs = [&](std::string Member::*field, const char* what, bool relevant) {
        if (!relevant || (m.*field).empty()) return;
        const std::string common = majority(class_members, field);
        if (!common.empty() && common != m.*field)
            out.push_back(fmt::format("{} {} where most of its class has {}", what, m.*field, common));
    };
    differs(&Member::driver, "driver", u.gpu);
    differs(&Member::cuda_runtime, "CUDA runtime", u.gpu);
    differs(&Member::nccl, "NCCL", u.nccl);
    differs(&Member::kernel, "kernel", true);
    differs(&Member::tool_revision, "interopbench revision", true);
    if (!m.tool_revision.empty() && majority(class_members, &Member::tool_revision).empty()) {
        std::set<std::string> revisions;
        for (const auto* other : class_members) revisions.insert(other->tool_revision);
        if (revisions.size() > 1)
            out.push_back(fmt::format("measured with interopbench {}, one of {} revisions in its class: the difference may "
                                      "be the code's",
                                      m.tool_revision, revisions.size()));
    }
    // Warnings most of its class did not have.
    for (const auto& w : m.warnings) {
        const auto shared = std::count_if(class_members.begin(), class_members.end(), [&](const Member* other) {
            return std::find(other->warnings.begin(), other->warnings.end(), w) != other->warnings.end();
        });
        if (static_cast<std::size_t>(shared) * 2 <= class_members.size()) out.push_back("the run warned: " + w);
    }
    if (out.empty())
        out.push_back("no fact in its report explains it; re-measure it (--confirm) to tell a fault from a passing disturbance");
    return out;
}

void judge_row(Row& row, const Options& o, const Expectations* expect) {
    std::vector<double> values;
    for (const auto& f : row.figures)
        if (!f.failed) values.push_back(f.value);
    const Expectation* e = nullptr;
    if (expect)
        if (const auto it = expect->find(row_id(row.hardware_class, row.key, row.metric)); it != expect->end()) e = &it->second;
    if (e && ((!e->unit.empty() && e->unit != row.unit) || e->higher_is_better != row.higher_is_better))
        throw UsageError(fmt::format("the --expect file's {} {} is in {} ({} is better), the reports' in {} ({} is better)",
                                     display_text(row.key), display_text(row.metric), display_text(e->unit.empty() ? "?" : e->unit),
                                     e->higher_is_better ? "higher" : "lower", display_text(row.unit),
                                     row.higher_is_better ? "higher" : "lower"),
                         "write the expectations again with --write-expect from reports of this kind");
    if (e) {
        row.median = e->median;
        row.spread = e->spread;
        row.reference = "expected";
        row.judged = e->median > 0;
    } else if (values.size() >= k_min_fleet) {
        row.median = median_of(values);
        // The spread is measured on the faster half (ratio >= 1), which slow outliers cannot
        // widen, in logarithms, where faster and slower are alike (a ratio cannot fall below
        // 0 but can rise past 2): for symmetric noise the median deviation there is the same
        // 0.6745 sigma.
        std::vector<double> deviations;
        for (double v : values) {
            const double ratio = row.higher_is_better ? v / row.median : row.median / v;
            if (ratio >= 1) deviations.push_back(std::log(ratio));
        }
        row.spread = k_mad_to_sigma * median_of(deviations);
        row.judged = row.median > 0;
    } else {
        row.not_judged = fmt::format("measured on {} machine(s) or GPU(s) of its class; {} are needed (or --expect)",
                                     values.size(), k_min_fleet);
        return;
    }
    for (auto& f : row.figures) {
        if (f.failed) {
            f.outlier = !values.empty() || e; // failed where the fleet measured it
            continue;
        }
        f.ratio = row.higher_is_better ? f.value / row.median : row.median / f.value;
        // The spread's bar as a shortfall: below exp(-factor x sigma) of the median.
        f.bar = std::max({o.threshold, 1 - std::exp(-o.spread_factor * row.spread), f.own_spread});
        f.outlier = 1 - f.ratio > f.bar;
    }
}

std::string file_stem(const std::string& file) { return std::filesystem::path(file).stem().string(); }

} // namespace

Outcome analyse(const std::vector<std::string>& files, const Options& options, const Expectations* expect) {
    if (files.empty()) throw UsageError("fleet needs reports", "write: interopbench fleet A.json B.json C.json ...");
    Outcome out;
    out.options = options;
    std::map<std::string, std::size_t> row_index;
    std::map<std::string, std::size_t> identity_index; // identity -> member
    std::vector<bool> excluded_member;
    std::set<std::string> seen_files;
    for (const auto& file : files) {
        const std::string canonical = [&] {
            std::error_code ec;
            const auto p = std::filesystem::weakly_canonical(file, ec);
            return ec ? file : p.string();
        }();
        if (!seen_files.insert(canonical).second) {
            out.excluded.push_back(fmt::format("{}: given twice; read once", file));
            continue;
        }
        Loaded loaded;
        try {
            loaded = load_one(file, options.prepare);
        } catch (const UsageError& e) {
            if (!options.skip_unreadable) throw;
            out.excluded.push_back(fmt::format("{}: {}", file, e.what()));
            continue;
        }
        ++out.reports;
        std::vector<std::size_t> index_of(loaded.members.size());
        for (std::size_t i = 0; i < loaded.members.size(); ++i) {
            Member& m = loaded.members[i];
            const std::size_t index = out.members.size();
            if (!m.identity.empty()) {
                if (const auto it = identity_index.find(m.identity); it != identity_index.end()) {
                    const Member& old = out.members[it->second];
                    const bool newer = m.finished > old.finished;
                    const std::string who = m.hostname;
                    if (newer) {
                        out.excluded.push_back(fmt::format("{}: the same machine ({}) as {}, which is newer; the older left out",
                                                           old.file, who, file));
                        excluded_member[it->second] = true;
                        it->second = index;
                    } else {
                        out.excluded.push_back(fmt::format("{}: the same machine ({}) as {}, which is newer; the older left out",
                                                           file, who, old.file));
                        excluded_member.push_back(true);
                        index_of[i] = index;
                        out.members.push_back(std::move(m));
                        continue;
                    }
                } else {
                    identity_index.emplace(m.identity, index);
                }
            }
            excluded_member.push_back(false);
            index_of[i] = index;
            out.members.push_back(std::move(m));
        }
        for (auto& item : loaded.items) {
            item.figure.member = index_of[item.figure.member];
            auto [it, fresh] = row_index.emplace(item.row_id, out.rows.size());
            if (fresh) out.rows.push_back(std::move(item.shape));
            out.rows[it->second].figures.push_back(std::move(item.figure));
        }
    }
    if (out.reports == 0) throw UsageError("no readable report among the files given", "give reports written by 'interopbench run --out'");

    // Members with nothing in common with the rest of their class, or nothing measured.
    std::vector<std::size_t> shared(out.members.size(), 0), measured(out.members.size(), 0);
    for (const auto& row : out.rows) {
        std::set<std::size_t> who;
        for (const auto& f : row.figures)
            if (!excluded_member[f.member]) who.insert(f.member);
        for (std::size_t m : who) {
            ++measured[m];
            if (who.size() > 1) ++shared[m];
        }
    }
    std::size_t live = 0;
    for (std::size_t i = 0; i < out.members.size(); ++i)
        if (!excluded_member[i] && measured[i] > 0) ++live;
    for (std::size_t i = 0; i < out.members.size(); ++i) {
        if (excluded_member[i]) continue;
        if (measured[i] == 0) {
            out.excluded.push_back(fmt::format("{}: {} measured nothing (every configuration skipped)", out.members[i].file,
                                               out.members[i].hostname.empty() ? "the machine" : out.members[i].hostname));
            excluded_member[i] = true;
        } else if (shared[i] == 0 && live > 1 && !expect) {
            out.excluded.push_back(fmt::format("{}: {} has no result in common with another machine of its class",
                                               out.members[i].file,
                                               out.members[i].hostname.empty() ? "the machine" : out.members[i].hostname));
            excluded_member[i] = true;
        }
    }
    // Drop excluded members (renumbering the figures).
    std::vector<std::size_t> renumber(out.members.size(), 0);
    std::vector<Member> kept;
    for (std::size_t i = 0; i < out.members.size(); ++i)
        if (!excluded_member[i]) {
            renumber[i] = kept.size();
            kept.push_back(std::move(out.members[i]));
        }
    for (auto& row : out.rows) {
        std::vector<Figure> figures;
        for (auto& f : row.figures)
            if (!excluded_member[f.member]) {
                f.member = renumber[f.member];
                figures.push_back(std::move(f));
            }
        row.figures = std::move(figures);
    }
    out.rows.erase(std::remove_if(out.rows.begin(), out.rows.end(), [](const Row& r) { return r.figures.empty(); }),
                   out.rows.end());
    out.members = std::move(kept);
    if (out.members.empty()) throw UsageError("no report measured anything to compare", "give reports with measured results");

    // Labels: the host name where it is unique, else the file name.
    std::map<std::string, std::size_t> names;
    for (const auto& m : out.members) ++names[m.hostname];
    std::map<std::string, std::size_t> stems;
    for (const auto& m : out.members) ++stems[file_stem(m.file)];
    std::size_t anonymous = 0;
    for (auto& m : out.members) {
        if (m.hostname.empty()) ++anonymous;
        if (!m.hostname.empty() && names[m.hostname] == 1) m.label = m.hostname;
        else if (stems[file_stem(m.file)] == 1) m.label = m.hostname.empty() ? file_stem(m.file) : m.hostname + ":" + file_stem(m.file);
        else m.label = m.hostname.empty() ? m.file : m.hostname + ":" + m.file;
    }
    if (anonymous)
        out.notes.push_back(fmt::format("{} report(s) carry no host name (anonymized): each file counts as one machine, "
                                        "named by its file",
                                        anonymous));
    std::set<std::string> revisions;
    for (const auto& m : out.members) revisions.insert(m.tool_revision);
    if (revisions.size() > 1)
        out.notes.push_back(fmt::format("the reports come from {} revisions of interopbench ({}): a difference between "
                                        "them may be the code's",
                                        revisions.size(), fmt::join(revisions, ", ")));
    for (const auto& m : out.members)
        if (std::find(out.classes.begin(), out.classes.end(), m.hardware_class) == out.classes.end())
            out.classes.push_back(m.hardware_class);
    if (out.classes.size() > 1)
        out.notes.push_back(fmt::format("{} hardware classes, judged apart", out.classes.size()));

    // Judge, then name causes.
    std::size_t judged = 0;
    for (auto& row : out.rows) {
        judge_row(row, options, expect);
        if (row.judged) ++judged;
    }
    if (judged == 0)
        throw UsageError(fmt::format("no result could be judged: none is measured on {} machines or GPUs of one class",
                                     k_min_fleet),
                         "give reports of at least three machines of one hardware class that ran the same configurations, "
                         "or an --expect file");
    std::map<std::string, std::vector<const Member*>> by_class;
    for (const auto& m : out.members) by_class[m.hardware_class].push_back(&m);
    for (std::size_t r = 0; r < out.rows.size(); ++r)
        for (std::size_t i = 0; i < out.rows[r].figures.size(); ++i) {
            const Figure& f = out.rows[r].figures[i];
            if (!f.outlier) continue;
            const Member& m = out.members[f.member];
            out.outliers.push_back({r, i, causes_of(f, m, by_class[m.hardware_class]), "", 0});
        }
    // Worst first.
    std::stable_sort(out.outliers.begin(), out.outliers.end(), [&](const Outlier& a, const Outlier& b) {
        const Figure& fa = out.rows[a.row].figures[a.figure];
        const Figure& fb = out.rows[b.row].figures[b.figure];
        return (fa.failed ? -1 : fa.ratio) < (fb.failed ? -1 : fb.ratio);
    });
    return out;
}

void apply_confirmations(Outcome& outcome, const std::vector<std::string>& files) {
    // machine identity -> (row key \x1f metric \x1f gpu) -> re-measured value
    std::map<std::string, std::map<std::string, double>> again;
    for (const auto& file : files) {
        const Loaded l = load_one(file);
        for (const auto& item : l.items) {
            const Member& m = l.members[item.figure.member];
            if (m.identity.empty())
                throw UsageError(fmt::format("confirmation report '{}' names no host (anonymized): it cannot be matched to "
                                             "a machine",
                                             file),
                                 "re-measure without --anonymize");
            if (item.figure.failed) continue;
            again[m.identity][item.shape.key + '\x1f' + item.shape.metric + '\x1f' + item.figure.gpu] = item.figure.value;
        }
    }
    std::vector<Outlier> kept;
    for (auto& o : outcome.outliers) {
        const Row& row = outcome.rows[o.row];
        const Figure& f = row.figures[o.figure];
        const Member& m = outcome.members[f.member];
        const auto machine = again.find(m.identity);
        const auto value = machine == again.end() ? decltype(machine->second.end()){}
                                                  : machine->second.find(row.key + '\x1f' + row.metric + '\x1f' + f.gpu);
        if (machine == again.end() || value == machine->second.end()) {
            o.confirmation = "not re-measured";
            kept.push_back(std::move(o));
            continue;
        }
        o.confirm_ratio = row.higher_is_better ? value->second / row.median : row.median / value->second;
        const double bar = std::max(f.bar, outcome.options.threshold);
        if (1 - o.confirm_ratio > bar) {
            o.confirmation = "repeated";
            kept.push_back(std::move(o));
        } else {
            o.confirmation = "not repeated";
            outcome.rows[o.row].figures[o.figure].outlier = false;
            outcome.dropped.push_back(std::move(o));
        }
    }
    outcome.outliers = std::move(kept);
}

int exit_code(const Outcome& outcome) { return outcome.outliers.empty() ? 0 : 1; }

nlohmann::json expectations_json(const Outcome& outcome) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& row : outcome.rows) {
        if (!row.judged || row.reference != "fleet") continue;
        std::size_t n = 0;
        for (const auto& f : row.figures) n += f.failed ? 0 : 1;
        entries.push_back({{"class", row.hardware_class}, {"key", row.key},        {"metric", row.metric},
                           {"unit", row.unit},            {"better", row.higher_is_better ? "higher" : "lower"},
                           {"median", row.median},        {"spread", row.spread},  {"n", n}});
    }
    return {{"schema", k_expect_schema}, {"version", 1}, {"expectations", entries}};
}

Expectations parse_expectations(const nlohmann::json& doc, const std::string& origin) {
    const std::string hint = "write it with 'interopbench fleet REPORTS... --write-expect FILE' from a healthy fleet";
    // A report given for it has a "schema" object: not an expectations file either.
    if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string() ||
        doc["schema"].get<std::string>() != k_expect_schema)
        throw UsageError(fmt::format("{} is not an expectations file (schema '{}')", origin, k_expect_schema), hint);
    if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<int>() != 1)
        throw UsageError(fmt::format("{}: version {} is not one this interopbench reads (1)", origin,
                                     doc.contains("version") ? doc["version"].dump() : "missing"),
                         hint);
    if (!doc.contains("expectations") || !doc["expectations"].is_array())
        throw UsageError(fmt::format("{}: 'expectations' must be an array", origin), hint);
    Expectations out;
    for (std::size_t i = 0; i < doc["expectations"].size(); ++i) {
        const auto& e = doc["expectations"][i];
        const auto field_ok = [&](const char* k, bool number) {
            return e.is_object() && e.contains(k) && (number ? e[k].is_number() : e[k].is_string());
        };
        if (!field_ok("class", false) || !field_ok("key", false) || !field_ok("metric", false) || !field_ok("median", true) ||
            !field_ok("spread", true))
            throw UsageError(fmt::format("{}: expectations[{}] needs class, key, metric (strings), median and spread (numbers)",
                                         origin, i),
                             hint);
        Expectation x;
        x.median = e["median"].get<double>();
        x.spread = e["spread"].get<double>();
        if (!(x.median > 0) || !std::isfinite(x.median) || !(x.spread >= 0) || !std::isfinite(x.spread))
            throw UsageError(fmt::format("{}: expectations[{}] has a median that is not positive or a negative spread", origin, i),
                             hint);
        // The optional fields, when present, of their types (a count, strings): a value of
        // another type is named, never thrown past as the JSON library's error.
        for (const auto& [k, want] : {std::pair{"n", "a count (an integer of 0 or more)"}, std::pair{"unit", "a string"},
                                      std::pair{"better", "a string"}}) {
            const auto it = e.find(k);
            const bool ok = it == e.end() || (std::string_view(k) == "n" ? it->is_number_unsigned() : it->is_string());
            if (!ok)
                throw UsageError(fmt::format("{}: expectations[{}].{} must be {} (it is {})", origin, i, k, want, it->type_name()),
                                 hint);
        }
        x.n = e.value("n", std::size_t{0});
        x.unit = e.value("unit", std::string());
        x.higher_is_better = e.value("better", std::string("higher")) != "lower";
        out.emplace(row_id(e["class"].get<std::string>(), e["key"].get<std::string>(), e["metric"].get<std::string>()), x);
    }
    return out;
}

std::vector<ConfirmStep> confirm_plan(const Outcome& outcome, int rounds, const std::string& dir) {
    std::map<std::size_t, std::vector<const Figure*>> per_member;
    for (const auto& o : outcome.outliers) {
        const Figure& f = outcome.rows[o.row].figures[o.figure];
        per_member[f.member].push_back(&f);
    }
    std::vector<ConfirmStep> out;
    for (const auto& [member, figures] : per_member) {
        ConfirmStep step;
        step.member = member;
        std::string name = outcome.members[member].label;
        for (char& c : name)
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
        step.out = (std::filesystem::path(dir) / (name + "-confirm.json")).string();
        step.args = {"run"};
        std::set<std::string> devices;
        for (const Figure* f : figures) {
            step.args.push_back("--only");
            step.args.push_back(f->key);
            if (f->axes.contains("device")) devices.insert(f->axes["device"].get<std::string>());
        }
        if (!devices.empty()) {
            step.args.push_back("--devices");
            step.args.push_back(fmt::format("{}", fmt::join(devices, ",")));
        }
        step.args.insert(step.args.end(), {"--rounds", std::to_string(rounds), "--out", step.out});
        out.push_back(std::move(step));
    }
    return out;
}

std::string verdict_line(const Outcome& outcome) {
    std::vector<std::string> machines;
    for (const auto& o : outcome.outliers) {
        const std::string& label = outcome.members[outcome.rows[o.row].figures[o.figure].member].label;
        if (std::find(machines.begin(), machines.end(), label) == machines.end()) machines.push_back(label);
    }
    std::size_t judged = 0;
    for (const auto& r : outcome.rows) judged += r.judged ? 1 : 0;
    std::string line;
    if (outcome.outliers.empty())
        line = fmt::format("PASS: no outlier among {} machine(s); {} result(s) judged", outcome.members.size(), judged);
    else {
        std::vector<std::string> shown(machines.begin(), machines.begin() + std::min<std::size_t>(machines.size(), 8));
        line = fmt::format("FAIL: {} outlier(s) on {} of {} machines ({}{})", outcome.outliers.size(), machines.size(),
                           outcome.members.size(), fmt::join(shown, ", "), machines.size() > shown.size() ? ", ..." : "");
    }
    if (!outcome.dropped.empty()) line += fmt::format("; {} flagged but not repeated when re-measured", outcome.dropped.size());
    if (!outcome.excluded.empty()) line += fmt::format("; {} report(s) or machine(s) left out", outcome.excluded.size());
    return line;
}

} // namespace interopbench::fleet
