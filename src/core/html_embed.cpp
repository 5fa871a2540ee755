// The report inside an HTML page: how the page carries it, and how a reader finds it again.
#include "interopbench/html_embed.hpp"

#include <fmt/format.h>

namespace interopbench::html {

std::string embed_json(const nlohmann::json& doc) {
    // Invalid UTF-8 in a report string would make dump() throw; replace it instead.
    const std::string text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::string out;
    out.reserve(text.size() + 64);
    for (char c : text) {
        if (c == '<') out += "\\u003c";
        else out += c;
    }
    return out;
}

bool looks_like_html(std::string_view text) {
    const auto p = text.find_first_not_of(" \t\r\n");
    if (p != std::string_view::npos && text.compare(p, 3, "\xef\xbb\xbf") == 0) return looks_like_html(text.substr(p + 3));
    return p != std::string_view::npos && text[p] == '<';
}

std::optional<std::string> extract_embedded_report(std::string_view page) {
    const std::string open = fmt::format("<script type=\"application/json\" id=\"{}\">", k_report_block_id);
    const auto start = page.find(open);
    if (start == std::string_view::npos) return std::nullopt;
    const auto body = start + open.size();
    // The writer leaves no '<' inside the block, so the first "</script" ends it.
    const auto end = page.find("</script", body);
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(page.substr(body, end - body));
}

} // namespace interopbench::html
