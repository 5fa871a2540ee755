#include "interopbench/file_io.hpp"

#include <cerrno>
#include <cstring>

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
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) throw fail(std::strerror(errno), "check the path");
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
        const ssize_t n = ::read(f.fd, text.data() + done, text.size() - done);
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
    if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

} // namespace interopbench
