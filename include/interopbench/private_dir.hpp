#pragma once
/// Files the tool makes for itself, safe on a machine other users share (as root too): never a
/// name another user can guess or take first, never through a link the tool did not make.
#include <string>

namespace interopbench {

/// The process's private directory, $TMPDIR (else /tmp) + "/interopbench-<pid>-XXXXXX" made by
/// mkdtemp (mode 0700, a random name nobody can take first), created on first use and
/// removed when the process ends (also on a caught signal). What the tool writes only for
/// itself (round plans and their results) goes there; files in it are guarded by their
/// owners. Throws WriteError when it cannot be made.
const std::string& private_dir();

/// Creates `path` as a new file: O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, so anything already
/// there (a file, a symbolic link to one) makes it fail. Returns the descriptor (close-on-exec);
/// throws WriteError naming the path.
int create_new_file(const std::string& path, int flags = 0);

/// Creates a new file in `dir` named prefix + six random characters + suffix (mkostemps:
/// O_EXCL, never through a link). Returns the descriptor and sets `path`; throws WriteError.
int create_unique_file(const std::string& dir, const std::string& prefix, const std::string& suffix, std::string& path);

/// Writes all of `content` to `fd` and flushes it to the disk; throws WriteError naming `path`.
void write_all(int fd, const std::string& content, const std::string& path);

/// Removes `path` (and everything in it) when it is a folder of a process `pid` that is gone,
/// made by mkdtemp for this user: a directory (not a link) owned by this user, mode 0700.
/// Returns whether it was removed. Folders of live processes, and anything else, are left.
bool remove_folder_of_dead_process(const std::string& path, long pid);

/// Removes private directories of this user's processes that are gone (kill -9 cannot be
/// caught): $TMPDIR/interopbench-<pid>-XXXXXX owned by this user, pid not running. Returns
/// how many were removed.
int remove_stale_private_dirs();

} // namespace interopbench
