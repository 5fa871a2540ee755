// Files the tool makes for itself. See private_dir.hpp.
#include "interopbench/private_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "interopbench/cleanup.hpp"
#include "interopbench/errors.hpp"

namespace interopbench {
namespace {

constexpr const char* k_prefix = "interopbench-";

std::string temp_root() {
    const char* tmp = std::getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

WriteError write_error(const std::string& path, int err, const char* doing) {
    return WriteError(fmt::format("cannot {} '{}': {}", doing, path, std::strerror(err)));
}

/// Owns the directory for the process's lifetime: removed (when empty: its files are guarded
/// by their owners, removed first) at exit and by the signal path.
struct PrivateDir {
    std::string path;
    cleanup::Guard guard;
};

} // namespace

const std::string& private_dir() {
    static std::mutex mutex;
    static PrivateDir dir;
    std::lock_guard<std::mutex> lock(mutex);
    if (dir.path.empty()) {
        remove_stale_private_dirs();
        std::string tmpl = fmt::format("{}/{}{}-XXXXXX", temp_root(), k_prefix, static_cast<long>(::getpid()));
        if (!::mkdtemp(tmpl.data())) throw write_error(tmpl, errno, "create the private directory");
        dir.path = tmpl;
        dir.guard = cleanup::Guard(tmpl, true);
    }
    return dir.path;
}

int create_new_file(const std::string& path, int flags) {
    const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_WRONLY | flags, 0600);
    if (fd < 0) {
        const int err = errno;
        if (err == EEXIST)
            throw WriteError(fmt::format("cannot create '{}': something is already there (a file or a link of another "
                                         "process); nothing was written through it",
                                         path));
        throw write_error(path, err, "create");
    }
    return fd;
}

int create_unique_file(const std::string& dir, const std::string& prefix, const std::string& suffix, std::string& path) {
    std::string tmpl = fmt::format("{}/{}XXXXXX{}", dir, prefix, suffix);
    const int fd = ::mkostemps(tmpl.data(), static_cast<int>(suffix.size()), O_CLOEXEC);
    if (fd < 0) throw write_error(tmpl, errno, "create");
    path = tmpl;
    return fd;
}

void write_all(int fd, const std::string& content, const std::string& path) {
    const char* p = content.data();
    std::size_t left = content.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw write_error(path, errno, "write");
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0 && errno != EINVAL) throw write_error(path, errno, "flush");
}

int remove_stale_private_dirs() {
    namespace fs = std::filesystem;
    int removed = 0;
    std::error_code ec;
    const std::string prefix = k_prefix;
    for (fs::directory_iterator it(temp_root(), ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(prefix, 0) != 0) continue;
        // interopbench-<pid>-XXXXXX: digits, a dash, six characters.
        const std::string rest = name.substr(prefix.size());
        const auto dash = rest.find('-');
        if (dash == std::string::npos || dash == 0 || dash > 9 || rest.size() != dash + 7) continue;
        bool digits = true;
        for (std::size_t i = 0; i < dash; ++i) digits = digits && rest[i] >= '0' && rest[i] <= '9';
        if (!digits) continue;
        removed += remove_folder_of_dead_process(it->path().string(), std::strtol(rest.c_str(), nullptr, 10));
    }
    return removed;
}

bool remove_folder_of_dead_process(const std::string& path, long pid) {
    if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) return false;
    struct stat st {};
    // Only this user's own directories (never a link), as mkdtemp made them.
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
        return false;
    std::error_code ec;
    std::filesystem::remove_all(path, ec); // removes links inside, never follows them
    return !ec;
}

} // namespace interopbench
