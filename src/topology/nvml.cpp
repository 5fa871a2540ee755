// NVML through dlopen. The declarations below follow NVML's public ABI (nvml.h of CUDA 12/13):
// the struct layouts are checked with static_asserts against the sizes that header gives.
#include "topology/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace interopbench::nvml {
namespace {

extern "C" {
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;

struct nvmlPciInfo_t {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
};

union nvmlValue_t {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    unsigned short usVal;
};

struct nvmlFieldValue_t {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
};

struct nvmlProcessInfo_t {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};
}

static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t must match NVML's ABI");
static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t must match NVML's ABI");
static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t must match NVML's ABI");

constexpr nvmlReturn_t k_success = 0;
constexpr nvmlReturn_t k_invalid_argument = 2;
constexpr nvmlReturn_t k_insufficient_size = 7;
constexpr int k_feature_enabled = 1;
constexpr int k_remote_gpu = 0, k_remote_ibmnpu = 1, k_remote_switch = 2;
constexpr unsigned k_field_nvlink_speed_common = 90; // NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON
constexpr unsigned k_field_nvlink_speed = 164;       // NVML_FI_DEV_NVLINK_GET_SPEED, per link
constexpr int k_value_uint = 1, k_value_ulong = 2, k_value_ulonglong = 3;
constexpr int k_ecc_uncorrected = 1;
constexpr int k_ecc_volatile = 0, k_ecc_aggregate = 1;
constexpr int k_retire_sbe = 0, k_retire_dbe = 1;
constexpr int k_temperature_gpu = 0; // NVML_TEMPERATURE_GPU
// NVML has had up to 18 links per GPU; probe a little further and stop where NVML says the
// index is out of range.
constexpr unsigned k_max_links = 32;

struct Api {
    void* lib = nullptr;
    int init_rc = -1;
    std::string note;

    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    const char* (*error_string)(nvmlReturn_t) = nullptr;
    nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
    nvmlReturn_t (*nvml_version)(char*, unsigned) = nullptr;
    nvmlReturn_t (*handle_by_bus_id)(const char*, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
    nvmlReturn_t (*pcie_gen)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*pcie_gen_max)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*pcie_width_max)(nvmlDevice_t, unsigned*) = nullptr;
    nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int*) = nullptr;
    nvmlReturn_t (*link_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
    nvmlReturn_t (*link_remote_type)(nvmlDevice_t, unsigned, int*) = nullptr;
    nvmlReturn_t (*field_values)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
    nvmlReturn_t (*persistence)(nvmlDevice_t, int*) = nullptr;
    nvmlReturn_t (*clock_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
    nvmlReturn_t (*ecc_mode)(nvmlDevice_t, int*, int*) = nullptr;
    nvmlReturn_t (*ecc_total)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
    nvmlReturn_t (*retired_pages)(nvmlDevice_t, int, unsigned*, unsigned long long*) = nullptr;
    nvmlReturn_t (*retired_pending)(nvmlDevice_t, int*) = nullptr;
    nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
    nvmlReturn_t (*compute_mode)(nvmlDevice_t, int*) = nullptr;
    nvmlReturn_t (*compute_procs)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
    nvmlReturn_t (*graphics_procs)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) = nullptr;
    nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;

    Api() {
        lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            note = "libnvidia-ml.so.1 not found (no NVIDIA driver)";
            return;
        }
        bind(init, "nvmlInit_v2");
        bind(shutdown, "nvmlShutdown");
        bind(error_string, "nvmlErrorString");
        bind(handle_by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
        if (!init || !handle_by_bus_id) {
            note = "libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlDeviceGetHandleByPciBusId_v2";
            return;
        }
        bind(driver_version, "nvmlSystemGetDriverVersion");
        bind(nvml_version, "nvmlSystemGetNVMLVersion");
        bind(name, "nvmlDeviceGetName");
        bind(pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
        bind(pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
        bind(pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
        bind(pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth");
        bind(link_state, "nvmlDeviceGetNvLinkState");
        bind(link_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
        bind(link_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
        bind(field_values, "nvmlDeviceGetFieldValues");
        bind(persistence, "nvmlDeviceGetPersistenceMode");
        bind(clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
        if (!clock_reasons)
            bind(clock_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
        bind(ecc_mode, "nvmlDeviceGetEccMode");
        bind(ecc_total, "nvmlDeviceGetTotalEccErrors");
        bind(retired_pages, "nvmlDeviceGetRetiredPages");
        bind(retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
        bind(remapped_rows, "nvmlDeviceGetRemappedRows");
        bind(compute_mode, "nvmlDeviceGetComputeMode");
        bind(compute_procs, "nvmlDeviceGetComputeRunningProcesses_v3");
        bind(graphics_procs, "nvmlDeviceGetGraphicsRunningProcesses_v3");
        bind(temperature, "nvmlDeviceGetTemperature");
        init_rc = init();
        if (init_rc != k_success) {
            note = std::string("nvmlInit_v2 failed: ") +
                   (error_string ? error_string(init_rc) : std::to_string(init_rc));
        }
    }
    ~Api() {
        if (init_rc == k_success && shutdown)
            shutdown();
    }
    Api(const Api&) = delete;
    Api& operator=(const Api&) = delete;

    template <class F>
    void bind(F& fn, const char* symbol) {
        fn = reinterpret_cast<F>(dlsym(lib, symbol));
    }

    bool ok() const { return init_rc == k_success; }

    std::optional<nvmlDevice_t> handle(const std::string& bus_id) const {
        if (!ok())
            return std::nullopt;
        nvmlDevice_t dev = nullptr;
        if (handle_by_bus_id(bus_id.c_str(), &dev) != k_success)
            return std::nullopt;
        return dev;
    }
};

const Api& api() {
    static const Api instance;
    return instance;
}

std::string bus_id_of(const nvmlPciInfo_t& pci) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
    return buf;
}

// Reads an unsigned field value; nothing when NVML does not provide it.
std::optional<std::uint64_t> field(const Api& a, nvmlDevice_t dev, unsigned id, unsigned scope) {
    if (!a.field_values)
        return std::nullopt;
    nvmlFieldValue_t v{};
    v.fieldId = id;
    v.scopeId = scope;
    if (a.field_values(dev, 1, &v) != k_success || v.nvmlReturn != k_success)
        return std::nullopt;
    switch (v.valueType) {
    case k_value_uint: return v.value.uiVal;
    case k_value_ulong: return v.value.ulVal;
    case k_value_ulonglong: return v.value.ullVal;
    default: return std::nullopt;
    }
}

template <class F>
int read_uint(F fn, nvmlDevice_t dev) {
    unsigned v = 0;
    if (fn && fn(dev, &v) == k_success)
        return static_cast<int>(v);
    return 0;
}

// The processes one of NVML's process lists names; nothing when the call fails.
using ProcessList = nvmlReturn_t (*)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*);
std::optional<std::vector<unsigned>> list_pids(ProcessList fn, nvmlDevice_t dev) {
    if (!fn)
        return std::nullopt;
    std::vector<nvmlProcessInfo_t> procs(64);
    auto n = static_cast<unsigned>(procs.size());
    if (fn(dev, &n, procs.data()) != k_success)
        return std::nullopt;
    std::vector<unsigned> pids;
    for (unsigned i = 0; i < n && i < procs.size(); ++i)
        pids.push_back(procs[i].pid);
    return pids;
}

Pcie read_pcie(const Api& a, nvmlDevice_t dev) {
    Pcie p;
    p.gen_current = read_uint(a.pcie_gen, dev);
    p.width_current = read_uint(a.pcie_width, dev);
    p.gen_max = read_uint(a.pcie_gen_max, dev);
    p.width_max = read_uint(a.pcie_width_max, dev);
    return p;
}

} // namespace

bool available() { return api().ok(); }
const std::string& note() { return api().note; }
int init_error() { return api().init_rc; }

std::string driver_release() {
    const Api& a = api();
    char buf[96] = {};
    if (!a.ok() || !a.driver_version || a.driver_version(buf, sizeof buf) != k_success)
        return {};
    return buf;
}

std::string version() {
    const Api& a = api();
    char buf[96] = {};
    if (!a.ok() || !a.nvml_version || a.nvml_version(buf, sizeof buf) != k_success)
        return {};
    return buf;
}

std::optional<Device> device(const std::string& bus_id) {
    const Api& a = api();
    auto dev = a.handle(bus_id);
    if (!dev)
        return std::nullopt;
    Device d;
    char buf[128] = {};
    if (a.name && a.name(*dev, buf, sizeof buf) == k_success)
        d.name = buf;
    d.pcie = read_pcie(a, *dev);

    for (unsigned i = 0; a.link_state && i < k_max_links; ++i) {
        int state = 0;
        nvmlReturn_t rc = a.link_state(*dev, i, &state);
        if (rc == k_invalid_argument)
            break;
        if (rc != k_success)
            continue;
        Link l;
        l.link = i;
        l.active = state == k_feature_enabled;
        if (l.active) {
            nvmlPciInfo_t pci{};
            if (a.link_remote_pci && a.link_remote_pci(*dev, i, &pci) == k_success)
                l.peer_bus_id = bus_id_of(pci);
            int type = -1;
            if (a.link_remote_type && a.link_remote_type(*dev, i, &type) == k_success) {
                l.peer = type == k_remote_gpu      ? Peer::gpu
                         : type == k_remote_switch ? Peer::nvswitch
                         : type == k_remote_ibmnpu ? Peer::cpu
                                                   : Peer::unknown;
            }
            if (d.link_rate == 0) {
                auto mbps = field(a, *dev, k_field_nvlink_speed, i);
                if (mbps && *mbps > 0)
                    d.link_rate = static_cast<double>(*mbps) * 1e6;
            }
        }
        d.links.push_back(l);
    }
    // The common speed of the active links, where the driver gives it, is the figure
    // `nvidia-smi nvlink -s` shows (MB/s per direction).
    if (auto mbps = field(a, *dev, k_field_nvlink_speed_common, 0); mbps && *mbps > 0)
        d.link_rate = static_cast<double>(*mbps) * 1e6;
    return d;
}

std::optional<Pcie> pcie(const std::string& bus_id) {
    const Api& a = api();
    auto dev = a.handle(bus_id);
    if (!dev)
        return std::nullopt;
    return read_pcie(a, *dev);
}

std::optional<std::uint64_t> clock_reasons(const std::string& bus_id) {
    const Api& a = api();
    auto dev = a.handle(bus_id);
    unsigned long long bits = 0;
    if (!dev || !a.clock_reasons || a.clock_reasons(*dev, &bits) != k_success)
        return std::nullopt;
    return bits;
}

std::optional<Health> health(const std::string& bus_id) {
    const Api& a = api();
    auto dev = a.handle(bus_id);
    if (!dev)
        return std::nullopt;
    Health h;
    int mode = 0, pending = 0;
    if (a.persistence && a.persistence(*dev, &mode) == k_success)
        h.persistence = mode == k_feature_enabled;
    h.clock_reasons = clock_reasons(bus_id);
    if (a.ecc_mode && a.ecc_mode(*dev, &mode, &pending) == k_success)
        h.ecc_enabled = mode == k_feature_enabled;
    unsigned long long count = 0;
    if (a.ecc_total && a.ecc_total(*dev, k_ecc_uncorrected, k_ecc_volatile, &count) == k_success)
        h.ecc_uncorrected_volatile = count;
    if (a.ecc_total && a.ecc_total(*dev, k_ecc_uncorrected, k_ecc_aggregate, &count) == k_success)
        h.ecc_uncorrected_aggregate = count;
    if (a.retired_pages) {
        // A zero-sized buffer asks for the count only.
        unsigned sbe = 0, dbe = 0;
        nvmlReturn_t r1 = a.retired_pages(*dev, k_retire_sbe, &sbe, nullptr);
        nvmlReturn_t r2 = a.retired_pages(*dev, k_retire_dbe, &dbe, nullptr);
        if ((r1 == k_success || r1 == k_insufficient_size) &&
            (r2 == k_success || r2 == k_insufficient_size))
            h.retired_pages = sbe + dbe;
    }
    if (a.retired_pending && a.retired_pending(*dev, &mode) == k_success)
        h.retired_pending = mode == k_feature_enabled;
    unsigned corr = 0, unc = 0, rpending = 0, failure = 0;
    if (a.remapped_rows && a.remapped_rows(*dev, &corr, &unc, &rpending, &failure) == k_success) {
        h.remapped_uncorrectable = unc;
        h.remap_pending = rpending != 0;
        h.remap_failure = failure != 0;
    }
    if (a.compute_mode && a.compute_mode(*dev, &mode) == k_success)
        h.compute_mode = mode;
    h.compute_pids = list_pids(a.compute_procs, *dev);
    return h;
}

std::optional<std::vector<unsigned>> running_pids(const std::string& bus_id) {
    const Api& a = api();
    auto dev = a.handle(bus_id);
    if (!dev)
        return std::nullopt;
    auto compute = list_pids(a.compute_procs, *dev);
    auto graphics = list_pids(a.graphics_procs, *dev);
    if (!compute && !graphics)
        return std::nullopt;
    std::vector<unsigned> pids = compute.value_or(std::vector<unsigned>{});
    for (unsigned pid : graphics.value_or(std::vector<unsigned>{}))
        if (std::find(pids.begin(), pids.end(), pid) == pids.end())
            pids.push_back(pid);
    return pids;
}

std::optional<int> temperature(const std::string& bus_id) {
    const Api& a = api();
    auto dev = a.handle(bus_id);
    unsigned celsius = 0;
    if (!dev || !a.temperature || a.temperature(*dev, k_temperature_gpu, &celsius) != k_success)
        return std::nullopt;
    return static_cast<int>(celsius);
}

} // namespace interopbench::nvml
