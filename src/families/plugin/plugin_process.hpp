#pragma once
// One plugin process: started by its warden (warden.hpp) in its own process group (and cgroup,
// where one may be made) with pipes on its stdin, stdout and stderr; spoken to in JSON lines
// (one request, one reply), each reply awaited with a deadline; its stderr forwarded to ours,
// line by line, with a prefix. Whatever goes wrong (exit, crash, silence past the deadline, a
// line that is not a JSON object, its warden killed) kills the whole cgroup and group and
// throws ProtocolError, so nothing the plugin started outlives the question.
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "families/plugin/warden.hpp"
#include "interopbench/errors.hpp"

namespace interopbench::plugin {

/// The plugin did not answer as the protocol says; the process group has been killed.
class ProtocolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Process {
public:
    /// `label` prefixes the forwarded stderr lines and names the plugin in errors.
    explicit Process(std::string label) : m_label(std::move(label)) {}
    ~Process() { kill(); }
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    /// Starts `argv` as the leader of a new process group, in the folder held by `cwd_fd`,
    /// running the program held by `program_fd` (argv[0] its path, for messages and the
    /// plugin's own argv[0]): what runs is what was checked, whatever its path names now. A
    /// `program_fd` of -1 runs argv[0] by its path (a script). Throws ProtocolError when it
    /// cannot be started.
    void start(const std::vector<std::string>& argv, int cwd_fd, int program_fd);
    bool running() const { return m_pid > 0; }
    /// Whether the plugin has exited (its warden said so), waiting up to `wait_ms`; how it
    /// ended is then in the text exit_text() returns.
    bool ended(int wait_ms) noexcept;

    /// Writes `message` as one line and returns the reply: the next line, a JSON object,
    /// within `timeout_s`. Throws ProtocolError (after killing the group) on a timeout, an
    /// exit, a write error or a reply that is not a JSON object; Interrupted on a stop signal.
    nlohmann::json request(const nlohmann::json& message, double timeout_s);

    /// The live processes the plugin started (anything below its warden but the plugin, in
    /// whatever group or session), as "PID (NAME)".
    std::vector<std::string> strays() const;

    /// Closes the plugin's stdin (its cue to exit), waits up to `grace_s` for it to exit,
    /// then kills whatever is left of the group and reaps the leader. Returns what had to be
    /// killed ("" when the plugin exited alone and left nothing behind). Never throws.
    std::string stop(double grace_s) noexcept;

    /// Kills the group at once and reaps the leader. Never throws.
    void kill() noexcept;

private:
    std::vector<ProcEntry> live_descendants() const; ///< below the warden, the plugin and zombies left out
    void close_fds() noexcept;
    void forward_stderr(bool everything) noexcept;
    bool read_stderr() noexcept;
    bool read_stdout() noexcept; ///< what stdout holds now, into m_outbuf; whether anything came
    std::string exit_text(); ///< how the leader ended (waits a moment for it), then kills
    [[noreturn]] void fail(const std::string& what);

    std::string m_label;
    int m_pid = -1, m_warden = -1, m_in = -1, m_out = -1, m_err = -1, m_status = -1, m_lifeline = -1;
    int m_guard = -1;
    std::string m_cgroup; ///< the plugin's cgroup, or "" (warden.hpp)
    std::string m_outbuf, m_errbuf, m_statusbuf;
    std::string m_end; ///< how the plugin ended, once its warden said so
};

} // namespace interopbench::plugin
