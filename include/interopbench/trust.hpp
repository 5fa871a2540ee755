#pragma once
/// Whether a path may be trusted on a machine other users share, the tool run as root too, and
/// the path held open once it was found so, so that what was checked is what is used.
///
/// The rule (sudo's and git's safe.directory's, over the whole path): every component from /
/// down, symbolic links and the folders their targets lie in included, belongs to root or to
/// this user, and no other user may write it: neither others nor a group other than root's or
/// this user's. One exception: a folder that others may write but that is sticky (like /tmp),
/// owned by root or this user, may hold the path, because in it only an entry's owner may
/// rename or remove the entry, and the entries below it must belong to root or this user too.
/// The path itself may be such a sticky folder only where the tool makes new entries of its own
/// in it (TrustRule::storage_folder, temp_folder, confirm_folder).
///
/// The walk opens every component relative to the folder before it (O_NOFOLLOW: links are read
/// and their targets walked the same way), checks the opened component itself (fstat), and
/// returns the last one held: later uses go through the descriptor (openat, fchdir, execveat),
/// never through the path again.
#include <optional>
#include <string>

namespace interopbench {

/// What the path is for: what it must be, whether a sticky folder may be it, how it is held
/// and what the fix says.
enum class TrustRule {
    plugin_program,  ///< a program or script a plugin runs: a regular file, held O_PATH (run from it)
    plugin_manifest, ///< a plugin manifest: a regular file, held open for reading
    plugin_folder,   ///< a folder of plugins: a folder, held open for reading
    storage_folder,  ///< a --storage-dir: a folder the tool makes its own entries in (sticky allowed)
    storage_file,    ///< a storage file kept by an earlier run: a regular file, not a link, held for reading
    temp_folder,     ///< TMPDIR: a folder the tool makes its own entries in (sticky allowed)
    confirm_folder,  ///< fleet's --confirm-dir: a folder the tool makes its own entries in (sticky allowed)
    library_config,  ///< a configuration file of a library the tool loads (cuFile's): a regular file, held for reading
};

/// A path opened after it was found trustworthy (a descriptor, close-on-exec), or why it was not.
class TrustedPath {
public:
    TrustedPath() = default;
    ~TrustedPath();
    TrustedPath(TrustedPath&& other) noexcept;
    TrustedPath& operator=(TrustedPath&& other) noexcept;
    TrustedPath(const TrustedPath&) = delete;
    TrustedPath& operator=(const TrustedPath&) = delete;

    explicit operator bool() const { return m_fd >= 0; }
    int fd() const { return m_fd; }
    /// The path as resolved (absolute, links followed): what a message names.
    const std::string& path() const { return m_path; }
    /// When not trusted: the path given, its offending component and what is wrong, one line.
    const std::string& problem() const { return m_problem; }
    /// When not trusted: what to do about it.
    const std::string& fix() const { return m_fix; }
    /// problem and fix as one line, "" when trusted.
    std::string why() const;

private:
    friend struct TrustWalk; // trust.cpp: the only maker
    int m_fd = -1;
    std::string m_path, m_problem, m_fix;
};

/// Walks `path` (relative to the working directory when not absolute) under `rule` and returns
/// it held, or why not. Never blocks: a FIFO or device is refused without being opened.
TrustedPath open_trusted(const std::string& path, TrustRule rule);

/// The same for `path` relative to the trusted folder `folder` (its ancestors were checked
/// when it was opened); an absolute `path`, or a link to one, is walked from /.
TrustedPath open_trusted_at(const TrustedPath& folder, const std::string& path, TrustRule rule);

/// Why `path` may not be trusted under `rule` (problem; fix, one line), or nothing.
std::optional<std::string> untrusted(const std::string& path, TrustRule rule);

} // namespace interopbench
