// The .npy header writer and reader. See npy.hpp for the format.
#include "families/pipeline/npy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "interopbench/errors.hpp"

namespace interopbench::pipeline {

std::size_t col_width(ColType t) {
    switch (t) {
    case ColType::f32: return 4;
    case ColType::i64: return 8;
    case ColType::f16: return 2;
    case ColType::i8: return 1;
    }
    return 1;
}

const char* npy_descr(ColType t) {
    switch (t) {
    case ColType::f32: return "<f4";
    case ColType::i64: return "<i8";
    case ColType::f16: return "<f2";
    case ColType::i8: return "|i1";
    }
    return "";
}

const char* to_string(ColType t) {
    switch (t) {
    case ColType::f32: return "float32";
    case ColType::i64: return "int64";
    case ColType::f16: return "float16";
    case ColType::i8: return "int8";
    }
    return "";
}

std::string npy_header(ColType type, std::uint64_t length) {
    std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}", npy_descr(type), length);
    // magic(6) + version(2) + length(2) + dict + padding + '\n' is a multiple of 64.
    const std::size_t unpadded = 10 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict.push_back('\n');
    std::string out("\x93NUMPY\x01\x00", 8);
    out.push_back(static_cast<char>(dict.size() & 0xff));
    out.push_back(static_cast<char>(dict.size() >> 8));
    return out + dict;
}

namespace {

[[noreturn]] void damaged(const std::string& path, std::uint64_t byte, const std::string& what) {
    throw ConfigError(fmt::format("npy '{}': byte {}: {}", path, byte, what));
}

/// The value text after `'key':` in the dict, and where it starts (absolute byte).
std::string_view dict_value(std::string_view dict, std::size_t base, std::string_view key, const std::string& path,
                            std::size_t* at) {
    const std::string quoted = fmt::format("'{}'", key);
    const std::size_t k = dict.find(quoted);
    if (k == std::string_view::npos) damaged(path, base, fmt::format("the header has no {} entry", quoted));
    std::size_t i = k + quoted.size();
    while (i < dict.size() && dict[i] == ' ') ++i;
    if (i >= dict.size() || dict[i] != ':') damaged(path, base + i, fmt::format("':' expected after {}", quoted));
    ++i;
    while (i < dict.size() && dict[i] == ' ') ++i;
    *at = base + i;
    return dict.substr(i);
}

} // namespace

NpyHeader parse_npy_header(std::string_view b, const std::string& path, std::uint64_t file_size) {
    static const char magic[] = "\x93NUMPY";
    for (std::size_t i = 0; i < 6; ++i)
        if (i >= b.size() || b[i] != magic[i])
            damaged(path, i, i >= b.size() ? "the file ends inside the magic string" : "not an .npy file (magic \\x93NUMPY expected)");
    if (b.size() < 8) damaged(path, b.size(), "the file ends before the version");
    const unsigned major = static_cast<unsigned char>(b[6]);
    if (major < 1 || major > 3) damaged(path, 6, fmt::format("unsupported .npy version {}", major));
    const std::size_t len_bytes = major == 1 ? 2 : 4;
    if (b.size() < 8 + len_bytes) damaged(path, b.size(), "the file ends before the header length");
    std::uint64_t hlen = 0;
    for (std::size_t i = 0; i < len_bytes; ++i) hlen |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    const std::size_t base = 8 + len_bytes;
    if (hlen > (1u << 20)) damaged(path, 8, fmt::format("header length {} is implausible", hlen));
    if (b.size() < base + hlen)
        damaged(path, b.size(), fmt::format("the file ends inside the header ({} of {} header bytes)", b.size() - base, hlen));
    const std::string_view dict = b.substr(base, hlen);
    if (dict.empty() || dict.front() != '{') damaged(path, base, "the header is not a dict ('{' expected)");
    if (dict.back() != '\n') damaged(path, base + hlen - 1, "the header does not end with a newline");
    NpyHeader h;
    h.data_offset = base + hlen;
    std::size_t at = 0;
    std::string_view v = dict_value(dict, base, "descr", path, &at);
    bool found = false;
    for (ColType t : {ColType::f32, ColType::i64, ColType::f16, ColType::i8}) {
        const std::string q = fmt::format("'{}'", npy_descr(t));
        if (v.substr(0, q.size()) == q) {
            h.type = t;
            found = true;
        }
    }
    if (!found)
        damaged(path, at, fmt::format("descr {} is not one of '<f4', '<i8', '<f2', '|i1'", v.substr(0, std::min<std::size_t>(v.find_first_of(",}"), 16))));
    v = dict_value(dict, base, "fortran_order", path, &at);
    if (v.substr(0, 5) != "False") damaged(path, at, "fortran_order must be False");
    v = dict_value(dict, base, "shape", path, &at);
    if (v.empty() || v[0] != '(') damaged(path, at, "shape must be a tuple");
    std::size_t i = 1;
    while (i < v.size() && v[i] == ' ') ++i;
    std::uint64_t n = 0;
    std::size_t digits = 0;
    for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i, ++digits) {
        if (n > (~0ull - 9) / 10) damaged(path, at + i, "shape overflows");
        n = n * 10 + static_cast<std::uint64_t>(v[i] - '0');
    }
    if (!digits) damaged(path, at + i, "shape must hold one length");
    while (i < v.size() && v[i] == ' ') ++i;
    if (i + 1 < v.size() && v[i] == ',' ) ++i;
    while (i < v.size() && v[i] == ' ') ++i;
    if (i >= v.size() || v[i] != ')') damaged(path, at + i, "only one-dimensional arrays are read (')' expected)");
    h.length = n;
    if (file_size) {
        const std::uint64_t need = h.data_offset + n * col_width(h.type);
        if (file_size < need)
            damaged(path, file_size, fmt::format("the file is truncated: the header promises {} elements ({} bytes), the file has {}",
                                                 n, need, file_size));
    }
    return h;
}

NpyHeader read_npy_header(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw ConfigError(fmt::format("npy '{}': cannot open: {}", path, std::strerror(errno)));
    struct stat st {};
    ::fstat(fd, &st);
    std::string buf(4096, '\0');
    ssize_t got = 0;
    while (got < static_cast<ssize_t>(buf.size())) {
        const ssize_t r = ::pread(fd, buf.data() + got, buf.size() - static_cast<std::size_t>(got), got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += r;
    }
    ::close(fd);
    buf.resize(static_cast<std::size_t>(got));
    return parse_npy_header(buf, path, static_cast<std::uint64_t>(st.st_size));
}

} // namespace interopbench::pipeline
