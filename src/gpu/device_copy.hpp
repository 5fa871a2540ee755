#pragma once
/// The device-local copy: one buffer copied to another on the same GPU, by the copy engine
/// or by an SM kernel, timed with CUDA events while the stream is held. d2d_copy reports it
/// and the layout scenarios use it as their roofline, so both measure the same thing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "gpu/cuda_util.hpp"

namespace interopbench::gpu {

/// ce: cudaMemcpyAsync device to device; sm: the 16-byte vector SM copy kernel.
enum class DeviceCopyMethod { ce, sm };
/// Parses "ce|sm"; throws UsageError otherwise.
DeviceCopyMethod parse_device_copy_method(const std::string& s);
const char* to_string(DeviceCopyMethod m);
/// What the method does, in words, for the report's details.
const char* describe(DeviceCopyMethod m);

/// Two buffers of `bytes` on `device`: the source filled with the pattern, the destination
/// poisoned. copy_seconds(reps) times `reps` back-to-back copies on its own held stream.
class DeviceCopy {
public:
    DeviceCopy(int device, std::size_t bytes, DeviceCopyMethod method);
    DeviceCopy(const DeviceCopy&) = delete;
    DeviceCopy& operator=(const DeviceCopy&) = delete;

    /// Seconds for `reps` copies, CUDA events around the run, the stream held while it is
    /// enqueued.
    double copy_seconds(int reps);
    /// Copies once more after poisoning the destination; returns the wrong 8-byte words.
    std::uint64_t mismatches();
    std::size_t bytes() const { return m_bytes; }
    DeviceCopyMethod method() const { return m_method; }

private:
    void enqueue(int reps);
    int m_device;
    std::size_t m_bytes;
    DeviceCopyMethod m_method;
    int m_sm_count = 0;
    Stream m_stream;
    TimedRegion m_region;
    DeviceBuffer m_src, m_dst;
};

} // namespace interopbench::gpu
