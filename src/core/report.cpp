#include "interopbench/report.hpp"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>

#include "interopbench/errors.hpp"

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

nlohmann::json environment_json() {
    nlohmann::json env = nlohmann::json::object();
    for (char** e = environ; e && *e; ++e) {
        const std::string kv = *e;
        const auto eq = kv.find('=');
        if (eq == std::string::npos) continue;
        const std::string name = kv.substr(0, eq);
        if (environment_allowed(name)) env[name] = kv.substr(eq + 1);
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
    doc["invocation"] = {{"argv", run.argv},
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
    doc["environment"] = environment_json();
    doc["results"] = std::move(results);
    doc["summary"] = counts;
    doc["warnings"] = run.warnings;
    return doc;
}

void check_output_path(const std::string& path) {
    namespace fs = std::filesystem;
    const std::string hint = "choose a file in an existing, writable directory";
    if (path.empty()) throw UsageError("output path is empty", hint);
    std::error_code ec;
    if (fs::is_directory(path, ec))
        throw UsageError(fmt::format("output path '{}' is a directory", path), "name a file, e.g. " + path + "/report.json");
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    if (!fs::exists(dir, ec))
        throw UsageError(fmt::format("cannot write '{}': directory '{}' does not exist", path, dir.string()),
                         fmt::format("create it first (mkdir -p {}) or {}", dir.string(), hint));
    if (!fs::is_directory(dir, ec))
        throw UsageError(fmt::format("cannot write '{}': '{}' is not a directory", path, dir.string()), hint);
    // access(W_OK) says yes to root everywhere; creating a file is the test that counts.
    std::string probe = (dir / ".interopbench-probe-XXXXXX").string();
    const int fd = mkstemp(probe.data());
    if (fd < 0)
        throw UsageError(fmt::format("cannot write '{}': directory '{}' is not writable ({})", path, dir.string(),
                                     std::strerror(errno)),
                         hint);
    ::close(fd);
    ::unlink(probe.c_str());
}

void write_file_atomic(const std::string& path, const std::string& content) {
    check_output_path(path);
    std::string tmpl = path + ".tmp.XXXXXX";
    const int fd = mkstemp(tmpl.data());
    if (fd < 0)
        throw UsageError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)), "check the directory's permissions");
    std::size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            ::close(fd);
            ::unlink(tmpl.c_str());
            throw UsageError(fmt::format("cannot write '{}': {}", path, std::strerror(err)), "free disk space or choose another place");
        }
        done += static_cast<std::size_t>(n);
    }
    // The new file must be complete on disk before it replaces the old one.
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmpl.c_str());
        throw UsageError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
    }
    ::chmod(tmpl.c_str(), 0644);
    if (std::rename(tmpl.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmpl.c_str());
        throw UsageError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
    }
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY); dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

nlohmann::json load_report(const std::string& path) {
    const std::string hint = "give a report written by 'interopbench run --out FILE'";
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::error_code ec;
        if (!std::filesystem::exists(path, ec))
            throw UsageError(fmt::format("cannot read report '{}': no such file", path), hint);
        throw UsageError(fmt::format("cannot read report '{}': {}", path, std::strerror(errno)), "check the file's permissions");
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw UsageError(fmt::format("report '{}' is empty", path), hint);
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw UsageError(fmt::format("report '{}' is not valid JSON (truncated or damaged?) at byte {}", path, e.byte),
                         hint);
    } catch (const nlohmann::json::exception& e) { // e.g. a number beyond a double's range
        throw UsageError(fmt::format("report '{}' is not valid JSON: {}", path, e.what()), hint);
    }
    if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_object() ||
        !doc["schema"].contains("name") || !doc["schema"]["name"].is_string())
        throw UsageError(fmt::format("'{}' is not an interopbench report (no schema name)", path), hint);
    const std::string name = doc["schema"]["name"].get<std::string>();
    if (name != k_schema_name)
        throw UsageError(fmt::format("'{}' is a '{}' document, not an interopbench report", path, name), hint);
    const std::string version = doc["schema"].value("version", std::string{});
    int major = -1;
    try {
        major = std::stoi(version);
    } catch (const std::exception&) {
    }
    if (major < 0)
        throw UsageError(fmt::format("report '{}' has an unreadable schema version '{}'", path, version), hint);
    if (major > k_schema_major)
        throw UsageError(fmt::format("report '{}' has schema version {}, newer than this interopbench reads ({}.x)",
                                     path, version, k_schema_major),
                         "upgrade interopbench to read it");
    if (!doc.contains("results") || !doc["results"].is_array())
        throw UsageError(fmt::format("report '{}' has no results array", path), hint);
    std::size_t i = 0;
    for (const auto& r : doc["results"]) {
        const bool good = r.is_object() && r.contains("key") && r["key"].is_string() && r.contains("scenario") &&
                          r["scenario"].is_string() && r.contains("status") && r["status"].is_string() &&
                          (!r.contains("metrics") || r["metrics"].is_array());
        if (!good)
            throw UsageError(fmt::format("report '{}': result {} lacks key, scenario or status", path, i), hint);
        try {
            (void)r.get<Result>();
        } catch (const std::exception& e) {
            throw UsageError(fmt::format("report '{}': result {} is malformed: {}", path, i, e.what()), hint);
        }
        ++i;
    }
    return doc;
}

namespace {

bool is_path_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._-+@~/", c) != nullptr;
}

// Home directories become "~": "/home/NAME", "/Users/NAME" and the value of $HOME, each
// where a path starts (not inside a longer path) and ends at a component boundary.
std::string scrub_home(const std::string& text, const std::string& home) {
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        const bool path_start = i == 0 || !is_path_char(text[i - 1]);
        std::size_t end = 0;
        if (path_start) {
            for (const char* prefix : {"/home/", "/Users/"}) {
                const std::size_t n = std::strlen(prefix);
                if (text.compare(i, n, prefix) != 0) continue;
                std::size_t e = i + n;
                while (e < text.size() && is_path_char(text[e]) && text[e] != '/') ++e;
                if (e > i + n) end = e;
            }
            if (!end && home.size() > 1 && text.compare(i, home.size(), home) == 0 &&
                (i + home.size() == text.size() || !is_path_char(text[i + home.size()]) || text[i + home.size()] == '/'))
                end = i + home.size();
        }
        if (end) {
            out += '~';
            i = end;
        } else {
            out += text[i++];
        }
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
        v = scrub_home(v.get_ref<const std::string&>(), home);
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
    if (report.is_object() && report.contains("invocation") && report["invocation"].is_object())
        report["invocation"]["anonymized"] = true;
}

std::vector<Result> report_results(const nlohmann::json& report) {
    std::vector<Result> out;
    for (const auto& r : report.at("results")) out.push_back(r.get<Result>());
    return out;
}

} // namespace interopbench
