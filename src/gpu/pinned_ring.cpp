// The pinned ring between files and a GPU (pinned_ring.hpp).
#include "gpu/pinned_ring.hpp"

#include <algorithm>
#include <deque>

#include "hostio/storage_io.hpp"

namespace interopbench::gpu {

PinnedRing::PinnedRing(int device, unsigned k, std::uint64_t chunk) {
    set_device(device);
    for (unsigned i = 0; i < k; ++i) {
        buffers.emplace_back(HostMem::pinned, chunk);
        streams.push_back(std::make_unique<Stream>(device));
        done.push_back(std::make_unique<Event>(EventUse::sync));
    }
}

std::vector<iovec> PinnedRing::regions() const {
    std::vector<iovec> out;
    for (const auto& b : buffers) out.push_back({b.get(), b.size()});
    return out;
}

void PinnedRing::synchronize() const {
    for (const auto& st : streams) IB_CUDA_CHECK(cudaStreamSynchronize(st->get()));
}

void read_share_to_device(PinnedRing& ring, const std::vector<storage::FileSlice>& share,
                          const std::vector<std::unique_ptr<storage::ChunkReader>>& readers, std::uint64_t chunk,
                          const Event* first) {
    const std::size_t k = ring.buffers.size();
    std::deque<std::size_t> free;
    std::vector<char> used(k, 0);
    for (std::size_t i = 0; i < k; ++i) free.push_back(i);
    bool mark_first = first != nullptr;
    for (std::size_t i = 0; i < share.size(); ++i) {
        const storage::FileSlice& sl = share[i];
        storage::ChunkReader& reader = *readers[i];
        std::uint64_t next = 0, done = 0;
        while (done < sl.bytes) {
            while (reader.can_submit() && next < sl.bytes && !free.empty()) {
                const std::size_t slot = free.front();
                free.pop_front();
                if (used[slot]) IB_CUDA_CHECK(cudaEventSynchronize(ring.done[slot]->get()));
                const std::uint64_t n = std::min(chunk, sl.bytes - next);
                reader.submit(ring.buffers[slot].get(), sl.offset + next, n, slot);
                next += n;
            }
            const storage::ChunkReader::Done d = reader.wait();
            const cudaStream_t st = ring.streams[d.tag]->get();
            char* to = static_cast<char*>(sl.dst) + (d.offset - sl.offset);
            IB_CUDA_CHECK(cudaMemcpyAsync(to, ring.buffers[d.tag].get(), d.bytes, cudaMemcpyHostToDevice, st));
            IB_CUDA_CHECK(cudaEventRecord(ring.done[d.tag]->get(), st));
            if (mark_first) {
                IB_CUDA_CHECK(cudaEventRecord(first->get(), st));
                mark_first = false;
            }
            used[d.tag] = 1;
            free.push_back(d.tag);
            done += d.bytes;
        }
    }
    ring.synchronize();
}

void write_share_from_device(PinnedRing& ring, const std::vector<storage::FileSlice>& share, std::uint64_t chunk) {
    const std::size_t k = ring.buffers.size();
    struct Piece {
        const storage::FileSlice* slice;
        std::uint64_t at, n;
    };
    std::vector<Piece> pieces;
    for (const storage::FileSlice& sl : share)
        for (std::uint64_t at = 0; at < sl.bytes; at += chunk) pieces.push_back({&sl, at, std::min(chunk, sl.bytes - at)});
    auto enqueue = [&](std::size_t i) {
        const std::size_t slot = i % k;
        const Piece& p = pieces[i];
        IB_CUDA_CHECK(cudaMemcpyAsync(ring.buffers[slot].get(), static_cast<char*>(p.slice->dst) + p.at, p.n,
                                      cudaMemcpyDeviceToHost, ring.streams[slot]->get()));
        IB_CUDA_CHECK(cudaEventRecord(ring.done[slot]->get(), ring.streams[slot]->get()));
    };
    for (std::size_t i = 0; i < std::min(k, pieces.size()); ++i) enqueue(i);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        const std::size_t slot = i % k;
        IB_CUDA_CHECK(cudaEventSynchronize(ring.done[slot]->get()));
        const Piece& p = pieces[i];
        storage::pwrite_all(p.slice->fd, ring.buffers[slot].get(), p.n, p.slice->offset + p.at, *p.slice->path);
        if (i + k < pieces.size()) enqueue(i + k);
    }
}

} // namespace interopbench::gpu
