// storage_read: file -> host memory, the storage roofline the GPU paths are measured against.
//
// What: reading a whole file of `size` bytes into host memory by pread into malloc'd memory
// (buffered), O_DIRECT preads into aligned memory (odirect), O_DIRECT reads through io_uring
// with `qd` reads in flight into a registered buffer (io_uring), or memcpy from a mapping
// (mmap with MADV_SEQUENTIAL; mmap_populate maps with MAP_POPULATE, faulting everything in
// up front), on `threads` threads each reading a contiguous range in `chunk`-byte I/Os.
// How: host steady_clock around the read (mapping included for mmap). Before each sample the
// cache state is put in place and proven: cold = pages dropped and mincore shows none cached;
// warm = mincore shows all cached. Each sample records the bytes the process read from the
// block layer (/proc/self/io read_bytes) and the block device's sector counters next to the
// file bytes, and the process's CPU time. The destination is checked against the file's
// pattern after sampling. Runs without a GPU.
// Caveats: the block device's counters include other processes' I/O; O_DIRECT paths have no
// warm state (they bypass the page cache) and need sizes and chunks aligned to the
// direct-I/O alignment.
#include <fcntl.h>

#include <chrono>

#include <fmt/format.h>

#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "families/storage/storage_common.hpp"
#include "topology/topology.hpp"

namespace interopbench {
namespace {

using namespace storage;

const std::vector<std::string> k_methods{"buffered", "odirect", "io_uring", "mmap", "mmap_populate"};

/// One storage_read configuration: its method, chunk, queue depth and reader threads.
struct ReadSpec {
    const ReadMethod* method;
    std::uint64_t size, chunk;
    unsigned threads, qd;
    bool pin = true; ///< reader threads on fixed CPUs (ThreadPool)
};

class StorageReadCase final : public Case {
public:
    StorageReadCase(Site& site, ReadSpec spec, bool cold)
        : m_site(site), m_file(site.pattern_file(spec.size)), m_spec(spec), m_cache(m_file->segments(), cold),
          m_pool(spec.threads, spec.pin), m_dst(spec.size + 8, site.dio_alignment()), m_acct(site.disks()) {
        for (const Segment& seg : m_file->segments()) m_fds.push_back(open_file(seg.path, read_open_flags(*spec.method)));
    }

    Sample measure() override {
        const Residency before = m_cache.prepare_sample();
        std::vector<FileSlice> slices;
        const auto& segs = m_file->segments();
        for (std::size_t i = 0; i < segs.size(); ++i) {
            if (!m_spec.method->direct) ::posix_fadvise(m_fds[i].get(), 0, 0, POSIX_FADV_SEQUENTIAL);
            slices.push_back({m_fds[i].get(), &segs[i].path, 0, segs[i].bytes, static_cast<char*>(m_dst.get()) + segs[i].offset,
                              segs[i].bytes});
        }
        m_acct.start();
        const auto t0 = std::chrono::steady_clock::now();
        read_slices(m_pool, *m_spec.method, slices, m_spec.chunk, m_spec.qd);
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        m_acct.stop();
        Sample s{static_cast<double>(m_spec.size) / t, t};
        push_accounting(s, m_acct, m_spec.size, m_acct.cpu_seconds(), before, true);
        return s;
    }

    void check() override {
        if (const auto bad = count_file_pattern_mismatches(m_dst.get(), 0, m_spec.size))
            throw CheckFailed(fmt::format("{} of {} words read differ from the file's pattern", bad, (m_spec.size + 7) / 8));
    }

    nlohmann::json details() const override {
        nlohmann::json j = path_details(m_site.facts_all());
        j["path"] = fmt::format("file ({}) -> host memory by {}", j["file_system"].get<std::string>(), m_spec.method->name);
        j["file"] = m_file->describe();
        j["file_reused"] = m_file->reused();
        if (!m_file->notes().empty()) j["file_notes"] = m_file->notes();
        j["bytes_per_op"] = m_spec.size;
        j["ops_per_sample"] = 1;
        j["threads_used"] = m_spec.threads;
        if (!m_pool.cpus().empty()) j["reader_cpus"] = m_pool.cpus();
        if (m_spec.method->uring) j["queue_depth"] = m_spec.qd;
        j["chunk"] = std::min(m_spec.chunk, m_spec.size);
        j["destination"] = "one host buffer of the file's size, each byte read to its own place (fio reuses a buffer per "
                           "job: less memory touched)";
        j["cache_method"] = m_cache.method();
        j["timer"] = "host steady_clock";
        j["verification"] = "destination compared with the file's pattern after sampling";
        return j;
    }

private:
    Site& m_site;
    std::shared_ptr<PatternFile> m_file;
    ReadSpec m_spec;
    CacheState m_cache;
    ThreadPool m_pool;
    AlignedBuffer m_dst;
    Accounting m_acct;
    std::vector<Fd> m_fds;
};

class StorageRead final : public SiteScenario {
public:
    explicit StorageRead(std::shared_ptr<Site> site) : SiteScenario(std::move(site)) {
        m_info.id = "storage_read";
        m_info.family = "storage";
        m_info.summary = "file -> host memory by pread, O_DIRECT, io_uring or mmap, cold or warm (runs without a GPU)";
        m_info.needs_gpu = false;
        m_info.counting = "file bytes read once per sample; device and cache bytes counted beside them";
        m_info.axes = {size_axis(),
                       choice_axis("path", read_methods_help(k_methods), k_methods),
                       cache_axis(),
                       chunk_axis(),
                       threads_axis("reader threads, each with a contiguous range of the file (or of its stripes)"),
                       qd_axis("io_uring", 32)};
        m_info.metrics = {{"bandwidth", "B/s", Better::higher, "file bytes over the time to read them"},
                          {"time", "s", Better::lower, "time to read the whole file"}};
        for (auto& m : accounting_metrics(true)) m_info.metrics.push_back(m);
    }
    const ScenarioInfo& info() const override { return m_info; }
    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        const ReadMethod& method = read_method(p.get("path"));
        if (auto why = read_method_unavailable(method)) return why;
        if (auto why = readers_unsupported(m, p, method.uring)) return why;
        return storage_unsupported(site(), p, method.direct, true);
    }
    std::vector<PathUse> paths(const Params& p) const override {
        const bool drive = p.get("cache") == "cold" || read_method(p.get("path")).direct;
        return {{drive ? PathKind::storage : PathKind::page_cache}};
    }
    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
        reset_placement();
        ReadSpec spec{&read_method(p.get("path")), p.get_uint("size"), p.get_uint("chunk"),
                      static_cast<unsigned>(p.get_uint("threads")),
                      p.get_uint("qd") ? static_cast<unsigned>(p.get_uint("qd")) : 32u, ctx.bind_numa};
        return std::make_unique<StorageReadCase>(site(), spec, p.get("cache") == "cold");
    }

private:
    ScenarioInfo m_info;
};

} // namespace

void register_storage_read(Registry& r, std::shared_ptr<Site> site) { r.add(std::make_unique<StorageRead>(std::move(site))); }

} // namespace interopbench
