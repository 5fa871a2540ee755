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

/// The whole file at `p` (empty when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

} // namespace interopbench::testing
