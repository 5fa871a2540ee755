// The test runner. Every test's scratch files go under one directory of this process
// (TMPDIR is pointed there, so fs::temp_directory_path() and the binaries the tests start
// use it too), and that directory is removed when the tests end, pass or fail.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    const char* outer = std::getenv("TMPDIR");
    const fs::path root = fs::path(outer && *outer ? outer : "/tmp") / ("interopbench-tests-" + std::to_string(::getpid()));
    std::error_code ec;
    fs::create_directories(root, ec);
    if (!ec) ::setenv("TMPDIR", root.c_str(), 1);
    doctest::Context context(argc, argv);
    const int code = context.run();
    if (!ec) fs::remove_all(root, ec);
    return code;
}
