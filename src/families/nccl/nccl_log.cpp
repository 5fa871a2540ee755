// What NCCL's debug log says about the transports it chose (nccl.hpp): text in, facts out,
// no NCCL call, so it is tested on recorded logs anywhere.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "families/nccl/nccl.hpp"

namespace interopbench::nccl {

namespace {

/// The message of an INFO line ("host:pid:tid [dev] NCCL INFO message"), else empty.
std::string_view info_message(std::string_view line) {
    constexpr std::string_view k_tag = "NCCL INFO ";
    const auto at = line.find(k_tag);
    if (at == std::string_view::npos) return {};
    line.remove_prefix(at + k_tag.size());
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    return line;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

/// The text after `prefix` up to `end` (or the line's end), trimmed.
std::string after(std::string_view s, std::string_view prefix, std::string_view end = {}) {
    s.remove_prefix(prefix.size());
    if (!end.empty()) s = s.substr(0, s.rfind(end));
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return std::string(s);
}

/// A path segment that numbers a device or a rank ("0", "1(0)", "2[2]"): not the transport's name.
bool is_index(std::string_view seg) {
    return !seg.empty() && std::isdigit(static_cast<unsigned char>(seg.front())) &&
           std::all_of(seg.begin(), seg.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || std::strchr("()[]", c); });
}

/// "NET/IB/0/GDRDMA" -> "NET/IB/GDRDMA"; "P2P/indirect/2[2]" -> "P2P/indirect".
std::string transport_name(std::string_view via) {
    std::string out;
    while (!via.empty()) {
        const auto slash = via.find('/');
        const std::string_view seg = via.substr(0, slash);
        if (!is_index(seg)) out += (out.empty() ? "" : "/") + std::string(seg);
        via = slash == std::string_view::npos ? std::string_view{} : via.substr(slash + 1);
    }
    return out;
}

} // namespace

nlohmann::json transport_from_log(std::string_view log) {
    std::string using_network, assigned, plugin, builtin;
    std::vector<std::string> via;
    bool net_channels = false, net_gdr = false, hca_enabled = false, hca_disabled = false;
    while (!log.empty()) {
        const auto nl = log.find('\n');
        const std::string_view msg = info_message(log.substr(0, nl));
        log = nl == std::string_view::npos ? std::string_view{} : log.substr(nl + 1);
        if (msg.empty()) continue;
        if (starts_with(msg, "Using network ")) {
            using_network = after(msg, "Using network ");
        } else if (starts_with(msg, "Assigned NET plugin ")) {
            assigned = after(msg, "Assigned NET plugin ", " to comm");
        } else if (starts_with(msg, "NET/Plugin: Loaded net plugin ")) {
            plugin = after(msg, "NET/Plugin: Loaded net plugin ", " (");
        } else if (starts_with(msg, "Successfully loaded external network plugin ")) {
            if (plugin.empty()) plugin = after(msg, "Successfully loaded external network plugin ");
        } else if (starts_with(msg, "NET/IB : Using")) {
            builtin = "IB";
        } else if (starts_with(msg, "NET/Socket : Using") && builtin.empty()) {
            builtin = "Socket";
        } else if (msg.find("GPU Direct RDMA Enabled for HCA") != std::string_view::npos) {
            hca_enabled = true;
        } else if (msg.find("GPU Direct RDMA Disabled for HCA") != std::string_view::npos) {
            hca_disabled = true;
        } else if (starts_with(msg, "Channel ")) {
            const auto at = msg.find(" via ");
            if (at == std::string_view::npos) continue;
            const std::string name = transport_name(msg.substr(at + 5));
            if (name.empty()) continue;
            if (starts_with(name, "NET/")) {
                net_channels = true;
                net_gdr |= name.find("/GDRDMA") != std::string::npos;
            }
            if (std::find(via.begin(), via.end(), name) == via.end()) via.push_back(name);
        }
    }
    const std::string network = !using_network.empty() ? using_network
                                : !assigned.empty()    ? assigned
                                : !plugin.empty()      ? plugin
                                                       : builtin;
    const auto text_or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
    nlohmann::json gdr = nullptr;
    if (net_channels) gdr = net_gdr;
    else if (hca_enabled || hca_disabled) gdr = hca_enabled;
    return {{"network", text_or_null(network)},
            {"net_plugin", text_or_null(plugin)},
            {"gdr", gdr},
            {"channels_via", via},
            {"source", "NCCL debug log"}};
}

} // namespace interopbench::nccl
