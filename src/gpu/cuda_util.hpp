#pragma once
/// CUDA helpers shared by the GPU scenarios: checked calls, RAII buffers, event timing
/// behind a blocking kernel, data patterns. Only the GPU library includes this.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "gpu/fault.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench::gpu {

/// Throws ConfigError (or FatalDeviceError for sticky errors that lose the context) with
/// the expression, file:line, error name and message.
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line);

/// True for errors after which the context is unusable (illegal address, launch failure...).
bool is_sticky(cudaError_t err);

/// Checks a CUDA call. Under INTEROPBENCH_FAULT (gpu/fault.hpp) a chosen call is not made
/// and fails with an injected error instead.
#define IB_CUDA_CHECK(expr)                                                                  \
    do {                                                                                     \
        cudaError_t ib_err_ = ::interopbench::gpu::cuda_fault(#expr);                        \
        if (ib_err_ == cudaSuccess) ib_err_ = (expr);                                        \
        if (ib_err_ != cudaSuccess)                                                          \
            ::interopbench::gpu::throw_cuda_error(ib_err_, #expr, __FILE__, __LINE__);       \
    } while (0)

/// Fills `machine` with CUDA facts: devices, versions. Never throws; without a driver or
/// device, sets cuda_available = false and cuda_note to the reason.
void probe_cuda(Machine& machine);

/// Makes `ordinal` current; throws ConfigError when it does not exist.
void set_device(int ordinal);
/// Enables peer access from `from` to `to` where the hardware allows it (leaving `from`
/// current); true when it is on, also when an earlier configuration enabled it.
bool enable_peer_access(int from, int to);

/// Device memory, freed on destruction (on the device it was allocated on).
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(int device, std::size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& o) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* get() const { return m_ptr; }
    std::size_t size() const { return m_bytes; }
    int device() const { return m_device; }

private:
    void* m_ptr = nullptr;
    std::size_t m_bytes = 0;
    int m_device = 0;
};

/// Host memory kinds of the copy scenarios.
enum class HostMem { pageable, pinned, registered, write_combined };
HostMem parse_host_mem(const std::string& s);
const char* to_string(HostMem m);

/// Host memory of one kind, released appropriately on destruction. Pinned kinds are
/// mapped into the device address space (for SM copy kernels); `device_ptr()` gives that
/// address (nullptr for pageable). Pages are touched at allocation so first-touch costs
/// stay out of timings, placed on the calling thread's NUMA node.
class HostBuffer {
public:
    HostBuffer() = default;
    HostBuffer(HostMem kind, std::size_t bytes);
    ~HostBuffer();
    HostBuffer(HostBuffer&& o) noexcept;
    HostBuffer& operator=(HostBuffer&& o) noexcept;
    HostBuffer(const HostBuffer&) = delete;
    HostBuffer& operator=(const HostBuffer&) = delete;
    void* get() const { return m_ptr; }
    void* device_ptr() const;
    std::size_t size() const { return m_bytes; }
    HostMem kind() const { return m_kind; }

private:
    void release() noexcept;
    void* m_ptr = nullptr;
    std::size_t m_bytes = 0;
    HostMem m_kind = HostMem::pageable;
};

/// A non-blocking stream on a device, destroyed with it.
class Stream {
public:
    explicit Stream(int device);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    cudaStream_t get() const { return m_stream; }
    int device() const { return m_device; }

private:
    cudaStream_t m_stream = nullptr;
    int m_device = 0;
};

/// What an Event is for: `timing` events are measured against each other (elapsed_s);
/// `sync` events (cudaEventDisableTiming) only order streams and wake the host, more cheaply.
enum class EventUse { timing, sync };

/// A CUDA event, created on a device and destroyed on it (that device made current first).
/// Record and wait on `get()` with IB_CUDA_CHECK at the call site.
class Event {
public:
    /// On the current device.
    explicit Event(EventUse use = EventUse::timing);
    /// On `device`, which is made current (and left so).
    Event(int device, EventUse use);
    ~Event();
    Event(Event&& o) noexcept;
    Event& operator=(Event&& o) noexcept;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    cudaEvent_t get() const { return m_event; }
    int device() const { return m_device; }

private:
    void create(EventUse use);
    void release() noexcept;
    cudaEvent_t m_event = nullptr;
    int m_device = 0;
};

/// Seconds from `start` to `stop`: two timing events of one device, both recorded and
/// complete (cudaEventElapsedTime's milliseconds / 1e3; resolution about half a microsecond).
double elapsed_s(const Event& start, const Event& stop);

/// An event pair around enqueued work. With `hold`, a spin kernel holds every stream
/// while the work is enqueued, so enqueue cost stays out of the window; the host then
/// releases it. Usage:
///   TimedRegion t({&s}, hold); t.begin(); ...enqueue on s...; double sec = t.end();
/// For several streams, each gets its own events (see end()). The spin kernel gives up after a timeout so a
/// lost release never hangs the device.
class TimedRegion {
public:
    TimedRegion(std::vector<const Stream*> streams, bool hold);
    ~TimedRegion();
    TimedRegion(const TimedRegion&) = delete;
    TimedRegion& operator=(const TimedRegion&) = delete;
    /// Blocks each stream (when holding) and records the start events.
    void begin();
    /// Records stop events, releases the streams, waits, returns the span in seconds:
    /// earliest start to latest stop on one GPU; across GPUs, whose events cannot be
    /// compared, the longest stream or (when holding) the host time from release to the
    /// last completion, whichever is larger. Per-stream seconds go to `per_stream`.
    double end(std::vector<double>* per_stream = nullptr);

private:
    std::vector<const Stream*> m_streams;
    bool m_hold;
    std::vector<Event> m_start, m_stop;
    volatile int* m_flag = nullptr; ///< mapped pinned host flag
    int* m_flag_dev = nullptr;
};

/// Fills `bytes` at `dst` (device or mapped host memory) with the pattern for `seed` on
/// `stream`. The pattern is a per-8-byte-word hash of (seed, index): never zeros.
void fill_pattern_device(void* dst, std::size_t bytes, std::uint64_t seed, cudaStream_t stream);
/// Counts words at `src` (device memory) that differ from the pattern; 0 means correct.
std::uint64_t count_pattern_mismatches_device(const void* src, std::size_t bytes,
                                              std::uint64_t seed, cudaStream_t stream);

/// Number of operations to put in one sample so that it lasts about `target_s`, given
/// one operation's estimated time; at least 1, at most `cap`.
int reps_for(double op_time_s, double target_s, int cap = 1000);

} // namespace interopbench::gpu
