#pragma once
/// Files mapped and registered with CUDA read-only (cudaHostRegisterReadOnly): the copy engine
/// then reads their cached pages itself, with no host copy. The storage family's
/// mmap_registered / mmap_resident paths and the pipeline's +registered_cache use it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace interopbench::gpu {

/// One file to map from its start: its path (for messages), an open descriptor, the bytes.
struct MappedFile {
    std::string path;
    int fd = -1;
    std::uint64_t bytes = 0;
};

/// The files mapped (MAP_SHARED, read-only) and registered. Registration pins the pages (it
/// faults in whatever is not cached); the destructor unregisters and unmaps, also when a
/// sample or the run is stopped. A file shorter than its bytes (changed during the run) is a
/// ConfigError naming it, checked before mapping (never a SIGBUS); a registration the driver
/// refuses is Unsupported with CUDA's reason. The caller keeps each descriptor open while the
/// mapping lives: check_unchanged() reads the files' state through them.
class RegisteredMapping {
public:
    explicit RegisteredMapping(const std::vector<MappedFile>& files);
    RegisteredMapping(const RegisteredMapping&) = delete;
    RegisteredMapping& operator=(const RegisteredMapping&) = delete;
    ~RegisteredMapping();
    /// Unregisters every mapping (timed by the caller); the destructor then only unmaps.
    void unregister();
    /// Throws ConfigError naming the first file that was truncated, replaced in place or
    /// written since it was registered: the pinned pages the copy engine reads are then no
    /// longer the file's (a truncated file's pages would raise SIGBUS if the CPU touched them).
    void check_unchanged() const;
    /// The mapped bytes of file `i` (nullptr for an empty one).
    const void* data(std::size_t i) const { return i < m_maps.size() ? m_maps[i].addr : nullptr; }

private:
    void release() noexcept; ///< unregisters and unmaps what is left
    struct Map {
        void* addr = nullptr;
        std::uint64_t bytes = 0;
        bool registered = false;
        std::string path;
        int fd = -1;
        std::int64_t size = 0, mtime_ns = 0; ///< the file's size and modification time when mapped
    };
    std::vector<Map> m_maps;
};

/// Why `bytes` of files cannot be registered on `device`, or nothing: the device attribute
/// (cudaDevAttrHostRegisterReadOnlySupported), the memory lock limit of a process that is not
/// root, and half of the host memory available (the pages are pinned).
std::optional<std::string> registered_mapping_unsupported(int device, std::uint64_t bytes);

} // namespace interopbench::gpu
