// The MPI world of a multi-process run. MPI is initialised only when an MPI launcher
// started this process, so a plain `interopbench` never touches MPI. Communication
// failures abort the whole job (MPI_ERRORS_ARE_FATAL, MPI's default): a rank left
// waiting for a dead peer would hang, which is worse than stopping.
#include <cstdlib>

#include "cli/cli.hpp"

#if INTEROPBENCH_WITH_MPI
// The C API only: without these, mpi.h pulls in the deprecated C++ bindings and their library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#endif

namespace interopbench::cli {

namespace {

bool launched_by_mpi() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK"); }

} // namespace

#if INTEROPBENCH_WITH_MPI

namespace {

void mpi_check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw std::runtime_error(fmt::format("{} failed: {}", what, text));
}

// MPI counts are ints: large messages go in pieces.
constexpr std::size_t k_piece = std::size_t{1} << 30;

class MpiWorld final : public World {
public:
    MpiWorld(int& argc, char**& argv) {
        mpi_check(MPI_Init(&argc, &argv), "MPI_Init");
        mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &m_rank), "MPI_Comm_rank");
        mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &m_size), "MPI_Comm_size");
        // Ranks sharing a node (shared memory) number their GPUs from 0.
        mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, m_rank, MPI_INFO_NULL, &m_node),
                  "MPI_Comm_split_type");
        mpi_check(MPI_Comm_rank(m_node, &m_local_rank), "MPI_Comm_rank");
    }
    ~MpiWorld() override {
        MPI_Comm_free(&m_node);
        MPI_Finalize();
    }
    MpiWorld(const MpiWorld&) = delete;
    MpiWorld& operator=(const MpiWorld&) = delete;

    int rank() const override { return m_rank; }
    int size() const override { return m_size; }
    int local_rank() const override { return m_local_rank; }

    void broadcast(void* data, std::size_t bytes, int root) override {
        auto* p = static_cast<char*>(data);
        for (std::size_t off = 0; off < bytes; off += k_piece)
            mpi_check(MPI_Bcast(p + off, static_cast<int>(std::min(k_piece, bytes - off)), MPI_BYTE, root,
                                MPI_COMM_WORLD),
                      "MPI_Bcast");
    }

    void barrier() override { mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

    std::vector<std::string> gather(const std::string& mine, int root) override {
        unsigned long long length = mine.size();
        std::vector<unsigned long long> lengths(m_rank == root ? static_cast<std::size_t>(m_size) : 0);
        mpi_check(MPI_Gather(&length, 1, MPI_UNSIGNED_LONG_LONG, lengths.data(), 1, MPI_UNSIGNED_LONG_LONG, root,
                             MPI_COMM_WORLD),
                  "MPI_Gather");
        // Point to point in pieces: no int limit on a rank's text.
        constexpr int k_tag = 0x1b;
        if (m_rank != root) {
            for (std::size_t off = 0; off < mine.size(); off += k_piece)
                mpi_check(MPI_Send(mine.data() + off, static_cast<int>(std::min(k_piece, mine.size() - off)),
                                   MPI_BYTE, root, k_tag, MPI_COMM_WORLD),
                          "MPI_Send");
            return {};
        }
        std::vector<std::string> out(static_cast<std::size_t>(m_size));
        for (int r = 0; r < m_size; ++r) {
            auto& text = out[static_cast<std::size_t>(r)];
            if (r == root) {
                text = mine;
                continue;
            }
            text.resize(lengths[static_cast<std::size_t>(r)]);
            for (std::size_t off = 0; off < text.size(); off += k_piece)
                mpi_check(MPI_Recv(text.data() + off, static_cast<int>(std::min(k_piece, text.size() - off)),
                                   MPI_BYTE, r, k_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                          "MPI_Recv");
        }
        return out;
    }

private:
    int m_rank = 0, m_size = 1, m_local_rank = 0;
    MPI_Comm m_node = MPI_COMM_NULL;
};

} // namespace

std::unique_ptr<World> make_mpi_world(int& argc, char**& argv) {
    if (!launched_by_mpi()) return nullptr;
    return std::make_unique<MpiWorld>(argc, argv);
}

#else

std::unique_ptr<World> make_mpi_world(int&, char**&) {
    if (launched_by_mpi())
        throw UsageError("started by an MPI launcher, but this interopbench was built without MPI",
                         "rebuild with -DINTEROPBENCH_WITH_MPI=ON (OpenMPI installed), or run without mpirun");
    return nullptr;
}

#endif

} // namespace interopbench::cli
