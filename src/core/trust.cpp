// Whether a path may be trusted, and the path held once it was. See trust.hpp.
#include "interopbench/trust.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <utility>

#include <fmt/format.h>

namespace interopbench {

TrustedPath::~TrustedPath() {
    if (m_fd >= 0) ::close(m_fd);
}

TrustedPath::TrustedPath(TrustedPath&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)), m_path(std::move(other.m_path)), m_problem(std::move(other.m_problem)),
      m_fix(std::move(other.m_fix)) {}

TrustedPath& TrustedPath::operator=(TrustedPath&& other) noexcept {
    if (this != &other) {
        if (m_fd >= 0) ::close(m_fd);
        m_fd = std::exchange(other.m_fd, -1);
        m_path = std::move(other.m_path);
        m_problem = std::move(other.m_problem);
        m_fix = std::move(other.m_fix);
    }
    return *this;
}

std::string TrustedPath::why() const { return m_problem.empty() ? std::string{} : m_problem + "; " + m_fix; }

namespace {

constexpr const char* k_plugin_fix = "keep plugins where only root or you may change them, and every folder above them too";

struct Rule {
    bool folder;      // the path is a folder, else a regular file
    bool sticky_leaf; // the path itself may be a sticky folder others may write
    bool leaf_link;   // the path may be a symbolic link (its target is walked)
    int open_flags;   // how the path is held
    const char* fix;
};

Rule rule_of(TrustRule rule) {
    switch (rule) {
    case TrustRule::plugin_program: return {false, false, true, O_PATH, k_plugin_fix};
    case TrustRule::plugin_manifest: return {false, false, true, O_RDONLY, k_plugin_fix};
    case TrustRule::plugin_folder: return {true, false, true, O_RDONLY | O_DIRECTORY, k_plugin_fix};
    case TrustRule::storage_folder:
        return {true, true, true, O_RDONLY | O_DIRECTORY,
                "give --storage-dir a folder that only root or you may change, below folders likewise (a sticky "
                "folder such as /tmp may hold it)"};
    case TrustRule::storage_file: return {false, false, false, O_RDONLY, "remove it or give another --storage-dir"};
    case TrustRule::temp_folder:
        return {true, true, true, O_RDONLY | O_DIRECTORY,
                "set TMPDIR to a folder that only root or you may change, below folders likewise, or unset it to use /tmp"};
    case TrustRule::confirm_folder:
        return {true, true, true, O_RDONLY | O_DIRECTORY,
                "give --confirm-dir a folder that only root or you may change, below folders likewise"};
    case TrustRule::library_config:
        return {false, false, true, O_RDONLY,
                "keep the file where only root or you may change it, and every folder above it too, or name another"};
    }
    return {false, false, false, O_PATH, ""};
}

/// "" when root or this user owns it.
std::string owner_fault(const struct stat& st) {
    if (st.st_uid == 0 || st.st_uid == ::geteuid()) return {};
    return fmt::format("belongs to another user (uid {}), not to root or you", st.st_uid);
}

/// What makes an opened component untrustworthy, or "": another owner, or others may write it
/// (a sticky folder excepted where `sticky_ok`).
std::string fault(const struct stat& st, bool sticky_ok) {
    if (std::string bad = owner_fault(st); !bad.empty()) return bad;
    const bool world = st.st_mode & S_IWOTH;
    const bool group = (st.st_mode & S_IWGRP) && st.st_gid != 0 && st.st_gid != ::getegid();
    if (!world && !group) return {};
    if (sticky_ok && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX)) return {};
    if (world) return fmt::format("may be written by any user (mode {:o})", st.st_mode & 07777);
    return fmt::format("may be written by group {} (mode {:o})", st.st_gid, st.st_mode & 07777);
}

std::string kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "of another kind";
}

std::string examine_error(int err) {
    return err == ENOENT ? std::string("does not exist") : fmt::format("cannot be examined: {}", std::strerror(err));
}

void split_into(const std::string& path, std::deque<std::string>& out, bool front) {
    std::deque<std::string> parts;
    std::size_t at = 0;
    while (at <= path.size()) {
        const std::size_t slash = path.find('/', at);
        const std::string c = path.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
        if (!c.empty() && c != ".") parts.push_back(c);
        if (slash == std::string::npos) break;
        at = slash + 1;
    }
    if (front) out.insert(out.begin(), parts.begin(), parts.end());
    else out.insert(out.end(), parts.begin(), parts.end());
}

std::string join(const std::string& dir, const std::string& name) { return dir == "/" ? "/" + name : dir + "/" + name; }

std::string parent_of(const std::string& dir) {
    const auto slash = dir.rfind('/');
    return slash == 0 || slash == std::string::npos ? std::string("/") : dir.substr(0, slash);
}

/// The folder the walk stands in: held (O_PATH) and already checked.
struct Here {
    int fd = -1;
    std::string path;
    Here() = default;
    Here(int f, std::string p) : fd(f), path(std::move(p)) {}
    ~Here() {
        if (fd >= 0) ::close(fd);
    }
    Here(Here&& o) noexcept : fd(std::exchange(o.fd, -1)), path(std::move(o.path)) {}
    Here& operator=(Here&& o) noexcept {
        if (this != &o) {
            if (fd >= 0) ::close(fd);
            fd = std::exchange(o.fd, -1);
            path = std::move(o.path);
        }
        return *this;
    }
};

} // namespace

struct TrustWalk {
    static TrustedPath walk(const TrustedPath* base, const std::string& given, TrustRule which) {
        const Rule rule = rule_of(which);
        TrustedPath out;
        auto refuse = [&](const std::string& component, const std::string& what) {
            if (out.m_fd >= 0) ::close(std::exchange(out.m_fd, -1));
            out.m_problem = component == given ? fmt::format("'{}' {}", given, what)
                                               : fmt::format("'{}': '{}' {}", given, component, what);
            out.m_fix = rule.fix;
            return std::move(out);
        };
        if (given.empty()) return refuse(given, "is an empty path");
        std::deque<std::string> todo;
        Here here;
        // A folder entered: opened relative to where the walk stands, without following a link,
        // and checked as an ancestor (a sticky folder may hold what lies below it).
        auto enter = [&](int at, const char* name, const std::string& path) -> std::string {
            const int fd = ::openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) return errno == ENOTDIR ? std::string("is not a folder") : examine_error(errno);
            Here next(fd, path);
            struct stat st {};
            if (::fstat(fd, &st) != 0) return examine_error(errno);
            if (std::string bad = fault(st, true); !bad.empty()) return bad;
            here = std::move(next);
            return {};
        };
        auto enter_root = [&]() -> std::string { return enter(AT_FDCWD, "/", "/"); };
        if (given.front() == '/' || !base) {
            if (given.front() != '/') {
                char cwd[PATH_MAX];
                if (!::getcwd(cwd, sizeof cwd)) return refuse(given, fmt::format("cannot be placed: {}", std::strerror(errno)));
                split_into(cwd, todo, false);
            }
            if (std::string bad = enter_root(); !bad.empty()) return refuse("/", bad);
        } else {
            const int fd = ::fcntl(base->fd(), F_DUPFD_CLOEXEC, 0);
            if (fd < 0) return refuse(base->path(), examine_error(errno));
            here = Here(fd, base->path());
        }
        split_into(given, todo, false);
        int links = 0;
        while (!todo.empty()) {
            const std::string c = std::move(todo.front());
            todo.pop_front();
            if (c == "..") {
                if (here.path == "/") continue;
                const std::string up = parent_of(here.path);
                if (std::string bad = enter(here.fd, "..", up); !bad.empty()) return refuse(up, bad);
                continue;
            }
            const std::string path = join(here.path, c);
            struct stat st {};
            if (::fstatat(here.fd, c.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return refuse(path, examine_error(errno));
            if (S_ISLNK(st.st_mode)) {
                // Whoever may change the folder holding the link was checked; the link must be of
                // root or this user too (in a sticky folder its owner may replace it). A link's
                // own mode means nothing.
                if (std::string bad = owner_fault(st); !bad.empty()) return refuse(path, bad);
                if (todo.empty() && !rule.leaf_link) return refuse(path, "is a symbolic link, which this tool never made");
                if (++links > 40) return refuse(path, "leads through more than 40 symbolic links (a loop?)");
                char target[PATH_MAX + 1];
                const ssize_t n = ::readlinkat(here.fd, c.c_str(), target, PATH_MAX);
                if (n <= 0) return refuse(path, examine_error(n < 0 ? errno : ENOENT));
                const std::string to(target, static_cast<std::size_t>(n));
                split_into(to, todo, true);
                if (to.front() == '/')
                    if (std::string bad = enter_root(); !bad.empty()) return refuse("/", bad);
                continue;
            }
            if (!todo.empty()) {
                if (std::string bad = enter(here.fd, c.c_str(), path); !bad.empty()) return refuse(path, bad);
                continue;
            }
            // The path itself: refused by its kind before it is opened (a FIFO or device is never
            // opened), then opened without following a link or blocking and checked again.
            if (rule.folder != static_cast<bool>(S_ISDIR(st.st_mode)) || (!rule.folder && !S_ISREG(st.st_mode)))
                return refuse(path, fmt::format("is {}, not {}", kind_of(st.st_mode), rule.folder ? "a folder" : "a regular file"));
            const int fd = ::openat(here.fd, c.c_str(), rule.open_flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            if (fd < 0) return refuse(path, examine_error(errno));
            out.m_fd = fd;
            struct stat held {};
            if (::fstat(fd, &held) != 0) return refuse(path, examine_error(errno));
            if (held.st_dev != st.st_dev || held.st_ino != st.st_ino) return refuse(path, "changed while it was checked");
            if (std::string bad = fault(held, rule.sticky_leaf); !bad.empty()) return refuse(path, bad);
            out.m_path = path;
            return out;
        }
        // The walk ended on a folder it stands in ("/", or a path ending in ".."): that is the path.
        if (!rule.folder) return refuse(here.path, "is a folder, not a regular file");
        const int fd = ::openat(here.fd, ".", rule.open_flags | O_CLOEXEC);
        if (fd < 0) return refuse(here.path, examine_error(errno));
        out.m_fd = fd;
        struct stat held {};
        if (::fstat(fd, &held) != 0) return refuse(here.path, examine_error(errno));
        if (std::string bad = fault(held, rule.sticky_leaf); !bad.empty()) return refuse(here.path, bad);
        out.m_path = here.path;
        return out;
    }
};

TrustedPath open_trusted(const std::string& path, TrustRule rule) { return TrustWalk::walk(nullptr, path, rule); }

TrustedPath open_trusted_at(const TrustedPath& folder, const std::string& path, TrustRule rule) {
    return TrustWalk::walk(&folder, path, rule);
}

std::optional<std::string> untrusted(const std::string& path, TrustRule rule) {
    const TrustedPath p = open_trusted(path, rule);
    if (p) return std::nullopt;
    return p.why();
}

} // namespace interopbench
