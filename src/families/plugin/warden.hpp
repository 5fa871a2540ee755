#pragma once
// The warden: a small process between interopbench and one plugin, so that nothing a plugin
// starts outlives interopbench, even when interopbench is killed with SIGKILL.
//
// interopbench starts its own binary as `<exe> __plugin-warden CGROUP CMD...` in the plugin's
// folder with the plugin's pipes on 0, 1 and 2, a status pipe on 3, a lifeline on 4 (a pipe
// whose only writer is interopbench) and the plugin's program on 5 (O_PATH, held since it was
// checked: the warden runs it from there with execveat, CMD[0] naming it; without 5, a script,
// CMD[0] is run by its path). CGROUP is a cgroup (v2) interopbench made for the plugin, or "-"
// where none could be made. The warden is the subreaper of everything the plugin starts (a
// child that starts a session of its own comes back to it, not to init), starts the plugin in a
// process group of its own and in the cgroup (whatever the plugin starts stays in it, however
// it forks), and reports on the status pipe, one line each:
//   started PID | failed ERRNO | exited CODE | signal NUMBER
// When the lifeline closes (interopbench ended it, or interopbench died) or on SIGTERM, the
// warden ends everything the plugin started (end_plugin) and exits. The plugin is kept as a
// zombie until then, so its process group id cannot be taken by another process while
// interopbench may still signal that group. Should the warden itself be killed, its status
// pipe closes: interopbench sees that at once and ends the plugin's cgroup and group itself.
#include <string>
#include <string_view>
#include <vector>

namespace interopbench::plugin {

/// The first argument that makes main() run the warden instead of the tool.
inline constexpr std::string_view k_warden_command = "__plugin-warden";
inline constexpr int k_warden_status_fd = 3;
inline constexpr int k_warden_lifeline_fd = 4;
inline constexpr int k_warden_program_fd = 5;
/// The descriptors the warden is started with: 0 to 5 (5 only for a program that is no script).
inline constexpr int k_warden_fds = 6;

/// One process of /proc: its parent, group, session, state letter and name.
struct ProcEntry {
    long pid = 0, ppid = 0, pgrp = 0, sid = 0;
    char state = 0;
    std::string name;
    bool ended() const { return state == 'Z' || state == 'X'; }
};

/// Every process below `root` (not `root` itself), zombies included, found through /proc.
std::vector<ProcEntry> descendants_of(long root);

/// The live processes below the warden `warden` other than its plugin `plugin` (the plugin's own
/// children included), read from the kernel's lists of each process's children. A process that
/// forks anew and exits moves from its parent's list to the warden's while a scan reads them, so
/// a scan that finds none is made again, a few times, before none is the answer.
std::vector<ProcEntry> live_below(long warden, long plugin);

/// A new cgroup (v2) for one plugin, below this process's own (`interopbench-plugin-PID-N`),
/// where this process may make one and the kernel can kill a cgroup whole (cgroup.kill, Linux
/// 5.14); else "" (the plugin is then contained by its process group and the warden's scans).
/// INTEROPBENCH_PLUGIN_CGROUP=off (for tests) makes none.
std::string make_plugin_cgroup();
/// Kills every process in `cgroup` at once (cgroup.kill: forks during it are killed too).
void kill_cgroup(const std::string& cgroup) noexcept;
/// Removes `cgroup` once its processes are gone (waiting up to a second for the kernel).
void remove_cgroup(const std::string& cgroup) noexcept;

/// The warden's main: argv[1] is k_warden_command, argv[2] the cgroup or "-", argv[3..] the
/// plugin's command. Returns the exit code (0 after a clean end).
int warden_main(int argc, char** argv);

} // namespace interopbench::plugin
