// External scenarios: plugin.
//
// What: a scenario defined by a program in any language, declared by a manifest
// (plugins/NAME.json) and spoken to in JSON lines over its stdin and stdout; the protocol is
// docs/PLUGINS.md. The plugin describes its axes and metrics; interopbench expands the axes,
// and for each configuration asks the plugin to prepare, measure (one sample per request),
// check, give its details and tear down. The runner owns warm-up, sampling, stopping, the
// statistics, the report and compare, as for a built-in scenario.
// How: one plugin process per scenario, started when its first configuration is prepared
// and kept for the next ones; a process that failed (crash, silence past the deadline, a
// reply that is not JSON, children left behind after teardown) is killed with its whole
// process group, costs the configuration it was serving, and is started afresh for the
// next one. A plugin that cannot describe itself (or speaks another protocol version) is
// listed with the reason and all its configurations are skipped.
// Reports: the plugin's metrics, as it declares them; details.plugin adds the manifest, the
// clock(s) the plugin says it used, and the round trip of each measure request as seen by
// interopbench (median), next to the time the plugin says it spent on it: their difference
// is the protocol's overhead per sample.
// Caveats: a plugin's values are what it says they are; interopbench checks their form
// (numbers, known metrics), not their truth.
#include "families/plugin/plugin.hpp"
#include "interopbench/file_io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "families/plugin/plugin_process.hpp"
#include "families/plugin/reply.hpp"
#include "interopbench/errors.hpp"

namespace interopbench {
namespace plugin {
namespace {

namespace fs = std::filesystem;

constexpr double k_stop_grace_s = 2;

bool executable(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

/// command[0] as an absolute path: relative to the manifest's folder when it holds a '/',
/// else looked up in PATH. Empty when not found.
std::string resolve_command(const std::string& name, const std::string& dir) {
    if (name.find('/') != std::string::npos) {
        const fs::path p = fs::path(name).is_absolute() ? fs::path(name) : fs::path(dir) / name;
        return executable(p.string()) ? p.lexically_normal().string() : std::string{};
    }
    const char* path = std::getenv("PATH");
    std::string_view rest = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
    while (true) {
        const auto colon = rest.find(':');
        const std::string d(rest.substr(0, colon));
        const std::string candidate = (fs::path(d.empty() ? "." : d) / name).string();
        if (executable(candidate)) return fs::absolute(candidate).lexically_normal().string();
        if (colon == std::string_view::npos) return {};
        rest.remove_prefix(colon + 1);
    }
}

/// The manifest as a report names it: as found in a folder the user named (--plugin-path,
/// INTEROPBENCH_PLUGIN_PATH), or by its file name alone in a folder fixed at build time (the
/// installed or the source tree's plugins), whose place on the machine nobody asked for.
std::string reported_manifest(const Manifest& m) {
    const std::string name = fs::path(m.path).filename().string();
    for (const char* shipped : {
#ifdef INTEROPBENCH_PLUGIN_INSTALL_DIR
             INTEROPBENCH_PLUGIN_INSTALL_DIR,
#endif
#ifdef INTEROPBENCH_PLUGIN_SOURCE_DIR
             INTEROPBENCH_PLUGIN_SOURCE_DIR,
#endif
             static_cast<const char*>(nullptr)})
        if (shipped && fs::path(shipped).lexically_normal() == fs::path(m.dir)) return name;
    return m.path;
}

/// The state a scenario's configurations share: the manifest, the description, the process.
struct Host {
    Manifest manifest;
    ScenarioInfo info;
    std::string unusable; ///< why every configuration is skipped, or empty
    Process process;
    bool described = false; ///< info holds the description (or why there is none)
    bool checked = false;   ///< the declared description was checked against the plugin's
    std::mutex mutex;       ///< guards the first describe
    explicit Host(Manifest m) : manifest(std::move(m)), process(manifest.id) {}

    /// The description: the manifest's where it declares one (the plugin is not started), else
    /// the plugin's own, asked for the first time it is needed: a plugin that is not listed or
    /// selected is never started (a hanging describe costs only the runs that use it).
    const ScenarioInfo& describe() {
        std::lock_guard<std::mutex> lock(mutex);
        if (described) return info;
        described = true;
        if (manifest.declared) {
            info = *manifest.declared;
            return info;
        }
        try {
            info = start();
        } catch (const std::exception& e) {
            // Listed, and every configuration skipped with the reason: a broken plugin
            // costs its own scenario, never the run.
            unusable = fmt::format("plugin unusable: {}", e.what());
            info.id = manifest.id;
            info.family = "plugin";
            info.summary = unusable;
            info.needs_gpu = manifest.needs_gpu;
            info.metrics = {MetricInfo{"value", "1", Better::higher, "unknown: the plugin did not describe itself"}};
            info.axes.clear();
        }
        stop();
        return info;
    }

    /// A run's check of what the manifest declares: the plugin is started (once), asked to
    /// describe itself and ended. A plugin that cannot answer is unusable (its configurations
    /// skip with the reason, as when it describes itself); one that describes itself otherwise
    /// is a UsageError naming the difference and the fix.
    void check_declared() {
        (void)describe();
        std::lock_guard<std::mutex> lock(mutex);
        if (checked || !manifest.declared || !unusable.empty()) return;
        checked = true;
        ScenarioInfo said;
        try {
            said = start();
        } catch (const std::exception& e) {
            unusable = fmt::format("plugin unusable: {}", e.what());
            stop();
            return;
        }
        stop();
        if (const auto difference = describe_difference(info, said, "in its manifest"))
            throw UsageError(fmt::format("plugin '{}' describes itself otherwise than its manifest '{}' says: {}", manifest.id,
                                         manifest.path, *difference),
                             fmt::format("put the plugin's own reply to describe in the manifest's \"describe\" (in {}: echo "
                                         "'{{\"op\": \"describe\", \"protocol\": {}}}' | {}), or update the plugin",
                                         manifest.dir, k_protocol, fmt::join(manifest.command, " ")));
    }

    /// Ends the process (after a description), saying what had to be killed.
    void stop() {
        const std::string note = process.stop(k_stop_grace_s);
        if (!note.empty()) std::fprintf(stderr, "warning: plugin '%s' %s\n", manifest.id.c_str(), note.c_str());
    }

    /// Starts the plugin and reads its description; throws std::runtime_error.
    ScenarioInfo start() {
        if (!manifest.folder || !manifest.program) throw std::runtime_error("its folder and program were not checked");
        process.start(manifest.command, manifest.folder->fd(), manifest.script ? -1 : manifest.program->fd());
        return parse_describe_reply(process.request({{"op", "describe"}, {"protocol", k_protocol}}, manifest.timeout_s),
                                    manifest);
    }
};

/// Sends one request; a protocol failure is this configuration's failure, its own error too.
nlohmann::json ask(Host& h, const nlohmann::json& message) {
    try {
        return h.process.request(message, h.manifest.timeout_s);
    } catch (const ProtocolError& e) {
        throw ConfigError(e.what());
    } catch (const Interrupted& e) {
        throw ConfigError(e.what());
    }
}

double median(std::vector<double> v) {
    if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

class PluginCase final : public Case {
public:
    explicit PluginCase(std::shared_ptr<Host> host) : m_host(std::move(host)) {}
    ~PluginCase() override {
        if (m_torn_down || !m_host->process.running()) return;
        try {
            const auto reply = m_host->process.request({{"op", "teardown"}}, m_host->manifest.timeout_s);
            (void)reply;
            if (!m_host->process.strays().empty()) m_host->process.kill();
        } catch (...) {
            // ProtocolError: the process is already gone; Interrupted: likewise.
        }
    }
    PluginCase(const PluginCase&) = delete;
    PluginCase& operator=(const PluginCase&) = delete;

    Sample measure() override {
        const auto& metrics = m_host->info.metrics;
        Sample s(metrics.size(), std::numeric_limits<double>::quiet_NaN());
        const auto t0 = std::chrono::steady_clock::now();
        nlohmann::json reply;
        try {
            reply = m_host->process.request({{"op", "measure"}}, m_host->manifest.timeout_s);
        } catch (const ProtocolError& e) {
            throw ConfigError(e.what());
        } catch (const Interrupted&) {
            return s; // the runner sees the stop signal and records the configuration as interrupted
        }
        const double round_trip = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        MeasureReply got;
        try {
            got = parse_measure_reply(reply, metrics);
        } catch (const BadReply& e) {
            fail(e.what());
        }
        m_clocks.insert(got.clock);
        m_round_trips.push_back(round_trip);
        if (got.elapsed_s) m_elapsed.push_back(*got.elapsed_s);
        return got.values;
    }

    void check() override {
        throw_if_error_check(ask(*m_host, {{"op", "check"}}));
        fetch_details();
        teardown();
    }

    nlohmann::json details() const override {
        try {
            const_cast<PluginCase*>(this)->fetch_details();
        } catch (...) {
        }
        nlohmann::json d = m_details.is_object() ? m_details : nlohmann::json::object();
        nlohmann::json p = {{"manifest", reported_manifest(m_host->manifest)},
                            {"protocol", k_protocol},
                            {"clock", fmt::format("{}", fmt::join(m_clocks, ","))},
                            {"measure_requests", m_round_trips.size()}};
        const double rt = median(m_round_trips);
        if (!std::isnan(rt)) p["round_trip_median_s"] = rt;
        if (!m_elapsed.empty() && m_elapsed.size() == m_round_trips.size()) {
            std::vector<double> overhead(m_elapsed.size());
            for (std::size_t i = 0; i < overhead.size(); ++i) overhead[i] = m_round_trips[i] - m_elapsed[i];
            const double inside = median(m_elapsed), over = median(overhead);
            p["plugin_elapsed_median_s"] = inside;
            p["overhead_median_s"] = over;
            if (inside > 0) p["overhead_fraction"] = over / inside;
        }
        d["plugin"] = std::move(p);
        return d;
    }

private:
    [[noreturn]] void fail(const std::string& what) {
        m_host->process.kill(); // its state is unknown: the next configuration starts afresh
        throw ConfigError(fmt::format("plugin '{}': {}", m_host->manifest.id, what));
    }
    void throw_if_error_check(const nlohmann::json& reply) {
        if (reply.contains("error")) throw CheckFailed(value_text(reply["error"]));
    }
    void fetch_details() {
        if (m_details_fetched || !m_host->process.running()) return;
        m_details_fetched = true;
        const auto reply = ask(*m_host, {{"op", "details"}});
        try {
            m_details = parse_details_reply(reply);
        } catch (const BadReply& e) {
            fail(e.what());
        }
    }
    void teardown() {
        m_torn_down = true;
        throw_if_error(ask(*m_host, {{"op", "teardown"}}), "teardown");
        // After teardown the group holds the plugin alone: anything else would outlive the
        // configuration that started it.
        const auto left = m_host->process.strays();
        if (!left.empty()) {
            m_host->process.kill();
            throw ConfigError(fmt::format("plugin '{}' left {} process(es) behind after teardown: {} (killed; a plugin "
                                          "must end what it starts)",
                                          m_host->manifest.id, left.size(), fmt::join(left, ", ")));
        }
    }

    std::shared_ptr<Host> m_host;
    bool m_torn_down = false, m_details_fetched = false;
    nlohmann::json m_details;
    std::set<std::string> m_clocks;
    std::vector<double> m_round_trips, m_elapsed;
};

class PluginScenario final : public Scenario {
public:
    explicit PluginScenario(std::shared_ptr<Host> host) : m_host(std::move(host)) {}
    ~PluginScenario() override {
        const std::string note = m_host->process.stop(k_stop_grace_s);
        if (!note.empty()) std::fprintf(stderr, "warning: plugin '%s' %s\n", m_host->manifest.id.c_str(), note.c_str());
    }
    PluginScenario(const PluginScenario&) = delete;
    PluginScenario& operator=(const PluginScenario&) = delete;

    const ScenarioInfo& info() const override { return m_host->describe(); }
    void check_declared() const { m_host->check_declared(); }
    const std::string& id() const override { return m_host->manifest.id; }
    std::string origin() const override { return m_host->manifest.path; }

    std::optional<std::string> unsupported(const Machine& machine, const Params&) const override {
        (void)m_host->describe();
        if (!m_host->unusable.empty()) return m_host->unusable;
        if (m_host->manifest.needs_gpu) return gpu_unavailable_reason(machine);
        return std::nullopt;
    }

    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& params) const override {
        Host& h = *m_host;
        (void)h.describe();
        if (!h.unusable.empty()) throw Unsupported(h.unusable);
        if (!h.process.running()) {
            // The first configuration, or the process ended with an earlier one: start it
            // afresh. A plugin that cannot even start again is unusable from here on.
            try {
                const ScenarioInfo again = h.start();
                if (const auto difference = describe_difference(
                        h.info, again, h.manifest.declared ? "in its manifest" : "when it first described itself"))
                    throw std::runtime_error(fmt::format("it describes itself otherwise: {}", *difference));
            } catch (const std::exception& e) {
                h.process.kill();
                h.unusable = fmt::format("plugin unusable: {}", e.what());
                throw ConfigError(h.unusable);
            }
        }
        nlohmann::json p = nlohmann::json::object();
        for (const auto& item : params.items()) {
            const std::string& name = item.first;
            const std::string& text = item.second;
            const auto it = std::find_if(h.info.axes.begin(), h.info.axes.end(), [&](const Axis& a) { return a.name == name; });
            const auto number = params.find_number(name);
            if (it != h.info.axes.end() && it->kind != AxisKind::choice && number) p[name] = *number;
            else p[name] = text;
        }
        auto c = std::make_unique<PluginCase>(m_host);
        const auto reply = ask(h, {{"op", "prepare"}, {"params", p}, {"sample_time_s", ctx.sample_time_s}});
        if (reply.contains("skip")) {
            throw Unsupported(value_text(reply["skip"]));
        }
        throw_if_error(reply, "prepare");
        return c;
    }

private:
    std::shared_ptr<Host> m_host;
};

/// A manifest is a few lines: at most 1 MiB is read (a huge file is refused, not read whole).
constexpr std::uint64_t k_max_manifest_bytes = 1ull << 20;

} // namespace

Manifest load_manifest(const std::string& path, const std::string& text) {
    const auto j = parse_json(text, false);
    const std::string example = R"(write e.g. {"id": "my_plugin", "protocol": 1, "command": ["python3", "my_plugin.py"], "needs_gpu": false})";
    if (j.is_discarded()) throw UsageError(fmt::format("plugin manifest '{}' is not valid JSON", path), example);
    if (!j.is_object()) throw UsageError(fmt::format("plugin manifest '{}' is not a JSON object", path), example);
    auto missing = [&](const char* key, const char* type) {
        return UsageError(fmt::format("plugin manifest '{}': '{}' is missing or not {}", path, key, type), example);
    };
    static const std::set<std::string> k_known = {"id", "protocol", "command", "needs_gpu", "timeout_s", "description", "describe"};
    for (const auto& item : j.items())
        if (!k_known.count(item.key()))
            throw UsageError(fmt::format("plugin manifest '{}': unknown field '{}'", path, item.key()),
                             "known fields: id, protocol, command, needs_gpu, timeout_s, description, describe");
    Manifest m;
    m.path = path;
    m.dir = fs::absolute(fs::path(path)).parent_path().lexically_normal().string();
    if (!j.contains("id") || !j["id"].is_string()) throw missing("id", "a string");
    m.id = j["id"].get<std::string>();
    if (!is_id(m.id))
        throw UsageError(fmt::format("plugin manifest '{}': id '{}' is not a scenario id", path, m.id),
                         "use lower case letters, digits and _, starting with a letter, e.g. \"my_plugin\"");
    if (!j.contains("protocol") || !j["protocol"].is_number_integer()) throw missing("protocol", "an integer");
    m.protocol = j["protocol"].get<int>();
    if (m.protocol != k_protocol)
        throw UsageError(fmt::format("plugin manifest '{}': protocol {} is not spoken by this interopbench (it speaks {})",
                                     path, j["protocol"].dump(), k_protocol),
                         "use a version of the plugin for protocol 1, or a newer interopbench");
    if (!j.contains("needs_gpu") || !j["needs_gpu"].is_boolean()) throw missing("needs_gpu", "true or false");
    m.needs_gpu = j["needs_gpu"].get<bool>();
    if (!j.contains("command") || !j["command"].is_array() || j["command"].empty() ||
        !std::all_of(j["command"].begin(), j["command"].end(), [](const auto& a) { return a.is_string(); }))
        throw UsageError(fmt::format("plugin manifest '{}': 'command' is missing or not a list of strings", path),
                         R"(write the program and its arguments as a list, e.g. "command": ["python3", "my_plugin.py"])");
    for (const auto& a : j["command"]) m.command.push_back(a.get<std::string>());
    // A program receives its arguments as C strings: one holding a NUL would reach it cut
    // there, another command than the one written.
    for (std::size_t i = 0; i < m.command.size(); ++i)
        if (m.command[i].find('\0') != std::string::npos)
            throw UsageError(fmt::format("plugin manifest '{}': 'command' item {} holds a NUL character, which no program "
                                         "receives (it would run cut there)",
                                         path, i),
                             "write the program and its arguments without \\u0000");
    const std::string program = resolve_command(m.command[0], m.dir);
    if (program.empty())
        throw UsageError(fmt::format("plugin manifest '{}': command '{}' is not found or not executable", path, m.command[0]),
                         m.command[0].find('/') != std::string::npos
                             ? "a path with '/' is taken relative to the manifest's folder; check it and its execute permission"
                             : "install it or put it on PATH, or give its path");
    // A path relative to the manifest's folder stays so: the plugin runs there.
    if (m.command[0].find('/') == std::string::npos || fs::path(m.command[0]).is_absolute()) m.command[0] = program;
    if (j.contains("timeout_s")) {
        if (!j["timeout_s"].is_number() || !(j["timeout_s"].get<double>() > 0) || !std::isfinite(j["timeout_s"].get<double>()) ||
            j["timeout_s"].get<double>() > 86400)
            throw UsageError(fmt::format("plugin manifest '{}': timeout_s {} is not a number of seconds above 0", path, j["timeout_s"].dump()),
                             "write e.g. \"timeout_s\": 30");
        m.timeout_s = j["timeout_s"].get<double>();
    }
    if (j.contains("describe")) {
        // The plugin's reply to describe, as it gives it (its "protocol" may be left out: the
        // manifest's), read as the plugin's own would be.
        const std::string fix = "write there what the plugin answers to {\"op\": \"describe\", \"protocol\": 1}, or leave "
                                "\"describe\" out to have the plugin describe itself when listed";
        nlohmann::json d = j["describe"];
        if (!d.is_object()) throw UsageError(fmt::format("plugin manifest '{}': 'describe' is not a JSON object", path), fix);
        if (!d.contains("protocol")) d["protocol"] = m.protocol;
        try {
            m.declared = parse_describe_reply(d, m);
        } catch (const ConfigError& e) { // BadReply: "its describe reply has no 'metrics' list"
            std::string what = e.what();
            if (constexpr std::string_view k_its = "its describe reply "; what.rfind(k_its, 0) == 0) what.erase(0, k_its.size());
            throw UsageError(fmt::format("plugin manifest '{}': its 'describe' {}", path, what), fix);
        }
    }
    return m;
}

void check_described(const std::vector<Config>& configs) {
    std::set<const Scenario*> seen;
    for (const Config& c : configs)
        if (seen.insert(c.scenario).second)
            if (const auto* p = dynamic_cast<const PluginScenario*>(c.scenario)) p->check_declared();
}

std::vector<SearchPath> search_path(const std::vector<std::string>& cli_dirs, bool defaults) {
    std::vector<SearchPath> out;
    std::set<std::string> seen;
    auto add = [&](const std::string& dir, bool explicit_dir, const std::string& origin) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) {
            if (explicit_dir)
                throw UsageError(fmt::format("plugin folder '{}' ({}) is not a directory", dir, origin),
                                 "give a folder holding plugin manifests (NAME.json)");
            return;
        }
        const std::string canonical = fs::canonical(dir, ec).string();
        if (!seen.insert(ec ? dir : canonical).second) return;
        out.push_back({dir, explicit_dir});
    };
    for (const auto& d : cli_dirs) add(d, true, "--plugin-path");
    if (const char* env = std::getenv("INTEROPBENCH_PLUGIN_PATH"); env && *env) {
        std::string_view rest = env;
        while (true) {
            const auto colon = rest.find(':');
            const std::string d(rest.substr(0, colon));
            if (!d.empty()) add(d, true, "INTEROPBENCH_PLUGIN_PATH");
            if (colon == std::string_view::npos) break;
            rest.remove_prefix(colon + 1);
        }
    }
    if (defaults) {
        // Fixed at build time, never derived from where a (copied) binary happens to sit: the
        // installed plugins, and the source tree's only for the binary of its own build tree.
#ifdef INTEROPBENCH_PLUGIN_INSTALL_DIR
        add(INTEROPBENCH_PLUGIN_INSTALL_DIR, false, "");
#endif
#if defined(INTEROPBENCH_PLUGIN_SOURCE_DIR) && defined(INTEROPBENCH_BUILD_DIR)
        std::error_code ec;
        const std::string exe = fs::read_symlink("/proc/self/exe", ec).string();
        const std::string build = std::string(INTEROPBENCH_BUILD_DIR) + "/";
        if (!ec && exe.rfind(build, 0) == 0) add(INTEROPBENCH_PLUGIN_SOURCE_DIR, false, "");
#endif
    }
    return out;
}

/// The interpreter a script names on its first line ("#!/usr/bin/env bash"), or nothing when
/// the held `program` is not a script (or cannot be read: then it cannot run as one either).
std::optional<std::string> interpreter_of(const TrustedPath& program) {
    const int fd = ::open(fmt::format("/proc/self/fd/{}", program.fd()).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    char head[256];
    const ssize_t n = ::read(fd, head, sizeof head);
    ::close(fd);
    if (n < 2 || head[0] != '#' || head[1] != '!') return std::nullopt;
    const std::string line(head + 2, static_cast<std::size_t>(n) - 2);
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos) return std::string{};
    return line.substr(start, line.find_first_of(" \t\n", start) - start);
}

std::optional<std::string> hold_plugin(Manifest& m, std::shared_ptr<const TrustedPath> folder) {
    TrustedPath program = open_trusted_at(*folder, m.command[0], TrustRule::plugin_program);
    if (!program) return program.why();
    if (const auto interpreter = interpreter_of(program)) {
        if (const TrustedPath held = open_trusted_at(*folder, *interpreter, TrustRule::plugin_program); !held)
            return fmt::format("the interpreter of '{}': {}", m.command[0], held.why());
        m.script = true;
    }
    // Arguments that name files (its script, relative to the manifest's folder) are run too.
    for (std::size_t i = 1; i < m.command.size(); ++i) {
        struct stat st {};
        if (::fstatat(folder->fd(), m.command[i].c_str(), &st, 0) != 0 || !S_ISREG(st.st_mode)) continue;
        if (const TrustedPath script = open_trusted_at(*folder, m.command[i], TrustRule::plugin_program); !script)
            return script.why();
    }
    m.folder = std::move(folder);
    m.program = std::make_shared<const TrustedPath>(std::move(program));
    return std::nullopt;
}

void register_from(Registry& r, const std::vector<SearchPath>& folders, std::optional<double> timeout_s,
                   std::vector<std::string>& warnings) {
    for (const auto& where : folders) {
        // Like sudo and git's safe.directory: what another user may change is never run. The
        // folder is held from here on: its manifests are opened in it, the plugin runs in it.
        auto folder = std::make_shared<const TrustedPath>(open_trusted(where.dir, TrustRule::plugin_folder));
        if (!*folder) {
            warnings.push_back(fmt::format("plugin folder ignored: {}", folder->why()));
            continue;
        }
        std::vector<std::string> files;
        if (DIR* d = ::fdopendir(::openat(folder->fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC))) {
            while (const dirent* e = ::readdir(d)) {
                const std::string name = e->d_name;
                struct stat st {};
                if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0 &&
                    ::fstatat(folder->fd(), name.c_str(), &st, 0) == 0 && S_ISREG(st.st_mode))
                    files.push_back(name);
            }
            ::closedir(d);
        }
        std::sort(files.begin(), files.end()); // a fixed `list` order
        for (const auto& name : files) {
            const std::string file = (fs::path(where.dir) / name).string();
            try {
                const TrustedPath held = open_trusted_at(*folder, name, TrustRule::plugin_manifest);
                if (!held) {
                    warnings.push_back(fmt::format("plugin manifest ignored: {}", held.why()));
                    continue;
                }
                Manifest m = load_manifest(file, read_input_file(held.fd(), file, "plugin manifest", k_max_manifest_bytes));
                if (auto why = hold_plugin(m, folder)) {
                    warnings.push_back(fmt::format("plugin '{}' ignored: {}", m.id, *why));
                    continue;
                }
                if (const Scenario* other = r.find(m.id)) {
                    const std::string origin = other->origin();
                    throw UsageError(origin.empty()
                                         ? fmt::format("plugin manifest '{}': id '{}' is a built-in scenario", m.path, m.id)
                                         : fmt::format("plugin manifest '{}': id '{}' is already the plugin of '{}'", m.path,
                                                       m.id, origin),
                                     "give the plugin another id");
                }
                if (timeout_s) m.timeout_s = *timeout_s;
                // Described when first needed (Host::describe), not here.
                r.add(std::make_unique<PluginScenario>(std::make_shared<Host>(std::move(m))));
            } catch (const UsageError& e) {
                if (where.explicit_dir) throw;
                warnings.push_back(fmt::format("{} (plugin left out; {})", e.what(), e.hint()));
            }
        }
    }
}


} // namespace plugin

void register_plugins(Registry& r, const PluginOptions& options, std::vector<std::string>& warnings) {
    if (options.timeout_s && !(*options.timeout_s > 0 && *options.timeout_s <= 86400))
        throw UsageError(fmt::format("--plugin-timeout {} is not a number of seconds above 0", *options.timeout_s),
                         "write e.g. --plugin-timeout 30");
    plugin::register_from(r, plugin::search_path(options.paths, options.defaults), options.timeout_s, warnings);
}

} // namespace interopbench
