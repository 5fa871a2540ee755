#pragma once
/// Files the tool creates and must not leave behind (report temporaries, storage test files,
/// scratch directories), and the process groups it starts (plugins). The owner holds a Guard while the path exists; the guard removes it
/// when destroyed. When the process is ended first (a second Ctrl-C, SIGTERM or SIGHUP while
/// a run is stopping), the session's signal handler calls remove_all_from_signal(), which
/// removes every path still guarded. kill -9 cannot be caught: owners that care remove stale
/// files of their own naming on the next run.
#include <string>

namespace interopbench::cleanup {

/// Most paths guarded at once; a guard beyond that still removes its path when destroyed,
/// but is not covered by the signal path.
inline constexpr int k_max_guarded = 256;

class Guard {
public:
    Guard() = default;
    /// Guards `path`: a file, or with `directory` an (eventually empty) directory.
    explicit Guard(std::string path, bool directory = false);
    ~Guard();
    Guard(Guard&& other) noexcept;
    Guard& operator=(Guard&& other) noexcept;
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

    /// Removes the path now (unlink or rmdir; a missing path is fine) and stops guarding it.
    void remove() noexcept;
    /// Keeps the path (it was renamed into place or is wanted) and stops guarding it.
    void release() noexcept;
    const std::string& path() const { return m_path; }
    bool active() const { return !m_path.empty(); }

private:
    std::string m_path;
    bool m_directory = false;
    int m_slot = -1;
};

/// Async-signal-safe: kills every guarded process group (SIGKILL), then removes every guarded
/// path, files first, then directories. For signal handlers; never throws, allocates nothing.
void remove_all_from_signal() noexcept;

/// Most process groups guarded at once; beyond that a group is still killed by its owner,
/// but not by the signal path.
inline constexpr int k_max_groups = 64;

/// Guards the process group `pgid` (a child started as a group leader): the signal path
/// kills it. Returns the slot to release, or -1 when every slot is taken.
int guard_process_group(int pgid) noexcept;
/// Stops guarding the group of `slot` (its owner has killed and reaped it); -1 is ignored.
void release_process_group(int slot) noexcept;

/// How many paths are guarded now (for tests).
int guarded_count() noexcept;
/// How many process groups are guarded now (for tests).
int guarded_group_count() noexcept;

} // namespace interopbench::cleanup
