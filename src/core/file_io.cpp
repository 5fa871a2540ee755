#include "interopbench/file_io.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "interopbench/errors.hpp"
#include "interopbench/params.hpp"

namespace interopbench {
namespace {

const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

} // namespace

std::string read_input_file(const std::string& path, std::string_view what, std::uint64_t max_bytes) {
    const auto fail = [&](const std::string& why, const std::string& hint) {
        return UsageError(fmt::format("{} '{}': {}", what, path, why), hint);
    };
    if (path.empty()) throw UsageError(fmt::format("the {} file name is empty", what), "name a file");
    Fd f;
    // O_NONBLOCK: opening a FIFO must not wait for a writer; the type is checked right after.
    f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f.fd < 0) {
        const int err = errno;
        switch (err) {
        case ENOENT: throw fail("no such file", "check the path");
        case ELOOP: throw fail("a loop of symbolic links", "point the link at a file (see ls -l)");
        case EACCES:
        case EPERM: throw fail("permission denied", "check the file's and its directories' permissions");
        case ENOTDIR: throw fail("a component of the path is not a directory", "check the path");
        case ENXIO: throw fail("not a regular file", "give a regular file");
        default: throw fail(std::strerror(err), "check the path");
        }
    }
    return read_input_file(f.fd, path, what, max_bytes);
}

std::string read_input_file(int fd, const std::string& path, std::string_view what, std::uint64_t max_bytes) {
    const auto fail = [&](const std::string& why, const std::string& hint) {
        return UsageError(fmt::format("{} '{}': {}", what, path, why), hint);
    };
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw fail(std::strerror(errno), "check the path");
    if (S_ISDIR(st.st_mode)) throw fail("is a directory", "name a file in it");
    if (!S_ISREG(st.st_mode))
        throw fail(fmt::format("{}, not a regular file", kind_of(st.st_mode)),
                   "give a regular file; save what a pipe or device yields to a file first");
    const auto too_large = [&] {
        return fail(fmt::format("larger than the {} this tool reads", format_size(max_bytes)),
                    "give a file written by interopbench, or split it");
    };
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes) throw too_large();
    std::string text;
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (true) {
        // The file may grow or shrink while read: read until end of file, never past the limit.
        if (done == text.size()) {
            if (done >= max_bytes + 1) break;
            text.resize(std::min<std::uint64_t>(max_bytes + 1, std::max<std::size_t>(done * 2, 4096)));
        }
        const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw fail(std::strerror(errno), "check the file and the disk it is on");
        }
        if (n == 0) break;
        done += static_cast<std::size_t>(n);
    }
    if (done > max_bytes) throw too_large();
    text.resize(done);
    return text;
}

bool same_file(const std::string& a, const std::string& b) {
    struct stat sa {}, sb {};
    const bool ea = ::stat(a.c_str(), &sa) == 0, eb = ::stat(b.c_str(), &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb || a.empty() || b.empty()) return false;
    // Neither exists yet: the same place when the paths resolve alike ("out//x.json",
    // "out/../out/x.json", a link to the folder).
    std::error_code ec1, ec2;
    const auto ca = std::filesystem::weakly_canonical(a, ec1), cb = std::filesystem::weakly_canonical(b, ec2);
    return !ec1 && !ec2 && ca == cb;
}

namespace {

/// The deepest nesting in `text`, brackets inside strings not counted.
int nesting_depth(std::string_view text) {
    int depth = 0, deepest = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest) deepest = depth;
            if (deepest > k_max_json_depth) return deepest;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

std::string utf8_escaped(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        std::size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
        bool ok = len > 0 && i + len <= s.size();
        for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
        if (ok && len > 1) {
            // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
            std::uint32_t cp = b & (0x7f >> len);
            for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
            static const std::uint32_t k_min[] = {0, 0, 0x80, 0x800, 0x10000};
            ok = cp >= k_min[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
        }
        if (ok) {
            out.append(s, i, len);
            i += len;
        } else {
            out += fmt::format("\\x{:02x}", b);
            ++i;
        }
    }
    return out;
}

nlohmann::json valid_utf8_at(const nlohmann::json& doc, int depth) {
    // `depth` containers hold this value: as a container it is level depth + 1, which
    // parse_json refuses past k_max_json_depth.
    if (doc.is_structured() && depth >= k_max_json_depth) return nullptr;
    if (doc.is_string()) return utf8_escaped(doc.get_ref<const std::string&>());
    if (doc.is_array()) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& v : doc) out.push_back(valid_utf8_at(v, depth + 1));
        return out;
    }
    if (doc.is_object()) {
        nlohmann::json out = nlohmann::json::object();
        for (auto it = doc.begin(); it != doc.end(); ++it) out[utf8_escaped(it.key())] = valid_utf8_at(it.value(), depth + 1);
        return out;
    }
    return doc;
}

} // namespace

nlohmann::json parse_json(std::string_view text, bool allow_exceptions, bool ignore_comments) {
    if (const int depth = nesting_depth(text); depth > k_max_json_depth) {
        if (!allow_exceptions) return nlohmann::json(nlohmann::json::value_t::discarded);
        throw nlohmann::json::parse_error::create(
            101, 0, fmt::format("nesting deeper than {} levels: not a document this tool reads or writes", k_max_json_depth),
            nullptr);
    }
    return nlohmann::json::parse(text, nullptr, allow_exceptions, ignore_comments);
}

nlohmann::json valid_utf8(const nlohmann::json& doc) { return valid_utf8_at(doc, 0); }

} // namespace interopbench
