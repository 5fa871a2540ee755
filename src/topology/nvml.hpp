#pragma once
/// NVML, loaded at run time with dlopen("libnvidia-ml.so.1"). The few entry points used are
/// declared here by hand (no nvml.h at build time); every query fails softly, so the tool
/// starts and works where the library or the driver is absent. Devices are always found by
/// PCI bus id, never by index: NVML and CUDA orders differ.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace interopbench::nvml {

/// What the far end of an NVLink is.
enum class Peer { gpu, nvswitch, cpu, unknown };

struct Link {
    unsigned link = 0;
    bool active = false;
    Peer peer = Peer::unknown;
    std::string peer_bus_id; ///< normalised ("0000:1b:00.0"), empty when unknown
};

/// PCIe generation and width; 0 where NVML could not say.
struct Pcie {
    int gen_current = 0, width_current = 0;
    int gen_max = 0, width_max = 0;
};

/// Health and configuration facts; nothing where the GPU or driver does not support the query.
struct Health {
    std::optional<bool> persistence;
    std::optional<std::uint64_t> clock_reasons; ///< nvmlClocksEventReason* bits
    std::optional<bool> ecc_enabled;
    std::optional<std::uint64_t> ecc_uncorrected_volatile, ecc_uncorrected_aggregate;
    std::optional<unsigned> retired_pages;  ///< single + double bit
    std::optional<bool> retired_pending;
    std::optional<unsigned> remapped_uncorrectable;
    std::optional<bool> remap_pending, remap_failure;
    std::optional<int> compute_mode; ///< 0 default, 2 prohibited, 3 exclusive process
    std::optional<std::vector<unsigned>> compute_pids; ///< processes with a context on it
};

struct Device {
    std::string name;
    Pcie pcie;
    std::vector<Link> links;  ///< every link that exists on the GPU, active or not
    double link_rate = 0;     ///< B/s per link and direction, 0 when unknown
};

/// Loads NVML once (thread-safe) and initialises it.
bool available();
/// Why NVML is not available ("libnvidia-ml.so.1 not found", "nvmlInit_v2: ..."); empty when it is.
const std::string& note();
/// NVML's return code of nvmlInit_v2: 0 success, -1 when the library is missing.
int init_error();
/// Driver release, e.g. "580.159.04"; empty when unknown.
std::string driver_release();
/// NVML's own version, e.g. "13.580.159.04"; empty when unknown.
std::string version();

/// Static facts of the GPU at `bus_id` (any case, 4 or 8 digit domain), or nothing when
/// NVML is missing or does not know the device.
std::optional<Device> device(const std::string& bus_id);
/// Current and maximum PCIe generation and width (cheap; for sampling under load).
std::optional<Pcie> pcie(const std::string& bus_id);
/// Current clock event (throttle) reasons.
std::optional<std::uint64_t> clock_reasons(const std::string& bus_id);
/// Health and configuration facts.
std::optional<Health> health(const std::string& bus_id);
/// The processes with a context on the GPU: compute and graphics ones, each once; nothing
/// when NVML cannot list them.
std::optional<std::vector<unsigned>> running_pids(const std::string& bus_id);
/// The GPU's core temperature in degrees Celsius.
std::optional<int> temperature(const std::string& bus_id);

} // namespace interopbench::nvml
