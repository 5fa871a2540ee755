#include "presentation/table.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include <fmt/format.h>

#include "interopbench/text.hpp"

namespace interopbench {

namespace {

constexpr std::size_t k_gap = 2;        // spaces between columns
constexpr std::size_t k_hang = 2;       // further lines of a wrapped cell are indented by this
constexpr std::size_t k_soft_word = 20; // a wrapping column narrows to its longest word (and a hang), at most this
constexpr std::size_t k_hard = 8;       // and, when nothing else fits, to this
constexpr std::string_view k_breaks = "_/,=:-"; // a word too long for its line is broken after one

// Bytes of the character at text[at] (a byte that is not UTF-8 is one).
std::size_t char_bytes(std::string_view text, std::size_t at) {
    std::uint32_t cp = 0;
    const std::size_t len = utf8_sequence(text, at, cp);
    return len ? len : 1;
}

// A figure: a digit first, or a sign and a digit, and at most two more words ("8.3% ci",
// "39% node4 GPU0"), not a sentence.
bool numeric(const std::string& s) {
    const auto digit = [&s](std::size_t i) { return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); };
    return (digit(0) || ((s[0] == '-' || s[0] == '+') && digit(1))) && std::count(s.begin(), s.end(), ' ') <= 2;
}

// The bytes of `word` that fit `room` columns (at least one character), ending after a break
// character where one lies in the second half.
std::size_t fitting_prefix(std::string_view word, std::size_t room) {
    std::size_t bytes = 0, cols = 0, last_break = 0, break_cols = 0;
    for (std::size_t i = 0; i < word.size();) {
        const std::size_t len = char_bytes(word, i);
        const std::size_t w = display_width(word.substr(i, len));
        if (bytes > 0 && cols + w > room) break;
        cols += w;
        i += len;
        bytes = i;
        // A break where something other than break characters follows ("__init_" then "_" is none).
        if (len == 1 && k_breaks.find(word[i - 1]) != std::string_view::npos &&
            word.find_first_not_of(k_breaks, i) != std::string_view::npos) {
            last_break = i;
            break_cols = cols;
        }
    }
    return bytes < word.size() && last_break > 0 && break_cols * 2 >= room ? last_break : bytes;
}

// `text` in lines of at most `first` columns, then `rest`: words as written (the spaces
// between two words on one line kept), a word longer than a line broken.
std::vector<std::string> break_lines(const std::string& text, std::size_t first, std::size_t rest) {
    first = std::max<std::size_t>(first, 1);
    rest = std::max<std::size_t>(rest, 1);
    std::vector<std::string> lines;
    std::string cur;
    std::size_t cur_w = 0, room = first;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t start = text.find_first_not_of(' ', at);
        if (start == std::string::npos) break;
        const std::size_t end = std::min(text.find(' ', start), text.size());
        const std::string gap = text.substr(at, start - at);
        std::string word = text.substr(start, end - start);
        std::size_t ww = display_width(word);
        at = end;
        if (!cur.empty()) {
            if (cur_w + gap.size() + ww <= room) {
                cur += gap + word;
                cur_w += gap.size() + ww;
                continue;
            }
            lines.push_back(std::move(cur));
            cur.clear();
            room = rest;
        }
        while (ww > room) {
            const std::size_t p = fitting_prefix(word, room);
            lines.push_back(word.substr(0, p));
            word.erase(0, p);
            ww = display_width(word);
            room = rest;
        }
        cur = std::move(word);
        cur_w = ww;
    }
    if (!cur.empty() || lines.empty()) lines.push_back(std::move(cur));
    return lines;
}

// Columns of the widest space-separated word of `text`.
std::size_t longest_word(std::string_view text) {
    std::size_t word = 0;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find(' ', at), text.size());
        word = std::max(word, display_width(text.substr(at, end - at)));
        at = end + 1;
    }
    return word;
}

std::string pad(const std::string& s, std::size_t width, bool right) {
    const std::size_t w = display_width(s);
    if (w >= width) return s;
    return right ? std::string(width - w, ' ') + s : s + std::string(width - w, ' ');
}

// A column as the fitter sees it: its text made safe and its widths.
struct Fitted {
    std::string header;
    std::vector<std::string> cells;
    bool droppable = false, wraps = false, numbers = true;
    std::size_t natural = 0, soft = 0, hard = 0;
    std::size_t cells_natural = 0, header_word = 0, body_word = 0; // the widest cell; the longest word of the header, of the cells
};

// `header`: the header is shown, so its width counts.
Fitted prepare(TableColumn&& c, bool markdown, bool header) {
    auto safe = [markdown](const std::string& s) {
        std::string t = display_text(s);
        if (!markdown) return t;
        std::string e;
        for (char ch : t) e += ch == '|' ? std::string("\\|") : std::string(1, ch);
        return e;
    };
    Fitted f;
    f.header = header ? safe(c.header) : std::string();
    f.droppable = c.droppable;
    f.wraps = c.wraps;
    std::size_t longest = 0;
    auto measure = [&](const std::string& t) {
        const std::size_t word = longest_word(t);
        longest = std::max(longest, word);
        return word;
    };
    f.header_word = measure(f.header);
    for (auto& cell : c.cells) {
        f.cells.push_back(safe(cell));
        f.body_word = std::max(f.body_word, measure(f.cells.back()));
        f.cells_natural = std::max(f.cells_natural, display_width(f.cells.back()));
        if (!f.cells.back().empty() && f.cells.back() != "-" && !numeric(f.cells.back())) f.numbers = false;
    }
    f.natural = std::max(f.cells_natural, display_width(f.header));
    f.hard = std::min(f.natural, k_hard);
    f.soft = std::min(f.natural, std::max(f.hard, std::min(longest + k_hang, k_soft_word)));
    return f;
}

std::size_t total(const std::vector<std::size_t>& widths) {
    std::size_t w = 0;
    for (const std::size_t x : widths) w += x;
    return widths.empty() ? 0 : w + k_gap * (widths.size() - 1);
}

// A cell (or a header) of `col` in lines of `width` columns: further lines of a cell indented,
// so that they read apart from the next row, unless that would break a word the column holds
// whole.
std::vector<std::string> cell_lines(const Fitted& col, const std::string& text, std::size_t width, bool header) {
    if (display_width(text) <= width) return {text};
    const bool breaks_word = col.body_word <= width && width < col.body_word + k_hang;
    const std::size_t hang = !header && width >= 2 * k_hang + 4 && !breaks_word ? k_hang : 0;
    auto lines = break_lines(text, width, width - hang);
    for (std::size_t k = 1; k < lines.size(); ++k) lines[k] = std::string(hang, ' ') + lines[k];
    return lines;
}

// Widths of `cols` that fit `room`, narrowing as the top of table.hpp says. Headers go on
// two lines widest first; then, phase by phase, the column narrowed is the one that costs the
// table fewest lines for the columns it gives up, so that a long reason wraps before short
// labels do. May not fit (blocks then). With `numbers`, columns of figures are narrowed too
// (the last resort of a block).
std::vector<std::size_t> narrow(const std::vector<const Fitted*>& cols, std::size_t room, bool numbers = false) {
    std::vector<std::size_t> w;
    for (const auto* c : cols) w.push_back(c->natural);
    const auto header = [](const Fitted& c) { return std::max(c.cells_natural, c.header_word); };
    while (total(w) > room) { // a header on two lines costs one line
        std::size_t pick = cols.size();
        for (std::size_t i = 0; i < cols.size(); ++i)
            if (w[i] > header(*cols[i]) && (pick == cols.size() || w[i] > w[pick])) pick = i;
        if (pick == cols.size()) break;
        --w[pick];
    }
    if (total(w) <= room) return w;
    // Lines of each column's cells (the header first) at its width, and of each row.
    const std::size_t rows = cols.empty() ? 0 : cols[0]->cells.size() + 1;
    const auto count = [&](std::size_t c, std::size_t width) {
        std::vector<std::size_t> n(rows);
        std::unordered_map<std::string_view, std::size_t> seen; // cells alike (a note many rows share) counted once
        n[0] = cell_lines(*cols[c], cols[c]->header, width, true).size();
        for (std::size_t r = 1; r < rows; ++r) {
            const std::string& text = cols[c]->cells[r - 1];
            const auto [at, fresh] = seen.try_emplace(text, 1);
            if (fresh && display_width(text) > width) at->second = cell_lines(*cols[c], text, width, false).size();
            n[r] = at->second;
        }
        return n;
    };
    std::vector<std::vector<std::size_t>> lines;
    for (std::size_t c = 0; c < cols.size(); ++c) lines.push_back(count(c, w[c]));
    // Each step narrows the column, and by as much (at most what the table must lose), that
    // costs the fewest lines per column given up; of equal costs the widest column, by more.
    auto shrink = [&](auto which, auto floor) {
        while (total(w) > room) {
            const std::size_t excess = total(w) - room;
            std::size_t pick = cols.size(), to = 0, cost = 0;
            std::vector<std::size_t> picked;
            for (std::size_t c = 0; c < cols.size(); ++c) {
                if (!which(*cols[c]) || w[c] <= floor(*cols[c])) continue;
                std::vector<std::size_t> others(rows, 0); // each row's lines without this column
                for (std::size_t o = 0; o < cols.size(); ++o)
                    if (o != c)
                        for (std::size_t r = 0; r < rows; ++r) others[r] = std::max(others[r], lines[o][r]);
                const std::size_t lowest = std::max(floor(*cols[c]), w[c] > excess ? w[c] - excess : 0);
                for (std::size_t t = w[c]; t-- > lowest;) {
                    auto n = count(c, t);
                    std::size_t more = 0; // the lines the table gains
                    for (std::size_t r = 0; r < rows; ++r) more += std::max(others[r], n[r]) - std::max(others[r], lines[c][r]);
                    // more / (w[c] - t) against cost / (w[pick] - to), without division
                    const std::size_t gain = w[c] - t, best_gain = pick == cols.size() ? 0 : w[pick] - to;
                    if (pick == cols.size() || more * best_gain < cost * gain ||
                        (more * best_gain == cost * gain && gain > best_gain)) {
                        pick = c;
                        to = t;
                        cost = more;
                        picked = std::move(n);
                    }
                }
            }
            if (pick == cols.size()) return;
            w[pick] = to;
            lines[pick] = std::move(picked);
        }
    };
    const auto wrapping = [](const Fitted& c) { return c.wraps; };
    const auto text = [](const Fitted& c) { return !c.numbers; };
    const auto any = [](const Fitted&) { return true; };
    const auto soft = [](const Fitted& c) { return c.soft; };
    const auto hard = [](const Fitted& c) { return c.hard; };
    shrink(wrapping, soft);
    shrink(text, soft);
    shrink(wrapping, hard);
    shrink(text, hard);
    if (numbers) shrink(any, hard);
    return w;
}

// The lines of one row (or of the header) at these widths.
void emit_row(std::string& out, const std::vector<const Fitted*>& cols, const std::vector<std::size_t>& w,
              std::size_t row, const std::string& indent) {
    const bool header = row == static_cast<std::size_t>(-1);
    std::vector<std::vector<std::string>> parts(cols.size());
    std::vector<bool> right(cols.size(), false);
    std::size_t lines = 1;
    for (std::size_t c = 0; c < cols.size(); ++c) {
        const std::string& text = header ? cols[c]->header : cols[c]->cells[row];
        // A column of figures is right-aligned (a wrapped cell reads from the left).
        right[c] = !header && cols[c]->numbers && display_width(text) <= w[c];
        parts[c] = cell_lines(*cols[c], text, w[c], header);
        lines = std::max(lines, parts[c].size());
    }
    for (std::size_t k = 0; k < lines; ++k) {
        std::string line = indent;
        for (std::size_t c = 0; c < cols.size(); ++c) {
            const std::string& t = k < parts[c].size() ? parts[c][k] : std::string();
            const bool last = c + 1 == cols.size();
            line += right[c] && k == 0 ? pad(t, w[c], true) : pad(t, last ? 0 : w[c], false);
            if (!last) line += std::string(k_gap, ' ');
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
}

void emit(std::string& out, const std::vector<const Fitted*>& cols, const std::vector<std::size_t>& w, const TableLayout& layout) {
    if (layout.header) {
        emit_row(out, cols, w, static_cast<std::size_t>(-1), layout.indent);
        std::string rule = layout.indent;
        for (std::size_t c = 0; c < cols.size(); ++c) rule += std::string(w[c], '-') + (c + 1 < cols.size() ? "  " : "");
        out += rule + "\n";
    }
    const std::size_t rows = cols.empty() ? 0 : cols[0]->cells.size();
    for (std::size_t r = 0; r < rows; ++r) emit_row(out, cols, w, r, layout.indent);
}

} // namespace

std::string fit_table(std::vector<TableColumn> columns, const TableLayout& layout) {
    // A column without a cell says nothing (the missing results' figures).
    if (!columns.empty() && !columns[0].cells.empty())
        std::erase_if(columns, [](const TableColumn& c) {
            return std::all_of(c.cells.begin(), c.cells.end(), [](const std::string& t) { return t.empty(); });
        });
    if (columns.empty()) return {};
    std::vector<Fitted> all;
    all.reserve(columns.size());
    for (auto& c : columns) all.push_back(prepare(std::move(c), layout.markdown, layout.header || layout.markdown));
    std::string out;
    if (layout.markdown) {
        const std::size_t rows = all[0].cells.size();
        for (std::size_t r = 0; r < rows + 2; ++r) {
            std::string line = "|";
            for (const auto& c : all) line += r == 0 ? " " + c.header + " |" : r == 1 ? std::string(" --- |") : " " + c.cells[r - 2] + " |";
            out += layout.indent + line + "\n";
        }
        return out;
    }
    std::vector<const Fitted*> cols;
    for (const auto& c : all) cols.push_back(&c);
    auto naturals = [&] {
        std::vector<std::size_t> w;
        for (const auto* c : cols) w.push_back(c->natural);
        return w;
    };
    const std::size_t indent = display_width(layout.indent);
    const std::size_t room = layout.width > indent ? layout.width - indent : layout.width ? 1 : 0;
    if (room == 0 || total(naturals()) <= room) {
        emit(out, cols, naturals(), layout);
        return out;
    }
    // Columns that may be left out go, from the right, while the table cannot fit with its
    // wrapping columns wrapped.
    const auto fits_wrapped = [&] {
        std::vector<std::size_t> w = naturals();
        for (std::size_t i = 0; i < cols.size(); ++i)
            w[i] = cols[i]->wraps ? cols[i]->soft : std::max(cols[i]->cells_natural, cols[i]->header_word);
        return total(w) <= room;
    };
    std::vector<std::string> left_out;
    for (std::size_t i = cols.size(); !layout.keep_all && !fits_wrapped() && i-- > 0;)
        if (cols[i]->droppable && cols.size() > 1) {
            left_out.insert(left_out.begin(), cols[i]->header);
            cols.erase(cols.begin() + static_cast<std::ptrdiff_t>(i));
        }
    std::vector<std::size_t> w = narrow(cols, room);
    // A wrapping column left too narrow to read is said under the table, row by row.
    std::string below;
    for (std::size_t i = cols.size(); !layout.row_names.empty() && i-- > 1;) {
        if (!cols[i]->wraps || w[i] >= std::min(cols[i]->natural, k_soft_word)) continue;
        for (std::size_t r = 0; r < cols[i]->cells.size() && r < layout.row_names.size(); ++r)
            if (!cols[i]->cells[r].empty())
                below += wrap(display_text(layout.row_names[r]) + ": " + cols[i]->cells[r], layout.width, layout.indent + "  ",
                              layout.indent + "    ");
        cols.erase(cols.begin() + static_cast<std::ptrdiff_t>(i));
        w = narrow(cols, room);
    }
    if (total(w) <= room) {
        emit(out, cols, w, layout);
    } else {
        // Too many columns for any width: blocks of columns, each repeating the first.
        std::vector<std::vector<const Fitted*>> blocks;
        std::vector<const Fitted*> block{cols[0]};
        for (std::size_t c = 1; c < cols.size(); ++c) {
            auto wider = block;
            wider.push_back(cols[c]);
            if (block.size() > 1 && total(narrow(wider, room)) > room) {
                blocks.push_back(block);
                block = {cols[0], cols[c]};
            } else {
                block = std::move(wider);
            }
        }
        blocks.push_back(block);
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            if (b) out += "\n";
            emit(out, blocks[b], narrow(blocks[b], room, true), layout);
        }
    }
    out += below;
    if (!left_out.empty())
        out += wrap(display_text(fmt::format("not shown to fit {} columns: {} ({})", layout.width, fmt::join(left_out, ", "),
                                             layout.hint)),
                    layout.width, layout.indent + "  ");
    return out;
}

std::string render_table(const std::vector<std::vector<std::string>>& rows, bool markdown, std::size_t width) {
    if (rows.empty()) return {};
    std::size_t n = 0;
    for (const auto& r : rows) n = std::max(n, r.size());
    std::vector<TableColumn> cols(n);
    for (std::size_t c = 0; c < n; ++c) {
        cols[c].header = c < rows[0].size() ? rows[0][c] : "";
        for (std::size_t r = 1; r < rows.size(); ++r) cols[c].cells.push_back(c < rows[r].size() ? rows[r][c] : "");
    }
    TableLayout layout;
    layout.width = markdown ? 0 : width;
    layout.markdown = markdown;
    return fit_table(std::move(cols), layout);
}

std::string wrap(const std::string& text, std::size_t width, const std::string& indent) { return wrap(text, width, indent, indent); }

std::string wrap(const std::string& text, std::size_t width, const std::string& indent, const std::string& hang) {
    if (width == 0 || display_width(indent) + display_width(text) <= width) return indent + text + "\n";
    const std::size_t first = width > display_width(indent) ? width - display_width(indent) : 1;
    const std::size_t rest = width > display_width(hang) ? width - display_width(hang) : 1;
    std::string out;
    const auto lines = break_lines(text, first, rest);
    for (std::size_t i = 0; i < lines.size(); ++i) out += (i ? hang : indent) + lines[i] + "\n";
    return out;
}

std::vector<std::pair<std::string, std::string>> shared_axes(const std::vector<const Params*>& configs) {
    std::vector<std::pair<std::string, std::string>> out;
    if (configs.size() < 2) return out;
    for (const auto& [k, v] : configs[0]->items())
        if (std::all_of(configs.begin(), configs.end(), [&](const Params* p) { return p->find(k) == v; })) out.emplace_back(k, v);
    return out;
}

Params without_axes(const Params& params, const std::vector<std::pair<std::string, std::string>>& leave_out) {
    std::vector<std::pair<std::string, std::string>> kept;
    for (const auto& item : params.items())
        if (std::find(leave_out.begin(), leave_out.end(), item) == leave_out.end()) kept.push_back(item);
    return Params(kept);
}

std::string axes_text(const std::vector<std::pair<std::string, std::string>>& axes) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : axes) parts.push_back(k + " " + param_cell(k, v));
    return fmt::format("{}", fmt::join(parts, ", "));
}

} // namespace interopbench
