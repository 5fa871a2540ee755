#!/usr/bin/env python3
"""A PyTorch loader on the pipeline's dataset, the reference the pipeline is set beside.

Reads the .npy column files interopbench's pipeline writes (ib-pipeline-v1-ROWS-cC-TYPE.npy, kept
with --keep-files) batch by batch the way a careful PyTorch user would: reader threads fill
pinned host buffers with each batch's column slices (os.preadv into the pinned tensor's
memory), the batch is copied to the GPU asynchronously, cast and stacked into one row-major
float32 matrix there, and consumed (a sum). GB = 1e9 bytes of column data per second of a
whole pass, the median of three, warm (a first untimed pass reads the files). Prints one JSON line per loader.

    torch_loader.py DIR ROWS BATCH_BYTES [THREADS...]
"""
import concurrent.futures
import glob
import json
import os
import sys
import time

import numpy as np
import torch


def columns(folder, rows):
    files = []
    for c in range(8):
        found = glob.glob(os.path.join(folder, f"ib-pipeline-v1-{rows}-c{c}-*.npy"))
        if len(found) != 1:
            sys.exit(f"torch_loader: column {c} of {rows} rows not found once in {folder}")
        arr = np.load(found[0], mmap_mode="r")
        files.append((found[0], arr.offset, arr.dtype, arr.shape[0]))
    return files


def run(files, batch_rows, threads, passes=3):
    dev = torch.device("cuda", 0)
    fds = [os.open(p, os.O_RDONLY) for p, _, _, _ in files]
    rows = files[0][3]
    widths = [np.dtype(t).itemsize for _, _, t, _ in files]
    torch_types = [torch.from_numpy(np.zeros(1, dtype=t)).dtype for _, _, t, _ in files]
    # Two pinned staging sets: one being filled while the other is copied.
    staging = [[torch.empty(batch_rows * w, dtype=torch.uint8).pin_memory() for w in widths] for _ in range(2)]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    stream = torch.cuda.Stream(dev)
    done = [torch.cuda.Event(), torch.cuda.Event()]
    total = torch.zeros((), dtype=torch.float64, device=dev)

    def read_slice(c, row0, n, slot):
        buf = memoryview(staging[slot][c].numpy())[: n * widths[c]]
        got = os.preadv(fds[c], [buf], files[c][1] + row0 * widths[c])
        if got != n * widths[c]:
            raise OSError(f"short read of {files[c][0]}")

    def read_batch(row0, n, slot):
        if pool:
            list(pool.map(lambda c: read_slice(c, row0, n, slot), range(len(files))))
        else:
            for c in range(len(files)):
                read_slice(c, row0, n, slot)

    rates = []
    data_bytes = sum(w * rows for w in widths)
    for i in range(passes + 1):  # the first pass warms the cache and the allocator
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for b, row0 in enumerate(range(0, rows, batch_rows)):
            n = min(batch_rows, rows - row0)
            slot = b % 2
            done[slot].synchronize()  # its previous copy is finished
            read_batch(row0, n, slot)
            with torch.cuda.stream(stream):
                cols = []
                for c in range(len(files)):
                    raw = staging[slot][c][: n * widths[c]].to(dev, non_blocking=True)
                    cols.append(raw.view(torch_types[c]).to(torch.float32))
                done[slot].record(stream)
                matrix = torch.stack(cols, dim=1)  # row-major rows x 8 float32
                total += matrix.sum(dtype=torch.float64)
        torch.cuda.synchronize()
        t = time.perf_counter() - t0
        if i > 0:
            rates.append(data_bytes / t)
    for fd in fds:
        os.close(fd)
    if pool:
        pool.shutdown()
    return sorted(rates)[len(rates) // 2], float(total)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    folder, rows, batch_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    files = columns(folder, rows)
    row_bytes = sum(np.dtype(t).itemsize for _, _, t, _ in files)
    batch_rows = max(1, batch_bytes // row_bytes)
    for threads in [int(t) for t in sys.argv[4:]] or [1, 8, 16]:
        bw, _ = run(files, batch_rows, threads)
        print(json.dumps({"loader": f"pytorch {threads} reader thread(s), pinned, GPU cast", "threads": threads,
                          "batch_rows": batch_rows, "throughput_GBps": round(bw / 1e9, 3)}), flush=True)


if __name__ == "__main__":
    main()
