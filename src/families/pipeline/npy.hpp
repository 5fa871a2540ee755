#pragma once
/// NumPy .npy files, the format GPU data loaders read, written and read here without NumPy.
///
/// The format (numpy.lib.format): the magic "\x93NUMPY", a major and minor version byte, a
/// little-endian header length (uint16 for version 1, uint32 for versions 2 and 3), then the
/// header: a Python dict literal such as
///   {'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }
/// padded with spaces and ended by '\n' so that the data starts at a multiple of 64 bytes.
/// The data follows: shape's product of elements, C order, in the byte order of descr.
/// Only what the pipeline needs is read: one-dimensional little-endian arrays of the dtypes
/// below. Anything else is a damaged header for this reader, reported with the file and the
/// byte where reading stopped.
#include <cstdint>
#include <string>
#include <string_view>

namespace interopbench::pipeline {

/// Column types of the pipeline's dataset.
enum class ColType { f32, i64, f16, i8 };
std::size_t col_width(ColType t);
const char* npy_descr(ColType t); ///< "<f4", "<i8", "<f2", "|i1"
const char* to_string(ColType t);

struct NpyHeader {
    ColType type = ColType::f32;
    std::uint64_t length = 0;      ///< elements (shape[0])
    std::uint64_t data_offset = 0; ///< bytes before the data (a multiple of 64)
};

/// The header bytes (version 1.0) of a one-dimensional array of `length` elements.
std::string npy_header(ColType type, std::uint64_t length);

/// Parses the first bytes of a file (`bytes`, at least the whole header). Throws
/// ConfigError "npy 'PATH': byte N: what is wrong" for a damaged or unsupported header;
/// `file_size` (when nonzero) must hold the data too.
NpyHeader parse_npy_header(std::string_view bytes, const std::string& path, std::uint64_t file_size = 0);

/// Opens `path`, reads and parses its header (the same errors, and one for a file that
/// cannot be read).
NpyHeader read_npy_header(const std::string& path);

} // namespace interopbench::pipeline
