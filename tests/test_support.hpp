#pragma once
// Small helpers the test files share. test_main points TMPDIR at one directory per test
// process and removes it at exit, so scratch directories need no cleanup of their own.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace interopbench::testing {

/// An empty directory `name` under this test process's temporary directory.
inline std::filesystem::path scratch(const std::string& name) {
    const std::filesystem::path d = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
}

/// Says that the running test case cannot run here (no GPU, a recorded fixture absent) and
/// why; the caller returns at once. A test process whose every case skipped itself exits 77,
/// which CTest reports as skipped (SKIP_RETURN_CODE), never as passed; a run of many cases
/// lists the skipped ones at the end. Defined in test_main.cpp.
void skip(const std::string& reason);

/// The whole file at `p` (empty when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

} // namespace interopbench::testing
