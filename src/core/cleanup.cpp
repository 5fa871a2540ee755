#include "interopbench/cleanup.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <utility>

namespace interopbench::cleanup {
namespace {

// Fixed slots so that the signal path touches no allocator: a slot is free (0), being
// filled or emptied (1), or armed (2). Only armed slots are read by the signal handler.
constexpr std::size_t k_path_max = 4096;
struct Slot {
    std::atomic<int> state{0};
    bool directory = false;
    char path[k_path_max] = {};
};
Slot g_slots[k_max_guarded];

int claim(const std::string& path, bool directory) {
    if (path.size() >= k_path_max) return -1;
    for (int i = 0; i < k_max_guarded; ++i) {
        int expected = 0;
        if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
            std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
            g_slots[i].directory = directory;
            g_slots[i].state.store(2);
            return i;
        }
    }
    return -1;
}

void free_slot(int slot) {
    if (slot < 0) return;
    g_slots[slot].state.store(1);
    g_slots[slot].path[0] = '\0';
    g_slots[slot].state.store(0);
}

std::atomic<int> g_groups[k_max_groups] = {}; // 0: free, else a guarded process group id

void remove_path(const char* path, bool directory) {
    if (directory) (void)::rmdir(path);
    else (void)::unlink(path);
}

} // namespace

Guard::Guard(std::string path, bool directory)
    : m_path(std::move(path)), m_directory(directory), m_slot(claim(m_path, directory)) {}

Guard::~Guard() { remove(); }

Guard::Guard(Guard&& other) noexcept
    : m_path(std::exchange(other.m_path, {})), m_directory(other.m_directory), m_slot(std::exchange(other.m_slot, -1)) {}

Guard& Guard::operator=(Guard&& other) noexcept {
    if (this != &other) {
        remove();
        m_path = std::exchange(other.m_path, {});
        m_directory = other.m_directory;
        m_slot = std::exchange(other.m_slot, -1);
    }
    return *this;
}

void Guard::remove() noexcept {
    if (m_path.empty()) return;
    remove_path(m_path.c_str(), m_directory);
    release();
}

void Guard::release() noexcept {
    free_slot(m_slot);
    m_slot = -1;
    m_path.clear();
}

void remove_all_from_signal() noexcept {
    for (auto& g : g_groups)
        if (const int pgid = g.load(); pgid > 0) (void)::kill(-pgid, SIGKILL);
    for (bool directories : {false, true})
        for (auto& s : g_slots)
            if (s.state.load() == 2 && s.directory == directories) remove_path(s.path, s.directory);
}

int guard_process_group(int pgid) noexcept {
    if (pgid <= 0) return -1;
    for (int i = 0; i < k_max_groups; ++i) {
        int expected = 0;
        if (g_groups[i].compare_exchange_strong(expected, pgid)) return i;
    }
    return -1;
}

void release_process_group(int slot) noexcept {
    if (slot >= 0 && slot < k_max_groups) g_groups[slot].store(0);
}

int guarded_group_count() noexcept {
    int n = 0;
    for (const auto& g : g_groups) n += g.load() != 0;
    return n;
}

int guarded_count() noexcept {
    int n = 0;
    for (const auto& s : g_slots) n += s.state.load() == 2;
    return n;
}

} // namespace interopbench::cleanup
