// The run conditions from /proc, /sys, the cgroup files and NVML.
#include "topology/conditions_probe.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <tuple>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "interopbench/params.hpp"
#include "interopbench/report.hpp"
#include "topology/doctor.hpp"
#include "topology/nvml.hpp"
#include "topology/topology.hpp"

namespace interopbench {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t k_max_file = 1 << 20; // mountinfo of a busy container host stays far below

// The file's text when it is a regular file that opens read-only without following a link in
// its last component or blocking (a FIFO planted in a fixture or a strange mount cannot hang
// the run); nothing otherwise.
std::optional<std::string> read_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return std::nullopt;
    std::optional<std::string> out;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        std::string text;
        char buf[4096];
        for (;;) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 || text.size() + static_cast<std::size_t>(n) > k_max_file) break; // an error, or too long
            if (n == 0) {
                out = std::move(text);
                break;
            }
            text.append(buf, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    for (std::size_t at = 0;;) {
        const std::size_t next = s.find(sep, at);
        out.push_back(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
        if (next == std::string_view::npos) break;
        at = next + 1;
    }
    return out;
}

// Whitespace-separated fields.
std::vector<std::string_view> fields(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
        const std::size_t b = i;
        while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
        if (i > b) out.push_back(s.substr(b, i - b));
    }
    return out;
}

template <class T>
std::optional<T> number(std::string_view s) {
    s = trim(s);
    T v{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return v;
}

// "MAJ:MIN" with both parts decimal.
bool device_number(std::string_view s) {
    const auto colon = s.find(':');
    return colon != std::string_view::npos && number<unsigned>(s.substr(0, colon)) && number<unsigned>(s.substr(colon + 1));
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto octal = [&](std::size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '7'; };
        if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
            out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

// Keeps the tightest limit per device and kind.
void add_limit(std::vector<CgroupIoLimit>& limits, CgroupIoLimit l) {
    const auto same = std::find_if(limits.begin(), limits.end(),
                                   [&](const CgroupIoLimit& x) { return x.device == l.device && x.kind == l.kind; });
    if (same == limits.end()) limits.push_back(std::move(l));
    else if (l.value < same->value) *same = std::move(l);
}

template <class T>
void keep_min(std::optional<T>& have, std::optional<T> v) {
    if (v && (!have || *v < *have)) have = v;
}

// The directories of a cgroup and its ancestors up to the mount's root: the mount point plus
// the cgroup's path below the mount's root ("/a/b" under root "/": "/a/b", "/a", ""). Nothing
// when the cgroup is not below the mount's root or its path climbs ("..").
std::vector<std::string> cgroup_dirs(const CgroupMount& m, const std::string& path, const std::string& root) {
    std::string rel;
    if (m.root == "/") rel = path;
    else if (path == m.root) rel = "";
    else if (path.rfind(m.root + "/", 0) == 0) rel = path.substr(m.root.size());
    else return {};
    std::vector<std::string> parts;
    for (const auto p : split(rel, '/')) {
        if (p.empty() || p == ".") continue;
        if (p == "..") return {};
        parts.emplace_back(p);
    }
    std::vector<std::string> dirs;
    for (std::size_t n = parts.size() + 1; n-- > 0;) {
        std::string d = root + m.mount_point;
        for (std::size_t i = 0; i < n; ++i) d += "/" + parts[i];
        dirs.push_back(d);
    }
    return dirs;
}

bool has(const std::vector<std::string>& v, std::string_view x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::string join(const std::vector<std::string>& items, const char* sep) {
    std::string out;
    for (const auto& x : items) out += (out.empty() ? "" : sep) + x;
    return out;
}

} // namespace

std::optional<std::vector<unsigned>> parse_cpu_list(std::string_view text) {
    text = trim(text);
    std::vector<unsigned> out;
    if (text.empty()) return out;
    for (const auto item : split(text, ',')) {
        const auto dash = item.find('-');
        const auto lo = number<unsigned>(item.substr(0, dash));
        const auto hi = dash == std::string_view::npos ? lo : number<unsigned>(item.substr(dash + 1));
        if (!lo || !hi || *hi < *lo || *hi - *lo > 1u << 20) return std::nullopt;
        for (unsigned c = *lo; c <= *hi; ++c) out.push_back(c);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<ProcCgroup> parse_proc_cgroup(std::string_view text) {
    std::vector<ProcCgroup> out;
    for (const auto line : split(text, '\n')) {
        // "ID:CONTROLLERS:PATH"; the path may hold colons.
        const auto a = line.find(':');
        if (a == std::string_view::npos) continue;
        const auto b = line.find(':', a + 1);
        if (b == std::string_view::npos) continue;
        ProcCgroup c;
        for (const auto ctl : split(line.substr(a + 1, b - a - 1), ','))
            if (!ctl.empty()) c.controllers.emplace_back(ctl);
        c.path = std::string(line.substr(b + 1));
        if (c.path.empty() || c.path[0] != '/') continue;
        out.push_back(std::move(c));
    }
    return out;
}

std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo) {
    std::vector<CgroupMount> out;
    for (const auto line : split(mountinfo, '\n')) {
        // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
        const auto f = fields(line);
        const auto dash = std::find(f.begin(), f.end(), "-");
        if (f.size() < 6 || dash == f.end() || f.end() - dash < 4) continue;
        const std::string_view type = dash[1];
        if (type != "cgroup" && type != "cgroup2") continue;
        CgroupMount m;
        m.root = unescape(f[3]);
        m.mount_point = unescape(f[4]);
        m.v2 = type == "cgroup2";
        for (const auto o : split(dash[3], ',')) m.options.emplace_back(o);
        out.push_back(std::move(m));
    }
    return out;
}

std::vector<CgroupIoLimit> parse_blkio_throttle(std::string_view text, const std::string& file_name) {
    // blkio.throttle.read_bps_device -> read_bps
    std::string kind = file_name;
    if (const auto dot = kind.rfind('.'); dot != std::string::npos) kind = kind.substr(dot + 1);
    if (kind.size() > 7 && kind.compare(kind.size() - 7, 7, "_device") == 0) kind.resize(kind.size() - 7);
    std::vector<CgroupIoLimit> out;
    for (const auto line : split(text, '\n')) {
        const auto f = fields(line);
        if (f.size() != 2 || !device_number(f[0])) continue;
        if (const auto v = number<std::uint64_t>(f[1])) out.push_back({std::string(f[0]), kind, *v, file_name});
    }
    return out;
}

std::vector<CgroupIoLimit> parse_io_max(std::string_view text) {
    static const std::pair<std::string_view, const char*> k_kinds[] = {
        {"rbps", "read_bps"}, {"wbps", "write_bps"}, {"riops", "read_iops"}, {"wiops", "write_iops"}};
    std::vector<CgroupIoLimit> out;
    for (const auto line : split(text, '\n')) {
        const auto f = fields(line);
        if (f.size() < 2 || !device_number(f[0])) continue;
        for (std::size_t i = 1; i < f.size(); ++i) {
            const auto eq = f[i].find('=');
            if (eq == std::string_view::npos) continue;
            const auto key = f[i].substr(0, eq);
            const auto value = number<std::uint64_t>(f[i].substr(eq + 1)); // "max": nothing
            for (const auto& [name, kind] : k_kinds)
                if (key == name && value) out.push_back({std::string(f[0]), kind, *value, "io.max"});
        }
    }
    return out;
}

std::optional<double> parse_cfs_quota(std::string_view quota, std::string_view period) {
    const auto q = number<std::int64_t>(quota);
    const auto p = number<std::int64_t>(period);
    if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
    return static_cast<double>(*q) / static_cast<double>(*p);
}

std::optional<double> parse_cpu_max(std::string_view text) {
    const auto f = fields(text);
    if (f.size() != 2) return std::nullopt;
    return parse_cfs_quota(f[0], f[1]); // "max": not a number, nothing
}

std::optional<std::uint64_t> parse_memory_limit(std::string_view text) {
    const auto v = number<std::uint64_t>(text);
    if (!v || *v >= (1ull << 62)) return std::nullopt;
    return v;
}

std::optional<double> parse_loadavg(std::string_view text) {
    const auto f = fields(text);
    if (f.empty()) return std::nullopt;
    return number<double>(f[0]);
}

CgroupLimits read_cgroup_limits(const std::string& root) {
    CgroupLimits out;
    const auto cgroups = read_file(root + "/proc/self/cgroup");
    const auto mountinfo = read_file(root + "/proc/self/mountinfo");
    if (!cgroups || !mountinfo) return out;
    const auto mounts = parse_cgroup_mounts(*mountinfo);
    // The directories of the process's cgroup (and its ancestors) of a v1 controller, or of
    // the v2 hierarchy (controller empty).
    const auto dirs_of = [&](std::string_view controller) {
        for (const ProcCgroup& c : parse_proc_cgroup(*cgroups)) {
            const bool v2 = c.controllers.empty();
            if (controller.empty() ? !v2 : !has(c.controllers, controller)) continue;
            for (const CgroupMount& m : mounts) {
                if (m.v2 != v2 || (!v2 && !has(m.options, controller))) continue;
                if (auto dirs = cgroup_dirs(m, c.path, root); !dirs.empty()) return dirs;
            }
        }
        return std::vector<std::string>{};
    };
    for (const auto& dir : dirs_of("blkio"))
        for (const char* file : {"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
                                 "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"})
            if (const auto text = read_file(dir + "/" + file))
                for (auto& l : parse_blkio_throttle(*text, file)) add_limit(out.io_limits, std::move(l));
    for (const auto& dir : dirs_of("cpu")) {
        const auto quota = read_file(dir + "/cpu.cfs_quota_us"), period = read_file(dir + "/cpu.cfs_period_us");
        if (quota && period) keep_min(out.cpu_quota_cpus, parse_cfs_quota(*quota, *period));
    }
    for (const auto& dir : dirs_of("memory"))
        if (const auto text = read_file(dir + "/memory.limit_in_bytes")) keep_min(out.memory_limit_bytes, parse_memory_limit(*text));
    for (const auto& dir : dirs_of("")) {
        if (const auto text = read_file(dir + "/io.max"))
            for (auto& l : parse_io_max(*text)) add_limit(out.io_limits, std::move(l));
        if (const auto text = read_file(dir + "/cpu.max")) keep_min(out.cpu_quota_cpus, parse_cpu_max(*text));
        if (const auto text = read_file(dir + "/memory.max")) keep_min(out.memory_limit_bytes, parse_memory_limit(*text));
    }
    std::sort(out.io_limits.begin(), out.io_limits.end(), [](const CgroupIoLimit& a, const CgroupIoLimit& b) {
        return std::tie(a.device, a.kind) < std::tie(b.device, b.kind);
    });
    return out;
}

std::optional<std::vector<unsigned>> numa_nodes_of(const std::vector<unsigned>& cpus, const std::string& root) {
    const std::string dir = root + "/sys/devices/system/node";
    std::error_code ec;
    std::vector<unsigned> nodes;
    bool any = false;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind("node", 0) != 0) continue;
        const auto n = number<unsigned>(std::string_view(name).substr(4));
        if (!n) continue;
        const auto text = read_file(it->path().string() + "/cpulist");
        const auto list = text ? parse_cpu_list(*text) : std::nullopt;
        if (!list) continue;
        any = true;
        if (std::any_of(list->begin(), list->end(), [&](unsigned c) { return std::binary_search(cpus.begin(), cpus.end(), c); }))
            nodes.push_back(*n);
    }
    if (!any) return std::nullopt;
    std::sort(nodes.begin(), nodes.end());
    return nodes;
}

std::optional<std::vector<unsigned>> pci_local_cpus(const std::string& bus_id, const std::string& root) {
    const auto id = normalize_pci_bus_id(bus_id);
    if (!id) return std::nullopt;
    const auto text = read_file(root + "/sys/bus/pci/devices/" + *id + "/local_cpulist");
    return text ? parse_cpu_list(*text) : std::nullopt;
}

ConditionsSnapshot take_conditions(const Machine& machine, const std::string& root) {
    ConditionsSnapshot s;
    s.time = now_iso8601();
    const std::vector<unsigned> cpus = process_cpus();
    if (!cpus.empty()) {
        s.cpus_allowed = format_cpu_list(cpus);
        s.cpus_allowed_count = cpus.size();
        s.numa_nodes_allowed = numa_nodes_of(cpus, root);
    }
    s.cgroup = read_cgroup_limits(root);
    if (const auto text = read_file(root + "/proc/loadavg")) s.load_average = parse_loadavg(*text);
    s.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
    const bool nvml_ok = nvml::available();
    for (const DeviceInfo& d : machine.devices) {
        GpuConditions g;
        g.ordinal = d.ordinal;
        g.pci_bus_id = d.pci_bus_id;
        std::vector<std::string> missing; // what NVML did not give
        if (nvml_ok) {
            if (const auto pids = nvml::running_pids(d.pci_bus_id))
                g.other_processes = static_cast<int>(
                    std::count_if(pids->begin(), pids->end(), [](unsigned pid) { return pid != static_cast<unsigned>(::getpid()); }));
            else
                missing.emplace_back("processes");
            const auto health = nvml::health(d.pci_bus_id);
            if (health && health->clock_reasons) {
                g.clock_reasons = health->clock_reasons;
                g.clock_reason_names = clock_slowdown_ids(*health->clock_reasons);
            } else {
                missing.emplace_back("clock event reasons");
            }
            if (health && health->ecc_uncorrected_volatile) g.ecc_uncorrected_volatile = health->ecc_uncorrected_volatile;
            else missing.emplace_back("volatile ECC counts (ECC off or not supported)");
            if (const auto p = nvml::pcie(d.pci_bus_id); p && p->gen_max > 0 && p->width_max > 0)
                g.pcie = PcieState{p->gen_current, p->width_current, p->gen_max, p->width_max};
            else
                missing.emplace_back("PCIe link");
            if (const auto dev = nvml::device(d.pci_bus_id)) {
                const auto up = std::count_if(dev->links.begin(), dev->links.end(), [](const nvml::Link& l) { return l.active; });
                g.nvlinks_up = static_cast<int>(up);
                g.nvlinks_down = static_cast<int>(dev->links.size()) - static_cast<int>(up);
            } else {
                missing.emplace_back("NVLink state");
            }
            if ((g.temperature_c = nvml::temperature(d.pci_bus_id)); !g.temperature_c) missing.emplace_back("temperature");
        }
        std::vector<std::string> reasons;
        if (!nvml_ok) reasons.push_back("NVML not available: " + nvml::note());
        else if (!missing.empty()) reasons.push_back("NVML gave no " + join(missing, ", "));
        const auto local = pci_local_cpus(d.pci_bus_id, root);
        if (local && !local->empty() && !cpus.empty()) {
            g.local_cpus_allowed = std::any_of(local->begin(), local->end(),
                                               [&](unsigned c) { return std::binary_search(cpus.begin(), cpus.end(), c); });
        } else {
            reasons.emplace_back("the GPU's local CPUs or this process's affinity unknown");
        }
        g.reason = join(reasons, "; ");
        s.gpus.push_back(std::move(g));
    }
    return s;
}

} // namespace interopbench
