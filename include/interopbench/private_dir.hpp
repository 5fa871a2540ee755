#pragma once
/// Files the tool makes for itself, safe on a machine other users share (as root too): never a
/// name another user can guess or take first, never through a link the tool did not make, never
/// in a folder another user may change (trust.hpp). Each folder of a run holds a lock for the
/// run's life, so that sweeping the folders of killed runs never takes one of a live run, in
/// whatever PID namespace or on whatever host shares the folder.
#include <string>

#include "interopbench/cleanup.hpp"
#include "interopbench/trust.hpp"

namespace interopbench {

/// The folder for temporary files: $TMPDIR (else /tmp) without trailing slashes, once it passed
/// TrustRule::temp_folder. A TMPDIR another user may change is refused, not replaced: throws
/// UsageError naming its offending component and the fix.
std::string temp_folder();

/// A folder of one run: `parent/PREFIX<pid>-XXXXXX`, made by mkdtemp (mode 0700, a name nobody
/// can take first; the pid is for people) and holding `.lock`, a file this process keeps locked
/// (flock) while the folder exists: a sweep takes that lock to prove that no live run holds the
/// folder (remove_ended_run_folder). Destroying it removes the folder and what is in it (links
/// never followed), the lock file last; the signal path removes the lock file, then the folder
/// once empty. Works through the folder's descriptor, never its path again.
class RunFolder {
public:
    RunFolder() = default;
    /// Makes the folder in `parent`, a folder already found trustworthy. Throws WriteError.
    RunFolder(const std::string& parent, const std::string& prefix);
    ~RunFolder();
    RunFolder(RunFolder&& other) noexcept;
    RunFolder& operator=(RunFolder&& other) noexcept;
    RunFolder(const RunFolder&) = delete;
    RunFolder& operator=(const RunFolder&) = delete;

    const std::string& path() const { return m_path; }

private:
    void remove() noexcept;
    std::string m_path;
    int m_fd = -1, m_lock = -1; ///< the folder and its lock file
    cleanup::Guard m_guard, m_lock_guard;
};

/// Removes `path` and what is in it when it is a run folder of this user's (a directory, not a
/// link, mode 0700) whose lock no live run holds: its `.lock` could be locked here. A folder
/// without a lock file (being made, or made by an older version), one whose lock is held, one
/// this process holds, and anything else, are left. Returns whether it was removed.
bool remove_ended_run_folder(const std::string& path);

/// The process's private folder: a RunFolder `interopbench-<pid>-XXXXXX` in temp_folder(),
/// made on first use (after sweeping the private folders of ended runs of this user there) and
/// removed when the process ends (also on a caught signal). What the tool writes only for itself
/// (round plans and their results, logs of libraries) goes there. Throws UsageError when TMPDIR
/// may not be trusted, WriteError when the folder cannot be made.
const std::string& private_dir();

/// Removes the private folders of this user's runs that ended (kill -9 cannot be caught):
/// `interopbench-<pid>-XXXXXX` in temp_folder() whose lock could be taken. Returns how many
/// were removed. Throws UsageError as temp_folder() does.
int remove_stale_private_dirs();

/// Creates `path` as a new file: O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, so anything already
/// there (a file, a symbolic link to one) makes it fail. Returns the descriptor (close-on-exec);
/// throws WriteError naming the path.
int create_new_file(const std::string& path, int flags = 0);

/// Creates a new file in `dir` named prefix + six random characters + suffix (mkostemps:
/// O_EXCL, never through a link). Returns the descriptor and sets `path`; throws WriteError.
int create_unique_file(const std::string& dir, const std::string& prefix, const std::string& suffix, std::string& path);

/// Makes `name` in the held folder `dir` a new empty file of this user's (O_EXCL|O_NOFOLLOW,
/// mode 0600) for another process of the tool to replace (fleet's re-measured reports): an old
/// regular file of this user's there is removed first; a symbolic link, another user's file or
/// anything else is refused, never written through. Throws UsageError naming the path and the fix.
void make_fresh_file(const TrustedPath& dir, const std::string& name);

/// Writes all of `content` to `fd` and flushes it to the disk; throws WriteError naming `path`.
void write_all(int fd, const std::string& content, const std::string& path);

} // namespace interopbench
