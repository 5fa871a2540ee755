#pragma once
/// The pipeline's dataset: fixed-width columns of mixed types, one .npy file per column, the
/// values a pure function of (column, row) so that any slice can be regenerated and checked;
/// the host conversion (struct of arrays -> row-major float32 matrix, with casts) and the
/// consumer's host reference (per-row normalisation and a sum). No CUDA here.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "families/pipeline/npy.hpp"
#include "hostio/storage_io.hpp"
#include "interopbench/cleanup.hpp"

namespace interopbench::pipeline {

/// The columns, in file and matrix order: two of each type.
const std::vector<ColType>& columns();
/// Bytes of one row in the files (sum of the column widths) and in the matrix (4 per column).
std::uint64_t file_row_bytes();
std::uint64_t matrix_row_bytes();

/// The stored value of column `c` at `row`, as its bits (the low col_width bytes).
std::uint64_t value_bits(std::size_t c, std::uint64_t row);
/// The same value as float32 (the cast the conversion applies).
float value_float(std::size_t c, std::uint64_t row);
/// IEEE half <-> float (normal numbers, zero and subnormals; no NaN handling needed here).
float half_to_float(std::uint16_t h);
std::uint16_t float_to_half(float f);

/// One batch's columns in host memory: column c holds `rows` values at base + offsets[c].
struct SoaBatch {
    std::vector<std::uint64_t> offsets; ///< each a multiple of 256
    std::uint64_t bytes = 0;            ///< buffer bytes (offsets and padding included)
    std::uint64_t data_bytes = 0;       ///< file bytes of the batch
};
SoaBatch soa_batch_layout(std::uint64_t rows);
/// Writes the batch of rows [row0, row0 + rows) as stored in the files (the generator).
void fill_batch(void* base, const SoaBatch& layout, std::uint64_t row0, std::uint64_t rows);
/// Host conversion: the columns at `base` -> row-major rows x columns() float32 at `out`.
void convert_host(const void* base, const SoaBatch& layout, std::uint64_t rows, float* out);
/// The consumer on the host: for each row, x / (max |x| of the row + 1) summed over the row,
/// rows summed in double. The device kernel does the same per row in float.
double consume_host(const float* matrix, std::uint64_t rows, std::uint64_t cols);
/// The consumer's result for rows [0, rows) straight from the generator (no files).
double reference_sum(std::uint64_t rows, double* abs_sum = nullptr);

/// The dataset on disk: one .npy file per column, named by row count and column, the columns
/// dealt over `dirs` (column c in dirs[c % dirs.size()]).
/// An existing complete file with a valid header is reused; new files are written to a
/// temporary, fsync'd and renamed, and guarded (removed at exit) unless `keep`.
class Dataset {
public:
    /// Temporaries are made in `temp_dirs` (the run's folders) and renamed into `dirs`.
    Dataset(const std::vector<std::string>& dirs, const std::vector<std::string>& temp_dirs, std::uint64_t rows, bool keep);
    std::uint64_t rows() const { return m_rows; }
    const std::vector<std::string>& paths() const { return m_paths; }
    const std::vector<NpyHeader>& headers() const { return m_headers; }
    std::uint64_t data_bytes() const { return m_rows * file_row_bytes(); }
    bool reused() const { return m_reused; }
    /// What was found and done (a damaged kept column made again), for the details.
    const std::vector<std::string>& notes() const { return m_notes; }
    /// The file name of column `c` for `rows` rows.
    static std::string file_name(std::uint64_t rows, std::size_t c);

private:
    std::uint64_t m_rows;
    std::vector<std::string> m_paths;
    std::vector<NpyHeader> m_headers;
    std::vector<cleanup::Guard> m_guards;
    std::vector<std::string> m_notes;
    bool m_reused = true;
};

/// The run's datasets on its storage site, one per row count, made on first use and shared by
/// the pipeline's scenarios; their files not kept are removed with the last holder.
class Datasets {
public:
    explicit Datasets(std::shared_ptr<storage::Site> site) : m_site(std::move(site)) {}
    /// The dataset of `rows` rows in the site's directories.
    std::shared_ptr<Dataset> get(std::uint64_t rows);
    const std::shared_ptr<storage::Site>& site_ptr() const { return m_site; }

private:
    std::shared_ptr<storage::Site> m_site; ///< outlives the datasets: their files are in its folders
    std::mutex m_mutex;
    std::map<std::uint64_t, std::shared_ptr<Dataset>> m_sets;
};

} // namespace interopbench::pipeline
