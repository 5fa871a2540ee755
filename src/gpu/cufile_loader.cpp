// Run-time loading of libcufile.so.0 with this tool's own declarations of the documented
// API. The driver is opened once and kept open: cuFileDriverOpen is expensive and cuFile
// keeps threads and pinned bounce buffers for the process's lifetime.
#include "gpu/cufile_loader.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <fmt/format.h>

#include "interopbench/errors.hpp"
#include "interopbench/file_io.hpp"
#include "interopbench/private_dir.hpp"
#include "interopbench/report.hpp"
#include "interopbench/trust.hpp"
#include "topology/storage_devices.hpp"

namespace interopbench::gpu {
namespace {

template <class F> bool resolve(void* lib, F& fn, const char* name) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    return fn != nullptr;
}

struct Loaded {
    CufileApi api;
    std::string why;
};

/// The log file cuFile was told to write (CUFILE_LOGFILE_PATH), and the folder its
/// configuration's "logging" names: where cufile_log_reason looks.
std::string& log_path() {
    static std::string path;
    return path;
}
std::string& log_dir() {
    static std::string dir;
    return dir;
}

Loaded load() {
    Loaded out;
    std::string why;
    // Before the library reads anything: its configuration and its log in the private folder.
    if (private_cufile_config(&why).empty()) {
        out.why = "cuFile is not loaded: " + why;
        return out;
    }
    const char* override_name = std::getenv("INTEROPBENCH_CUFILE_LIBRARY");
    std::vector<std::string> names;
    if (override_name && *override_name) names = {override_name};
    else names = {"libcufile.so.0", "libcufile.so", "/usr/local/cuda/lib64/libcufile.so.0",
                  "/usr/local/cuda/targets/x86_64-linux/lib/libcufile.so.0"};
    void* lib = nullptr;
    std::string first_error;
    for (const auto& n : names) {
        lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            out.api.library = n;
            break;
        }
        if (first_error.empty()) {
            const char* e = dlerror();
            first_error = e ? e : "unknown error";
        }
    }
    if (!lib) {
        out.why = fmt::format("libcufile.so.0 could not be loaded ({}); install GPUDirect Storage (cuFile) or add "
                              "its directory to LD_LIBRARY_PATH",
                              first_error);
        return out;
    }
    CufileApi& a = out.api;
    std::string missing;
    auto need = [&](auto& fn, const char* name) {
        if (!resolve(lib, fn, name) && missing.empty()) missing = name;
    };
    need(a.driver_open, "cuFileDriverOpen");
    if (!resolve(lib, a.driver_close, "cuFileDriverClose_v2")) need(a.driver_close, "cuFileDriverClose");
    need(a.driver_get_properties, "cuFileDriverGetProperties");
    need(a.handle_register, "cuFileHandleRegister");
    need(a.handle_deregister, "cuFileHandleDeregister");
    need(a.buf_register, "cuFileBufRegister");
    need(a.buf_deregister, "cuFileBufDeregister");
    need(a.read, "cuFileRead");
    need(a.write, "cuFileWrite");
    resolve(lib, a.get_version, "cuFileGetVersion");
    resolve(lib, a.set_stats_level, "cuFileSetStatsLevel");
    resolve(lib, a.stats_start, "cuFileStatsStart");
    resolve(lib, a.stats_reset, "cuFileStatsReset");
    resolve(lib, a.get_stats_l3, "cuFileGetStatsL3");
    if (!missing.empty()) {
        out.why = fmt::format("{} lacks {}", a.library, missing);
        return out;
    }
    int code = 0;
    if (a.get_version && a.get_version(&code).err == 0 && code > 0) a.version = cufile_version_string(code);
    else a.version = "loaded";
    return out;
}

const Loaded& loaded() {
    static std::once_flag once;
    static Loaded l;
    std::call_once(once, [] { l = load(); });
    return l;
}

struct Driver {
    bool open = false;
    std::string why;
    ~Driver() {
        // Closed at exit only; the library stays loaded.
        if (open && loaded().why.empty()) loaded().api.driver_close();
    }
};

Driver& driver_state() {
    static Driver d;
    return d;
}

} // namespace

std::string cufile_version_string(int code) {
    if (code <= 0) return {};
    if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
    return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 10, code % 10);
}

std::string cufile_error_name(int err) {
    static const std::pair<int, const char*> k_names[] = {
        {0, "CU_FILE_SUCCESS"},
        {5001, "CU_FILE_DRIVER_NOT_INITIALIZED"},
        {5002, "CU_FILE_DRIVER_INVALID_PROPS"},
        {5003, "CU_FILE_DRIVER_UNSUPPORTED_LIMIT"},
        {5004, "CU_FILE_DRIVER_VERSION_MISMATCH"},
        {5005, "CU_FILE_DRIVER_VERSION_READ_ERROR"},
        {5006, "CU_FILE_DRIVER_CLOSING"},
        {5007, "CU_FILE_PLATFORM_NOT_SUPPORTED"},
        {5008, "CU_FILE_IO_NOT_SUPPORTED"},
        {5009, "CU_FILE_DEVICE_NOT_SUPPORTED"},
        {5010, "CU_FILE_NVFS_DRIVER_ERROR"},
        {5011, "CU_FILE_CUDA_DRIVER_ERROR"},
        {5012, "CU_FILE_CUDA_POINTER_INVALID"},
        {5013, "CU_FILE_CUDA_MEMORY_TYPE_INVALID"},
        {5014, "CU_FILE_CUDA_POINTER_RANGE_ERROR"},
        {5015, "CU_FILE_CUDA_CONTEXT_MISMATCH"},
        {5016, "CU_FILE_INVALID_MAPPING_SIZE"},
        {5017, "CU_FILE_INVALID_MAPPING_RANGE"},
        {5018, "CU_FILE_INVALID_FILE_TYPE"},
        {5019, "CU_FILE_INVALID_FILE_OPEN_FLAG"},
        {5020, "CU_FILE_DIO_NOT_SET"},
        {5022, "CU_FILE_INVALID_VALUE"},
        {5023, "CU_FILE_MEMORY_ALREADY_REGISTERED"},
        {5024, "CU_FILE_MEMORY_NOT_REGISTERED"},
        {5025, "CU_FILE_PERMISSION_DENIED"},
        {5026, "CU_FILE_DRIVER_ALREADY_OPEN"},
        {5027, "CU_FILE_HANDLE_NOT_REGISTERED"},
        {5028, "CU_FILE_HANDLE_ALREADY_REGISTERED"},
        {5029, "CU_FILE_DEVICE_NOT_FOUND"},
        {5030, "CU_FILE_INTERNAL_ERROR"},
        {5031, "CU_FILE_GETNEWFD_FAILED"},
        {5033, "CU_FILE_NVFS_SETUP_ERROR"},
        {5034, "CU_FILE_IO_DISABLED"},
        {5036, "CU_FILE_GPU_MEMORY_PINNING_FAILED"},
        {5043, "CU_FILE_NO_MEMORY"},
        {5044, "CU_FILE_IO_ERROR"},
        {5049, "CU_FILE_COMPAT_MODE_OFF"},
    };
    for (const auto& [code, name] : k_names)
        if (code == err) return fmt::format("{} ({})", name, code);
    if (err < 0) return fmt::format("errno {} ({})", -err, std::strerror(-err));
    return fmt::format("cuFile error {}", err);
}

std::string private_cufile_config(std::string* why) {
    const auto refuse = [&](std::string text) {
        if (why) *why = std::move(text);
        return std::string{};
    };
    try {
        const std::string folder = private_dir();
        // The user's log file stays theirs; one the tool chose (here or in the process that
        // started this one) is replaced by this process's own.
        const char* chosen_log = std::getenv("CUFILE_LOGFILE_PATH");
        const bool user_log = chosen_log && *chosen_log && !own_environment("CUFILE_LOGFILE_PATH");
        bool from_env = false;
        const std::string source = cufile_config_source(&from_env);
        nlohmann::json config = nlohmann::json::object();
        const TrustedPath held = open_trusted(source, TrustRule::library_config);
        if (held) {
            const std::string text = read_input_file(held.fd(), source, "cuFile configuration", k_max_profile_bytes);
            config = parse_json(text, false, true); // cufile.json carries // comments
            if (config.is_discarded() || !config.is_object())
                return refuse(fmt::format("its configuration '{}' is not a JSON object", source));
        } else if (from_env || ::access(source.c_str(), F_OK) == 0) {
            // A file another user may change would say where cuFile writes and what it does:
            // refused, never copied, and never replaced by another (a silent fallback).
            return refuse(fmt::format("its configuration {}{}", from_env ? "CUFILE_ENV_PATH_JSON " : "", held.why()));
        } // else: no /etc/cufile.json: cuFile's defaults, and the logging set here
        if (!config.contains("logging") || !config["logging"].is_object()) config["logging"] = nlohmann::json::object();
        config["logging"]["dir"] = folder;
        if (!config["logging"].contains("level") || !config["logging"]["level"].is_string()) config["logging"]["level"] = "ERROR";
        std::string path;
        const int fd = create_unique_file(folder, "cufile-", ".json", path);
        try {
            write_all(fd, config.dump(2) + "\n", path);
        } catch (...) {
            ::close(fd);
            throw;
        }
        ::close(fd);
        // The user's own name for the file, for the facts a report shows.
        if (from_env) set_own_environment(k_cufile_user_config_env, source);
        set_own_environment("CUFILE_ENV_PATH_JSON", path);
        if (!user_log) set_own_environment("CUFILE_LOGFILE_PATH", folder + "/cufile.log");
        log_path() = user_log ? std::string(chosen_log) : folder + "/cufile.log";
        log_dir() = folder;
        return path;
    } catch (const UsageError& e) {
        return refuse(e.hint().empty() ? std::string(e.what()) : fmt::format("{}; {}", e.what(), e.hint()));
    } catch (const std::exception& e) {
        return refuse(e.what());
    }
}

std::string cufile_first_error(const std::string& log) {
    std::string fallback;
    std::size_t at = 0;
    for (std::size_t n = 0; n < 100000 && at < log.size(); ++n) {
        const std::size_t nl = log.find('\n', at);
        std::string line = log.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
        at = nl == std::string::npos ? log.size() : nl + 1;
        // " 26-11-2026 10:00:00:123 [pid=1234 tid=1234] ERROR  cufio-drv:632 ...": the time and
        // thread say nothing of the cause.
        if (const auto open = line.find("[pid="); open != std::string::npos)
            if (const auto close = line.find(']', open); close != std::string::npos) line = line.substr(close + 1);
        std::string squeezed;
        for (char c : line) {
            const bool blank = c == ' ' || c == '\t' || c == '\r';
            if (blank && (squeezed.empty() || squeezed.back() == ' ')) continue;
            squeezed += blank ? ' ' : c;
        }
        while (!squeezed.empty() && squeezed.back() == ' ') squeezed.pop_back();
        if (squeezed.size() > 240) squeezed = squeezed.substr(0, 240) + "...";
        // The first error is the cause; what follows it is what failed because of it.
        if (squeezed.rfind("ERROR", 0) == 0 || squeezed.find(" ERROR ") != std::string::npos) return squeezed;
        if (fallback.empty()) {
            std::string lower = squeezed;
            for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (lower.find("error") != std::string::npos) fallback = squeezed;
        }
    }
    return fallback;
}

std::string cufile_log_reason() {
    // The log file it was told to write, else what it wrote in the folder its configuration
    // names (cufile*.log): the first of them that holds an error.
    std::vector<std::string> files;
    if (!log_path().empty()) files.push_back(log_path());
    if (!log_dir().empty()) {
        std::error_code ec;
        std::vector<std::string> more;
        for (std::filesystem::directory_iterator it(log_dir(), ec), end; !ec && it != end; it.increment(ec)) {
            const std::string name = it->path().filename().string();
            if (name.rfind("cufile", 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0 &&
                it->path().string() != log_path())
                more.push_back(it->path().string());
        }
        std::sort(more.begin(), more.end());
        files.insert(files.end(), more.begin(), more.end());
    }
    for (const auto& f : files) {
        std::ifstream in(f, std::ios::binary);
        std::string text(1u << 20, '\0'); // the first MiB: the cause comes first
        in.read(text.data(), static_cast<std::streamsize>(text.size()));
        text.resize(static_cast<std::size_t>(in.gcount()));
        if (std::string line = cufile_first_error(text); !line.empty()) return line;
    }
    return {};
}

const CufileApi* cufile_api(std::string* why) {
    const Loaded& l = loaded();
    if (!l.why.empty()) {
        if (why) *why = l.why;
        return nullptr;
    }
    return &l.api;
}

const CufileApi* cufile_driver(std::string* why) {
    static std::mutex m;
    std::lock_guard<std::mutex> lock(m);
    const CufileApi* api = cufile_api(why);
    if (!api) return nullptr;
    Driver& d = driver_state();
    if (!d.open && d.why.empty()) {
        const cufile::Error e = api->driver_open();
        if (e.err == 0) {
            d.open = true;
        } else {
            // cuFile's own words for it, from its log, where it wrote them.
            const std::string log = cufile_log_reason();
            d.why = fmt::format("cuFileDriverOpen failed: {}{}", cufile_error_name(e.err),
                                log.empty() ? std::string() : "; cuFile's log: " + log);
        }
    }
    if (!d.open) {
        if (why) *why = d.why;
        return nullptr;
    }
    return api;
}

bool cufile_stats_begin(std::string* why) {
    const CufileApi* api = cufile_driver(why);
    if (!api) return false;
    if (!api->set_stats_level || !api->stats_start || !api->stats_reset || !api->get_stats_l3) {
        if (why) *why = "this libcufile has no level-3 statistics API (cuFileGetStatsL3)";
        return false;
    }
    cufile::Error e = api->set_stats_level(3);
    if (e.err == 0) e = api->stats_start();
    if (e.err == 0) e = api->stats_reset();
    if (e.err != 0) {
        if (why) *why = fmt::format("cuFile statistics could not be started: {}", cufile_error_name(e.err));
        return false;
    }
    return true;
}

CufileCounts cufile_stats_read() {
    CufileCounts c;
    std::string why;
    const CufileApi* api = cufile_driver(&why);
    if (!api || !api->get_stats_l3) {
        c.note = api ? "no cuFileGetStatsL3" : why;
        return c;
    }
    auto stats = std::make_unique<cufile::StatsL3>();
    std::memset(stats.get(), 0, sizeof *stats);
    const cufile::Error e = api->get_stats_l3(stats.get());
    if (e.err != 0) {
        c.note = fmt::format("cuFileGetStatsL3 failed: {}", cufile_error_name(e.err));
        return c;
    }
    const std::uint32_t n = std::min<std::uint32_t>(stats->num_gpus, 16);
    for (std::uint32_t i = 0; i < n; ++i) {
        const auto& g = stats->per_gpu_stats[i];
        c.reads += g.n_total_reads;
        c.p2p_reads += g.n_p2p_reads;
        c.nvfs_reads += g.n_nvfs_reads;
        c.posix_reads += g.n_posix_reads;
        c.writes += g.n_total_writes;
        c.p2p_writes += g.n_p2p_writes;
        c.nvfs_writes += g.n_nvfs_writes;
        c.posix_writes += g.n_posix_writes;
    }
    // A layout this tool does not know shows as counts that do not add up: say so rather
    // than name a mode from them.
    if (c.p2p_reads + c.nvfs_reads + c.posix_reads > c.reads || c.p2p_writes + c.nvfs_writes + c.posix_writes > c.writes) {
        c.note = "cuFile's statistics do not add up (unknown layout); mode not counted";
        return c;
    }
    c.available = true;
    return c;
}

std::string cufile_mode(const CufileCounts& counts, bool reads, bool nvidia_fs, bool p2pdma_configured, bool force_compat) {
    if (counts.available) {
        const std::uint64_t nvfs = reads ? counts.nvfs_reads : counts.nvfs_writes;
        const std::uint64_t p2p = reads ? counts.p2p_reads : counts.p2p_writes;
        const std::uint64_t posix = reads ? counts.posix_reads : counts.posix_writes;
        std::string mode;
        auto add = [&](std::uint64_t n, const char* name) {
            if (n) mode += (mode.empty() ? "" : "+") + std::string(name);
        };
        add(nvfs, "gds");
        add(p2p, "p2pdma");
        add(posix, "compat");
        if (!mode.empty()) return mode;
    }
    // Not counted: what the kernel and the configuration leave possible.
    if (force_compat || (!nvidia_fs && !p2pdma_configured)) return "compat (not counted)";
    if (p2pdma_configured && !nvidia_fs) return "p2pdma (not counted)";
    return "gds (not counted)";
}

nlohmann::json cufile_facts_json() {
    nlohmann::json j = cufile_host_facts_json(cufile_host_facts());
    std::string why;
    const CufileApi* api = cufile_api(&why);
    j["library"] = api ? api->library : std::string{};
    j["version"] = api ? api->version : std::string{};
    if (!api) {
        j["note"] = why;
        return j;
    }
    const CufileApi* drv = cufile_driver(&why);
    j["driver_open"] = drv != nullptr;
    if (!drv) {
        j["driver_note"] = why;
        return j;
    }
    cufile::DrvProps props{};
    if (drv->driver_get_properties(&props).err == 0) {
        j["properties"] = {{"nvfs_major_version", props.nvfs.major_version},
                           {"nvfs_minor_version", props.nvfs.minor_version},
                           {"nvfs_status_flags", props.nvfs.dstatusflags},
                           {"nvfs_control_flags", props.nvfs.dcontrolflags},
                           // CU_FILE_ALLOW_COMPAT_MODE is bit 1 of the control flags.
                           {"compat_mode_allowed", (props.nvfs.dcontrolflags & 2u) != 0},
                           {"max_direct_io_size_kb", props.nvfs.max_direct_io_size},
                           {"max_device_cache_size_kb", props.max_device_cache_size},
                           {"max_device_pinned_mem_size_kb", props.max_device_pinned_mem_size}};
    }
    return j;
}

void probe_cufile(Machine& machine) {
    std::string why;
    const CufileApi* api = cufile_api(&why);
    if (!api) {
        machine.set_library({"cufile", "", why});
        return;
    }
    const CufileHostFacts h = cufile_host_facts();
    std::string note = h.nvidia_fs ? fmt::format("nvidia-fs {} loaded", h.nvidia_fs_version.empty() ? "?" : h.nvidia_fs_version)
                                   : "no nvidia-fs kernel module: compatibility mode (POSIX through host memory) unless "
                                     "PCIe P2PDMA is configured";
    if (h.force_compat_mode.value_or(false)) note += "; force_compat_mode set in " + h.config_path;
    machine.set_library({"cufile", api->version, note});
}

} // namespace interopbench::gpu
