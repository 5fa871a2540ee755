// Files the tool makes for itself. See private_dir.hpp.
#include "interopbench/private_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "interopbench/errors.hpp"

namespace interopbench {
namespace {

constexpr const char* k_prefix = "interopbench-";
constexpr const char* k_lock = ".lock";
constexpr const char* k_lock_new = ".lock.new";

WriteError write_error(const std::string& path, int err, const char* doing) {
    return WriteError(fmt::format("cannot {} '{}': {}", doing, path, std::strerror(err)));
}

/// The run folders this process holds (device, inode): a sweep leaves them, also where locks
/// are per process (flock emulated by POSIX locks on NFS) and the lock would not say so.
std::mutex g_held_mutex;
std::set<std::pair<dev_t, ino_t>> g_held;

bool held_here(const struct stat& st) {
    std::lock_guard<std::mutex> lock(g_held_mutex);
    return g_held.count({st.st_dev, st.st_ino}) != 0;
}

/// Removes everything in the folder `dir` but the entry `keep`: links are removed, never
/// followed; folders at most 32 levels deep.
void remove_contents(int dir, const char* keep, int depth = 0) {
    const int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    DIR* d = ::fdopendir(fd);
    if (!d) {
        ::close(fd);
        return;
    }
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != ".." && (!keep || name != keep)) names.push_back(name);
    }
    ::closedir(d);
    for (const std::string& name : names) {
        if (::unlinkat(dir, name.c_str(), 0) == 0 || errno != EISDIR || depth >= 32) continue;
        const int sub = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) continue;
        remove_contents(sub, nullptr, depth + 1);
        ::close(sub);
        (void)::unlinkat(dir, name.c_str(), AT_REMOVEDIR);
    }
}

} // namespace

std::string temp_folder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = tmp && *tmp ? tmp : "/tmp";
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (const TrustedPath held = open_trusted(dir, TrustRule::temp_folder); !held)
        throw UsageError(fmt::format("TMPDIR {}", held.problem()), held.fix());
    return dir;
}

// ---- run folders ------------------------------------------------------------------------------

RunFolder::RunFolder(const std::string& parent, const std::string& prefix) {
    std::string tmpl = fmt::format("{}/{}{}-XXXXXX", parent, prefix, static_cast<long>(::getpid()));
    if (!::mkdtemp(tmpl.data())) throw write_error(tmpl, errno, "create the folder");
    m_path = tmpl;
    m_guard = cleanup::Guard(tmpl, true);
    m_fd = ::open(tmpl.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st {};
    if (m_fd < 0 || ::fstat(m_fd, &st) != 0) {
        const int err = errno;
        remove();
        throw write_error(tmpl, err, "open the folder");
    }
    {
        std::lock_guard<std::mutex> lock(g_held_mutex);
        g_held.insert({st.st_dev, st.st_ino});
    }
    // The lock file is locked under another name, then named: a sweep never finds `.lock`
    // unlocked while this process lives. Where the file system has no locks, the folder gets
    // none and no sweep ever removes it.
    const int lock = ::openat(m_fd, k_lock_new, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lock < 0) {
        const int err = errno;
        remove();
        throw write_error(m_path + "/" + k_lock_new, err, "create");
    }
    if (::flock(lock, LOCK_EX | LOCK_NB) == 0 && ::renameat(m_fd, k_lock_new, m_fd, k_lock) == 0) {
        m_lock = lock;
        m_lock_guard = cleanup::Guard(m_path + "/" + k_lock);
    } else {
        (void)::unlinkat(m_fd, k_lock_new, 0);
        ::close(lock);
    }
}

RunFolder::~RunFolder() { remove(); }

RunFolder::RunFolder(RunFolder&& other) noexcept
    : m_path(std::move(other.m_path)), m_fd(std::exchange(other.m_fd, -1)), m_lock(std::exchange(other.m_lock, -1)),
      m_guard(std::move(other.m_guard)), m_lock_guard(std::move(other.m_lock_guard)) {
    other.m_path.clear();
}

RunFolder& RunFolder::operator=(RunFolder&& other) noexcept {
    if (this != &other) {
        remove();
        m_path = std::exchange(other.m_path, {});
        m_fd = std::exchange(other.m_fd, -1);
        m_lock = std::exchange(other.m_lock, -1);
        m_guard = std::move(other.m_guard);
        m_lock_guard = std::move(other.m_lock_guard);
    }
    return *this;
}

void RunFolder::remove() noexcept {
    if (m_path.empty()) return;
    if (m_fd >= 0) {
        remove_contents(m_fd, k_lock);
        (void)::unlinkat(m_fd, k_lock, 0);
        struct stat st {};
        if (::fstat(m_fd, &st) == 0) {
            std::lock_guard<std::mutex> lock(g_held_mutex);
            g_held.erase({st.st_dev, st.st_ino});
        }
    }
    m_lock_guard.release();
    m_guard.remove(); // the folder, now empty
    // The lock goes last: until the folder is gone, no sweep may take it.
    if (m_lock >= 0) ::close(std::exchange(m_lock, -1));
    if (m_fd >= 0) ::close(std::exchange(m_fd, -1));
    m_path.clear();
}

bool remove_ended_run_folder(const std::string& path) {
    const int dir = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (dir < 0) return false;
    bool removed = false;
    struct stat st {};
    // Only this user's own folders (never a link), as mkdtemp made them, that this process
    // does not hold.
    if (::fstat(dir, &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0 && !held_here(st)) {
        const int lock = ::openat(dir, k_lock, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat ls {};
        // Taken: no live run holds it. Still linked once taken: not a lock file another sweep
        // has just removed with its folder.
        if (lock >= 0 && ::fstat(lock, &ls) == 0 && S_ISREG(ls.st_mode) && ::flock(lock, LOCK_EX | LOCK_NB) == 0 &&
            ::fstat(lock, &ls) == 0 && ls.st_nlink > 0) {
            remove_contents(dir, k_lock);
            (void)::unlinkat(dir, k_lock, 0);
            removed = ::rmdir(path.c_str()) == 0;
        }
        if (lock >= 0) ::close(lock);
    }
    ::close(dir);
    return removed;
}

// ---- the private folder -----------------------------------------------------------------------

const std::string& private_dir() {
    static std::mutex mutex;
    static RunFolder dir;
    std::lock_guard<std::mutex> lock(mutex);
    if (dir.path().empty()) {
        const std::string root = temp_folder();
        remove_stale_private_dirs();
        dir = RunFolder(root, k_prefix);
    }
    return dir.path();
}

int remove_stale_private_dirs() {
    const std::string root = temp_folder();
    DIR* d = ::opendir(root.c_str());
    if (!d) return 0;
    std::vector<std::string> found;
    const std::string prefix = k_prefix;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name.rfind(prefix, 0) != 0) continue;
        // interopbench-<pid>-XXXXXX: digits, a dash, six characters.
        const std::string rest = name.substr(prefix.size());
        const auto dash = rest.find('-');
        if (dash == std::string::npos || dash == 0 || dash > 9 || rest.size() != dash + 7) continue;
        bool digits = true;
        for (std::size_t i = 0; i < dash; ++i) digits = digits && rest[i] >= '0' && rest[i] <= '9';
        if (digits) found.push_back(root + "/" + name);
    }
    ::closedir(d);
    int removed = 0;
    for (const std::string& path : found) removed += remove_ended_run_folder(path);
    return removed;
}

// ---- new files ----------------------------------------------------------------------------------

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

void make_fresh_file(const TrustedPath& dir, const std::string& name) {
    const std::string path = dir.path() == "/" ? "/" + name : dir.path() + "/" + name;
    struct stat st {};
    if (::fstatat(dir.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode))
            throw UsageError(fmt::format("'{}' is a symbolic link: nothing is written through a link", path),
                             "remove the link, or give another folder");
        if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
            throw UsageError(fmt::format("'{}' is already there and is not a file of yours: it is not replaced", path),
                             "remove it, or give another folder");
        if (::unlinkat(dir.fd(), name.c_str(), 0) != 0 && errno != ENOENT) throw write_error(path, errno, "remove the old");
    }
    const int fd = ::openat(dir.fd(), name.c_str(), O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == EEXIST)
            throw UsageError(fmt::format("'{}' appeared while it was made: nothing was written through it", path),
                             "give a folder nobody else writes to");
        throw write_error(path, errno, "create");
    }
    ::close(fd);
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

} // namespace interopbench
