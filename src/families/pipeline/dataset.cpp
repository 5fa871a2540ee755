// The pipeline's dataset and its host references. See dataset.hpp.
#include "families/pipeline/dataset.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "hostio/storage_io.hpp"
#include "interopbench/errors.hpp"
#include "interopbench/runner.hpp"

namespace interopbench::pipeline {

const std::vector<ColType>& columns() {
    static const std::vector<ColType> c{ColType::f32, ColType::i64, ColType::f16, ColType::i8,
                                        ColType::f32, ColType::i64, ColType::f16, ColType::i8};
    return c;
}

std::uint64_t file_row_bytes() {
    std::uint64_t b = 0;
    for (ColType t : columns()) b += col_width(t);
    return b;
}

std::uint64_t matrix_row_bytes() { return 4 * columns().size(); }

namespace {

std::uint64_t mix(std::size_t c, std::uint64_t row) {
    std::uint64_t x = row * 0x9e3779b97f4a7c15ull + (static_cast<std::uint64_t>(c) + 1) * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

} // namespace

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float v;
    if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);
    else if (exp == 31) v = man ? NAN : INFINITY;
    else v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
    return sign ? -v : v;
}

std::uint16_t float_to_half(float f) {
    // Exact for the values the generator makes (multiples of 1/64 below 32 in magnitude).
    std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    f = std::fabs(f);
    if (f == 0) return sign;
    int e = 0;
    const float m = std::frexp(f, &e); // f = m * 2^e, m in [0.5, 1)
    int exp = e - 1 + 15;
    if (exp <= 0) return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::lround(std::ldexp(f, 24))));
    const auto man = static_cast<std::uint32_t>(std::lround((m * 2 - 1) * 1024));
    return static_cast<std::uint16_t>(sign | (exp << 10) | (man & 0x3ff));
}

std::uint64_t value_bits(std::size_t c, std::uint64_t row) {
    const std::uint64_t h = mix(c, row);
    switch (columns()[c]) {
    case ColType::f32: {
        const float v = static_cast<float>(static_cast<std::int64_t>(h % 20001) - 10000) / 100.0f;
        std::uint32_t b;
        std::memcpy(&b, &v, 4);
        return b;
    }
    case ColType::i64: return static_cast<std::uint64_t>(static_cast<std::int64_t>(h % 2000001) - 1000000);
    case ColType::f16: return float_to_half(static_cast<float>(static_cast<std::int64_t>(h % 4096) - 2048) / 64.0f);
    case ColType::i8: return static_cast<std::uint8_t>(static_cast<std::int8_t>(static_cast<std::int64_t>(h % 255) - 127));
    }
    return 0;
}

namespace {

float bits_to_float(ColType t, std::uint64_t b) {
    switch (t) {
    case ColType::f32: {
        float v;
        const auto u = static_cast<std::uint32_t>(b);
        std::memcpy(&v, &u, 4);
        return v;
    }
    case ColType::i64: return static_cast<float>(static_cast<std::int64_t>(b));
    case ColType::f16: return half_to_float(static_cast<std::uint16_t>(b));
    case ColType::i8: return static_cast<float>(static_cast<std::int8_t>(static_cast<std::uint8_t>(b)));
    }
    return 0;
}

float row_value(const float* x, std::uint64_t cols) {
    float m = 0;
    for (std::uint64_t j = 0; j < cols; ++j) m = std::max(m, std::fabs(x[j]));
    const float inv = 1.0f / (m + 1.0f);
    float s = 0;
    for (std::uint64_t j = 0; j < cols; ++j) s += x[j] * inv;
    return s;
}

} // namespace

float value_float(std::size_t c, std::uint64_t row) { return bits_to_float(columns()[c], value_bits(c, row)); }

SoaBatch soa_batch_layout(std::uint64_t rows) {
    SoaBatch b;
    for (ColType t : columns()) {
        b.offsets.push_back(b.bytes);
        b.bytes += (rows * col_width(t) + 255) / 256 * 256;
        b.data_bytes += rows * col_width(t);
    }
    return b;
}

void fill_batch(void* base, const SoaBatch& layout, std::uint64_t row0, std::uint64_t rows) {
    auto* p = static_cast<unsigned char*>(base);
    for (std::size_t c = 0; c < columns().size(); ++c) {
        const std::size_t w = col_width(columns()[c]);
        unsigned char* col = p + layout.offsets[c];
        for (std::uint64_t r = 0; r < rows; ++r) {
            const std::uint64_t v = value_bits(c, row0 + r);
            std::memcpy(col + r * w, &v, w); // little-endian: the low bytes
        }
    }
}

void convert_host(const void* base, const SoaBatch& layout, std::uint64_t rows, float* out) {
    const auto* p = static_cast<const unsigned char*>(base);
    const std::size_t cols = columns().size();
    for (std::size_t c = 0; c < cols; ++c) {
        const unsigned char* col = p + layout.offsets[c];
        float* o = out + c;
        switch (columns()[c]) {
        case ColType::f32: {
            const auto* v = reinterpret_cast<const float*>(col);
            for (std::uint64_t r = 0; r < rows; ++r) o[r * cols] = v[r];
            break;
        }
        case ColType::i64: {
            const auto* v = reinterpret_cast<const std::int64_t*>(col);
            for (std::uint64_t r = 0; r < rows; ++r) o[r * cols] = static_cast<float>(v[r]);
            break;
        }
        case ColType::f16: {
            const auto* v = reinterpret_cast<const std::uint16_t*>(col);
            for (std::uint64_t r = 0; r < rows; ++r) o[r * cols] = half_to_float(v[r]);
            break;
        }
        case ColType::i8: {
            const auto* v = reinterpret_cast<const std::int8_t*>(col);
            for (std::uint64_t r = 0; r < rows; ++r) o[r * cols] = static_cast<float>(v[r]);
            break;
        }
        }
    }
}

double consume_host(const float* matrix, std::uint64_t rows, std::uint64_t cols) {
    double total = 0;
    for (std::uint64_t r = 0; r < rows; ++r) total += row_value(matrix + r * cols, cols);
    return total;
}

double reference_sum(std::uint64_t rows, double* abs_sum) {
    const std::size_t cols = columns().size();
    std::vector<float> x(cols);
    double total = 0, abs_total = 0;
    for (std::uint64_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) x[c] = value_float(c, r);
        const float v = row_value(x.data(), cols);
        total += v;
        abs_total += std::fabs(v);
    }
    if (abs_sum) *abs_sum = abs_total;
    return total;
}

// ---- files ------------------------------------------------------------------------------

std::string Dataset::file_name(std::uint64_t rows, std::size_t c) {
    return fmt::format("ib-pipeline-v1-{}-c{}-{}.npy", rows, c, to_string(columns()[c]));
}

Dataset::Dataset(const std::vector<std::string>& dirs, const std::vector<std::string>& temp_dirs, std::uint64_t rows, bool keep)
    : m_rows(rows) {
    for (std::size_t c = 0; c < columns().size(); ++c) {
        const std::string& dir = dirs[c % dirs.size()]; // columns dealt over the directories
        const std::string& temp_dir = temp_dirs[c % temp_dirs.size()];
        const ColType t = columns()[c];
        const std::string path = dir + "/" + file_name(rows, c);
        const std::string header = npy_header(t, rows);
        const std::uint64_t size = header.size() + rows * col_width(t);
        struct stat st {};
        bool reuse = false;
        if (::lstat(path.c_str(), &st) == 0) {
            // Only a file of this user that nobody else may write is read or reused.
            if (auto why = storage::untrusted_file(path))
                throw ConfigError(fmt::format("will not use {}: {}; remove it or give another --storage-dir", path, *why));
        }
        if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == size) {
            const NpyHeader h = read_npy_header(path); // a damaged header is an error, not silently replaced
            reuse = h.type == t && h.length == rows;
            // Every value of a kept column is checked against the generator before it is
            // trusted (only the last batch is checked after a pass): a damaged one is made again.
            if (reuse) {
                storage::Fd fd = storage::open_file(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                const std::size_t w = col_width(t);
                const std::uint64_t chunk_rows = 1 << 20;
                std::vector<unsigned char> got(chunk_rows * w), want(chunk_rows * w);
                for (std::uint64_t r0 = 0; r0 < rows && reuse; r0 += chunk_rows) {
                    const std::uint64_t n = std::min(chunk_rows, rows - r0);
                    storage::pread_all(fd.get(), got.data(), n * w, h.data_offset + r0 * w, path);
                    for (std::uint64_t r = 0; r < n; ++r) {
                        const std::uint64_t v = value_bits(c, r0 + r);
                        std::memcpy(want.data() + r * w, &v, w);
                    }
                    if (std::memcmp(got.data(), want.data(), n * w) != 0) {
                        reuse = false;
                        m_notes.push_back(fmt::format("the kept column {} differed from the generator's values from row {} "
                                                      "on: made again",
                                                      path, r0));
                    }
                }
            }
        }
        if (!reuse) {
            m_reused = false;
            if (::lstat(path.c_str(), &st) == 0) ::unlink(path.c_str()); // damaged: replaced below
            const std::string tmp = temp_dir + "/" + storage::temp_file_name(::getpid(), fmt::format("pipeline-c{}", c));
            cleanup::Guard tmp_guard(tmp);
            {
                storage::Fd fd = storage::open_file(tmp, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC);
                storage::pwrite_all(fd.get(), header.data(), header.size(), 0, tmp);
                const std::uint64_t chunk_rows = 1 << 20;
                std::vector<unsigned char> buf(chunk_rows * col_width(t));
                SoaBatch one;
                one.offsets = std::vector<std::uint64_t>(columns().size(), 0);
                for (std::uint64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
                    if (g_interrupted) {
                        tmp_guard.remove();
                        throw Interrupted(fmt::format("interrupted while creating {}; the partial file was removed", path));
                    }
                    const std::uint64_t n = std::min(chunk_rows, rows - r0);
                    const std::size_t w = col_width(t);
                    for (std::uint64_t r = 0; r < n; ++r) {
                        const std::uint64_t v = value_bits(c, r0 + r);
                        std::memcpy(buf.data() + r * w, &v, w);
                    }
                    storage::pwrite_all(fd.get(), buf.data(), n * w, header.size() + r0 * w, tmp);
                }
                if (::fsync(fd.get()) != 0)
                    throw ConfigError(fmt::format("cannot flush '{}': {}", tmp, std::strerror(errno)));
            }
            if (::rename(tmp.c_str(), path.c_str()) != 0)
                throw ConfigError(fmt::format("cannot rename '{}' to '{}': {}", tmp, path, std::strerror(errno)));
            tmp_guard.release();
        }
        if (!keep) m_guards.emplace_back(path);
        m_paths.push_back(path);
        m_headers.push_back(read_npy_header(path));
    }
}

std::shared_ptr<Dataset> Datasets::get(std::uint64_t rows) {
    const std::vector<std::string> dirs = m_site->file_dirs(), temps = m_site->run_dirs();
    std::lock_guard<std::mutex> lock(m_mutex);
    auto& slot = m_sets[rows];
    if (!slot) slot = std::make_shared<Dataset>(dirs, temps, rows, m_site->keep_files());
    return slot;
}

} // namespace interopbench::pipeline
