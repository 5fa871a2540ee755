#pragma once
/// cuFile (GPUDirect Storage), loaded at run time: `libcufile.so.0` is opened with dlopen on
/// first use, with this file's own minimal declarations of the documented API (the header is
/// not on every build machine). Where the library is missing or its driver does not open,
/// the cufile configurations are skipped with the reason; everything else runs.
///
/// The mode cuFile really used is taken from what the library and the kernel say, never
/// from speed: the nvidia-fs module (/proc/driver/nvidia-fs), the driver properties, the
/// configuration file in force, and cuFile's own per-GPU statistics (level 3), which count
/// reads through nvidia-fs, PCIe P2PDMA and POSIX (compatibility mode) separately.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "interopbench/scenario.hpp"

namespace interopbench::gpu {

/// Minimal cuFile declarations (layouts as documented for cuFile 1.x).
namespace cufile {
struct Error {
    int err;    ///< CUfileOpError: 0 success, 5000+ cuFile errors, else -errno
    int cu_err; ///< CUresult when err is CU_FILE_CUDA_DRIVER_ERROR
};
using Handle = void*;
struct Descr {
    int type; ///< 1 = CU_FILE_HANDLE_TYPE_OPAQUE_FD
    union {
        int fd;
        void* handle;
    } handle;
    const void* fs_ops;
};
/// CUfileDrvProps_t's leading nvfs block; the rest is padding room for newer fields.
struct DrvProps {
    struct {
        unsigned major_version;
        unsigned minor_version;
        std::size_t poll_thresh_size;
        std::size_t max_direct_io_size;
        unsigned dstatusflags;
        unsigned dcontrolflags;
    } nvfs;
    unsigned fflags;
    unsigned max_device_cache_size;
    unsigned per_buffer_cache_size;
    unsigned max_device_pinned_mem_size;
    unsigned max_batch_io_size;
    unsigned max_batch_io_timeout_msecs;
    unsigned char reserved[256];
};
struct OpCounter {
    std::uint64_t ok, err;
};
struct StatsL1 {
    OpCounter read_ops, write_ops, hdl_register_ops, hdl_deregister_ops, buf_register_ops, buf_deregister_ops;
    std::uint64_t read_bytes, write_bytes, read_bw_bytes_per_sec, write_bw_bytes_per_sec, read_lat_avg_us,
        write_lat_avg_us, read_ops_per_sec, write_ops_per_sec, read_lat_sum_us, write_lat_sum_us;
    OpCounter batch[15];
    std::uint64_t batch_values[12];
};
struct StatsL2 {
    StatsL1 basic;
    std::uint64_t read_size_kb_hist[32], write_size_kb_hist[32];
};
struct PerGpuStats {
    char uuid[16];
    std::uint64_t read_bytes, read_bw_bytes_per_sec, read_utilization, read_duration_us, n_total_reads, n_p2p_reads,
        n_nvfs_reads, n_posix_reads, n_unaligned_reads, n_dr_reads, n_sparse_regions, n_inline_regions, n_reads_err;
    std::uint64_t writes_bytes, write_bw_bytes_per_sec, write_utilization, write_duration_us, n_total_writes,
        n_p2p_writes, n_nvfs_writes, n_posix_writes, n_unaligned_writes, n_dr_writes, n_writes_err;
    std::uint64_t n_mmap, n_mmap_ok, n_mmap_err, n_mmap_free, reg_bytes;
};
struct StatsL3 {
    StatsL2 detailed;
    std::uint32_t num_gpus;
    PerGpuStats per_gpu_stats[16];
};
static_assert(sizeof(StatsL1) == 512 && sizeof(StatsL2) == 1024 && sizeof(PerGpuStats) == 248 &&
              sizeof(StatsL3) == 5000);
} // namespace cufile

/// The cuFile entry points this tool uses. Optional ones are nullptr when the library lacks them.
struct CufileApi {
    std::string version; ///< "1.15.1" (cuFileGetVersion), or "loaded" when the library has no version call
    std::string library; ///< the name that loaded

    cufile::Error (*driver_open)() = nullptr;
    cufile::Error (*driver_close)() = nullptr;
    cufile::Error (*driver_get_properties)(cufile::DrvProps*) = nullptr;
    cufile::Error (*handle_register)(cufile::Handle*, cufile::Descr*) = nullptr;
    void (*handle_deregister)(cufile::Handle) = nullptr;
    cufile::Error (*buf_register)(const void*, std::size_t, int) = nullptr;
    cufile::Error (*buf_deregister)(const void*) = nullptr;
    ssize_t (*read)(cufile::Handle, void*, std::size_t, off_t, off_t) = nullptr;
    ssize_t (*write)(cufile::Handle, const void*, std::size_t, off_t, off_t) = nullptr;
    // optional
    cufile::Error (*get_version)(int*) = nullptr;
    cufile::Error (*set_stats_level)(int) = nullptr;
    cufile::Error (*stats_start)() = nullptr;
    cufile::Error (*stats_reset)() = nullptr;
    cufile::Error (*get_stats_l3)(cufile::StatsL3*) = nullptr;
};

/// The loaded API, or nullptr with the reason in `why`. Loads once per process; the library
/// stays loaded. INTEROPBENCH_CUFILE_LIBRARY names another library file (tests: a missing one).
const CufileApi* cufile_api(std::string* why);

/// The driver, opened once per process on first use (cuFileDriverOpen), kept open until exit.
/// Returns nullptr with the reason (cuFile's error name and number) when it cannot be opened.
const CufileApi* cufile_driver(std::string* why);

/// cuFile's configuration for this process, made before the library is loaded. cuFile reads
/// the file CUFILE_ENV_PATH_JSON names (else /etc/cufile.json) and writes its log where its
/// "logging" says, else cufile.log in the working directory, which on a shared machine another
/// user may have planted as a link. So the configuration in force (the file the user named in
/// CUFILE_ENV_PATH_JSON, else /etc/cufile.json where it exists, else cuFile's defaults) is
/// copied into the private folder with "logging": {"dir": the private folder, "level": as it
/// was, else "ERROR"}, and CUFILE_ENV_PATH_JSON and (unless the user chose a log file)
/// CUFILE_LOGFILE_PATH point into that folder, as the tool's own environment (report.hpp). The
/// file copied must pass TrustRule::library_config. Returns the copy's path, or "" with the
/// reason in `why` (a file that may not be trusted, is missing or is not JSON): cuFile is then
/// not loaded. Each call makes a new copy; the loader calls it once.
std::string private_cufile_config(std::string* why);

/// The first error line of cuFile's log text: the line cuFile marked ERROR (else the first that
/// says "error"), without its time and thread prefix, blanks squeezed, at most 240 bytes;
/// empty when none.
std::string cufile_first_error(const std::string& log);

/// "CU_FILE_DRIVER_NOT_INITIALIZED (5001)", or "errno 22 (Invalid argument)" for -errno values.
std::string cufile_error_name(int err);
/// The first error line cuFile wrote to its log (the cause: cufile_first_error), in this
/// process's private folder unless the user chose a log file (CUFILE_LOGFILE_PATH); empty when
/// none.
std::string cufile_log_reason();
/// cuFileVersion's integer (e.g. 1151 or 11501) as "1.15.1".
std::string cufile_version_string(int code);

/// Counts read from cuFile's level-3 statistics, summed over GPUs.
struct CufileCounts {
    bool available = false;
    std::string note; ///< why not available
    std::uint64_t reads = 0, p2p_reads = 0, nvfs_reads = 0, posix_reads = 0;
    std::uint64_t writes = 0, p2p_writes = 0, nvfs_writes = 0, posix_writes = 0;
};
/// Switches statistics on (level 3) and resets them; false when the library cannot.
bool cufile_stats_begin(std::string* why);
CufileCounts cufile_stats_read();

/// The mode cuFile used for the counted I/O: "gds", "p2pdma", "compat", mixes joined by '+',
/// or, without usable statistics, the mode the kernel and configuration allow, suffixed with
/// " (not counted)". `reads` picks the read or the write counters.
std::string cufile_mode(const CufileCounts& counts, bool reads, bool nvidia_fs, bool p2pdma_configured,
                        bool force_compat);

/// Library, driver properties, nvidia-fs, configuration in force: for details and the report.
nlohmann::json cufile_facts_json();

/// Records library "cufile" in machine.libraries: its version when it loads, else the
/// reason; the note names the mode the kernel allows (nvidia-fs present or compat only).
/// Never throws; does not open the driver.
void probe_cufile(Machine& machine);

} // namespace interopbench::gpu
