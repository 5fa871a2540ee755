// The host's copy of the data pattern. See pattern.hpp.
#include "hostio/pattern.hpp"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace interopbench::hostio {
namespace {

template <class F> void parallel_words(std::size_t words, F&& f) {
    const unsigned threads = words < (8u << 20) ? 1u : std::min(16u, std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    const std::size_t chunk = (words + threads - 1) / threads;
    for (unsigned t = 0; t < threads; ++t) {
        const std::size_t b = t * chunk, e = std::min(words, b + chunk);
        if (b >= e) break;
        pool.emplace_back([&f, b, e] { f(b, e); });
    }
    for (auto& th : pool) th.join();
}

} // namespace

void fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed) {
    auto* w = static_cast<std::uint64_t*>(dst);
    const std::size_t words = bytes / 8;
    parallel_words(words, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) w[i] = pattern_word(seed, i);
    });
    const std::uint64_t tail = pattern_word(seed, words);
    auto* t = reinterpret_cast<unsigned char*>(w + words);
    for (std::size_t b = 0; b < bytes % 8; ++b) t[b] = static_cast<unsigned char>(tail >> (8 * b));
}

std::uint64_t count_pattern_mismatches(const void* src, std::size_t bytes, std::uint64_t seed) {
    const auto* w = static_cast<const std::uint64_t*>(src);
    const std::size_t words = bytes / 8;
    std::atomic<std::uint64_t> bad{0};
    parallel_words(words, [&](std::size_t b, std::size_t e) {
        std::uint64_t local = 0;
        for (std::size_t i = b; i < e; ++i) local += w[i] != pattern_word(seed, i);
        bad += local;
    });
    const std::uint64_t tail = pattern_word(seed, words);
    const auto* t = reinterpret_cast<const unsigned char*>(w + words);
    std::uint64_t n = bad.load();
    for (std::size_t b = 0; b < bytes % 8; ++b) n += t[b] != static_cast<unsigned char>(tail >> (8 * b));
    return n;
}

} // namespace interopbench::hostio
