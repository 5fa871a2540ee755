#pragma once
/// The arithmetic of the NCCL collective scenarios, free of CUDA and NCCL calls so it is
/// testable anywhere: bus-bandwidth factors, the size convention and its rounding rule,
/// the values used to verify results, and the reading of NCCL's debug log.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace interopbench::nccl {

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv };

/// "all_reduce", "all_gather"... (the scenario id without its "nccl_" prefix).
const char* to_string(Collective c);

/// busbw = algbw × factor, the standard factors for n ranks: all_reduce 2(n-1)/n;
/// all_gather, reduce_scatter, alltoall (n-1)/n; broadcast, reduce, sendrecv 1.
/// Requires n >= 1.
double busbw_factor(Collective c, int nranks);
/// The factor as a formula for the report: "2(n-1)/n", "(n-1)/n" or "1".
const char* busbw_formula(Collective c);
/// What the size of an operation means for this collective, in words.
const char* size_convention(Collective c);

/// Bytes of one element of a datatype named as the `dtype` axis does ("float" -> 4);
/// nothing for an unknown name.
std::optional<std::size_t> element_bytes(std::string_view dtype);

/// One operation's buffers per rank for a requested size, as nccl-tests counts them:
/// the size is the larger buffer of a rank (all_gather: the gathered output;
/// reduce_scatter and alltoall: the whole input; the others: the one buffer).
struct Sizing {
    std::uint64_t bytes = 0;   ///< size used: the request rounded down to a multiple of `granule`
    std::uint64_t granule = 0; ///< element bytes, times the rank count where a buffer is split per rank
    std::uint64_t count = 0;   ///< the NCCL call's count argument (per rank, or per peer for alltoall)
    std::uint64_t send_bytes = 0, recv_bytes = 0; ///< each rank's buffers when out of place
};
/// Sizing of `requested` bytes; bytes = 0 when the request is below one granule.
Sizing size_collective(Collective c, std::uint64_t requested, std::size_t element_bytes, int nranks);

/// Verification data. Every rank's input is a sequence of small positive integers that
/// repeats every k_period elements (a prime, so no power-of-two shift of the data matches
/// itself), chosen per operation so that every reduction is exact: sums stay within the
/// integers a float type holds exactly, products are powers of two, and integer types
/// wrap exactly as the GPU does. avg of floating types is compared within rounding (NCCL
/// pre-multiplies by 1/n); everything else bit for bit.
class ValueModel {
public:
    static constexpr std::uint64_t k_period = 65521;

    /// `op` is "sum", "prod", "max", "min", "avg", or empty for collectives that do not
    /// reduce. Throws std::invalid_argument for an unknown dtype or op.
    ValueModel(std::string_view dtype, std::string_view op, int nranks);

    std::size_t element_bytes() const { return m_bytes; }
    /// Writes rank `rank`'s inputs for elements [first, first + count) to `dst`, encoded
    /// in the datatype (little-endian, as the GPU stores them).
    void write_inputs(int rank, std::uint64_t first, std::size_t count, void* dst) const;
    /// Writes the reduction over all ranks of elements [first, first + count).
    void write_reduced(std::uint64_t first, std::size_t count, void* dst) const;
    /// True when element `got` is correct given the expected element.
    bool same(const void* got, const void* expected) const;
    /// One element as text, for error messages.
    std::string show(const void* element) const;
    /// How results are compared, for the report.
    std::string method() const;

private:
    enum class Kind { sint, uint, floating };
    std::uint64_t input_value(int rank, std::uint64_t index) const;
    void encode_uint(std::uint64_t v, void* dst) const;
    void encode_float(double v, void* dst) const;
    double decode(const void* src) const;

    std::string m_dtype, m_op;
    std::size_t m_bytes = 0;
    Kind m_kind = Kind::floating;
    double m_eps = 0;        ///< unit roundoff of the floating type
    int m_nranks = 1;
    std::uint64_t m_range = 1; ///< inputs are 1..m_range (prod: 1 or 2)
    bool m_tolerant = false;   ///< compare within rounding instead of bit for bit
};

/// Which transports NCCL chose, from its debug log (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET):
/// the only place NCCL says it. Reads the INFO lines ("host:pid:tid [dev] NCCL INFO ...") and
/// returns the result's "nccl_transport" detail:
///  - "network": the network NCCL would use between nodes ("Using network IB", else the NET
///    plugin assigned to the communicator, else the NET/IB or NET/Socket device lines): "IB",
///    "Socket" or a plugin's name; null when the log does not say;
///  - "net_plugin": the external NET plugin loaded ("NET/Plugin: Loaded net plugin NAME"), or null;
///  - "gdr": whether the network path uses GPUDirect RDMA: from the NET channels when NCCL
///    opened any ("via NET/IB/0/GDRDMA"), else whether NCCL found it on the NICs ("GPU Direct
///    RDMA Enabled for HCA"); null when the log says neither;
///  - "channels_via": each transport of the channels NCCL connected, first seen first, device
///    and rank numbers left out ("P2P/IPC", "P2P/CUMEM/read", "SHM/direct/direct", "NET/IB/GDRDMA");
///  - "source": "NCCL debug log".
nlohmann::json transport_from_log(std::string_view log);

} // namespace interopbench::nccl
