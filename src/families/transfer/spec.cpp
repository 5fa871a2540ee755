// The transfer language: scanning, parsing, expanding GPU selectors, canonical text and the
// paths each transfer crosses (spec.hpp; the grammar is docs/TRANSFERS.md).
#include "families/transfer/spec.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interopbench/errors.hpp"
#include "interopbench/params.hpp"

namespace interopbench::transfer {
namespace {

constexpr const char* k_form_hint =
    "write SRC -> DST [via EXECUTOR] [SIZE], transfers joined by ';', e.g. 'host:pinned -> gpu0 via ce 1G' (docs/TRANSFERS.md)";
constexpr const char* k_endpoint_hint =
    "an endpoint is host[:pageable|pinned|registered|wc][@numaN], gpuN, gpu*, gpu[A..B], gpu[A,B], file[:DIR][(warm|cold)] or null";
constexpr const char* k_executor_hint =
    "executors: ce[:pull], sm[:BLOCKS][:pull], cpu[:THREADS], pipelined[:threads=N][:chunk=SIZE][:ring=K], "
    "pinned[:threads=N][:chunk=SIZE], read[:threads=N][:chunk=SIZE]";

const char* host_kind_name(HostKind k) {
    switch (k) {
    case HostKind::pageable: return "pageable";
    case HostKind::pinned: return "pinned";
    case HostKind::registered: return "registered";
    case HostKind::write_combined: return "wc";
    }
    return "?";
}

const char* cache_name(Cache c) { return c == Cache::warm ? "warm" : c == Cache::cold ? "cold" : ""; }

struct EngineName {
    Engine engine;
    const char* name;
};
constexpr EngineName k_engines[] = {{Engine::ce, "ce"},   {Engine::sm, "sm"},           {Engine::cpu, "cpu"},
                                    {Engine::pipelined, "pipelined"}, {Engine::pinned, "pinned"}, {Engine::read, "read"}};

const char* engine_name(Engine e) {
    for (const auto& n : k_engines)
        if (n.engine == e) return n.name;
    return "?";
}

std::optional<Engine> engine_named(std::string_view name) {
    for (const auto& n : k_engines)
        if (name == n.name) return n.engine;
    return std::nullopt;
}

std::vector<std::string> engine_names() {
    std::vector<std::string> out;
    for (const auto& n : k_engines) out.emplace_back(n.name);
    return out;
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

/// "; did you mean 'X'?" for the candidate nearest `word`, or nothing.
std::string near(std::string_view word, const std::vector<std::string>& candidates, std::string_view rest = {}) {
    const auto close = closest_match(word, candidates);
    return close ? fmt::format("; did you mean '{}{}'?", *close, rest) : std::string();
}

/// The (device, inode) of a directory, or nothing.
std::optional<std::pair<dev_t, ino_t>> identity(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
    return std::make_pair(st.st_dev, st.st_ino);
}

/// An endpoint before its GPU selector is expanded.
struct Side {
    Endpoint end;
    std::vector<int> gpus; ///< gpu: every GPU the selector names, in order, each once
    bool many = false;     ///< a wildcard, range or list (it may name several GPUs)
    bool wildcard = false; ///< gpu*
};

class Parser {
public:
    Parser(std::string_view whole, const Scope& scope) : m_whole(trim(whole)), m_scope(scope) {}

    TransferSet run() {
        if (m_whole.empty()) throw UsageError("empty transfer set", k_form_hint);
        // Transfers are separated by ';' (the written form) or '+' (the canonical one) outside
        // brackets, parentheses and braces; the end closes the last one even inside an unclosed
        // bracket (its parse says so).
        for (const std::string_view part : split_outside(m_whole, ";+")) {
            const std::string_view seg = trim(part);
            if (seg.empty())
                throw UsageError(fmt::format("empty transfer in '{}'", m_whole),
                                 "join transfers with one ';' each, e.g. 'host -> gpu0; gpu0 -> host'");
            transfer(seg);
        }
        if (m_set.transfers.size() > k_max_transfers)
            throw UsageError(fmt::format("'{}' expands to {} transfers; a set runs at most {} at once", m_whole,
                                         m_set.transfers.size(), k_max_transfers),
                             "split it over several sets, or select fewer GPUs with --devices");
        return std::move(m_set);
    }

private:
    [[noreturn]] void fail(const std::string& what, const std::string& hint = k_form_hint) const {
        throw UsageError(what, hint);
    }

    void transfer(std::string_view seg) {
        m_seg = seg;
        const std::size_t arrow = seg.find("->");
        if (arrow == std::string_view::npos) fail(fmt::format("transfer '{}' has no '->'", seg));
        if (seg.find("->", arrow + 2) != std::string_view::npos)
            fail(fmt::format("transfer '{}' has more than one '->'", seg),
                 "a transfer is SRC -> DST with its executor after 'via' (TransferBench's G0->G0->G1 is 'gpu0 -> gpu1 via "
                 "sm'); join transfers with ';'");
        std::string left(trim(seg.substr(0, arrow)));
        if (left.empty()) fail(fmt::format("transfer '{}' has no source before '->'", seg));
        if (left.front() == '{')
            fail(fmt::format("'{}' before '->' in transfer '{}' is a list: a broadcast has one source", left, seg),
                 "list the destinations after '->': gpu0 -> {gpu1,host:pinned} via sm");
        // "file:DIR (warm)": the cache state may stand apart from its file.
        if (const auto sp = left.find_first_of(" \t"); sp != std::string::npos) {
            const std::string_view after = trim(std::string_view(left).substr(sp));
            if (!after.empty() && after.front() == '(' && after.find_first_of(" \t") == std::string_view::npos)
                left = left.substr(0, sp) + std::string(after);
            else
                fail(fmt::format("'{}' before '->' in '{}' is not one endpoint", left, seg), k_endpoint_hint);
        }
        // A destination list in braces is one word, blanks after its commas and all.
        std::string_view right = trim(seg.substr(arrow + 2));
        std::string list;
        if (!right.empty() && right.front() == '{') {
            const std::size_t close = right.find('}');
            if (close == std::string_view::npos)
                fail(fmt::format("the destination list in transfer '{}' has no closing '}}'", seg),
                     "write a broadcast's destinations in braces: gpu0 -> {gpu1,host:pinned} via sm");
            list = std::string(right.substr(0, close + 1));
            right.remove_prefix(close + 1);
        }
        std::vector<std::string> words = tokens(right);
        if (!list.empty()) words.insert(words.begin(), list);
        if (words.empty()) fail(fmt::format("transfer '{}' has no destination after '->'", seg));
        const Side src = endpoint(left, true);
        const std::optional<std::vector<Side>> targets = destination_list(words[0]);
        const Side dst = targets ? Side{} : endpoint(words[0], false);
        std::optional<Executor> exec;
        std::optional<std::uint64_t> size;
        for (std::size_t i = 1; i < words.size(); ++i) {
            const std::string& w = words[i];
            std::string exec_word;
            if (w == "via") {
                if (i + 1 == words.size()) fail(fmt::format("'via' ends transfer '{}' without an executor", seg), k_executor_hint);
                exec_word = words[++i];
            } else if (std::isdigit(static_cast<unsigned char>(w[0])) || w[0] == '-') {
                if (size) fail(fmt::format("transfer '{}' gives two sizes", seg), "give one size per transfer");
                try {
                    size = parse_size(w);
                } catch (const UsageError& e) {
                    fail(fmt::format("{} in transfer '{}'", e.what(), seg), e.hint());
                }
                continue;
            } else if (engine_named(w.substr(0, w.find(':')))) {
                exec_word = w;
            } else {
                std::vector<std::string> words_known = engine_names();
                words_known.insert(words_known.begin(), "via");
                fail(fmt::format("unknown word '{}' in transfer '{}'{}", w, seg, near(w, words_known)), k_form_hint);
            }
            if (exec) fail(fmt::format("transfer '{}' names two executors", seg), "give one executor per transfer, after 'via'");
            exec = executor(exec_word);
        }
        const Executor e = targets ? resolve_broadcast(src.end, *targets, exec, words[0]) : resolve(src.end, dst.end, exec);
        const std::uint64_t bytes = size.value_or(k_default_size);
        if (bytes < 8) fail(fmt::format("size {} in transfer '{}' is below 8 bytes", format_size(bytes), seg), "give at least 8 bytes");
        if (targets) {
            expand_broadcast(src, *targets, e, bytes);
            return;
        }
        if ((src.end.where == Where::null || dst.end.where == Where::null) && bytes % 8 != 0)
            fail(fmt::format("size {} in transfer '{}' is not a multiple of 8 bytes", format_size(bytes), seg),
                 "reading into or writing from null moves 8-byte words: give a multiple of 8");
        expand_pairs(src, dst, e, bytes);
    }

    /// The words after '->': blanks and '_' (the canonical form's separator) split them, except
    /// inside a file's directory name, which runs to the next blank.
    std::vector<std::string> tokens(std::string_view text) const {
        std::vector<std::string> out;
        std::size_t i = 0;
        while (i < text.size()) {
            while (i < text.size() && is_space(text[i])) ++i;
            if (i == text.size()) break;
            std::size_t end = i;
            while (end < text.size() && !is_space(text[end])) ++end;
            const std::string_view word = text.substr(i, end - i);
            if (names_directory(word)) {
                out.emplace_back(word);
            } else {
                std::size_t from = 0;
                for (std::size_t k = 0; k <= word.size(); ++k)
                    if (k == word.size() || word[k] == '_') {
                        if (k > from) out.emplace_back(word.substr(from, k - from));
                        from = k + 1;
                    }
            }
            i = end;
        }
        return out;
    }

    /// "file:DIR" or "fileN:DIR" with DIR not a cache state.
    static bool names_directory(std::string_view word) {
        if (word.substr(0, 4) != "file") return false;
        std::size_t i = 4;
        while (i < word.size() && std::isdigit(static_cast<unsigned char>(word[i]))) ++i;
        if (i == word.size() || word[i] != ':') return false;
        const std::string_view rest = word.substr(i + 1, word.find('(') == std::string_view::npos ? std::string_view::npos
                                                                                                   : word.find('(') - i - 1);
        return rest != "warm" && rest != "cold";
    }

    /// `text` cut where `seps` occur outside brackets, parentheses and braces ("gpu[0,2]" and
    /// "{gpu1,gpu2}" hold none); the last part ends with the text, closed or not.
    static std::vector<std::string_view> split_outside(std::string_view text, std::string_view seps) {
        std::vector<std::string_view> out;
        int depth = 0;
        std::size_t from = 0;
        for (std::size_t i = 0; i <= text.size(); ++i) {
            const char c = i < text.size() ? text[i] : '\0';
            if (c == '[' || c == '(' || c == '{') ++depth;
            if ((c == ']' || c == ')' || c == '}') && depth > 0) --depth;
            if ((depth == 0 && seps.find(c) != std::string_view::npos) || i == text.size()) {
                out.push_back(text.substr(from, i - from));
                from = i + 1;
            }
        }
        return out;
    }

    /// A broadcast's destinations, each an endpoint not yet expanded: "{A,B,...}" (the written
    /// form) or "A&B&..." (the canonical one). Nothing when `word` is one endpoint.
    std::optional<std::vector<Side>> destination_list(std::string_view word) const {
        const bool braces = word.front() == '{';
        if (!braces && names_directory(word)) return std::nullopt; // a directory's name is its own
        if (braces && word.back() != '}')
            fail(fmt::format("the destination list '{}' in transfer '{}' has no closing '}}'", word, m_seg),
                 "write a broadcast's destinations in braces: gpu0 -> {gpu1,host:pinned} via sm");
        const std::string_view inner = braces ? word.substr(1, word.size() - 2) : word;
        const std::vector<std::string_view> items = split_outside(inner, braces ? ",&" : "&");
        if (!braces && items.size() == 1) {
            if (split_outside(word, ",").size() > 1)
                fail(fmt::format("destination '{}' in transfer '{}' is a list without braces", word, m_seg),
                     fmt::format("write {{{}}} via sm for one read written to every destination, or gpu[1,2] for one "
                                 "transfer per GPU",
                                 word));
            return std::nullopt;
        }
        std::vector<Side> out;
        for (const std::string_view item : items) {
            if (trim(item).empty())
                fail(fmt::format("the destination list '{}' in transfer '{}' has an empty place", word, m_seg),
                     "name a destination between every two commas: {gpu1,host:pinned}");
            out.push_back(endpoint(trim(item), false));
        }
        return out;
    }

    Side endpoint(std::string_view word, bool source) const {
        std::size_t n = 0;
        while (n < word.size() && std::islower(static_cast<unsigned char>(word[n]))) ++n;
        const std::string name(word.substr(0, n));
        const std::string_view rest = word.substr(n);
        Side s;
        if (name == "null" && rest.empty()) {
            s.end.where = Where::null;
        } else if (name == "host") {
            s.end.where = Where::host;
            host(rest, word, s.end);
        } else if (name == "gpu") {
            s.end.where = Where::gpu;
            gpu(rest, word, s);
        } else if (name == "file") {
            s.end.where = Where::file;
            file(rest, word, source, s.end);
        } else {
            fail(fmt::format("unknown endpoint '{}' in transfer '{}'{}", word, m_seg,
                             near(name, {"host", "gpu", "file", "null"}, rest)),
                 k_endpoint_hint);
        }
        return s;
    }

    void host(std::string_view rest, std::string_view word, Endpoint& e) const {
        std::string_view kind, numa;
        const std::size_t at = rest.find('@');
        if (!rest.empty() && rest.front() == ':') kind = rest.substr(1, at == std::string_view::npos ? std::string_view::npos : at - 1);
        else if (!rest.empty() && rest.front() != '@')
            fail(fmt::format("invalid host endpoint '{}' in transfer '{}'", word, m_seg), k_endpoint_hint);
        if (at != std::string_view::npos) numa = rest.substr(at + 1);
        if (!kind.empty() || (!rest.empty() && rest.front() == ':')) {
            if (kind == "pageable") e.host = HostKind::pageable;
            else if (kind == "pinned") e.host = HostKind::pinned;
            else if (kind == "registered") e.host = HostKind::registered;
            else if (kind == "wc") e.host = HostKind::write_combined;
            else
                fail(fmt::format("unknown host memory kind '{}' in transfer '{}'{}", kind, m_seg,
                                 near(kind, {"pageable", "pinned", "registered", "wc"})),
                     "host memory is host:pageable (malloc), host:pinned (cudaHostAlloc), host:registered "
                     "(cudaHostRegister) or host:wc (cudaHostAlloc write-combined: uncached for the CPU)");
        }
        if (at != std::string_view::npos) {
            if (numa.substr(0, 4) != "numa" || !all_digits(numa.substr(4)) || numa.size() > 8)
                fail(fmt::format("invalid NUMA node '@{}' in transfer '{}'", numa, m_seg),
                     "name a NUMA node as @numaN, e.g. host:pinned@numa0");
            e.numa = std::stoi(std::string(numa.substr(4)));
        }
    }

    void gpu(std::string_view rest, std::string_view word, Side& s) const {
        const auto ordinal = [&](std::string_view t) {
            if (!all_digits(t) || t.size() > 6)
                fail(fmt::format("invalid GPU '{}' in transfer '{}'", word, m_seg),
                     "name GPUs as gpuN, gpu* (every selected GPU), gpu[A..B] or gpu[A,B,...]");
            const int g = std::stoi(std::string(t));
            check_gpu(g, word);
            return g;
        };
        const auto add = [&s](int g) {
            if (std::find(s.gpus.begin(), s.gpus.end(), g) == s.gpus.end()) s.gpus.push_back(g);
        };
        if (rest == "*") {
            s.many = s.wildcard = true;
            if (m_scope.gpus_known)
                for (int g : m_scope.selected) add(g);
            // Without GPUs known, expand_pairs stands in (the configuration is skipped anyway).
        } else if (!rest.empty() && rest.front() == '[' && rest.back() == ']') {
            s.many = true;
            std::string_view list = rest.substr(1, rest.size() - 2);
            while (true) {
                const std::size_t comma = list.find(',');
                const std::string_view item = trim(list.substr(0, comma));
                const std::size_t dots = item.find("..");
                if (dots == std::string_view::npos) {
                    add(ordinal(item));
                } else {
                    const int a = ordinal(trim(item.substr(0, dots))), b = ordinal(trim(item.substr(dots + 2)));
                    if (a > b)
                        fail(fmt::format("GPU range '{}' in transfer '{}' runs backwards", item, m_seg),
                             fmt::format("write the smaller ordinal first: gpu[{}..{}]", b, a));
                    for (int g = a; g <= b; ++g) add(g);
                }
                if (comma == std::string_view::npos) break;
                list.remove_prefix(comma + 1);
            }
        } else {
            add(ordinal(rest));
        }
    }

    void check_gpu(int g, std::string_view word) const {
        if (!m_scope.gpus_known || static_cast<std::size_t>(g) < m_scope.gpus) return;
        const std::size_t n = m_scope.gpus;
        fail(fmt::format("GPU {} in '{}' of transfer '{}' does not exist: this machine has {} GPU{}", g, word, m_seg, n,
                         n == 1 ? "" : "s"),
             n == 1 ? std::string("use gpu0") : fmt::format("use gpu0 to gpu{}, or gpu* for every selected GPU", n - 1));
    }

    void file(std::string_view rest, std::string_view word, bool source, Endpoint& e) const {
        std::size_t n = 0;
        while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
        if (n > 0) {
            if (n > 3) fail(fmt::format("invalid storage directory index in '{}' of transfer '{}'", word, m_seg), k_endpoint_hint);
            e.dir = std::stoi(std::string(rest.substr(0, n)));
        }
        rest.remove_prefix(n);
        std::string_view state, dir;
        if (!rest.empty() && rest.back() == ')') {
            const std::size_t open = rest.rfind('(');
            if (open == std::string_view::npos)
                fail(fmt::format("invalid file endpoint '{}' in transfer '{}'", word, m_seg), k_endpoint_hint);
            state = rest.substr(open + 1, rest.size() - open - 2);
            rest = rest.substr(0, open);
            if (state.empty()) fail(fmt::format("empty cache state '()' in '{}' of transfer '{}'", word, m_seg),
                                    "write (warm) or (cold)");
        }
        if (!rest.empty()) {
            if (rest.front() != ':') fail(fmt::format("invalid file endpoint '{}' in transfer '{}'", word, m_seg), k_endpoint_hint);
            const std::string_view after = rest.substr(1);
            if ((after == "warm" || after == "cold") && state.empty()) state = after;
            else dir = after;
        }
        if (!state.empty()) {
            if (state == "warm") e.cache = Cache::warm;
            else if (state == "cold") e.cache = Cache::cold;
            else
                fail(fmt::format("unknown cache state '{}' in '{}' of transfer '{}'{}", state, word, m_seg,
                                 near(state, {"warm", "cold"})),
                     "a file read is (warm): in the page cache, or (cold): dropped from it before each sample");
            if (!source)
                fail(fmt::format("file '{}' is written in transfer '{}': a file written has no cache state", word, m_seg),
                     "give (warm) or (cold) to a file read, e.g. 'file(cold) -> gpu0'");
        } else if (source) {
            e.cache = Cache::warm;
        }
        if (!dir.empty()) {
            if (e.dir >= 0)
                fail(fmt::format("'{}' in transfer '{}' names a directory twice", word, m_seg),
                     "write file:DIR, or fileN for the run's N-th storage directory");
            e.dir = directory_index(std::string(dir), word);
        }
        if (e.dir >= 0 && !m_scope.storage_dirs.empty()) {
            const std::size_t dirs = m_scope.storage_dirs.size();
            if (static_cast<std::size_t>(e.dir) >= dirs)
                fail(fmt::format("'{}' in transfer '{}' names storage directory {}: the run has {}", word, m_seg, e.dir, dirs),
                     dirs == 1 ? std::string("write file (the run's storage directory)")
                               : fmt::format("write file0 to file{}, or file for every storage directory", dirs - 1));
            if (dirs == 1) e.dir = -1; // the only directory is the whole site
        }
    }

    /// The run's storage directory that `dir` names.
    int directory_index(const std::string& dir, std::string_view word) const {
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0)
            fail(fmt::format("file endpoint '{}' in transfer '{}': {} does not exist", word, m_seg, dir),
                 "name an existing directory, one of the run's --storage-dir");
        if (!S_ISDIR(st.st_mode))
            fail(fmt::format("file endpoint '{}' in transfer '{}': {} is not a directory", word, m_seg, dir),
                 "name a directory (the transfer makes its files there), one of the run's --storage-dir");
        const auto want = identity(dir);
        for (std::size_t i = 0; i < m_scope.storage_dirs.size(); ++i)
            if (identity(m_scope.storage_dirs[i]) == want) return static_cast<int>(i);
        fail(fmt::format("'{}' in transfer '{}' is not a storage directory of this run", dir, m_seg),
             fmt::format("add --storage-dir {}: file endpoints read and write the run's storage directories", dir));
    }

    Executor executor(std::string_view word) const {
        const std::size_t colon = word.find(':');
        const std::string name(word.substr(0, colon));
        const auto engine = engine_named(name);
        if (!engine)
            fail(fmt::format("unknown executor '{}' in transfer '{}'{}", name, m_seg, near(name, engine_names())),
                 k_executor_hint);
        Executor e;
        e.engine = *engine;
        const bool io = e.engine == Engine::pipelined || e.engine == Engine::pinned || e.engine == Engine::read;
        if (e.engine == Engine::cpu || io) e.threads = k_default_threads;
        if (io) e.chunk = k_default_chunk;
        if (e.engine == Engine::pipelined) e.ring = k_default_ring;
        std::vector<std::string> keys; // what this executor takes
        if (e.engine == Engine::sm) keys = {"blocks", "pull"};
        else if (e.engine == Engine::ce) keys = {"pull"};
        else if (e.engine == Engine::cpu) keys = {"threads"};
        else if (e.engine == Engine::pipelined) keys = {"threads", "chunk", "ring"};
        else keys = {"threads", "chunk"};
        std::string_view opts = colon == std::string_view::npos ? std::string_view() : word.substr(colon + 1);
        while (colon != std::string_view::npos) {
            const std::size_t next = opts.find(':');
            const std::string_view opt = opts.substr(0, next);
            const std::size_t eq = opt.find('=');
            std::string key(opt.substr(0, eq));
            std::string_view value = eq == std::string_view::npos ? std::string_view() : opt.substr(eq + 1);
            if (eq == std::string_view::npos && all_digits(opt)) { // sm:16, cpu:8, pipelined:8
                key = e.engine == Engine::sm ? "blocks" : "threads";
                value = opt;
            }
            const bool bare = eq == std::string_view::npos && !all_digits(opt); // an option without a value: pull
            if (std::find(keys.begin(), keys.end(), key) == keys.end() || (key == "pull") != bare)
                fail(fmt::format("unknown option '{}' of executor '{}' in transfer '{}'{}", opt, name, m_seg, near(key, keys)),
                     keys.size() == 1 && keys[0] == "pull" ? fmt::format("{} takes: pull", name)
                                                           : fmt::format("{} takes: {}", name, fmt::join(keys, ", ")));
            if (key == "pull") e.pull = true;
            else if (key == "blocks") e.blocks = number(value, "blocks", 1, 65536);
            else if (key == "threads") e.threads = number(value, "threads", 1, 1024);
            else if (key == "ring") e.ring = number(value, "ring", 2, 64);
            else if (key == "chunk") {
                try {
                    e.chunk = parse_size(value);
                } catch (const UsageError& err) {
                    fail(fmt::format("{} in executor '{}' of transfer '{}'", err.what(), word, m_seg), err.hint());
                }
                if (e.chunk < 4096 || e.chunk > (1ull << 30))
                    fail(fmt::format("chunk {} in transfer '{}' is outside 4KiB to 1GiB", format_size(e.chunk), m_seg),
                         "give a chunk from 4K to 1G, e.g. chunk=16M");
            }
            if (next == std::string_view::npos) break;
            opts.remove_prefix(next + 1);
        }
        return e;
    }

    unsigned number(std::string_view text, std::string_view what, unsigned lo, unsigned hi) const {
        if (!all_digits(text) || text.size() > 6 || std::stoul(std::string(text)) < lo || std::stoul(std::string(text)) > hi)
            fail(fmt::format("invalid {} '{}' in transfer '{}'", what, text, m_seg),
                 fmt::format("give {} as a whole number from {} to {}", what, lo, hi));
        return static_cast<unsigned>(std::stoul(std::string(text)));
    }

    /// The executor of a transfer from `src` to `dst` (the default one where none is given),
    /// checked against what can move bytes between the two.
    Executor resolve(const Endpoint& src, const Endpoint& dst, std::optional<Executor> given) const {
        const auto kind = [](const Endpoint& e) {
            switch (e.where) {
            case Where::host: return "host memory";
            case Where::gpu: return "GPU memory";
            case Where::file: return "a file";
            case Where::null: return "null";
            }
            return "?";
        };
        std::vector<Engine> can;
        const Where s = src.where, d = dst.where;
        if ((s == Where::host && d == Where::gpu) || (s == Where::gpu && d == Where::host) || (s == Where::gpu && d == Where::gpu))
            can = {Engine::ce, Engine::sm};
        else if ((s == Where::host && d == Where::host) || (s == Where::host && d == Where::null) ||
                 (s == Where::null && d == Where::host))
            can = {Engine::cpu};
        else if (s == Where::file && d == Where::gpu) can = {Engine::pipelined};
        else if (s == Where::gpu && d == Where::file) can = {Engine::pipelined, Engine::pinned};
        else if (s == Where::file && d == Where::host) can = {Engine::read};
        else if (s == Where::gpu && d == Where::null) can = {Engine::sm};
        else if (s == Where::null && d == Where::gpu) can = {Engine::ce, Engine::sm};
        if (can.empty())
            fail(fmt::format("nothing moves {} to {} in transfer '{}'", kind(src), kind(dst), m_seg),
                 s == Where::null && d == Where::null
                     ? std::string("null -> null moves nothing")
                     : std::string("files are read to a GPU or host memory (file -> gpu0, file -> host:pinned) and written "
                                   "from a GPU (gpu0 -> file); null reads (gpu0 -> null) or writes (null -> gpu0)"));
        Executor e;
        if (given) {
            e = *given;
        } else {
            e.engine = can.front();
            if (e.engine != Engine::ce && e.engine != Engine::sm) e.threads = k_default_threads;
            if (e.engine == Engine::pipelined || e.engine == Engine::pinned || e.engine == Engine::read) e.chunk = k_default_chunk;
            if (e.engine == Engine::pipelined) e.ring = k_default_ring;
        }
        if (std::find(can.begin(), can.end(), e.engine) == can.end()) {
            std::vector<std::string> names;
            for (Engine c : can) names.push_back(engine_name(c));
            fail(fmt::format("'{}' cannot move {} to {} in transfer '{}'", engine_name(e.engine), kind(src), kind(dst), m_seg),
                 d == Where::null && e.engine == Engine::ce
                     ? std::string("the copy engine needs a destination: read GPU memory into nothing with 'via sm[:BLOCKS]'")
                     : fmt::format("use via {}", fmt::join(names, " or via ")));
        }
        if (e.engine == Engine::sm && ((s == Where::host && src.host == HostKind::pageable) ||
                                       (d == Where::host && dst.host == HostKind::pageable)))
            fail(fmt::format("an SM kernel cannot address pageable host memory in transfer '{}'", m_seg),
                 "use host:pinned or host:registered, or via ce");
        if (e.pull && !(s == Where::gpu && d == Where::gpu))
            fail(fmt::format("'pull' in transfer '{}' applies to GPU-to-GPU copies only", m_seg),
                 "leave it out: the GPU of the transfer drives it");
        return e;
    }

    /// The executor of a broadcast (sm where none is given), checked with its endpoints: a GPU's
    /// memory read once by its own SM kernel, written to GPU memory and pinned or registered host
    /// memory.
    Executor resolve_broadcast(const Endpoint& src, const std::vector<Side>& targets, std::optional<Executor> given,
                               std::string_view list) const {
        if (src.where != Where::gpu)
            fail(fmt::format("'{}' cannot be the source of destination list '{}' in transfer '{}': a broadcast reads GPU "
                             "memory once, by an SM kernel of that GPU",
                             src.text(), list, m_seg),
                 "broadcast from a GPU (gpu0 -> {gpu1,host:pinned} via sm), or write one transfer per destination, joined "
                 "by ';'");
        for (const Side& t : targets) {
            const Endpoint& d = t.end;
            if (d.where == Where::file)
                fail(fmt::format("'{}' in destination list '{}' of transfer '{}': a broadcast writes GPU memory and pinned or "
                                 "registered host memory, not files",
                                 d.text(), list, m_seg),
                     "write the file in a transfer of its own, joined by ';': gpu0 -> file via pipelined");
            if (d.where == Where::null)
                fail(fmt::format("'null' in destination list '{}' of transfer '{}': a broadcast writes every destination", list,
                                 m_seg),
                     "leave null out of the list; reading GPU memory into nothing is a transfer of its own: "
                     "gpu0 -> null via sm");
            if (d.where == Where::host && d.host == HostKind::pageable)
                fail(fmt::format("'{}' in destination list '{}' of transfer '{}': an SM kernel cannot address pageable host "
                                 "memory",
                                 d.text(), list, m_seg),
                     "use host:pinned or host:registered");
        }
        Executor e;
        e.engine = Engine::sm;
        if (!given) return e;
        if (given->engine != Engine::sm)
            fail(fmt::format("'{}' cannot broadcast in transfer '{}': only an SM kernel reads the source once and writes "
                             "every destination",
                             engine_name(given->engine), m_seg),
                 given->engine == Engine::ce
                     ? std::string("use via sm[:BLOCKS], or one copy-engine transfer per destination joined by ';' (each "
                                   "reads the source again)")
                     : std::string("use via sm[:BLOCKS]"));
        if (given->pull)
            fail(fmt::format("'pull' in transfer '{}': a broadcast is driven by the source GPU's kernel", m_seg),
                 "leave 'pull' out");
        return *given;
    }

    /// One broadcast per source GPU, its list's selectors expanded in place: a selector names
    /// every GPU it holds but the source, as does any GPU where the source is a selector.
    void expand_broadcast(Side src, std::vector<Side> targets, const Executor& e, std::uint64_t bytes) {
        // No GPU known: a wildcard is gpu0, or gpu0 and gpu1 between GPUs (as in expand_pairs).
        const bool pair =
            std::any_of(targets.begin(), targets.end(), [](const Side& t) { return t.end.where == Where::gpu; });
        const auto stand_in = [pair](Side& s) {
            if (s.wildcard && s.gpus.empty()) s.gpus = pair ? std::vector<int>{0, 1} : std::vector<int>{0};
        };
        stand_in(src);
        for (Side& t : targets) stand_in(t);
        for (const int x : src.gpus) {
            std::vector<Endpoint> to;
            for (const Side& t : targets) {
                if (t.end.where != Where::gpu) {
                    to.push_back(t.end);
                    continue;
                }
                for (const int y : t.gpus) {
                    if (y == x && (src.many || t.many)) continue;
                    Endpoint g = t.end;
                    g.gpu = y;
                    to.push_back(g);
                }
            }
            for (auto it = to.begin(); it != to.end(); ++it)
                if (std::find(to.begin(), it, *it) != it)
                    fail(fmt::format("destination '{}' is named twice in transfer '{}'", it->text(), m_seg),
                         "name each destination once (a wildcard in the list names every GPU but the source)");
            if (to.empty())
                fail(fmt::format("transfer '{}' expands to no destination on this machine", m_seg),
                     "a wildcard leaves out the source GPU: name GPUs that differ, or select more with --devices");
            if (to.size() > k_max_destinations)
                fail(fmt::format("transfer '{}' names {} destinations; one broadcast writes at most {}", m_seg, to.size(),
                                 k_max_destinations),
                     "split the list over two broadcasts joined by ';', or select fewer GPUs with --devices");
            Transfer t{src.end, to.front(), e, bytes, std::vector<Endpoint>(to.begin() + 1, to.end())};
            t.src.gpu = x;
            m_set.transfers.push_back(std::move(t));
        }
    }

    /// One transfer per GPU (pair) the selectors name; a GPU's copy to itself is left out where
    /// a side names several GPUs (and GPUs are known).
    void expand_pairs(Side src, Side dst, const Executor& e, std::uint64_t bytes) {
        // No GPU known: a wildcard is gpu0, or gpu0 and gpu1 between GPUs (as device and pair
        // axes default without GPUs); nothing runs there, but the set reads the same.
        const bool pair = src.end.where == Where::gpu && dst.end.where == Where::gpu;
        for (Side* side : {&src, &dst})
            if (side->wildcard && side->gpus.empty()) side->gpus = pair ? std::vector<int>{0, 1} : std::vector<int>{0};
        const std::vector<int> none{-1};
        const auto& a = src.end.where == Where::gpu ? src.gpus : none;
        const auto& b = dst.end.where == Where::gpu ? dst.gpus : none;
        const bool drop_self = src.many || dst.many;
        std::size_t made = 0;
        for (int x : a)
            for (int y : b) {
                if (x >= 0 && x == y && drop_self) continue;
                if (e.pull && x == y)
                    fail(fmt::format("'pull' in transfer '{}' needs two GPUs; gpu{} -> gpu{} is one", m_seg, x, y),
                         "leave 'pull' out of a copy within one GPU");
                Transfer t{src.end, dst.end, e, bytes};
                t.src.gpu = x;
                t.dst.gpu = y;
                m_set.transfers.push_back(t);
                ++made;
            }
        if (made == 0)
            fail(fmt::format("transfer '{}' expands to no transfer on this machine", m_seg),
                 "a wildcard leaves out a GPU's copy to itself: name GPUs that differ, or select more with --devices");
    }

    std::string_view m_whole;
    const Scope& m_scope;
    std::string_view m_seg;
    TransferSet m_set;
};

} // namespace

std::string Endpoint::text() const {
    switch (where) {
    case Where::host: return fmt::format("host:{}{}", host_kind_name(host), numa >= 0 ? fmt::format("@numa{}", numa) : "");
    case Where::gpu: return fmt::format("gpu{}", gpu);
    case Where::file:
        return fmt::format("file{}{}", dir >= 0 ? std::to_string(dir) : "", cache == Cache::none ? "" : std::string(":") + cache_name(cache));
    case Where::null: return "null";
    }
    return "?";
}

std::string Executor::text() const {
    std::string out = engine_name(engine);
    switch (engine) {
    case Engine::ce: break;
    case Engine::sm:
        if (blocks) out += fmt::format(":{}", blocks);
        break;
    case Engine::cpu:
        if (threads != k_default_threads) out += fmt::format(":{}", threads);
        break;
    case Engine::pipelined:
    case Engine::pinned:
    case Engine::read:
        if (threads != k_default_threads) out += fmt::format(":threads={}", threads);
        if (chunk != k_default_chunk) out += ":chunk=" + format_size(chunk);
        if (engine == Engine::pipelined && ring != k_default_ring) out += fmt::format(":ring={}", ring);
        break;
    }
    if (pull) out += ":pull";
    return out;
}

std::vector<Endpoint> Transfer::destinations() const {
    std::vector<Endpoint> out{dst};
    out.insert(out.end(), also.begin(), also.end());
    return out;
}

std::string Transfer::destinations_text() const {
    std::string out = dst.text();
    for (const Endpoint& e : also) out += "&" + e.text();
    return out;
}

std::string Transfer::text() const {
    return fmt::format("{}->{}_{}_{}", src.text(), destinations_text(), exec.text(), format_size(size));
}

std::string Transfer::words() const {
    std::string to = dst.text();
    if (broadcast()) {
        for (const Endpoint& e : also) to += "," + e.text();
        to = "{" + to + "}";
    }
    return fmt::format("{} -> {} via {} {}", src.text(), to, exec.text(), format_size(size));
}

std::vector<PathUse> Transfer::paths() const {
    const Where s = src.where, d = dst.where;
    const auto link = [](int gpu, const char* dir) { return PathUse{PathKind::host_link, gpu, -1, dir}; };
    if (broadcast()) {
        // The source GPU's memory read once, then each destination's path: of N destinations,
        // each byte counted crosses each one's path 1/N times. A path met twice (two host
        // buffers over one link, the source GPU's memory read and written) is one entry.
        const double share = 1.0 / static_cast<double>(1 + also.size());
        std::vector<PathUse> out{{PathKind::gpu_memory, src.gpu, -1, "", share}};
        for (const Endpoint& e : destinations()) {
            PathUse p = e.where == Where::host ? link(src.gpu, "d2h")
                        : e.gpu == src.gpu     ? PathUse{PathKind::gpu_memory, src.gpu}
                                               : PathUse{PathKind::peer_link, src.gpu, e.gpu};
            p.traffic = share;
            const auto same = std::find_if(out.begin(), out.end(), [&](const PathUse& q) { return q.id() == p.id(); });
            if (same != out.end()) same->traffic += share;
            else out.push_back(p);
        }
        return out;
    }
    const auto read_from = [](const Endpoint& f) { return PathUse{f.cache == Cache::cold ? PathKind::storage : PathKind::page_cache}; };
    if (s == Where::host && d == Where::gpu) return {link(dst.gpu, "h2d")};
    if (s == Where::gpu && d == Where::host) return {link(src.gpu, "d2h")};
    if (s == Where::gpu && d == Where::gpu) {
        if (src.gpu == dst.gpu) return {{PathKind::gpu_memory, src.gpu, -1, "", 2}}; // read and written there
        return {{PathKind::peer_link, src.gpu, dst.gpu}};
    }
    if (s == Where::host && d == Where::host) return {{PathKind::host_memory, -1, -1, "", 2}};
    if (s == Where::file && d == Where::gpu) return {read_from(src), link(dst.gpu, "h2d")};
    if (s == Where::gpu && d == Where::file) return {link(src.gpu, "d2h"), {PathKind::storage}};
    if (s == Where::file && d == Where::host) return {read_from(src)};
    if (s == Where::gpu && d == Where::null) return {{PathKind::gpu_memory, src.gpu}};
    if (s == Where::null && d == Where::gpu) return {{PathKind::gpu_memory, dst.gpu}};
    if (s == Where::host || d == Where::host) return {{PathKind::host_memory}};
    return {};
}

int Transfer::driver() const {
    if (src.where == Where::gpu && dst.where == Where::gpu) return exec.pull ? dst.gpu : src.gpu;
    if (src.where == Where::gpu) return src.gpu;
    if (dst.where == Where::gpu) return dst.gpu;
    return -1;
}

std::vector<int> Transfer::gpus() const {
    std::vector<int> out;
    if (src.where == Where::gpu) out.push_back(src.gpu);
    for (const Endpoint& e : destinations())
        if (e.where == Where::gpu && std::find(out.begin(), out.end(), e.gpu) == out.end()) out.push_back(e.gpu);
    return out;
}

std::string TransferSet::text() const {
    std::string out;
    for (const Transfer& t : transfers) out += (out.empty() ? "" : "+") + t.text();
    return out;
}

std::string TransferSet::words() const {
    std::string out;
    for (const Transfer& t : transfers) out += (out.empty() ? "" : "; ") + t.words();
    return out;
}

Scope scope_of(const Machine& machine, std::vector<std::string> storage_dirs) {
    Scope s;
    s.gpus_known = machine.cuda_available && !machine.devices.empty();
    s.gpus = machine.devices.size();
    s.selected = machine.selected;
    s.storage_dirs = std::move(storage_dirs);
    return s;
}

TransferSet parse_set(std::string_view text, const Scope& scope) { return Parser(text, scope).run(); }

std::vector<std::string> expand(std::string_view text, const Scope& scope, bool alone) {
    const TransferSet set = parse_set(text, scope);
    std::vector<std::string> out{set.text()};
    // The canonical text (a result key's) names exactly its configuration: --only re-measures it alone.
    if (alone && set.transfers.size() > 1 && trim(text) != out.front())
        for (const Transfer& t : set.transfers)
            if (std::find(out.begin(), out.end(), t.text()) == out.end()) out.push_back(t.text());
    return out;
}

std::string share_key(const Transfer& t, const PathUse& p) {
    if (p.kind != PathKind::storage) return p.id();
    const Endpoint& f = t.src.where == Where::file ? t.src : t.dst;
    return fmt::format("{}@dir{}", p.id(), f.dir);
}

std::vector<PathUse> set_paths(const TransferSet& set) {
    if (set.transfers.empty()) return {};
    if (set.transfers.size() == 1) return set.transfers.front().paths();
    std::vector<PathUse> common;
    const Transfer& first = set.transfers.front();
    for (PathUse p : first.paths()) {
        bool everywhere = true;
        for (const Transfer& t : set.transfers) {
            bool found = false;
            for (const PathUse& q : t.paths())
                if (share_key(t, q) == share_key(first, p)) {
                    found = true;
                    p.traffic = std::min(p.traffic, q.traffic);
                }
            everywhere = everywhere && found;
        }
        if (everywhere) common.push_back(p);
    }
    // Both directions of one GPU's host link: the aggregate crosses the link both ways.
    const bool has_link = std::any_of(common.begin(), common.end(), [](const PathUse& p) { return p.kind == PathKind::host_link; });
    if (!has_link) {
        std::optional<int> gpu;
        bool same = true;
        for (const Transfer& t : set.transfers) {
            std::optional<int> mine;
            for (const PathUse& q : t.paths())
                if (q.kind == PathKind::host_link) mine = q.gpu;
            if (!mine || (gpu && *gpu != *mine)) same = false;
            if (mine) gpu = mine;
        }
        if (same && gpu) common.push_back({PathKind::host_link, *gpu, -1, "both"});
    }
    // One transfer per GPU over each GPU's host link, all one way (every GPU from the host):
    // each link carries its share of the bytes, so the whole is set against their sum.
    if (common.empty()) {
        std::vector<PathUse> links;
        std::set<int> gpus;
        for (const Transfer& t : set.transfers)
            for (const PathUse& q : t.paths())
                if (q.kind == PathKind::host_link) links.push_back(q);
        const std::size_t n = set.transfers.size();
        for (const PathUse& q : links) gpus.insert(q.gpu);
        if (links.size() == n && gpus.size() == n &&
            std::all_of(links.begin(), links.end(), [&](const PathUse& q) { return q.direction == links.front().direction; }))
            for (PathUse q : links) {
                q.traffic = 1.0 / static_cast<double>(n);
                common.push_back(q);
            }
    }
    return common;
}

} // namespace interopbench::transfer
