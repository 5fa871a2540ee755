#pragma once
/// A ring of pinned chunk buffers between files and a GPU, and the loops of one reader or writer
/// thread over it: a share of a file read chunk by chunk into the ring, each chunk copied to
/// the GPU as soon as it is read (the next ones read meanwhile), or copied from the GPU chunk by
/// chunk and written out once each copy is done. The storage family's pipelined paths and the
/// transfer family's file endpoints use them.
#include <cstdint>
#include <memory>
#include <vector>

#include <sys/uio.h>

#include "gpu/cuda_util.hpp"
#include "hostio/readers.hpp"

namespace interopbench::gpu {

/// K pinned chunk buffers on the host, one stream and one event each, for one thread.
struct PinnedRing {
    std::vector<HostBuffer> buffers;
    std::vector<std::unique_ptr<Stream>> streams;
    std::vector<std::unique_ptr<Event>> done;
    /// `k` buffers of `chunk` bytes, streams on `device` (made current).
    PinnedRing(int device, unsigned k, std::uint64_t chunk);
    /// The buffers, for registration with io_uring (ChunkReader's `fixed`).
    std::vector<iovec> regions() const;
    /// Waits for every slot's last copy.
    void synchronize() const;
};

/// One reader thread: every slice of `share` read in `chunk`-byte pieces into `ring` by its
/// reader (`readers[i]` reads `share[i]`, up to its depth in flight), each piece copied to its
/// place at the slice's `dst` (device memory of the current GPU) on its slot's stream as soon
/// as it is read; a slot is read into again only once its last copy is done. With `first`, an
/// event recorded after the first piece's copy. Returns when every copy is done.
void read_share_to_device(PinnedRing& ring, const std::vector<storage::FileSlice>& share,
                          const std::vector<std::unique_ptr<storage::ChunkReader>>& readers, std::uint64_t chunk,
                          const Event* first = nullptr);

/// One writer thread: every slice of `share` (its `dst` is the device memory to save) copied in
/// `chunk`-byte pieces into `ring`, up to K copies ahead, each piece written to the slice's file
/// once its copy is done. Throws ConfigError on a write error (disk full named).
void write_share_from_device(PinnedRing& ring, const std::vector<storage::FileSlice>& share, std::uint64_t chunk);

} // namespace interopbench::gpu
