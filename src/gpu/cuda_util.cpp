#include "gpu/cuda_util.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <thread>

#include <fmt/format.h>

#include "gpu/kernels.hpp"
#include "topology/topology.hpp"

namespace interopbench::gpu {

bool is_sticky(cudaError_t err) {
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed:
        return true;
    default:
        return false;
    }
}

void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
    const char* base = std::strrchr(file, '/');
    const std::string msg = fmt::format("{} failed at {}:{}: {} ({})", expr, base ? base + 1 : file, line,
                                        cudaGetErrorName(err), cudaGetErrorString(err));
    if (is_sticky(err)) throw FatalDeviceError(msg + "; the CUDA context is lost");
    (void)cudaGetLastError(); // clear a non-sticky error so the next configuration starts clean
    throw ConfigError(msg);
}

void probe_cuda(Machine& m) {
    // Load every kernel when the context is created. With lazy loading (CUDA's default)
    // the first launch of a kernel can wait for the device to go idle, which never
    // happens while a spin kernel holds a stream for timing. A user's own setting wins.
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    m.devices.clear();
    m.cuda_available = false;
    // Ask the loader first: a missing driver library deserves a plain explanation.
    if (void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL); h) {
        dlclose(h);
    } else {
        m.cuda_note = "no NVIDIA driver: libcuda.so.1 could not be loaded (GPU scenarios are skipped)";
        return;
    }
    cudaDriverGetVersion(&m.driver_version);
    cudaRuntimeGetVersion(&m.runtime_version);
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        m.cuda_note = err == cudaSuccess ? std::string("the CUDA driver reports no GPU")
                                         : fmt::format("CUDA is not usable: {} ({})", cudaGetErrorName(err),
                                                       cudaGetErrorString(err));
        (void)cudaGetLastError();
        return;
    }
    for (int d = 0; d < count; ++d) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
        DeviceInfo info;
        info.ordinal = d;
        info.name = p.name;
        std::string uuid = "GPU-";
        for (int i = 0; i < 16; ++i) {
            uuid += fmt::format("{:02x}", static_cast<unsigned char>(p.uuid.bytes[i]));
            if (i == 3 || i == 5 || i == 7 || i == 9) uuid += '-';
        }
        info.uuid = uuid;
        char bus[32] = {};
        if (cudaDeviceGetPCIBusId(bus, sizeof bus, d) == cudaSuccess) {
            info.pci_bus_id = bus;
            for (auto& c : info.pci_bus_id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        info.sm_count = p.multiProcessorCount;
        info.cc_major = p.major;
        info.cc_minor = p.minor;
        info.total_memory = p.totalGlobalMem;
        cudaDeviceGetAttribute(&info.clock_khz, cudaDevAttrClockRate, d);
        cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, d);
        info.memory_bus_width = p.memoryBusWidth;
        info.async_engines = p.asyncEngineCount;
        info.unified_addressing = p.unifiedAddressing != 0;
        if (cudaSetDevice(d) == cudaSuccess) {
            std::size_t free_b = 0, total_b = 0;
            if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) info.free_memory = free_b;
        }
        m.devices.push_back(std::move(info));
    }
    (void)cudaGetLastError();
    m.cuda_available = !m.devices.empty();
    if (!m.cuda_available) m.cuda_note = "no CUDA device could be queried";
}

void set_device(int ordinal) { IB_CUDA_CHECK(cudaSetDevice(ordinal)); }

bool enable_peer_access(int from, int to) {
    int can = 0;
    IB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
    if (!can) return false;
    set_device(from);
    const cudaError_t err = cudaDeviceEnablePeerAccess(to, 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError(); // enabled earlier; clear the recorded error
    else IB_CUDA_CHECK(err);
    return true;
}

// ---- DeviceBuffer -----------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : m_bytes(bytes), m_device(device) {
    set_device(device);
    IB_CUDA_CHECK(cudaMalloc(&m_ptr, std::max<std::size_t>(bytes, 1)));
}

DeviceBuffer::~DeviceBuffer() {
    if (m_ptr) {
        cudaSetDevice(m_device);
        cudaFree(m_ptr);
    }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : m_ptr(std::exchange(o.m_ptr, nullptr)), m_bytes(o.m_bytes), m_device(o.m_device) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        this->~DeviceBuffer();
        m_ptr = std::exchange(o.m_ptr, nullptr);
        m_bytes = o.m_bytes;
        m_device = o.m_device;
    }
    return *this;
}

// ---- HostBuffer -------------------------------------------------------------------------

HostMem parse_host_mem(const std::string& s) {
    if (s == "pageable") return HostMem::pageable;
    if (s == "pinned") return HostMem::pinned;
    if (s == "registered") return HostMem::registered;
    if (s == "write_combined") return HostMem::write_combined;
    throw ConfigError("unknown host memory kind " + s);
}

const char* to_string(HostMem m) {
    switch (m) {
    case HostMem::pageable: return "pageable";
    case HostMem::pinned: return "pinned";
    case HostMem::registered: return "registered";
    case HostMem::write_combined: return "write_combined";
    }
    return "pageable";
}

namespace {

void* aligned_host_alloc(std::size_t bytes) {
    const std::size_t page = 4096;
    void* p = std::aligned_alloc(page, (std::max<std::size_t>(bytes, 1) + page - 1) / page * page);
    if (!p) throw ConfigError(fmt::format("cannot allocate {} bytes of host memory", bytes));
    return p;
}

void touch_pages(void* p, std::size_t bytes) {
    // First touch now, so page faults stay out of timed copies.
    std::memset(p, 0xA5, bytes);
}

} // namespace

HostBuffer::HostBuffer(HostMem kind, std::size_t bytes) : m_bytes(bytes), m_kind(kind) {
    // Overcommit would let a huge allocation succeed and the OOM killer end the run later.
    if (const auto why = host_memory_shortfall(bytes)) throw Unsupported(*why);
    const std::size_t n = std::max<std::size_t>(bytes, 1);
    switch (kind) {
    case HostMem::pageable:
        m_ptr = aligned_host_alloc(n);
        touch_pages(m_ptr, n);
        break;
    case HostMem::pinned:
        IB_CUDA_CHECK(cudaHostAlloc(&m_ptr, n, cudaHostAllocPortable | cudaHostAllocMapped));
        break;
    case HostMem::write_combined:
        IB_CUDA_CHECK(cudaHostAlloc(&m_ptr, n, cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined));
        break;
    case HostMem::registered: {
        m_ptr = aligned_host_alloc(n);
        touch_pages(m_ptr, n);
        const cudaError_t err = cudaHostRegister(m_ptr, n, cudaHostRegisterPortable | cudaHostRegisterMapped);
        if (err != cudaSuccess) {
            std::free(m_ptr);
            m_ptr = nullptr;
            IB_CUDA_CHECK(err);
        }
        break;
    }
    }
}

void HostBuffer::release() noexcept {
    if (!m_ptr) return;
    switch (m_kind) {
    case HostMem::pageable: std::free(m_ptr); break;
    case HostMem::pinned:
    case HostMem::write_combined: cudaFreeHost(m_ptr); break;
    case HostMem::registered:
        cudaHostUnregister(m_ptr);
        std::free(m_ptr);
        break;
    }
    m_ptr = nullptr;
}

HostBuffer::~HostBuffer() { release(); }

HostBuffer::HostBuffer(HostBuffer&& o) noexcept
    : m_ptr(std::exchange(o.m_ptr, nullptr)), m_bytes(o.m_bytes), m_kind(o.m_kind) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
        release();
        m_ptr = std::exchange(o.m_ptr, nullptr);
        m_bytes = o.m_bytes;
        m_kind = o.m_kind;
    }
    return *this;
}

void* HostBuffer::device_ptr() const {
    if (m_kind == HostMem::pageable || !m_ptr) return nullptr;
    void* d = nullptr;
    IB_CUDA_CHECK(cudaHostGetDevicePointer(&d, m_ptr, 0));
    return d;
}

// ---- Stream -------------------------------------------------------------------------------

Stream::Stream(int device) : m_device(device) {
    set_device(device);
    IB_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
}

Stream::~Stream() {
    if (m_stream) {
        cudaSetDevice(m_device);
        cudaStreamDestroy(m_stream);
    }
}

// ---- Event --------------------------------------------------------------------------------

Event::Event(EventUse use) {
    IB_CUDA_CHECK(cudaGetDevice(&m_device));
    create(use);
}

Event::Event(int device, EventUse use) : m_device(device) {
    set_device(device);
    create(use);
}

void Event::create(EventUse use) {
    IB_CUDA_CHECK(cudaEventCreateWithFlags(&m_event, use == EventUse::timing ? cudaEventDefault : cudaEventDisableTiming));
}

void Event::release() noexcept {
    if (!m_event) return;
    cudaSetDevice(m_device);
    cudaEventDestroy(m_event);
    m_event = nullptr;
}

Event::~Event() { release(); }

Event::Event(Event&& o) noexcept : m_event(std::exchange(o.m_event, nullptr)), m_device(o.m_device) {}

Event& Event::operator=(Event&& o) noexcept {
    if (this != &o) {
        release();
        m_event = std::exchange(o.m_event, nullptr);
        m_device = o.m_device;
    }
    return *this;
}

double elapsed_s(const Event& start, const Event& stop) {
    float ms = 0;
    IB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    return ms / 1e3;
}

// ---- TimedRegion ------------------------------------------------------------------------

namespace {
constexpr std::uint64_t k_spin_timeout_ns = 10'000'000'000ull; // a lost release never hangs the GPU
}

TimedRegion::TimedRegion(std::vector<const Stream*> streams, bool hold) : m_streams(std::move(streams)), m_hold(hold) {
    for (const auto* s : m_streams) {
        m_start.emplace_back(s->device(), EventUse::timing);
        m_stop.emplace_back(s->device(), EventUse::timing);
    }
    if (m_hold) {
        void* p = nullptr;
        IB_CUDA_CHECK(cudaHostAlloc(&p, sizeof(int), cudaHostAllocPortable | cudaHostAllocMapped));
        m_flag = static_cast<volatile int*>(p);
        *m_flag = 0;
        void* d = nullptr;
        IB_CUDA_CHECK(cudaHostGetDevicePointer(&d, p, 0));
        m_flag_dev = static_cast<int*>(d);
    }
}

TimedRegion::~TimedRegion() {
    if (m_flag) {
        *m_flag = 1; // release anything still held before freeing the flag
        for (const auto* s : m_streams) {
            cudaSetDevice(s->device());
            cudaStreamSynchronize(s->get());
        }
        cudaFreeHost(const_cast<int*>(m_flag));
    }
    // The events are destroyed with the members, each on its stream's device.
}

void TimedRegion::begin() {
    if (m_hold) *m_flag = 0;
    for (std::size_t i = 0; i < m_streams.size(); ++i) {
        set_device(m_streams[i]->device());
        if (m_hold) IB_CUDA_CHECK(kernels::launch_spin_wait(m_flag_dev, k_spin_timeout_ns, nullptr, m_streams[i]->get()));
        IB_CUDA_CHECK(cudaEventRecord(m_start[i].get(), m_streams[i]->get()));
    }
}

double TimedRegion::end(std::vector<double>* per_stream) {
    for (std::size_t i = 0; i < m_streams.size(); ++i) {
        set_device(m_streams[i]->device());
        IB_CUDA_CHECK(cudaEventRecord(m_stop[i].get(), m_streams[i]->get()));
    }
    const auto host_start = std::chrono::steady_clock::now();
    if (m_hold) {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        *m_flag = 1;
    }
    bool several_devices = false;
    double first_ms = 0, span_ms = 0;
    if (per_stream) per_stream->clear();
    for (std::size_t i = 0; i < m_streams.size(); ++i) {
        IB_CUDA_CHECK(cudaEventSynchronize(m_stop[i].get()));
        float ms = 0;
        IB_CUDA_CHECK(cudaEventElapsedTime(&ms, m_start[i].get(), m_stop[i].get()));
        if (per_stream) per_stream->push_back(ms / 1e3);
        if (i == 0) {
            span_ms = ms;
        } else if (m_streams[i]->device() == m_streams[0]->device()) {
            // Same device: events share a clock, so take the earliest start to latest stop.
            float rel_start = 0, rel_stop = 0;
            IB_CUDA_CHECK(cudaEventElapsedTime(&rel_start, m_start[0].get(), m_start[i].get()));
            IB_CUDA_CHECK(cudaEventElapsedTime(&rel_stop, m_start[0].get(), m_stop[i].get()));
            first_ms = std::min<double>(first_ms, rel_start);
            span_ms = std::max<double>(span_ms, rel_stop);
        } else {
            several_devices = true;
            span_ms = std::max<double>(span_ms, ms);
        }
    }
    double span = (span_ms - first_ms) / 1e3;
    // Events of different GPUs cannot be compared, and their streams need not start
    // together: for held streams the host clock from release to the last completion
    // bounds the true span from above, so totals are never overstated.
    if (several_devices && m_hold)
        span = std::max(span, std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count());
    return span;
}

// ---- patterns (the host's copy is hostio/pattern) -------------------------------------------

void fill_pattern_device(void* dst, std::size_t bytes, std::uint64_t seed, cudaStream_t stream) {
    IB_CUDA_CHECK(kernels::launch_fill_pattern(dst, bytes, seed, stream));
    IB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

std::uint64_t count_pattern_mismatches_device(const void* src, std::size_t bytes, std::uint64_t seed,
                                              cudaStream_t stream) {
    unsigned long long* count = nullptr;
    // Plain cudaMalloc: verification must not warm the stream-ordered pools that the
    // allocation scenarios measure cold.
    IB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&count), sizeof *count));
    unsigned long long host = 0;
    cudaError_t err = cudaMemsetAsync(count, 0, sizeof *count, stream);
    if (err == cudaSuccess) err = kernels::launch_check_pattern(src, bytes, seed, count, stream);
    if (err == cudaSuccess) err = cudaMemcpyAsync(&host, count, sizeof host, cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    cudaFree(count);
    IB_CUDA_CHECK(err);
    return host;
}

int reps_for(double op_time_s, double target_s, int cap) {
    if (!(op_time_s > 0)) return 1;
    const double r = target_s / op_time_s;
    return static_cast<int>(std::clamp(r, 1.0, static_cast<double>(cap)));
}

} // namespace interopbench::gpu
