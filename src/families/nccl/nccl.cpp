// nccl_*: NCCL collectives: all_reduce, all_gather, reduce_scatter, broadcast, reduce,
// alltoall (grouped ncclSend/ncclRecv to every rank) and sendrecv (to the next rank,
// from the previous one).
//
// What: time per operation, algorithm bandwidth and bus bandwidth of one collective
// over every selected GPU (one process, one communicator per GPU, created in one group)
// or over the ranks of an MPI launch (one GPU per rank; rank 0 makes the NCCL unique id
// and broadcasts it over MPI).
// How: non-blocking communicators, so that no NCCL call can block the tool: set-up,
// enqueue and completion are polled against a deadline, and a communicator that misses
// it is aborted (the configuration fails, the run goes on). Each sample enqueues N
// back-to-back operations between CUDA events on every GPU; in one process a spin kernel
// holds the streams while they are enqueued, so enqueue cost stays out of the window;
// across processes the ranks meet at a barrier first and are not held. The slowest GPU's
// time over N is the time per operation; N is chosen once (rank 0's choice under MPI)
// so that a sample lasts about the sample time.
// Reports time per operation (s), algbw = size / time and busbw = algbw × the standard
// factor (see nccl.hpp), with the size convention of nccl-tests: a rank's larger buffer.
// Sizes that are not a multiple of the element size (× ranks where a buffer is split per
// rank) are rounded down, as nccl-tests does, and the size used is in the details.
// Verification after sampling: inputs are refilled with small integers, outputs
// poisoned, one operation runs, and every element of every output is compared (exact
// for integer-valued data; avg of floating types within rounding).
// NCCL says which transports it chose (network, GPUDirect RDMA, each channel's transport)
// only in its debug log: unless the user set NCCL_DEBUG*, NCCL writes it (INFO, subsystems
// INIT and NET) to a private file, read after sampling into details.nccl_transport.
// Caveats: each configuration builds its own communicator, so NCCL's set-up cost is paid
// per configuration but outside the timings; NVLink SHARP stays off unless the user sets
// NCCL_NVLS_ENABLE.
#include "families/nccl/nccl.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <fmt/format.h>

#include "interopbench/errors.hpp"
#include "interopbench/registry.hpp"
#include "interopbench/runner.hpp"
#include "interopbench/splitmix.hpp"

#if INTEROPBENCH_WITH_NCCL
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "interopbench/cleanup.hpp"
#include "interopbench/private_dir.hpp"
#include "interopbench/report.hpp"
#include "gpu/cuda_util.hpp"
#include "gpu/nccl_loader.hpp"
#include "gpu/kernels.hpp"
#endif

namespace interopbench {

// ---- arithmetic (no CUDA, no NCCL) -----------------------------------------------------

namespace nccl {

const char* to_string(Collective c) {
    switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::broadcast: return "broadcast";
    case Collective::reduce: return "reduce";
    case Collective::alltoall: return "alltoall";
    case Collective::sendrecv: return "sendrecv";
    }
    return "?";
}

namespace {
bool split_per_rank(Collective c) {
    return c == Collective::all_gather || c == Collective::reduce_scatter || c == Collective::alltoall;
}
} // namespace

double busbw_factor(Collective c, int nranks) {
    const double n = nranks;
    if (c == Collective::all_reduce) return 2.0 * (n - 1) / n;
    if (split_per_rank(c)) return (n - 1) / n;
    return 1.0;
}

const char* busbw_formula(Collective c) {
    if (c == Collective::all_reduce) return "2(n-1)/n";
    if (split_per_rank(c)) return "(n-1)/n";
    return "1";
}

const char* size_convention(Collective c) {
    switch (c) {
    case Collective::all_reduce: return "size = the buffer each rank reduces (input and output are that size)";
    case Collective::all_gather: return "size = the gathered output per rank; each rank contributes size/n";
    case Collective::reduce_scatter: return "size = the input per rank; each rank receives size/n of the reduction";
    case Collective::broadcast: return "size = the buffer root 0 sends to every rank";
    case Collective::reduce: return "size = the buffer each rank contributes; root 0 receives the reduction";
    case Collective::alltoall: return "size = the send buffer per rank; size/n goes to each rank, itself included";
    case Collective::sendrecv: return "size = the buffer each rank sends to the next rank and receives from the previous one";
    }
    return "";
}

namespace {

struct DtypeInfo {
    const char* name;
    std::size_t bytes;
    int nccl_code;      ///< ncclDataType_t value (ABI-stable)
    bool floating;
    bool is_signed;
    double eps;         ///< machine epsilon (floating types)
    double exact_limit; ///< largest integer below which every integer is exact (floating types)
};

constexpr std::array<DtypeInfo, 10> k_dtypes{{
    {"int8", 1, 0, false, true, 0, 0},
    {"uint8", 1, 1, false, false, 0, 0},
    {"int32", 4, 2, false, true, 0, 0},
    {"uint32", 4, 3, false, false, 0, 0},
    {"int64", 8, 4, false, true, 0, 0},
    {"uint64", 8, 5, false, false, 0, 0},
    {"half", 2, 6, true, true, 0x1p-10, 2048},
    {"float", 4, 7, true, true, 0x1p-23, 0x1p24},
    {"double", 8, 8, true, true, 0x1p-52, 0x1p53},
    {"bfloat16", 2, 9, true, true, 0x1p-7, 256},
}};

const DtypeInfo* find_dtype(std::string_view name) {
    for (const auto& d : k_dtypes)
        if (name == d.name) return &d;
    return nullptr;
}

// In ncclRedOp_t order.
constexpr std::array<std::string_view, 5> k_ops{"sum", "prod", "max", "min", "avg"};

std::uint64_t mix(std::uint64_t x) { return splitmix64(x); }

} // namespace

std::optional<std::size_t> element_bytes(std::string_view dtype) {
    if (const auto* d = find_dtype(dtype)) return d->bytes;
    return std::nullopt;
}

Sizing size_collective(Collective c, std::uint64_t requested, std::size_t element, int nranks) {
    Sizing s;
    const std::uint64_t ranks = nranks > 0 ? static_cast<std::uint64_t>(nranks) : 1;
    s.granule = element * (split_per_rank(c) ? ranks : 1);
    s.bytes = requested / s.granule * s.granule;
    s.count = s.bytes / s.granule;
    s.send_bytes = c == Collective::all_gather ? s.bytes / ranks : s.bytes;
    s.recv_bytes = c == Collective::reduce_scatter ? s.bytes / ranks : s.bytes;
    return s;
}

ValueModel::ValueModel(std::string_view dtype, std::string_view op, int nranks)
    : m_dtype(dtype), m_op(op), m_nranks(std::max(nranks, 1)) {
    const DtypeInfo* d = find_dtype(dtype);
    if (!d) throw std::invalid_argument(fmt::format("unknown datatype '{}'", dtype));
    if (!op.empty() && std::find(k_ops.begin(), k_ops.end(), op) == k_ops.end())
        throw std::invalid_argument(fmt::format("unknown reduction '{}'", op));
    m_bytes = d->bytes;
    m_kind = d->floating ? Kind::floating : d->is_signed ? Kind::sint : Kind::uint;
    m_eps = d->eps;
    if (op == "prod") {
        m_range = 2;
    } else if (op == "sum" || op == "avg") {
        // Keep n × largest input within the integers the type holds exactly.
        m_range = 11;
        if (d->floating)
            m_range = std::clamp<std::uint64_t>(static_cast<std::uint64_t>(d->exact_limit) / m_nranks, 1, 11);
    } else {
        m_range = 100;
    }
    m_tolerant = d->floating &&
                 (op == "avg" || (op == "sum" && static_cast<double>(m_nranks) * m_range > d->exact_limit));
}

std::uint64_t ValueModel::input_value(int rank, std::uint64_t index) const {
    const std::uint64_t h = mix(0x6e63636cull ^ mix(static_cast<std::uint64_t>(rank) * k_period + index % k_period));
    if (m_op == "prod") return h % 8 == 0 ? 2 : 1; // products stay powers of two
    return 1 + h % m_range;
}

void ValueModel::encode_uint(std::uint64_t v, void* dst) const { std::memcpy(dst, &v, m_bytes); }

void ValueModel::encode_float(double v, void* dst) const {
    if (m_dtype == "half") {
        const __half h = __float2half_rn(static_cast<float>(v));
        std::memcpy(dst, &h, 2);
    } else if (m_dtype == "bfloat16") {
        const __nv_bfloat16 b = __float2bfloat16_rn(static_cast<float>(v));
        std::memcpy(dst, &b, 2);
    } else if (m_dtype == "float") {
        const float f = static_cast<float>(v);
        std::memcpy(dst, &f, 4);
    } else {
        std::memcpy(dst, &v, 8);
    }
}

double ValueModel::decode(const void* src) const {
    if (m_kind != Kind::floating) {
        std::uint64_t v = 0;
        std::memcpy(&v, src, m_bytes);
        if (m_kind == Kind::sint && m_bytes < 8) {
            const unsigned shift = static_cast<unsigned>(64 - 8 * m_bytes);
            return static_cast<double>(static_cast<std::int64_t>(v << shift) >> shift);
        }
        return m_kind == Kind::sint ? static_cast<double>(static_cast<std::int64_t>(v)) : static_cast<double>(v);
    }
    if (m_dtype == "half") {
        __half h;
        std::memcpy(&h, src, 2);
        return __half2float(h);
    }
    if (m_dtype == "bfloat16") {
        __nv_bfloat16 b;
        std::memcpy(&b, src, 2);
        return __bfloat162float(b);
    }
    if (m_dtype == "float") {
        float f;
        std::memcpy(&f, src, 4);
        return f;
    }
    double d;
    std::memcpy(&d, src, 8);
    return d;
}

void ValueModel::write_inputs(int rank, std::uint64_t first, std::size_t count, void* dst) const {
    auto* out = static_cast<unsigned char*>(dst);
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t v = input_value(rank, first + i);
        if (m_kind == Kind::floating) encode_float(static_cast<double>(v), out + i * m_bytes);
        else encode_uint(v, out + i * m_bytes);
    }
}

void ValueModel::write_reduced(std::uint64_t first, std::size_t count, void* dst) const {
    auto* out = static_cast<unsigned char*>(dst);
    const bool max = m_op == "max", min = m_op == "min", prod = m_op == "prod";
    for (std::size_t i = 0; i < count; ++i) {
        // Unsigned 64-bit arithmetic wraps like the GPU's narrower integers once truncated.
        std::uint64_t acc = input_value(0, first + i);
        for (int r = 1; r < m_nranks; ++r) {
            const std::uint64_t v = input_value(r, first + i);
            acc = max ? std::max(acc, v) : min ? std::min(acc, v) : prod ? acc * v : acc + v;
        }
        unsigned char* e = out + i * m_bytes;
        if (m_kind == Kind::floating) {
            // Inputs are small and products powers of two, so the double is exact.
            const double exact = static_cast<double>(acc);
            encode_float(m_op == "avg" ? exact / m_nranks : exact, e);
        } else if (m_op == "avg") {
            // NCCL averages integers as the wrapped sum divided by n, in the type.
            encode_uint(acc, e);
            const double sum = decode(e);
            if (m_kind == Kind::sint) encode_uint(static_cast<std::uint64_t>(static_cast<std::int64_t>(sum) / m_nranks), e);
            else encode_uint(static_cast<std::uint64_t>(sum) / static_cast<std::uint64_t>(m_nranks), e);
        } else {
            encode_uint(acc, e);
        }
    }
}

bool ValueModel::same(const void* got, const void* expected) const {
    if (!m_tolerant) return std::memcmp(got, expected, m_bytes) == 0;
    const double g = decode(got), e = decode(expected);
    return std::isfinite(g) && std::abs(g - e) <= (m_nranks + 2) * m_eps * std::max(std::abs(e), 1.0);
}

std::string ValueModel::show(const void* element) const {
    const double v = decode(element);
    return m_kind == Kind::floating ? fmt::format("{}", v) : fmt::format("{:.0f}", v);
}

std::string ValueModel::method() const {
    const std::string inputs = fmt::format(
        "inputs are integers 1..{} that repeat every {} elements, different per rank; outputs are poisoned, one "
        "operation runs after sampling, and every output element is compared with the expected value",
        m_op == "prod" ? 2 : m_range, k_period);
    if (!m_tolerant) return inputs + " bit for bit";
    return inputs + fmt::format(" within (n+2) x {} relative (rounding of {} {})", m_eps, m_dtype,
                                m_op == "avg" ? "averaging" : "sums beyond its exact integers");
}

} // namespace nccl

// ---- the scenarios ----------------------------------------------------------------------

namespace {

using nccl::Collective;

struct CollectiveSpec {
    Collective kind;
    const char* summary;
    bool reduces;
    bool has_inplace;
};

constexpr std::array<CollectiveSpec, 7> k_specs{{
    {Collective::all_reduce, "NCCL all_reduce: every rank gets the reduction of all ranks' buffers", true, true},
    {Collective::all_gather, "NCCL all_gather: every rank gets every rank's block", false, true},
    {Collective::reduce_scatter, "NCCL reduce_scatter: each rank gets its block of the reduction", true, true},
    {Collective::broadcast, "NCCL broadcast from rank 0 to every rank", false, true},
    {Collective::reduce, "NCCL reduce of every rank's buffer onto rank 0", true, true},
    {Collective::alltoall, "NCCL alltoall: grouped ncclSend/ncclRecv of one block to every rank", false, false},
    {Collective::sendrecv, "NCCL send to the next rank and receive from the previous one, grouped", false, false},
}};

/// Ranks in the communicator: every selected GPU in one process, or the MPI world.
int rank_count(const Machine& m) { return m.world ? m.world->size() : static_cast<int>(m.selected.size()); }

/// The GPU an MPI rank drives: the one GPU left selected for it, or its local rank's
/// entry of a wider selection.
std::optional<int> rank_device(const Machine& m) {
    if (m.selected.size() == 1) return m.selected.front();
    const auto local = static_cast<std::size_t>(m.world->local_rank());
    if (local < m.selected.size()) return m.selected[local];
    return std::nullopt;
}

/// The GPUs this process drives, in rank order.
std::vector<int> local_devices(const Machine& m) {
    if (!m.world) return m.selected;
    if (auto d = rank_device(m)) return {*d};
    return {};
}

#if INTEROPBENCH_WITH_NCCL

using Clock = std::chrono::steady_clock;

constexpr double k_timeout_floor_s = 60;   // NCCL set-up across nodes can take tens of seconds
constexpr double k_teardown_timeout_s = 10;
constexpr int k_max_ops_per_sample = 100;  // held streams: stay far below the launch queue depth
constexpr std::uint64_t k_hold_timeout_ns = 10'000'000'000ull;
constexpr std::size_t k_stage_bytes = 64u << 20;
constexpr std::size_t k_max_log_bytes = 4u << 20; // of NCCL's log read per configuration

/// NCCL's debug log, which this process asks NCCL to write into a file of its private
/// directory (made with O_EXCL, removed at exit and by the signal path): NCCL says which
/// transports it chose only there. Set up once, before the first communicator, and only
/// when the user set none of NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE (the tool's own
/// settings, inherited by a later round's process, do not count: that process makes its own).
struct DebugLog {
    std::string path;    ///< empty when not recorded
    std::string why_not; ///< then, why
    cleanup::Guard guard;
};

DebugLog make_debug_log() {
    DebugLog log;
    for (const char* name : {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"})
        if (std::getenv(name) && !own_environment(name)) {
            log.why_not = fmt::format("{} is set, so NCCL's debug log is the user's", name);
            return log;
        }
    try {
        const std::string path = private_dir() + "/nccl-debug.log";
        if (path.find('%') != std::string::npos) {
            log.why_not = "the temporary directory's path holds a '%', which NCCL_DEBUG_FILE would expand";
            return log;
        }
        ::close(create_new_file(path));
        log.guard = cleanup::Guard(path);
        set_own_environment("NCCL_DEBUG", "INFO");
        set_own_environment("NCCL_DEBUG_SUBSYS", "INIT,NET");
        set_own_environment("NCCL_DEBUG_FILE", path);
        log.path = path;
    } catch (const std::exception& e) {
        log.why_not = e.what();
    }
    return log;
}

const DebugLog& debug_log() {
    static DebugLog log = make_debug_log();
    return log;
}

std::uint64_t log_size(const std::string& path) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(path, ec);
    return ec ? 0 : n;
}

/// The "nccl_transport" detail from what NCCL logged since byte `from`.
nlohmann::json transport_since(std::uint64_t from) {
    const DebugLog& log = debug_log();
    if (log.path.empty()) {
        nlohmann::json t = nccl::transport_from_log({});
        t["source"] = nullptr;
        t["reason"] = "not recorded: " + log.why_not;
        return t;
    }
    std::ifstream in(log.path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(from));
    std::string text(k_max_log_bytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    return nccl::transport_from_log(text);
}

/// Communicators of this process, finalised on destruction (aborted when that fails or
/// does not finish in time, so a lost peer cannot hang the tool).
class Comms {
public:
    explicit Comms(const gpu::NcclApi& api, std::size_t n) : m_api(api), m_comms(n, nullptr) {}
    Comms(const Comms&) = delete;
    Comms& operator=(const Comms&) = delete;
    ~Comms() {
        std::vector<bool> pending(m_comms.size(), false);
        for (std::size_t i = 0; i < m_comms.size(); ++i) {
            if (!m_comms[i]) continue;
            const ncclResult_t r = m_api.comm_finalize(m_comms[i]);
            pending[i] = r == ncclSuccess || r == ncclInProgress;
            if (!pending[i]) abort_one(i);
        }
        const auto deadline = Clock::now() + std::chrono::duration<double>(k_teardown_timeout_s);
        for (std::size_t i = 0; i < m_comms.size(); ++i) {
            while (pending[i]) {
                ncclResult_t state = ncclSuccess;
                if (m_api.comm_get_async_error(m_comms[i], &state) != ncclSuccess) state = ncclInternalError;
                if (state == ncclInProgress && Clock::now() < deadline) {
                    std::this_thread::sleep_for(std::chrono::microseconds(100));
                    continue;
                }
                if (state == ncclSuccess) {
                    m_api.comm_destroy(m_comms[i]);
                    m_comms[i] = nullptr;
                } else {
                    abort_one(i);
                }
                pending[i] = false;
            }
        }
    }
    ncclComm_t& operator[](std::size_t i) { return m_comms[i]; }
    void abort_all() {
        for (std::size_t i = 0; i < m_comms.size(); ++i) abort_one(i);
    }
    /// The communicators' state: ncclInProgress while any is busy, else the first error.
    ncclResult_t state() const {
        ncclResult_t out = ncclSuccess;
        for (auto c : m_comms) {
            if (!c) continue;
            ncclResult_t s = ncclSuccess;
            const ncclResult_t q = m_api.comm_get_async_error(c, &s);
            if (q != ncclSuccess) return q;
            if (s != ncclSuccess && s != ncclInProgress) return s;
            if (s == ncclInProgress) out = ncclInProgress;
        }
        return out;
    }
    std::string last_error() const {
        const char* e = m_api.get_last_error(m_comms.empty() ? nullptr : m_comms.front());
        return e && *e ? e : "no detail from NCCL; run with NCCL_DEBUG=WARN";
    }

private:
    void abort_one(std::size_t i) {
        if (m_comms[i]) m_api.comm_abort(m_comms[i]);
        m_comms[i] = nullptr;
    }
    const gpu::NcclApi& m_api;
    std::vector<ncclComm_t> m_comms;
};

/// One GPU driven by this process: its NCCL rank, stream, buffers and events.
struct LocalRank {
    int device = 0;
    int rank = 0;
    gpu::Stream stream;
    gpu::DeviceBuffer first, second; ///< send and receive buffers; `second` is empty in place
    void* send = nullptr;
    void* recv = nullptr;
    gpu::Event start, stop; ///< around a sample's operations on `stream`
    LocalRank(int dev, int r)
        : device(dev), rank(r), stream(dev), start(dev, gpu::EventUse::timing), stop(dev, gpu::EventUse::timing) {}
};

class NcclCase final : public Case {
public:
    NcclCase(const CaseContext& ctx, const CollectiveSpec& spec, const Params& p, const gpu::NcclApi& api)
        : m_spec(spec), m_api(api), m_world(ctx.machine->world), m_nranks(rank_count(*ctx.machine)),
          m_dtype(p.get("dtype")), m_op(spec.reduces ? p.get("op") : std::string{}),
          m_inplace(spec.has_inplace && p.get("inplace") == "1"), m_requested(p.get_uint("size")),
          m_model(m_dtype, m_op, m_nranks), m_hold_flag(gpu::HostMem::pinned, 2 * sizeof(int)),
          m_timeout_s(std::max(k_timeout_floor_s, 50 * ctx.sample_time_s)),
          m_comms(api, local_devices(*ctx.machine).size()) {
        m_sizing = nccl::size_collective(spec.kind, m_requested, m_model.element_bytes(), m_nranks);
        m_nccl_dtype = static_cast<ncclDataType_t>(nccl::find_dtype(m_dtype)->nccl_code);
        const auto op = std::find(nccl::k_ops.begin(), nccl::k_ops.end(), m_op);
        m_nccl_op = op == nccl::k_ops.end() ? ncclSum : static_cast<ncclRedOp_t>(op - nccl::k_ops.begin());
        // NCCL's log is set up before NCCL's first call that logs; this configuration's lines start here.
        if (const DebugLog& log = debug_log(); !log.path.empty()) m_log_start = log_size(log.path);
        // The id goes first: every rank then makes the same MPI calls in the same order even
        // when a local step fails later (the NCCL deadline catches that).
        const ncclUniqueId id = unique_id();
        const auto devices = local_devices(*ctx.machine);
        const int first_rank = m_world ? m_world->rank() : 0;
        for (std::size_t i = 0; i < devices.size(); ++i) {
            m_ranks.push_back(std::make_unique<LocalRank>(devices[i], first_rank + static_cast<int>(i)));
            allocate(*m_ranks.back());
        }
        init_comms(id);
        fill_inputs(false);
        // The first operation pays for NCCL's lazy connection set-up; the second sizes samples.
        timed_ops(1, false);
        const double one = timed_ops(1, false);
        m_reps = gpu::reps_for(one, ctx.sample_time_s, k_max_ops_per_sample);
        if (m_world) m_world->broadcast(&m_reps, sizeof m_reps, 0); // every rank must issue as many
    }

    Sample measure() override {
        const double t = timed_ops(m_reps, !m_world);
        const double algbw = static_cast<double>(m_sizing.bytes) / t;
        return {t, algbw, algbw * nccl::busbw_factor(m_spec.kind, m_nranks)};
    }

    void check() override {
        fill_inputs(true);
        timed_ops(1, false);
        std::uint64_t bad = 0, total = 0;
        std::string first_bad;
        for (const auto& r : m_ranks) {
            for (const auto& b : expected_blocks(*r)) {
                total += b.count;
                bad += compare_block(*r, b, first_bad);
            }
        }
        if (bad)
            throw CheckFailed(fmt::format("{} of {} output elements are wrong; first: {}", bad, total, first_bad));
    }

    nlohmann::json details() const override {
        nlohmann::json devices = nlohmann::json::array();
        for (const auto& r : m_ranks) devices.push_back(r->device);
        const char* calls = "";
        switch (m_spec.kind) {
        case Collective::all_reduce: calls = "ncclAllReduce"; break;
        case Collective::all_gather: calls = "ncclAllGather"; break;
        case Collective::reduce_scatter: calls = "ncclReduceScatter"; break;
        case Collective::broadcast: calls = "ncclBroadcast, root 0"; break;
        case Collective::reduce: calls = "ncclReduce, root 0"; break;
        case Collective::alltoall: calls = "ncclSend and ncclRecv to and from every rank, in one group"; break;
        case Collective::sendrecv: calls = "ncclSend to rank+1 and ncclRecv from rank-1, in one group"; break;
        }
        const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
        nlohmann::json d = {
            {"collective", nccl::to_string(m_spec.kind)},
            {"nccl_calls", calls},
            {"nccl_version", m_api.version},
            {"nranks", m_nranks},
            {"processes", m_world ? "one MPI rank per GPU; the NCCL unique id is broadcast over MPI"
                                  : "one process driving every GPU; one communicator per GPU, created in one group"},
            {"devices", devices},
            {"dtype", m_dtype},
            {"element_bytes", m_model.element_bytes()},
            {"inplace", m_inplace},
            {"bytes_per_op", m_sizing.bytes},
            {"requested_bytes", m_requested},
            {"size_convention", nccl::size_convention(m_spec.kind)},
            {"size_rule", fmt::format("sizes are rounded down to a multiple of {} B (element size{}), as nccl-tests "
                                      "does",
                                      m_sizing.granule, m_sizing.granule > m_model.element_bytes() ? " x ranks" : "")},
            {"count", m_sizing.count},
            {"busbw_factor", nccl::busbw_factor(m_spec.kind, m_nranks)},
            {"busbw_formula", nccl::busbw_formula(m_spec.kind)},
            {"ops_per_sample", m_reps},
            {"timing", m_world ? "CUDA events around the sample's operations on this rank's GPU, started after an "
                                 "MPI barrier (streams not held across processes)"
                               : "CUDA events per GPU around the sample's operations, streams held by a spin kernel "
                                 "while they are enqueued; the slowest GPU's time"},
            {"nccl_transport", transport_since(m_log_start)},
            {"nvls_enable", nvls ? nvls : ""},
            {"verification", m_model.method()},
        };
        if (m_spec.reduces) d["op"] = m_op;
        if (m_world) d["rank"] = m_world->rank();
        return d;
    }

private:
    /// `count` output elements at `offset` (elements into the receive buffer) that must
    /// equal rank `from`'s inputs (or the reduction when from < 0) starting at `first`.
    struct Block {
        std::uint64_t offset, count;
        int from;
        std::uint64_t first;
    };

    std::size_t elem() const { return m_model.element_bytes(); }

    void allocate(LocalRank& r) {
        const auto e = elem();
        const auto c = m_sizing.count;
        if (!m_inplace) {
            r.first = gpu::DeviceBuffer(r.device, m_sizing.send_bytes);
            r.second = gpu::DeviceBuffer(r.device, m_sizing.recv_bytes);
            r.send = r.first.get();
            r.recv = r.second.get();
            return;
        }
        // NCCL's in-place forms: one buffer, the rank's own block inside it where split.
        r.first = gpu::DeviceBuffer(r.device, std::max(m_sizing.send_bytes, m_sizing.recv_bytes));
        auto* base = static_cast<unsigned char*>(r.first.get());
        r.send = r.recv = base;
        if (m_spec.kind == Collective::all_gather) r.send = base + r.rank * c * e;
        if (m_spec.kind == Collective::reduce_scatter) r.recv = base + r.rank * c * e;
    }

    [[noreturn]] void fail(ncclResult_t res, const std::string& what) {
        const std::string detail = m_comms.last_error();
        m_comms.abort_all();
        throw ConfigError(fmt::format("{} failed: {} ({}); communicator aborted", what, m_api.get_error_string(res),
                                      detail));
    }

    [[noreturn]] void timed_out(const std::string& what) {
        m_comms.abort_all();
        throw ConfigError(fmt::format("timed out after {:.0f} s waiting for {}, communicator aborted{}", m_timeout_s,
                                      what, m_world ? " (a rank may have skipped or failed this configuration)" : ""));
    }

    Clock::time_point deadline() const {
        return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(m_timeout_s));
    }

    /// Waits until no communicator is busy; aborts on an error or at the deadline.
    void wait_ready(const std::string& what) {
        const auto until = deadline();
        while (true) {
            const ncclResult_t s = m_comms.state();
            if (s == ncclSuccess) return;
            if (s != ncclInProgress) fail(s, what);
            if (Clock::now() > until) timed_out(what);
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }

    /// Waits for every GPU's stop event, watching NCCL for errors and the deadline.
    void wait_done(const std::string& what) {
        const auto until = deadline();
        while (true) {
            bool done = true;
            for (const auto& r : m_ranks) {
                const cudaError_t q = cudaEventQuery(r->stop.get());
                if (q == cudaErrorNotReady) done = false;
                else IB_CUDA_CHECK(q);
            }
            if (done) return;
            const ncclResult_t s = m_comms.state();
            if (s != ncclSuccess && s != ncclInProgress) fail(s, what);
            if (Clock::now() > until) timed_out(what);
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }

    /// The communicator's id: made here, or by rank 0 and broadcast over MPI.
    ncclUniqueId unique_id() {
        struct {
            ncclResult_t result;
            ncclUniqueId id;
        } msg{};
        if (!m_world || m_world->rank() == 0) msg.result = m_api.get_unique_id(&msg.id);
        if (m_world) m_world->broadcast(&msg, sizeof msg, 0);
        if (msg.result != ncclSuccess)
            throw ConfigError(fmt::format("ncclGetUniqueId failed{}: {}", m_world ? " on rank 0" : "",
                                          m_api.get_error_string(msg.result)));
        return msg.id;
    }

    void init_comms(const ncclUniqueId& id) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0; // every call returns at once; completion is polled against a deadline
        ncclResult_t first = m_api.group_start();
        for (std::size_t i = 0; i < m_ranks.size() && first == ncclSuccess; ++i) {
            gpu::set_device(m_ranks[i]->device);
            const ncclResult_t r = m_api.comm_init_rank_config(&m_comms[i], m_nranks, id, m_ranks[i]->rank, &config);
            if (r != ncclSuccess && r != ncclInProgress) first = r;
        }
        const ncclResult_t end = m_api.group_end();
        if (first != ncclSuccess) fail(first, "ncclCommInitRankConfig");
        if (end != ncclSuccess && end != ncclInProgress) fail(end, "ncclGroupEnd after communicator set-up");
        wait_ready("communicator set-up");
    }

    ncclResult_t enqueue_one(LocalRank& r, std::size_t i) {
        const ncclDataType_t dt = m_nccl_dtype;
        const ncclRedOp_t op = m_nccl_op;
        const auto c = m_sizing.count;
        ncclComm_t comm = m_comms[i];
        cudaStream_t s = r.stream.get();
        switch (m_spec.kind) {
        case Collective::all_reduce: return m_api.all_reduce(r.send, r.recv, c, dt, op, comm, s);
        case Collective::all_gather: return m_api.all_gather(r.send, r.recv, c, dt, comm, s);
        case Collective::reduce_scatter: return m_api.reduce_scatter(r.send, r.recv, c, dt, op, comm, s);
        case Collective::broadcast: return m_api.broadcast(r.send, r.recv, c, dt, 0, comm, s);
        case Collective::reduce: return m_api.reduce(r.send, r.recv, c, dt, op, 0, comm, s);
        case Collective::alltoall: {
            const auto block = c * elem();
            for (int peer = 0; peer < m_nranks; ++peer) {
                auto* src = static_cast<const unsigned char*>(r.send) + peer * block;
                auto* dst = static_cast<unsigned char*>(r.recv) + peer * block;
                ncclResult_t res = m_api.send(src, c, dt, peer, comm, s);
                if (res == ncclSuccess || res == ncclInProgress) res = m_api.recv(dst, c, dt, peer, comm, s);
                if (res != ncclSuccess && res != ncclInProgress) return res;
            }
            return ncclSuccess;
        }
        case Collective::sendrecv: {
            const ncclResult_t res = m_api.send(r.send, c, dt, (r.rank + 1) % m_nranks, comm, s);
            if (res != ncclSuccess && res != ncclInProgress) return res;
            return m_api.recv(r.recv, c, dt, (r.rank + m_nranks - 1) % m_nranks, comm, s);
        }
        }
        return ncclInvalidUsage;
    }

    /// One operation on every local GPU, grouped (NCCL needs one group when a thread
    /// drives several ranks).
    void enqueue_op() {
        ncclResult_t first = m_api.group_start();
        std::string which = "ncclGroupStart";
        for (std::size_t i = 0; i < m_ranks.size() && first == ncclSuccess; ++i) {
            const ncclResult_t r = gpu::nccl_fault() ? ncclSystemError : enqueue_one(*m_ranks[i], i);
            if (r != ncclSuccess && r != ncclInProgress) {
                first = r;
                which = fmt::format("nccl {} on GPU {}", nccl::to_string(m_spec.kind), m_ranks[i]->device);
            }
        }
        const ncclResult_t end = m_api.group_end();
        if (first != ncclSuccess) fail(first, which);
        if (end == ncclInProgress) wait_ready("NCCL to enqueue an operation");
        else if (end != ncclSuccess) fail(end, "ncclGroupEnd");
    }

    /// `reps` operations between events on every GPU; returns the slowest GPU's seconds
    /// per operation.
    double timed_ops(int reps, bool hold) {
        if (m_world) m_world->barrier();
        auto* flag = static_cast<volatile int*>(m_hold_flag.get());
        auto* flag_dev = static_cast<int*>(m_hold_flag.device_ptr());
        // Releases held streams on every way out, so a failed enqueue never leaves a GPU spinning.
        struct Release {
            volatile int* flag;
            ~Release() { flag[0] = 1; }
        } release{flag};
        flag[0] = hold ? 0 : 1;
        flag[1] = 0;
        for (const auto& r : m_ranks) {
            gpu::set_device(r->device);
            if (hold)
                IB_CUDA_CHECK(kernels::launch_spin_wait(flag_dev, k_hold_timeout_ns, flag_dev + 1, r->stream.get()));
            IB_CUDA_CHECK(cudaEventRecord(r->start.get(), r->stream.get()));
        }
        for (int k = 0; k < reps; ++k) enqueue_op();
        for (const auto& r : m_ranks) {
            gpu::set_device(r->device);
            IB_CUDA_CHECK(cudaEventRecord(r->stop.get(), r->stream.get()));
        }
        std::atomic_thread_fence(std::memory_order_seq_cst);
        flag[0] = 1;
        wait_done(fmt::format("{} operation(s) to complete", reps));
        if (flag[1])
            throw ConfigError("the stream-holding kernel timed out while NCCL operations were enqueued (NCCL "
                              "blocked the host); the sample would include enqueue time");
        double slowest = 0;
        for (const auto& r : m_ranks) slowest = std::max(slowest, gpu::elapsed_s(r->start, r->stop));
        return slowest / reps;
    }

    /// Writes `count` elements of rank `from`'s input to `dst` on the rank's GPU: one
    /// period from the host, then doubling device copies (the data repeats every period).
    void write_input(const LocalRank& r, void* dst, std::uint64_t count, int from) {
        const auto e = elem();
        const std::uint64_t head = std::min<std::uint64_t>(count, nccl::ValueModel::k_period);
        std::vector<unsigned char> period(head * e);
        m_model.write_inputs(from, 0, head, period.data());
        auto* base = static_cast<unsigned char*>(dst);
        cudaStream_t s = r.stream.get();
        IB_CUDA_CHECK(cudaMemcpyAsync(base, period.data(), head * e, cudaMemcpyHostToDevice, s));
        for (std::uint64_t done = head; done < count;) {
            const std::uint64_t n = std::min(done, count - done);
            IB_CUDA_CHECK(cudaMemcpyAsync(base + done * e, base, n * e, cudaMemcpyDeviceToDevice, s));
            done += n;
        }
        IB_CUDA_CHECK(cudaStreamSynchronize(s));
    }

    /// Fills every local rank's input; with `poison`, outputs are first overwritten with
    /// 0xFF bytes (NaN for floating types, all ones for integers), so an output NCCL did
    /// not write is caught.
    void fill_inputs(bool poison) {
        const auto e = elem();
        for (const auto& r : m_ranks) {
            gpu::set_device(r->device);
            // In place, the input overwrites the output region, except all_gather's other blocks.
            if (poison && (!m_inplace || m_spec.kind == Collective::all_gather))
                IB_CUDA_CHECK(cudaMemsetAsync(m_inplace ? r->first.get() : r->recv, 0xFF,
                                              m_inplace ? r->first.size() : m_sizing.recv_bytes, r->stream.get()));
            write_input(*r, r->send, m_sizing.send_bytes / e, r->rank);
        }
    }

    std::vector<Block> expected_blocks(const LocalRank& r) const {
        const std::uint64_t c = m_sizing.count;
        const int g = r.rank, n = m_nranks;
        std::vector<Block> out;
        switch (m_spec.kind) {
        case Collective::all_reduce: out.push_back({0, c, -1, 0}); break;
        case Collective::all_gather:
            for (int b = 0; b < n; ++b) out.push_back({b * c, c, b, 0});
            break;
        case Collective::reduce_scatter: out.push_back({0, c, -1, g * c}); break;
        case Collective::broadcast: out.push_back({0, c, 0, 0}); break;
        case Collective::reduce:
            if (g == 0) out.push_back({0, c, -1, 0}); // other ranks' output is undefined
            break;
        case Collective::alltoall:
            for (int q = 0; q < n; ++q) out.push_back({q * c, c, q, g * c});
            break;
        case Collective::sendrecv: out.push_back({0, c, (g + n - 1) % n, 0}); break;
        }
        return out;
    }

    /// Compares one block of a rank's output with the expected values; returns the
    /// number of wrong elements and describes the first one.
    std::uint64_t compare_block(const LocalRank& r, const Block& b, std::string& first_bad) {
        const auto e = elem();
        const std::uint64_t period = nccl::ValueModel::k_period;
        // Expected values for two periods, so any window of up to one period is contiguous.
        std::vector<unsigned char> table(2 * period * e);
        if (b.from < 0) m_model.write_reduced(0, period, table.data());
        else m_model.write_inputs(b.from, 0, period, table.data());
        std::memcpy(table.data() + period * e, table.data(), period * e);

        const std::size_t stage = std::min<std::uint64_t>(k_stage_bytes, b.count * e);
        if (m_stage.size() < stage) m_stage = gpu::HostBuffer(gpu::HostMem::pinned, stage);
        const std::uint64_t chunk = m_stage.size() / e;
        const auto* src = static_cast<const unsigned char*>(r.recv) + b.offset * e;
        auto* got = static_cast<unsigned char*>(m_stage.get());
        std::uint64_t bad = 0;
        gpu::set_device(r.device);
        for (std::uint64_t off = 0; off < b.count; off += chunk) {
            const std::uint64_t len = std::min(chunk, b.count - off);
            IB_CUDA_CHECK(cudaMemcpyAsync(got, src + off * e, len * e, cudaMemcpyDeviceToHost, r.stream.get()));
            IB_CUDA_CHECK(cudaStreamSynchronize(r.stream.get()));
            for (std::uint64_t pos = 0; pos < len;) {
                const std::uint64_t phase = (b.first + off + pos) % period;
                const std::uint64_t piece = std::min(len - pos, period);
                const unsigned char* want = table.data() + phase * e;
                const unsigned char* have = got + pos * e;
                if (std::memcmp(have, want, piece * e) != 0) {
                    for (std::uint64_t k = 0; k < piece; ++k) {
                        if (m_model.same(have + k * e, want + k * e)) continue;
                        ++bad;
                        if (first_bad.empty())
                            first_bad = fmt::format("rank {} (GPU {}) element {}: expected {}, got {}", r.rank,
                                                    r.device, b.offset + off + pos + k, m_model.show(want + k * e),
                                                    m_model.show(have + k * e));
                    }
                }
                pos += piece;
            }
        }
        return bad;
    }

    const CollectiveSpec& m_spec;
    const gpu::NcclApi& m_api;
    World* m_world;
    int m_nranks;
    std::string m_dtype, m_op;
    bool m_inplace;
    std::uint64_t m_requested;
    nccl::ValueModel m_model;
    nccl::Sizing m_sizing;
    ncclDataType_t m_nccl_dtype = ncclFloat;
    ncclRedOp_t m_nccl_op = ncclSum; ///< unused by collectives that do not reduce
    gpu::HostBuffer m_hold_flag; ///< [0] releases held streams, [1] set when the hold timed out
    gpu::HostBuffer m_stage;     ///< pinned staging for verification
    double m_timeout_s;
    int m_reps = 1;
    std::vector<std::unique_ptr<LocalRank>> m_ranks;
    Comms m_comms; ///< after m_ranks: communicators go before the streams and buffers they use
    std::uint64_t m_log_start = 0; ///< NCCL's debug log's size when this configuration began
};

#endif // INTEROPBENCH_WITH_NCCL

class NcclScenario final : public Scenario {
public:
    explicit NcclScenario(const CollectiveSpec& spec) : m_spec(spec) {
        m_info.id = std::string("nccl_") + nccl::to_string(spec.kind);
        m_info.family = "nccl";
        m_info.summary = spec.summary;
        m_info.counting = "size = one rank's larger buffer, as nccl-tests counts it (details.size_convention); "
                          "algbw = size / time per operation; busbw = algbw x the collective's bus factor "
                          "(details.busbw_factor and busbw_formula)";
        m_info.axes = {
            {"size", "bytes per operation per rank (see details.size_convention); 8 B to 8 GiB", AxisKind::size,
             {"8:1G:x8"}, {}},
            {"dtype", "NCCL datatype", AxisKind::choice, {"float"},
             {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16"}},
        };
        if (spec.reduces)
            m_info.axes.push_back({"op", "reduction", AxisKind::choice, {"sum"}, {"sum", "prod", "max", "min", "avg"}});
        if (spec.has_inplace)
            m_info.axes.push_back({"inplace", "0: separate output buffer, 1: NCCL's in-place form", AxisKind::choice,
                                   {"0"}, {"0", "1"}});
        m_info.metrics = {
            {"time", "s", Better::lower, "time per operation, slowest GPU"},
            {"algbw", "B/s", Better::higher, "size / time per operation"},
            {"busbw", "B/s", Better::higher, "algbw x bus factor: comparable with the link's bandwidth"},
        };
        m_info.limited_metric = "busbw";
    }

    const ScenarioInfo& info() const override { return m_info; }
    std::vector<PathUse> paths(const Params&) const override { return {{PathKind::nccl_bus, k_every_gpu}}; }

    std::optional<std::string> unsupported(const Machine& m, const Params& p) const override {
        if (auto why = gpu_unavailable_reason(m)) return why;
        const RuntimeLibrary* nccl = m.library("nccl");
        if (!nccl || !nccl->loaded())
            return "NCCL is not available: " + (!nccl || nccl->note.empty() ? std::string("it was not probed") : nccl->note);
        const int n = rank_count(m);
        if (n < 2) {
            if (m.world) return std::string("needs at least 2 ranks: launch with mpirun -np 2 or more");
            return fmt::format("needs at least 2 GPUs; {} selected (use --devices with two or more GPUs)",
                               m.selected.size());
        }
        if (m.world && !rank_device(m))
            return fmt::format("rank {} is local rank {} on its node, which has only {} GPU(s) selected: run at most "
                               "one rank per GPU on each node",
                               m.world->rank(), m.world->local_rank(), m.selected.size());
        const auto e = nccl::element_bytes(p.get("dtype"));
        if (!e) return fmt::format("unknown datatype '{}'", p.get("dtype"));
        const auto s = nccl::size_collective(m_spec.kind, p.get_uint("size"), *e, n);
        if (s.bytes == 0)
            return fmt::format("size {} B is below one {}-byte element{}: {} needs a multiple of {} B (sizes are "
                               "rounded down to one)",
                               p.get_uint("size"), *e, s.granule > *e ? fmt::format(" per rank ({} ranks)", n) : "",
                               m_info.id, s.granule);
        const bool inplace = m_spec.has_inplace && p.get("inplace") == "1";
        const std::uint64_t need = inplace ? std::max(s.send_bytes, s.recv_bytes) : s.send_bytes + s.recv_bytes;
        for (int d : local_devices(m)) {
            const DeviceInfo* info = m.device(d);
            if (info && info->free_memory && need > info->free_memory)
                return fmt::format("needs {} B of buffers on GPU {}, which has {} B free", need, d, info->free_memory);
        }
        return std::nullopt;
    }

    std::unique_ptr<Case> prepare(const CaseContext& ctx, const Params& p) const override {
#if INTEROPBENCH_WITH_NCCL
        std::string why;
        const gpu::NcclApi* api = gpu::nccl_api(&why);
        if (!api) throw ConfigError(why);
        return std::make_unique<NcclCase>(ctx, m_spec, p, *api);
#else
        (void)ctx;
        (void)p;
        throw ConfigError("built without NCCL");
#endif
    }

private:
    const CollectiveSpec& m_spec;
    ScenarioInfo m_info;
};

} // namespace

void register_nccl(Registry& r) {
    for (const auto& spec : k_specs) r.add(std::make_unique<NcclScenario>(spec));
}

} // namespace interopbench
