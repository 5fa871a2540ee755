#include "interopbench/report.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>

#include "interopbench/cleanup.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/fnv1a.hpp"
#include "interopbench/html_embed.hpp"

extern char** environ;

namespace interopbench {
namespace {

std::string read_first_line_with(const char* path, const std::string& prefix) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
    return {};
}

std::string strip(std::string s) {
    const auto b = s.find_first_not_of(" \t:\"");
    const auto e = s.find_last_not_of(" \t\"");
    return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

/// The invocation's arguments as a report records them: argv[0] by its base name (the user
/// asked for the program, not for where it is installed), the rest as typed.
nlohmann::json recorded_argv(std::vector<std::string> argv) {
    if (!argv.empty()) {
        const auto slash = argv[0].find_last_of('/');
        if (slash != std::string::npos && slash + 1 < argv[0].size()) argv[0] = argv[0].substr(slash + 1);
    }
    return argv;
}

} // namespace

std::string now_iso8601() {
    const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

nlohmann::json host_json() {
    nlohmann::json h;
    utsname u{};
    if (uname(&u) == 0) {
        h["hostname"] = u.nodename;
        h["kernel"] = fmt::format("{} {}", u.sysname, u.release);
        h["arch"] = u.machine;
    }
    h["os"] = strip(read_first_line_with("/etc/os-release", "PRETTY_NAME="));
    h["cpu"] = strip(read_first_line_with("/proc/cpuinfo", "model name"));
    h["logical_cpus"] = std::thread::hardware_concurrency();
    const std::string mem = strip(read_first_line_with("/proc/meminfo", "MemTotal:"));
    if (!mem.empty()) h["memory_bytes"] = std::stoull(mem) * 1024; // kB in /proc/meminfo
    return h;
}

bool environment_allowed(const std::string& name) {
    static const char* k_prefixes[] = {"CUDA_", "NCCL_"};
    for (const char* p : k_prefixes)
        if (name.rfind(p, 0) == 0) return true;
    return false;
}

namespace {
constexpr const char* k_own_env = "INTEROPBENCH_OWN_ENV"; // the names set_own_environment set, comma separated
} // namespace

bool own_environment(const std::string& name) {
    const char* list = std::getenv(k_own_env);
    if (!list || name.empty()) return false;
    // fmt, not "," + string: GCC 12 warns falsely (-Wrestrict) on the latter here.
    return fmt::format(",{},", list).find(fmt::format(",{},", name)) != std::string::npos;
}

void set_own_environment(const std::string& name, const std::string& value) {
    ::setenv(name.c_str(), value.c_str(), 1);
    if (own_environment(name)) return;
    const char* list = std::getenv(k_own_env);
    ::setenv(k_own_env, (list && *list ? std::string(list) + "," + name : name).c_str(), 1);
}

nlohmann::json environment_json() {
    nlohmann::json env = nlohmann::json::object();
    for (char** e = environ; e && *e; ++e) {
        const std::string kv = *e;
        const auto eq = kv.find('=');
        if (eq == std::string::npos) continue;
        const std::string name = kv.substr(0, eq);
        if (environment_allowed(name) && !own_environment(name)) env[name] = kv.substr(eq + 1);
    }
    return env;
}

namespace {
nlohmann::json libraries_json(const Machine& m) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& l : m.libraries) out.push_back({{"name", l.name}, {"version", l.version}, {"note", l.note}});
    return out;
}
} // namespace

nlohmann::json software_json(const Machine& m) {
    auto cuda_version = [](int v) { return v ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : std::string{}; };
    return {{"cuda_driver", cuda_version(m.driver_version)},
            {"cuda_runtime", cuda_version(m.runtime_version)},
            {"driver_release", m.driver_release},
            {"libraries", libraries_json(m)},
            {"cuda_available", m.cuda_available},
            {"cuda_note", m.cuda_note}};
}

nlohmann::json devices_json(const Machine& m) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& d : m.devices) {
        out.push_back({{"ordinal", d.ordinal},
                       {"name", d.name},
                       {"uuid", d.uuid},
                       {"pci_bus_id", d.pci_bus_id},
                       {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                       {"sm_count", d.sm_count},
                       {"memory_bytes", d.total_memory},
                       {"clock_khz", d.clock_khz},
                       {"memory_clock_khz", d.memory_clock_khz},
                       {"memory_bus_width_bits", d.memory_bus_width},
                       {"pcie", {{"gen_current", d.pcie_gen_current},
                                 {"width_current", d.pcie_width_current},
                                 {"gen_max", d.pcie_gen_max},
                                 {"width_max", d.pcie_width_max}}},
                       {"async_engines", d.async_engines},
                       {"selected", std::find(m.selected.begin(), m.selected.end(), d.ordinal) != m.selected.end()}});
    }
    return out;
}

std::string topology_hash(const nlohmann::json& topology) {
    if (!topology.is_object()) return {};
    // The wiring only: what differs between two hosts built alike (names, serial numbers,
    // free memory, link state, measured bandwidths) stays out.
    const auto pick = [](const nlohmann::json& from, std::initializer_list<const char*> keys) {
        nlohmann::json out = nlohmann::json::object();
        if (from.is_object())
            for (const char* k : keys)
                if (const auto it = from.find(k); it != from.end()) out[k] = *it;
        return out;
    };
    const auto each = [](const nlohmann::json& list, const auto& f) {
        nlohmann::json out = nlohmann::json::array();
        if (list.is_array())
            for (const auto& e : list) out.push_back(f(e));
        return out;
    };
    const auto at = [](const nlohmann::json& obj, const char* key) {
        return obj.is_object() && obj.contains(key) ? obj[key] : nlohmann::json();
    };
    nlohmann::json wiring = pick(topology, {"has_nvswitch", "has_infiniband"});
    wiring["host"] = pick(at(topology, "host"), {"packages", "cores", "pus", "nvidia_pci_gpus"});
    wiring["numa_nodes"] = each(at(topology, "numa_nodes"), [&](const auto& n) { return pick(n, {"os_index", "cpus"}); });
    wiring["gpus"] = each(at(topology, "gpus"), [&](const auto& g) {
        nlohmann::json out = pick(g, {"name", "pci_bus_id", "cpus", "numa_nodes", "pci_path"});
        out["pcie"] = pick(at(g, "pcie"), {"gen_max", "width_max"});
        out["host_path"] = pick(at(g, "host_path"), {"class"});
        out["nvlinks"] = each(at(at(g, "nvlink"), "links"), [&](const auto& l) { return pick(l, {"link", "peer", "peer_pci_bus_id"}); });
        return out;
    });
    wiring["pairs"] = each(at(topology, "pairs"), [&](const auto& p) { return pick(p, {"from", "to", "class", "nvlinks", "via_nvswitch"}); });
    wiring["nics"] = each(at(topology, "nics"), [&](const auto& n) {
        return pick(n, {"name", "kind", "pci_bus_id", "numa_node", "gpu_paths", "nic_paths"});
    });
    return fmt::format("{:016x}", fnv1a(wiring.dump()));
}

nlohmann::json host_fingerprint(const Machine& machine, const nlohmann::json& topology) {
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& d : devices_json(machine))
        if (d.value("selected", false)) devices.push_back(d);
    const std::string hash = topology_hash(topology);
    return {{"host", host_json()},
            {"software", software_json(machine)},
            {"devices", std::move(devices)},
            {"topology_hash", hash.empty() ? nlohmann::json(nullptr) : nlohmann::json(hash)},
            {"conditions", nullptr}};
}

nlohmann::json build_report(const RunRecord& run, const Machine& machine) {
    nlohmann::json results = nlohmann::json::array();
    std::map<std::string, int> counts{{"ok", 0}, {"skipped", 0}, {"failed", 0}, {"interrupted", 0}};
    for (const auto& r : run.results) {
        results.push_back(r);
        ++counts[to_string(r.status)];
    }
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& e : run.plan.entries) entries.push_back({{"pattern", e.pattern}, {"axes", e.axes}});
    nlohmann::json doc;
    doc["schema"] = {{"name", k_schema_name}, {"version", fmt::format("{}.{}", k_schema_major, k_schema_minor)}};
    doc["tool"] = {{"name", "interopbench"}, {"version", tool_version()}, {"git_sha", tool_git_sha()}};
    doc["invocation"] = {{"argv", recorded_argv(run.argv)},
                         {"profile", run.plan.profile},
                         {"profile_hash", run.plan.profile_hash},
                         {"profile_resolved", run.plan.profile_resolved},
                         {"plan", entries},
                         {"settings", run.plan.settings.to_json()},
                         {"started", run.started},
                         {"finished", run.finished},
                         {"status", run.status},
                         {"world_size", machine.world ? machine.world->size() : 1}};
    doc["host"] = host_json();
    doc["software"] = software_json(machine);
    doc["devices"] = devices_json(machine);
    doc["topology"] = run.topology;
    if (run.hosts.is_array()) doc["hosts"] = run.hosts;
    if (run.conditions_start) doc["conditions"] = conditions_json(*run.conditions_start, run.conditions_end);
    doc["environment"] = environment_json();
    doc["results"] = std::move(results);
    doc["summary"] = counts;
    doc["warnings"] = run.warnings;
    return doc;
}

// ---- the whole report within what is read back -------------------------------------------

namespace {

/// One way to make a report smaller: what it takes from a result, and how many bytes that
/// frees there (0: nothing to take).
struct Shedding {
    const char* what; ///< "samples", for the warning
    std::function<std::size_t(const nlohmann::json& result)> bytes;
    std::function<void(nlohmann::json& result)> take;
};

void note_cut(nlohmann::json& result, std::string line) {
    if (!result.contains("cut") || !result["cut"].is_array()) result["cut"] = nlohmann::json::array();
    result["cut"].push_back(std::move(line));
}

std::vector<Shedding> sheddings(std::uint64_t limit) {
    const std::string why = fmt::format("left out to keep the report within {} bytes", limit);
    return {
        {"samples",
         [](const nlohmann::json& r) {
             std::size_t n = 0;
             if (r.contains("metrics") && r["metrics"].is_array())
                 for (const auto& m : r["metrics"])
                     if (m.is_object() && m.contains("samples") && m["samples"].is_array() && !m["samples"].empty())
                         n += m["samples"].dump(1).size();
             return n;
         },
         [why](nlohmann::json& r) {
             for (auto& m : r["metrics"]) {
                 if (!m.is_object() || !m.contains("samples") || !m["samples"].is_array() || m["samples"].empty()) continue;
                 const std::uint64_t kept = m["samples"].size();
                 const std::uint64_t taken = m.contains("samples_taken") && m["samples_taken"].is_number_unsigned()
                                                 ? std::max(kept, m["samples_taken"].get<std::uint64_t>())
                                                 : kept;
                 m["samples_taken"] = taken;
                 m["samples"] = nlohmann::json::array();
                 note_cut(r, fmt::format("samples of '{}': all {} {}; the statistics are kept",
                                         m.value("name", std::string("?")), kept, why));
             }
         }},
        {"details",
         [](const nlohmann::json& r) {
             const auto it = r.find("details");
             // Nothing to take from none, or from details already cut to their note.
             if (it == r.end() || (it->is_object() && (it->empty() || (it->size() == 1 && it->contains("cut")))))
                 return std::size_t{0};
             return it->dump(1).size();
         },
         [why](nlohmann::json& r) {
             const std::size_t bytes = r["details"].dump().size();
             r["details"] = {{"cut", fmt::format("{} bytes of details left out", bytes)}};
             note_cut(r, fmt::format("details: {} bytes {}", bytes, why));
         }},
        {"reasons",
         [](const nlohmann::json& r) {
             const auto it = r.find("reason");
             return it != r.end() && it->is_string() && it->get_ref<const std::string&>().size() > 256
                        ? it->get_ref<const std::string&>().size()
                        : std::size_t{0};
         },
         [why](nlohmann::json& r) {
             std::string& text = r["reason"].get_ref<std::string&>();
             const std::size_t size = text.size();
             text = cut_text(text, 256);
             note_cut(r, fmt::format("reason: {} of its {} bytes {}", size - text.size(), size, why));
         }},
    };
}

} // namespace

std::string report_text(nlohmann::json& report, std::uint64_t limit) {
    std::string text = report.dump(1) + "\n";
    if (text.size() <= limit) return text;
    const bool has_results = report.is_object() && report.contains("results") && report["results"].is_array();
    std::vector<std::string> said;
    // Room for the warning that says what was cut.
    const std::uint64_t target = limit > 4096 ? limit - 1024 : limit;
    if (has_results) {
        auto& results = report["results"];
        for (const Shedding& s : sheddings(limit)) {
            std::size_t shed = 0;
            // The largest first, as many as the excess needs by their own size; the indentation
            // they sat at comes on top, so the text is measured again, and again if need be.
            while (text.size() > target) {
                std::vector<std::pair<std::size_t, std::size_t>> sizes; // bytes, index
                for (std::size_t i = 0; i < results.size(); ++i)
                    if (results[i].is_object())
                        if (const std::size_t b = s.bytes(results[i]); b > 0) sizes.emplace_back(b, i);
                if (sizes.empty()) break;
                std::sort(sizes.rbegin(), sizes.rend());
                const std::uint64_t excess = text.size() - target;
                std::uint64_t freed = 0;
                for (const auto& [bytes, i] : sizes) {
                    if (freed >= excess) break;
                    s.take(results[i]);
                    freed += bytes;
                    ++shed;
                }
                text = report.dump(1) + "\n";
            }
            if (shed > 0) said.push_back(fmt::format("the {} of {} result(s)", s.what, shed));
            if (text.size() <= target) break;
        }
    }
    if (!said.empty() && report.contains("warnings") && report["warnings"].is_array()) {
        report["warnings"].push_back(fmt::format(
            "the report would have been larger than the {} bytes a report may hold: {} were left out (each result's "
            "\"cut\" says what it lost)",
            limit, fmt::join(said, ", then ")));
        text = report.dump(1) + "\n";
    }
    if (text.size() > limit)
        throw WriteError(fmt::format("the report is {} bytes, more than the {} a report may hold, even without the "
                                     "results' samples and details",
                                     text.size(), limit));
    return text;
}

// ---- writing ------------------------------------------------------------------------------
//
// The target of a write is what the path names after symbolic links: a link is kept and
// its target written. A regular file (or a new one) is replaced atomically: a temporary in
// the same directory, written, fsync'd, given the old file's mode (or the umask's), renamed
// over the target. A read-only file is refused, never replaced. Something that is not a
// regular file (/dev/null, a terminal, a FIFO with a reader) is written in place: a rename
// would replace the device node or FIFO itself.

namespace {

namespace fs = std::filesystem;

const char* k_temp_prefix = ".interopbench-"; // + hash of the target's name + "-" + pid + "-XXXXXX"

std::string write_hint() { return "choose a file in an existing, writable directory"; }

WriteError write_error(const std::string& path, int err, std::string_view doing = {}) {
    return WriteError(fmt::format("cannot write '{}'{}{}: {}", path, doing.empty() ? "" : " (", doing.empty() ? "" : std::string(doing) + ")",
                                  std::strerror(err)));
}

// The path a write lands on: symbolic links followed, also when the last one dangles (a new
// file is created where it points). Throws UsageError for a loop.
std::string resolve_target(const std::string& path) {
    std::string current = path;
    for (int hops = 0; hops < 40; ++hops) {
        struct stat lst {};
        if (::lstat(current.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) return current;
        struct stat st {};
        if (::stat(current.c_str(), &st) == 0) {
            // An existing target: the kernel resolves it (magic links of /proc included).
            if (!S_ISREG(st.st_mode)) return current;
            char buf[PATH_MAX];
            if (::realpath(current.c_str(), buf)) return buf;
            return current;
        }
        if (errno == ELOOP) break;
        std::string link(PATH_MAX, '\0');
        const ssize_t n = ::readlink(current.c_str(), link.data(), link.size());
        if (n <= 0) return current;
        link.resize(static_cast<std::size_t>(n));
        current = fs::path(link).is_absolute() ? link : (fs::path(current).parent_path() / link).string();
    }
    throw UsageError(fmt::format("cannot write '{}': a loop of symbolic links", path), "point the link at a file (see ls -l)");
}

std::string dir_of(const std::string& path) {
    std::string dir = fs::path(path).parent_path().string();
    return dir.empty() ? "." : dir;
}

std::string temp_stem(const std::string& target) {
    return fmt::format("{}{:016x}-", k_temp_prefix, fnv1a(fs::path(target).filename().string()));
}

// Temporaries of earlier writes to `target` whose process is gone (kill -9, power loss).
void remove_stale_temporaries(const std::string& target) {
    const std::string stem = temp_stem(target);
    std::error_code ec;
    for (fs::directory_iterator it(dir_of(target), ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(stem, 0) != 0) continue;
        const std::string rest = name.substr(stem.size()); // PID-XXXXXX
        const auto dash = rest.find('-');
        if (dash == std::string::npos || dash == 0 || rest.size() - dash - 1 != 6) continue;
        const std::string pid_text = rest.substr(0, dash);
        if (!std::all_of(pid_text.begin(), pid_text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
            pid_text.size() > 9)
            continue;
        const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
        if (pid == ::getpid() || (::kill(pid, 0) == 0 || errno == EPERM)) continue; // alive: its own business
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(it->path().c_str());
    }
}

mode_t default_file_mode() {
    // The umask, without changing it (umask() cannot be read without setting it).
    mode_t mask = 022;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("Umask:", 0) == 0) mask = static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
    return 0666 & ~mask;
}

void write_all(int fd, const std::string& content, const std::string& path) {
    std::size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw write_error(path, errno);
        }
        done += static_cast<std::size_t>(n);
    }
}

struct Fd {
    int fd = -1;
    ~Fd() { close_quietly(); }
    void close_quietly() {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
};

// Writes into something that is not a regular file, as it is.
void write_in_place(const std::string& path, const struct stat& st, const std::string& content) {
    if (S_ISSOCK(st.st_mode))
        throw UsageError(fmt::format("cannot write '{}': it is a socket", path), write_hint());
    Fd f;
    // Non-blocking open: a FIFO without a reader fails at once instead of waiting forever.
    f.fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f.fd < 0) {
        if (errno == ENXIO) throw WriteError(fmt::format("cannot write '{}': no process reads this FIFO", path));
        throw write_error(path, errno);
    }
    const int flags = ::fcntl(f.fd, F_GETFL);
    if (flags >= 0) (void)::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK);
    write_all(f.fd, content, path);
    const int fd = f.fd;
    f.fd = -1;
    if (::close(fd) != 0 && errno != EINTR) throw write_error(path, errno);
}

} // namespace

void check_output_path(const std::string& path) {
    const std::string hint = write_hint();
    if (path.empty()) throw UsageError("output path is empty", hint);
    const std::string target = resolve_target(path);
    struct stat st {};
    const bool exists = ::stat(target.c_str(), &st) == 0;
    if (!exists && errno == ENAMETOOLONG) {
        const long name_max = ::pathconf(dir_of(target).c_str(), _PC_NAME_MAX);
        throw UsageError(fmt::format("cannot write '{}': the file name is longer than {} bytes", path,
                                     name_max > 0 ? name_max : NAME_MAX),
                         "choose a shorter name");
    }
    if (exists && S_ISDIR(st.st_mode))
        throw UsageError(fmt::format("output path '{}' is a directory", path), "name a file, e.g. " + path + "/report.json");
    if (exists && S_ISSOCK(st.st_mode)) throw UsageError(fmt::format("cannot write '{}': it is a socket", path), hint);
    if (exists && !S_ISREG(st.st_mode)) {
        // Devices and FIFOs are written in place.
        if (::access(target.c_str(), W_OK) != 0)
            throw UsageError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)), hint);
        return;
    }
    if (!exists && errno != ENOENT)
        throw UsageError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)), hint);
    const std::string dir = dir_of(target);
    struct stat dst {};
    if (::stat(dir.c_str(), &dst) != 0)
        throw UsageError(fmt::format("cannot write '{}': directory '{}' does not exist", path, dir),
                         fmt::format("create it first (mkdir -p {}) or {}", dir, hint));
    if (!S_ISDIR(dst.st_mode))
        throw UsageError(fmt::format("cannot write '{}': '{}' is not a directory", path, dir), hint);
    // access(W_OK) says yes to root everywhere (also where the file system refuses new files,
    // as sysfs does): creating a file is the test that counts.
    std::string probe = dir + "/.interopbench-probe-XXXXXX";
    const int probe_fd = ::mkstemp(probe.data());
    if (probe_fd < 0)
        throw UsageError(fmt::format("cannot write '{}': directory '{}' is not writable ({})", path, dir,
                                     std::strerror(errno)),
                         hint);
    ::close(probe_fd);
    ::unlink(probe.c_str());
    if (exists && (::access(target.c_str(), W_OK) != 0 || (st.st_mode & 0222) == 0))
        throw UsageError(fmt::format("cannot write '{}': the file is read-only", path),
                         "make it writable (chmod u+w) or choose another file; interopbench never replaces a read-only file");
}

void write_file_atomic(const std::string& path, const std::string& content) {
    check_output_path(path);
    const std::string target = resolve_target(path);
    struct stat old {};
    const bool exists = ::stat(target.c_str(), &old) == 0;
    if (exists && !S_ISREG(old.st_mode)) {
        write_in_place(target, old, content);
        return;
    }
    remove_stale_temporaries(target);
    const std::string dir = dir_of(target);
    std::string tmpl = (fs::path(dir) / (temp_stem(target) + std::to_string(::getpid()) + "-XXXXXX")).string();
    Fd f;
    f.fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (f.fd < 0) throw write_error(path, errno, "creating a temporary file in " + dir);
    cleanup::Guard guard(tmpl); // removed on every way out but the rename, Ctrl-C included
    write_all(f.fd, content, path);
    // Same mode as the file it replaces (and owner, where allowed); a new file gets the umask's.
    if (exists) {
        (void)::fchown(f.fd, old.st_uid, old.st_gid);
        if (::fchmod(f.fd, old.st_mode & 07777) != 0) throw write_error(path, errno, "setting the mode");
    } else if (::fchmod(f.fd, default_file_mode()) != 0) {
        throw write_error(path, errno, "setting the mode");
    }
    // The new file must be complete on disk before it replaces the old one.
    if (::fsync(f.fd) != 0) throw write_error(path, errno);
    const int fd = f.fd;
    f.fd = -1;
    if (::close(fd) != 0 && errno != EINTR) throw write_error(path, errno);
    if (std::rename(tmpl.c_str(), target.c_str()) != 0) throw write_error(path, errno);
    guard.release();
    if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

// ---- reading ------------------------------------------------------------------------------

std::string json_error_text(const nlohmann::json::exception& e) {
    // "[json.exception.type_error.302] type must be string, but is number" -> the part after "] ".
    const std::string what = e.what();
    const auto close = what.find("] ");
    return what.rfind("[json.exception.", 0) == 0 && close != std::string::npos ? what.substr(close + 2) : what;
}

namespace {

const char* json_type(const nlohmann::json& v) { return v.type_name(); }

// The first field of result `r` that from_json(Result) could not read, as "metrics[0].stats.n
// must be ...", or empty.
std::string result_problem(const nlohmann::json& r) {
    const auto want = [](const nlohmann::json& obj, const char* key, bool ok, const char* kind, const std::string& at) {
        return ok ? std::string{} : fmt::format("'{}{}' must be {} (it is {})", at, key, kind, json_type(obj[key]));
    };
    for (const char* k : {"family", "reason", "stop_reason", "counting"})
        if (r.contains(k))
            if (auto p = want(r, k, r[k].is_string(), "a string", ""); !p.empty()) return p;
    if (r.contains("warmup_samples"))
        if (auto p = want(r, "warmup_samples", r["warmup_samples"].is_number_integer(), "an integer", ""); !p.empty()) return p;
    if (r.contains("wall_time_s"))
        if (auto p = want(r, "wall_time_s", r["wall_time_s"].is_number(), "a number", ""); !p.empty()) return p;
    const std::string status = r["status"].get<std::string>();
    if (status != "ok" && status != "skipped" && status != "failed" && status != "interrupted")
        return fmt::format("'status' is '{}', not ok, skipped, failed or interrupted", status);
    if (!r.contains("metrics")) return {};
    for (std::size_t i = 0; i < r["metrics"].size(); ++i) {
        const auto& m = r["metrics"][i];
        const std::string at = fmt::format("metrics[{}].", i);
        if (!m.is_object()) return fmt::format("'metrics[{}]' must be an object (it is {})", i, json_type(m));
        if (!m.contains("name")) return fmt::format("'{}name' is missing", at);
        if (auto p = want(m, "name", m["name"].is_string(), "a string", at); !p.empty()) return p;
        for (const char* k : {"unit", "better"})
            if (m.contains(k))
                if (auto p = want(m, k, m[k].is_string(), "a string", at); !p.empty()) return p;
        if (!m.contains("stats") || !m["stats"].is_object()) continue;
        const auto& s = m["stats"];
        const std::string sat = at + "stats.";
        if (s.contains("n"))
            if (auto p = want(s, "n", s["n"].is_number_unsigned() || (s["n"].is_number_integer() && s["n"].get<std::int64_t>() >= 0),
                              "a count (an integer of 0 or more)", sat);
                !p.empty())
                return p;
        for (const char* k : {"min", "max", "mean", "median", "stddev", "cv", "p05", "p95"})
            if (s.contains(k))
                if (auto p = want(s, k, s[k].is_number(), "a number", sat); !p.empty()) return p;
        if (s.contains("median_ci") && s["median_ci"].is_array() && s["median_ci"].size() == 2)
            for (std::size_t k = 0; k < 2; ++k)
                if (!s["median_ci"][k].is_number())
                    return fmt::format("'{}median_ci[{}]' must be a number (it is {})", sat, k, json_type(s["median_ci"][k]));
    }
    return {};
}

// The first field of the "hosts" array (multi-process runs) that read_header cannot read, as
// "'hosts[1].rank' must be an integer of 0 or more (it is string)"; empty when it is fine or absent.
std::string hosts_problem(const nlohmann::json& doc) {
    const auto hosts = doc.find("hosts");
    if (hosts == doc.end()) return {};
    if (!hosts->is_array()) return fmt::format("'hosts' must be an array (it is {})", json_type(*hosts));
    const auto count = [](const nlohmann::json& v) {
        return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
    };
    struct Field {
        const char* key;
        bool (*ok)(const nlohmann::json&);
        const char* kind;
    };
    const Field fields[] = {
        {"rank", +count, "an integer of 0 or more"},
        {"local_rank", +count, "an integer of 0 or more"},
        {"device", [](const nlohmann::json& v) { return v.is_string(); }, "a string"},
        {"host", [](const nlohmann::json& v) { return v.is_object(); }, "an object"},
        {"software", [](const nlohmann::json& v) { return v.is_object(); }, "an object"},
        {"devices", [](const nlohmann::json& v) {
             return v.is_array() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& d) { return d.is_object(); });
         }, "an array of objects"},
        {"topology_hash", [](const nlohmann::json& v) { return v.is_string() || v.is_null(); }, "a string or null"},
        {"conditions", [](const nlohmann::json& v) { return v.is_object() || v.is_null(); }, "an object or null"},
    };
    for (std::size_t i = 0; i < hosts->size(); ++i) {
        const auto& e = (*hosts)[i];
        if (!e.is_object()) return fmt::format("'hosts[{}]' must be an object (it is {})", i, json_type(e));
        if (!e.contains("rank")) return fmt::format("'hosts[{}].rank' is missing", i);
        for (const Field& f : fields)
            if (const auto v = e.find(f.key); v != e.end() && !f.ok(*v))
                return fmt::format("'hosts[{}].{}' must be {} (it is {})", i, f.key, f.kind, json_type(*v));
    }
    return {};
}

// Whether `rest` is the parameters of `params` as AXIS=VALUE joined by ',' in some order (the
// longest item that fits first at each place).
bool same_pairs(std::string_view rest, const Params& params) {
    std::vector<std::string> items;
    for (const auto& [k, v] : params.items()) items.push_back(k + "=" + v);
    std::vector<bool> used(items.size(), false);
    std::size_t at = 0, matched = 0;
    while (matched < items.size()) {
        if (at > rest.size()) return false; // a comma at the end, and nothing after it
        std::size_t best = items.size();
        for (std::size_t i = 0; i < items.size(); ++i)
            if (!used[i] && rest.compare(at, items[i].size(), items[i]) == 0 &&
                (at + items[i].size() == rest.size() || rest[at + items[i].size()] == ',') &&
                (best == items.size() || items[i].size() > items[best].size()))
                best = i;
        if (best == items.size()) return false;
        used[best] = true;
        ++matched;
        at += items[best].size() + (matched < items.size() ? 1 : 0);
    }
    return at == rest.size();
}

// Why result `r`'s key is not its scenario and parameters as a run names them
// (SCENARIO/AXIS=VALUE,... in axis order: Config::key), or empty. A report without
// "param_order" (written before it was recorded) names its parameters in any order.
std::string key_problem(const Result& r, bool ordered) {
    const std::string built = r.scenario + "/" + r.params.canonical();
    if (r.key == built) return {};
    const std::string_view key = r.key;
    if (!ordered && key.size() > r.scenario.size() && key.compare(0, r.scenario.size(), r.scenario) == 0 &&
        key[r.scenario.size()] == '/' && same_pairs(key.substr(r.scenario.size() + 1), r.params))
        return {};
    return fmt::format("its key '{}' is not its scenario and parameters ('{}')", r.key, built);
}

// Only "1.N" (N decimal, no leading zero) is a version of this major; "M.N" with M > 1 is newer.
struct SchemaVersion {
    bool valid = false;
    std::uint64_t major = 0;
};
SchemaVersion parse_schema_version(const std::string& v) {
    auto number = [](std::string_view s, std::uint64_t& out) {
        if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0')) return false;
        out = 0;
        for (char c : s) {
            if (!std::isdigit(static_cast<unsigned char>(c))) return false;
            out = out * 10 + static_cast<std::uint64_t>(c - '0');
        }
        return true;
    };
    const auto dot = v.find('.');
    SchemaVersion out;
    std::uint64_t minor = 0;
    if (dot == std::string::npos || !number(std::string_view(v).substr(0, dot), out.major) ||
        !number(std::string_view(v).substr(dot + 1), minor))
        return {};
    out.valid = true;
    return out;
}

const char* k_report_hint = "give a report written by 'interopbench run --out FILE'";

// The document of the report at `path` (of an HTML page: the report it embeds), parsed but
// not yet checked.
nlohmann::json parse_report_file(const std::string& path) {
    std::string text = read_input_file(path, "report", k_max_report_bytes);
    // A page written by the HTML reporter carries its report: read that one.
    if (html::looks_like_html(text)) {
        auto embedded = html::extract_embedded_report(text);
        if (!embedded)
            throw UsageError(fmt::format("report '{}' is an HTML page without an embedded interopbench report", path),
                             "give a page written by 'interopbench show --format html' or 'run --html', or the JSON report");
        text = std::move(*embedded);
    }
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw UsageError(fmt::format("report '{}' is empty", path), k_report_hint);
    try {
        return parse_json(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw UsageError(fmt::format("report '{}' is not valid JSON (truncated or damaged?) at byte {}", path, e.byte),
                         k_report_hint);
    } catch (const nlohmann::json::exception& e) { // e.g. a number beyond a double's range
        throw UsageError(fmt::format("report '{}' is not valid JSON: {}", path, json_error_text(e)), k_report_hint);
    }
}

// Checks `doc` as load_report says, naming `path` in the messages, and returns its results,
// read in the same pass.
std::vector<Result> checked_results(const nlohmann::json& doc, const std::string& path) {
    const char* hint = k_report_hint;
    if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_object() ||
        !doc["schema"].contains("name") || !doc["schema"]["name"].is_string())
        throw UsageError(fmt::format("'{}' is not an interopbench report (no schema name)", path), hint);
    const std::string name = doc["schema"]["name"].get<std::string>();
    if (name != k_schema_name)
        throw UsageError(fmt::format("'{}' is a '{}' document, not an interopbench report", path, name), hint);
    const auto& vj = doc["schema"].contains("version") ? doc["schema"]["version"] : nlohmann::json();
    if (!vj.is_string())
        throw UsageError(fmt::format("report '{}': schema version must be a string such as \"{}.{}\" (it is {} {})", path,
                                     k_schema_major, k_schema_minor, vj.type_name(), vj.dump()),
                         hint);
    const std::string version = vj.get<std::string>();
    const SchemaVersion sv = parse_schema_version(version);
    if (!sv.valid || sv.major < 1)
        throw UsageError(fmt::format("report '{}' has schema version '{}', not a version this interopbench reads ({}.N)",
                                     path, version, k_schema_major),
                         hint);
    if (sv.major > static_cast<std::uint64_t>(k_schema_major))
        throw UsageError(fmt::format("report '{}' has schema version {}, newer than this interopbench reads ({}.x)",
                                     path, version, k_schema_major),
                         "upgrade interopbench to read it");
    if (!doc.contains("results") || !doc["results"].is_array())
        throw UsageError(fmt::format("report '{}' has no results array", path), hint);
    const std::string damaged = "the report was edited or damaged: write it again with 'interopbench run --out FILE'";
    std::vector<Result> results;
    std::size_t i = 0;
    for (const auto& r : doc["results"]) {
        const bool good = r.is_object() && r.contains("key") && r["key"].is_string() && r.contains("scenario") &&
                          r["scenario"].is_string() && r.contains("status") && r["status"].is_string() &&
                          (!r.contains("metrics") || r["metrics"].is_array());
        if (!good)
            throw UsageError(fmt::format("report '{}': results[{}] lacks key, scenario or status", path, i), hint);
        if (const std::string p = result_problem(r); !p.empty())
            throw UsageError(fmt::format("report '{}': results[{}]: {}", path, i, p), damaged);
        try {
            results.push_back(r.get<Result>());
        } catch (const nlohmann::json::exception& e) {
            throw UsageError(fmt::format("report '{}': results[{}] is malformed: {}", path, i, json_error_text(e)), damaged);
        } catch (const UsageError& e) {
            throw UsageError(fmt::format("report '{}': results[{}]: {}", path, i, e.what()), damaged);
        }
        // Results are matched across reports by key: a key that says another configuration
        // than the result's own would compare the wrong figures.
        if (const std::string p = key_problem(results.back(), r.contains("param_order")); !p.empty())
            throw UsageError(fmt::format("report '{}': results[{}]: {}", path, i, p), damaged);
        ++i;
    }
    if (const std::string p = hosts_problem(doc); !p.empty())
        throw UsageError(fmt::format("report '{}': {}", path, p), damaged);
    return results;
}

} // namespace

nlohmann::json load_report(const std::string& path) {
    nlohmann::json doc = parse_report_file(path);
    (void)checked_results(doc, path);
    return doc;
}

Report read_report(const std::string& path) { return read_report_json(parse_report_file(path), path); }

Report read_report_json(nlohmann::json document, const std::string& origin) {
    Report report;
    report.results = checked_results(document, origin);
    report.header = read_header(document);
    document.erase("results");
    report.document = std::move(document);
    return report;
}

nlohmann::json report_document(const Report& report) {
    nlohmann::json doc = report.document;
    doc["results"] = report.results;
    return doc;
}

namespace {

bool is_path_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._-+@~/", c) != nullptr;
}

/// Where a path may start: the text's start, or after a character that is not part of a path
/// and does not close an expression or a placeholder (")]}>"): "2(n-1)/n", "GB/s" and
/// "<path>/x" hold no path that starts at their '/'.
bool path_boundary(const std::string& text, std::size_t i) {
    return i == 0 || (!is_path_char(text[i - 1]) && std::strchr(")]}>", text[i - 1]) == nullptr);
}

// Every path in a string, where one starts (path_boundary): a home directory ("/home/NAME",
// "/Users/NAME", the value of $HOME, each ending at a component boundary) becomes "~"; any
// other absolute path (a '/' and the path characters after it, not slashes only) becomes
// "<path>/" and its last component: "--out=/data/run/r.json" -> "--out=<path>/r.json". A
// lone "/" is left alone. What is left holds no absolute path; a second pass changes nothing.
std::string scrub_paths(const std::string& text, const std::string& home) {
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        if (text[i] != '/' || !path_boundary(text, i)) {
            out += text[i++];
            continue;
        }
        std::size_t home_end = 0;
        for (const char* prefix : {"/home/", "/Users/"}) {
            const std::size_t n = std::strlen(prefix);
            if (text.compare(i, n, prefix) != 0) continue;
            std::size_t e = i + n;
            while (e < text.size() && is_path_char(text[e]) && text[e] != '/') ++e;
            if (e > i + n) home_end = e;
        }
        if (!home_end && home.size() > 1 && text.compare(i, home.size(), home) == 0 &&
            (i + home.size() == text.size() || !is_path_char(text[i + home.size()]) || text[i + home.size()] == '/'))
            home_end = i + home.size();
        if (home_end) {
            out += '~';
            i = home_end;
            continue;
        }
        std::size_t end = i;
        while (end < text.size() && is_path_char(text[end])) ++end;
        std::size_t last = end;
        while (last > i && text[last - 1] == '/') --last; // "/a/b/" names b
        if (last == i) {                                     // slashes only: no path
            out.append(text, i, end - i);
        } else {
            const std::size_t name = text.find_last_of('/', last - 1) + 1;
            out += "<path>/";
            out.append(text, name, last - name);
        }
        i = end;
    }
    return out;
}

void blank(nlohmann::json& v) {
    if (v.is_string()) v = "";
    else if (v.is_number()) v = 0;
    else if (v.is_structured())
        for (auto& x : v) blank(x);
}

void anonymize_value(nlohmann::json& v, const std::string& home) {
    if (v.is_string()) {
        v = scrub_paths(v.get_ref<const std::string&>(), home);
    } else if (v.is_array()) {
        for (auto& x : v) anonymize_value(x, home);
    } else if (v.is_object()) {
        for (auto it = v.begin(); it != v.end();) {
            std::string key = it.key();
            for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            // "host" as a string: a rank's host in multi-process results; the report's own
            // "host" block is an object and is kept.
            if (key == "hostname" || key == "hostnames" || key == "host_name" || key == "nodename" ||
                (key == "host" && it->is_string())) {
                it = v.erase(it);
                continue;
            }
            if (key.find("uuid") != std::string::npos || key.find("serial") != std::string::npos) blank(*it);
            else anonymize_value(*it, home);
            ++it;
        }
    }
}

} // namespace

void anonymize_report(nlohmann::json& report) {
    const char* home = std::getenv("HOME");
    anonymize_value(report, home ? home : "");
    if (report.is_object() && report.contains("invocation") && report["invocation"].is_object()) {
        auto& inv = report["invocation"];
        // A report written before argv[0] was recorded by its base name: "~/bin/interopbench"
        // and "<path>/interopbench" become "interopbench".
        if (inv.contains("argv") && inv["argv"].is_array() && !inv["argv"].empty() && inv["argv"][0].is_string())
            inv["argv"][0] = recorded_argv({inv["argv"][0].get<std::string>()})[0];
        // A short option glued to its value ("-o/abs/out.json", "-p/abs/profile.json"): the
        // value's path is not preceded by a boundary, so it is scrubbed on its own.
        if (inv.contains("argv") && inv["argv"].is_array())
            for (auto& arg : inv["argv"])
                if (arg.is_string()) {
                    const std::string& text = arg.get_ref<const std::string&>();
                    if (text.size() > 2 && text[0] == '-' && std::isalpha(static_cast<unsigned char>(text[1])))
                        arg = text.substr(0, 2) + scrub_paths(text.substr(2), home ? home : "");
                }
        inv["anonymized"] = true;
    }
}

void anonymize_report(Report& report) {
    nlohmann::json doc = report_document(report);
    anonymize_report(doc);
    report = read_report_json(std::move(doc), "the anonymized report");
}

// ---- the header -----------------------------------------------------------------------------

namespace {

// Readers of a header field that never throw: what is missing or of another type is empty.
const nlohmann::json& member(const nlohmann::json& obj, const char* key) {
    static const nlohmann::json k_null;
    if (!obj.is_object()) return k_null;
    const auto it = obj.find(key);
    return it == obj.end() ? k_null : *it;
}

const nlohmann::json& array_at(const nlohmann::json& obj, const char* key) {
    static const nlohmann::json k_empty = nlohmann::json::array();
    const auto& v = member(obj, key);
    return v.is_array() ? v : k_empty;
}

std::string text_at(const nlohmann::json& obj, const char* key) {
    const auto& v = member(obj, key);
    return v.is_string() ? v.get<std::string>() : std::string{};
}

bool flag_at(const nlohmann::json& obj, const char* key) {
    const auto& v = member(obj, key);
    return v.is_boolean() && v.get<bool>();
}

// A count: a number of 0 or more (a fraction cut), else 0.
std::uint64_t count_at(const nlohmann::json& obj, const char* key) {
    const auto& v = member(obj, key);
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer()) return static_cast<std::uint64_t>(std::max<std::int64_t>(0, v.get<std::int64_t>()));
    if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() < 0x1p64) return static_cast<std::uint64_t>(v.get<double>());
    return 0;
}

int small_count_at(const nlohmann::json& obj, const char* key) {
    return static_cast<int>(std::min<std::uint64_t>(count_at(obj, key), INT_MAX));
}

// An index: an integer of 0 or more, else -1.
int index_at(const nlohmann::json& obj, const char* key) {
    const auto& v = member(obj, key);
    return v.is_number_integer() && (v.is_number_unsigned() || v.get<std::int64_t>() >= 0) ? small_count_at(obj, key) : -1;
}

// A finite number, or nothing.
std::optional<double> number_at(const nlohmann::json& obj, const char* key) {
    const auto& v = member(obj, key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) return std::nullopt;
    return v.get<double>();
}

} // namespace

namespace {

ReportHeader::Host read_host(const nlohmann::json& host) {
    return {text_at(host, "hostname"), text_at(host, "os"), text_at(host, "kernel"), text_at(host, "arch"),
            text_at(host, "cpu"), small_count_at(host, "logical_cpus"), count_at(host, "memory_bytes")};
}

ReportHeader::Software read_software(const nlohmann::json& sw) {
    ReportHeader::Software out;
    out.driver_release = text_at(sw, "driver_release");
    out.cuda_driver = text_at(sw, "cuda_driver");
    out.cuda_runtime = text_at(sw, "cuda_runtime");
    out.cuda_note = text_at(sw, "cuda_note");
    out.cuda_available = flag_at(sw, "cuda_available");
    for (const auto& l : array_at(sw, "libraries"))
        out.libraries.push_back({text_at(l, "name"), text_at(l, "version"), text_at(l, "note")});
    // Schema 1.0 named NCCL alone; 1.1 lists every library taken at run time.
    if (const std::string nccl = text_at(sw, "nccl"); !nccl.empty() && out.version_of("nccl").empty())
        out.libraries.push_back({"nccl", nccl, text_at(sw, "nccl_note")});
    return out;
}

// One entry per element, whatever it holds: the GPU count is the array's size.
std::vector<ReportHeader::Device> read_devices(const nlohmann::json& devices) {
    std::vector<ReportHeader::Device> out;
    for (const auto& d : devices) {
        const auto& pcie = member(d, "pcie");
        out.push_back({small_count_at(d, "ordinal"), text_at(d, "name"), text_at(d, "uuid"), text_at(d, "pci_bus_id"),
                       text_at(d, "compute_capability"), small_count_at(d, "sm_count"), count_at(d, "memory_bytes"),
                       small_count_at(pcie, "gen_current"), small_count_at(pcie, "width_current"),
                       small_count_at(pcie, "gen_max"), small_count_at(pcie, "width_max")});
    }
    return out;
}

} // namespace

std::string ReportHeader::Software::version_of(const std::string& name) const {
    for (const auto& l : libraries)
        if (l.name == name && !l.version.empty()) return l.version;
    return {};
}

ReportHeader read_header(const nlohmann::json& report) {
    ReportHeader h;
    h.schema_version = text_at(member(report, "schema"), "version");

    const auto& tool = member(report, "tool");
    h.tool = {text_at(tool, "name"), text_at(tool, "version"), text_at(tool, "git_sha")};

    const auto& inv = member(report, "invocation");
    for (const auto& a : array_at(inv, "argv"))
        if (a.is_string()) h.invocation.argv.push_back(a.get<std::string>());
    h.invocation.profile = text_at(inv, "profile");
    h.invocation.profile_hash = text_at(inv, "profile_hash");
    h.invocation.status = text_at(inv, "status");
    h.invocation.started = text_at(inv, "started");
    h.invocation.finished = text_at(inv, "finished");
    h.invocation.settings = member(inv, "settings");
    h.invocation.anonymized = flag_at(inv, "anonymized");

    h.host = read_host(member(report, "host"));
    h.software = read_software(member(report, "software"));
    h.devices = read_devices(array_at(report, "devices"));
    for (const auto& e : array_at(report, "hosts")) {
        ReportHeader::RankHost r;
        r.rank = small_count_at(e, "rank");
        r.local_rank = small_count_at(e, "local_rank");
        r.device = text_at(e, "device");
        r.host = read_host(member(e, "host"));
        r.software = read_software(member(e, "software"));
        r.devices = read_devices(array_at(e, "devices"));
        r.topology_hash = text_at(e, "topology_hash");
        r.conditions = read_conditions(member(e, "conditions"));
        h.hosts.push_back(std::move(r));
    }

    const auto& topo = member(report, "topology");
    h.topology.document = topo;
    for (const auto& g : array_at(topo, "gpus")) {
        const auto& nvlink = member(g, "nvlink");
        const auto& host_path = member(g, "host_path");
        h.topology.gpus.push_back({text_at(g, "label"), index_at(g, "index"), text_at(g, "cpus"), text_at(host_path, "class"),
                                   number_at(host_path, "bandwidth"), flag_at(nvlink, "known"),
                                   static_cast<int>(array_at(nvlink, "links").size()), small_count_at(nvlink, "active")});
    }
    for (const auto& p : array_at(topo, "pairs"))
        h.topology.pairs.push_back({text_at(p, "label"), text_at(p, "class"), index_at(p, "from"), index_at(p, "to")});

    if (const auto& env = member(report, "environment"); env.is_object())
        for (const auto& [name, value] : env.items())
            if (value.is_string()) h.environment[name] = value.get<std::string>();
    for (const auto& w : array_at(report, "warnings"))
        if (w.is_string()) h.warnings.push_back(w.get<std::string>());
    h.conditions = read_conditions(member(report, "conditions"));
    return h;
}

} // namespace interopbench
