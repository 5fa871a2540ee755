// The storage family's descriptor (include/interopbench/family.hpp): its scenarios, the storage
// site's options, the pre-flight that claims the site's space, the roofline annotation and what
// it adds to the built-in profiles. families/builtin.cpp names it in the one list of families.
#include <algorithm>
#include <set>

#include "hostio/storage_io.hpp"
#include "interopbench/family.hpp"

namespace interopbench {

void register_storage_read(Registry& r, std::shared_ptr<storage::Site> site);              // storage_read.cpp
void register_storage_gpu(Registry& r, const std::shared_ptr<storage::Site>& site);       // storage_gpu.cpp
void annotate_storage_results(std::vector<Result>& results); // storage_roofline.cpp

namespace {

/// The selected sizes' files: one pattern file per read size (none for a kept file of that
/// size), the largest write.
std::uint64_t file_bytes(const std::vector<Config>& configs) {
    std::set<std::uint64_t> read_sizes;
    std::uint64_t write_bytes = 0;
    for (const Config& c : configs) {
        const std::uint64_t size = c.params.get_uint("size");
        if (c.scenario->info().id == "gpu_to_storage") write_bytes = std::max(write_bytes, size);
        else read_sizes.insert(size);
    }
    return storage::site_file_bytes(storage::site_of(configs), write_bytes, read_sizes);
}

/// The directory and its free space for those files.
void preflight(const RunSettings&, const std::vector<Config>& configs) { storage::site_of(configs).claim(file_bytes(configs)); }

} // namespace

Family storage_family() {
    return {
        .name = "storage",
        .summary = "Storage to host and GPU: buffered, O_DIRECT, io_uring and mmap reads, pipelined and cuFile paths, writes",
        .add_scenarios =
            [](Registry& r, const FamilyOptions& options, std::vector<std::string>&) {
                const auto site = storage::run_site(r, options);
                register_storage_read(r, site);
                register_storage_gpu(r, site);
            },
        .options = storage::site_options(),
        .preflight = preflight,
        .file_bytes = file_bytes,
        .annotate = annotate_storage_results,
        .profiles =
            {
                {"quick", R"([
                    {"pattern": "storage_read", "axes": {"path": ["buffered", "odirect"], "size": ["64M"]}},
                    {"pattern": "storage_read", "axes": {"path": ["buffered"], "cache": ["warm"], "threads": ["4"], "size": ["64M"]}},
                    {"pattern": "storage_to_gpu", "axes": {"path": ["pageable", "pinned", "pipelined", "odirect_pipelined", "io_uring_pipelined", "mmap", "cufile"], "size": ["64M"]}},
                    {"pattern": "gpu_to_storage", "axes": {"path": ["pinned", "pipelined"], "size": ["64M"]}}
                ])"},
                {"ci", R"([
                    {"pattern": "storage_to_gpu", "axes": {"path": ["mmap_resident"], "cache": ["warm"], "threads": ["0"], "size": ["256M"]}}
                ])"},
                {"full", R"([
                    {"pattern": "storage_read", "axes": {"chunk": ["4K:64M:x4"], "threads": ["1", "4"]}},
                    {"pattern": "storage_read", "axes": {"path": ["buffered", "odirect", "mmap"], "threads": ["1", "2", "4", "8", "16"]}},
                    {"pattern": "storage_read", "axes": {"path": ["io_uring"], "threads": ["1", "4"], "qd": ["1", "8", "32", "128"]}},
                    {"pattern": "storage_to_gpu"},
                    {"pattern": "storage_to_gpu", "axes": {"path": ["pipelined", "odirect_pipelined", "io_uring_pipelined"], "threads": ["1", "2", "4", "8", "16"]}},
                    {"pattern": "storage_to_gpu", "axes": {"path": ["pipelined", "odirect_pipelined"], "ring": ["2", "4", "8"], "chunk": ["1M", "4M", "16M", "64M"]}},
                    {"pattern": "storage_to_gpu", "axes": {"path": ["io_uring_pipelined"], "qd": ["1", "4", "16"], "chunk": ["1M", "4M", "16M"]}},
                    {"pattern": "storage_to_gpu", "axes": {"path": ["cufile", "cufile_registered"], "threads": ["1", "4"]}},
                    {"pattern": "gpu_to_storage"},
                    {"pattern": "gpu_to_storage", "axes": {"path": ["pinned", "pipelined"], "threads": ["1", "4", "8"]}}
                ])"},
            },
    };
}

} // namespace interopbench
