#pragma once
/// A report inside an HTML page: the page (presentation/html.hpp) embeds the report it shows,
/// and read_report reads it back from the page. Nothing here draws the page.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace interopbench::html {

/// JSON text made safe inside <script type="application/json">: every '<' becomes \u003c
/// (valid only inside JSON strings, where it means the same character), so no report text
/// can close the block ("</script>") or open a comment; parsing gives the same document.
std::string embed_json(const nlohmann::json& doc);

/// The id of the script block that carries the report in a page.
inline constexpr const char* k_report_block_id = "interopbench-report";

/// True when `text` (a file's content) starts, after white space, with '<': an HTML page.
bool looks_like_html(std::string_view text);

/// The JSON text of the report embedded in a page written by render_report_page, or nullopt
/// when the page holds no such block.
std::optional<std::string> extract_embedded_report(std::string_view page);

} // namespace interopbench::html
