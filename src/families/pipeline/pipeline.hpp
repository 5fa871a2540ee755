#pragma once
/// The pipeline family's shared pieces (scenario file and tests): variants, the batch
/// geometry and its checks, the device memory a configuration needs.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "interopbench/runner.hpp"
#include "interopbench/scenario.hpp"

namespace interopbench::pipeline {

/// Which fixes a variant applies.
struct Variant {
    bool pinned = false, pool = false, gpu_convert = false, zero_copy = false, overlap = false, parallel_read = false;
    /// The column files mapped and registered with CUDA once per configuration: each batch's
    /// column slices copied by the copy engine straight from the page cache (no read, no host
    /// copy; the conversion on the GPU). Warm only; tuned uses it where the GPU allows.
    bool registered_cache = false;
};
/// "naive", "+pinned", "+pool", "+gpu_convert", "+zero_copy", "+overlap", "+parallel_read",
/// "+registered_cache", "tuned".
Variant parse_variant(const std::string& name);
const std::vector<std::string>& variant_names();

/// Rows of the dataset and of a batch. Throws UsageError for a dataset or batch smaller
/// than one row (zero batches) and a batch larger than the dataset.
struct Geometry {
    std::uint64_t rows = 0, batch_rows = 0, batches = 0;
    /// Rows of batch b (the last one may be short).
    std::uint64_t rows_of(std::uint64_t b) const { return std::min(batch_rows, rows - b * batch_rows); }
};
Geometry geometry(std::uint64_t dataset_bytes, std::uint64_t batch_bytes);

/// Ring slots in flight: 3 when overlapped, else 1.
unsigned slots(const Variant& v);
/// Device bytes the configuration holds at most (slots x (columns + matrix + handoff copy),
/// plus the result).
std::uint64_t device_bytes_needed(const Variant& v, const Geometry& g);
/// Host bytes of the staging ring.
std::uint64_t host_bytes_needed(const Variant& v, const Geometry& g);

/// Before measuring: the bad input of the selected pipeline configurations (UsageError),
/// and the bytes their dataset files will need in the storage directory (files already there
/// need none); nothing when no pipeline configuration is selected.
std::optional<std::uint64_t> site_bytes(const std::vector<Config>& configs);

} // namespace interopbench::pipeline
