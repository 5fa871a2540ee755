#pragma once
/// The one fitter of every table and paragraph for people: show's result tables, compare,
/// fleet, list, topo, doctor and help lay their text out here, in the width of the terminal
/// (terminal_width(): COLUMNS, else the terminal's width, else 100; 0 for --wide: no limit).
///
/// A table that is wider than its width gives up, in this order and until it fits: headers
/// on one line (a header wraps at its spaces); the width of the columns that wrap (notes,
/// reasons, labels: their cells wrapped under the column, down to their longest word or 20
/// columns); the columns that may be left out (secondary metrics, intervals; from the right,
/// named in one line under the table); more width of the columns that wrap, then of every
/// other text column (down to 8); when even that cannot fit, the columns are shown in blocks,
/// each repeating the first column. Nothing is cut: every cell is shown whole, on as many
/// lines as it needs, a long word broken only where it has no space.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "interopbench/params.hpp"

namespace interopbench {

/// One column of a table for people. Cells are any text: the fitter shows them through
/// display_text (a report's text cannot move the cursor or forge lines).
struct TableColumn {
    std::string header;
    std::vector<std::string> cells; ///< one per row
    /// May be left out when the table is too wide (a secondary metric, an interval); the
    /// table says which were.
    bool droppable = false;
    /// Wrapped under its column before any other column is narrowed (notes, reasons,
    /// labels): what a table gives up first is their width.
    bool wraps = false;
};

/// How a table is laid out.
struct TableLayout {
    std::size_t width = 0; ///< columns every line must fit, `indent` included; 0: no limit
    bool markdown = false; ///< a GitHub table ('|' in cells escaped); never fitted
    bool keep_all = false; ///< never leave a droppable column out (--metrics all)
    /// How to see the columns left out, in the line that names them.
    std::string hint = "--wide";
    std::string indent;  ///< before every line
    bool header = true;  ///< a header row and its rule (false: rows only)
    /// The rows' names: where given, a wrapping column that the width would leave narrower
    /// than 20 columns (and than its content) is said under the table instead, a line per
    /// row with a cell, "NAME: CELL".
    std::vector<std::string> row_names;
};

/// The table of `columns` (all with as many cells), laid out by `layout` (see the top of this
/// header); a column whose every cell is empty is left out. A column of figures (every cell starts with a digit, or a sign and a digit, and
/// has at most three words, or is "-" or empty) is right-aligned, others left-aligned; a wrapped cell's further lines are
/// indented by two. Every line ends with a newline; trailing spaces are trimmed.
std::string fit_table(std::vector<TableColumn> columns, const TableLayout& layout);

/// A table from rows, the first its header: every column may be narrowed (none left out).
/// `width` as TableLayout's (0: as wide as the content); `markdown`: a GitHub table.
std::string render_table(const std::vector<std::vector<std::string>>& rows, bool markdown = false, std::size_t width = 0);

/// The words of `text` wrapped to `width` columns (0: one line): the first line starts with
/// `indent`, the others with `hang` (by default `indent`); a word longer than a line is broken
/// (after a '_', '/', ',', '=', ':' or '-' where one is near the end). Every line ends with a
/// newline. Text for a terminal (display_text it first).
std::string wrap(const std::string& text, std::size_t width, const std::string& indent);
std::string wrap(const std::string& text, std::size_t width, const std::string& indent, const std::string& hang);

/// The axis values (name, value) that every one of `configs` has alike, in the first one's
/// order: a table whose rows all share them says them once above it (axes_text) and names
/// its rows without them (short_label of the rest).
std::vector<std::pair<std::string, std::string>> shared_axes(const std::vector<const Params*>& configs);
/// `params` without the axes in `leave_out`.
Params without_axes(const Params& params, const std::vector<std::pair<std::string, std::string>>& leave_out);
/// Axis values for people, as they head a table: "engine ce, device 0" (sizes in binary units).
std::string axes_text(const std::vector<std::pair<std::string, std::string>>& axes);

} // namespace interopbench
