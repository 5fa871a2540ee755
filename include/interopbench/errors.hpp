#pragma once
/// Error kinds of interopbench, each with its own consequence:
///  - UsageError: the user's input is wrong (sizes, names, files, reports, profiles).
///    The CLI prints `error: <what>` and `hint: <fix>` on one line each and exits 2.
///  - ConfigError: one configuration could not run (setup failed); CheckFailed, a kind of
///    it, when its data came out wrong. The runner records the result as `failed` and goes on.
///  - Unsupported: a configuration cannot run here; its result is `skipped` with the reason.
///  - FatalDeviceError: the device is unusable (sticky CUDA error, lost context).
///    The runner stops measuring, still writes the report, and the run ends.
///  - Interrupted: a stop asked for while a configuration was set up: it ends `interrupted`.
///  - WriteError: an output file could not be written; the run ends with exit 1.
#include <stdexcept>
#include <string>

namespace interopbench {

/// Bad input from the user. `hint()` says how to fix it (may be empty).
class UsageError : public std::runtime_error {
public:
    explicit UsageError(const std::string& what, std::string hint = {})
        : std::runtime_error(what), m_hint(std::move(hint)) {}
    /// How to fix the input; empty when there is nothing useful to say.
    const std::string& hint() const noexcept { return m_hint; }

private:
    std::string m_hint;
};

/// One configuration failed; the run goes on.
class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// This configuration cannot run on this machine (not enough host memory, a missing
/// capability found while setting up): the runner records it as skipped with the reason.
class Unsupported : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The configuration ran but its data was wrong (verification failed).
class CheckFailed : public ConfigError {
public:
    using ConfigError::ConfigError;
};

/// The device can no longer be used; the run stops, the report is still written.
class FatalDeviceError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The run was asked to stop (Ctrl-C) while a configuration prepared something long (a
/// storage file being created): the configuration ends `interrupted`, nothing half-made is left.
class Interrupted : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A file could not be written (disk full, directory removed, permissions changed mid-run).
/// Not a usage error: the input was fine. The message names the path and the OS error.
class WriteError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Exit codes, decided only in main.
enum class ExitCode : int {
    ok = 0,           ///< success
    failed = 1,       ///< a gate, a check or a configuration failed
    usage = 2,        ///< usage or input error
    inconclusive = 3, ///< inconclusive results, only when asked for
};

} // namespace interopbench
