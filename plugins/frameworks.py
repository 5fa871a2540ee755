#!/usr/bin/env python3
"""frameworks: device arrays handed between Python GPU frameworks (an interopbench plugin).

What: for an ordered pair of frameworks (producer, consumer) among torch, cupy, jax,
numba.cuda, cudf, tensorflow and mxnet (those that import), the cost of giving the
producer's float32 device array to the consumer through DLPack (`consumer.from_dlpack`, which
calls the producer's `__dlpack__` with the consumer's stream, and the versioned form where
both sides have it) or `__cuda_array_interface__` (CAI).
How: a sample runs exchanges back to back for about the sample time (host perf_counter),
then synchronises the device: host overheads included, as a user waits for them. Where the
protocol refuses, the sample times the fallback a user would write instead (through host
memory: producer to numpy to consumer) and details.path says so.
Reports: time per exchange, the bytes copied per exchange (0 for zero-copy, the array once
where the consumer copies, twice through host memory) and delivered bandwidth (array bytes
over time). details: the path taken (zero-copy, copies, refuses + the framework's error), the
proof (same device pointer, allocator growth), the framework versions, and a matrix of
dtypes and layouts (float16, bfloat16, bool, int8, complex64, transposed view, 0-d, empty)
by protocol: zero-copy / copies / refuses with the error text.
Checked: the consumer's values equal the producer's; a zero-copy exchange must hand over
the producer's pointer.
Caveats: allocator growth is read from each framework's own allocator statistics where it
has them (torch, cupy, jax); numba, cudf, tensorflow and mxnet are judged by pointer only.
Describing needs no framework: imports happen at the first prepare.
"""
import json
import os
import sys
import time
import traceback

# Frameworks that would take most of the GPU's memory at import (jax preallocates 75%,
# tensorflow all of it) must share it with the others.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FRAMEWORKS = ["torch", "cupy", "jax", "numba", "cudf", "tensorflow", "mxnet"]
MODULES = {"numba": "numba.cuda"}
CASES = ["float16", "bfloat16", "bool", "int8", "complex64", "transposed", "0-d", "empty"]


class Refused(Exception):
    """The framework cannot do this at all (no such API or dtype)."""


def short(e):
    text = f"{type(e).__name__}: {e}".strip().splitlines()
    return text[0][:200] if text else type(e).__name__


# ---- one adapter per framework ------------------------------------------------------------
class Framework:
    name = ""

    def load(self):
        """Imports the framework and checks it sees a GPU; returns its version."""
        raise NotImplementedError

    def make(self, dtype, shape):
        """A device array of `shape` holding i % 7 in `dtype` (a dtype name of CASES)."""
        np = numpy()
        if dtype == "bfloat16":
            raise Refused(f"{self.name} has no bfloat16")
        n = 1
        for d in shape:
            n *= d
        return self.from_host((np.arange(n) % 7).astype(dtype).reshape(shape))

    def transpose(self, a):
        return a.T

    def ptr(self, a):
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai:
            return cai["data"][0]
        raise Refused(f"{self.name} does not show its device pointer")

    def dlpack_source(self, a):
        """What a consumer's from_dlpack is given: the array, when it has __dlpack__."""
        if not hasattr(a, "__dlpack__"):
            raise Refused(f"{self.name} arrays have no __dlpack__")
        return a

    def from_dlpack(self, x):
        raise Refused(f"{self.name} cannot import DLPack")

    def from_cai(self, x):
        raise Refused(f"{self.name} cannot import __cuda_array_interface__")

    def from_host(self, h):
        raise NotImplementedError

    def host(self, a):
        raise NotImplementedError

    def sync(self):
        pass

    def allocated(self):
        return None


class Torch(Framework):
    name = "torch"

    def load(self):
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        self.t = torch
        return torch.__version__

    def make(self, dtype, shape):
        t = self.t
        n = 1
        for d in shape:
            n *= d
        dt = {"float32": t.float32, "float16": t.float16, "bfloat16": t.bfloat16, "bool": t.bool, "int8": t.int8,
              "complex64": t.complex64}[dtype]
        v = t.arange(n, device="cuda").remainder(7)
        return (v != 0 if dtype == "bool" else v.to(dt)).reshape(shape)

    def transpose(self, a):
        return a.t()

    def ptr(self, a):
        return a.data_ptr()

    def from_dlpack(self, x):
        return self.t.from_dlpack(x)

    def from_cai(self, x):
        return self.t.as_tensor(x, device="cuda")

    def from_host(self, h):
        return self.t.from_numpy(h.copy()).to("cuda")

    def host(self, a):
        return a.cpu().numpy() if a.dtype != self.t.bfloat16 else a.float().cpu().numpy()

    def sync(self):
        self.t.cuda.synchronize()

    def allocated(self):
        return self.t.cuda.memory_allocated()


class Cupy(Framework):
    name = "cupy"

    def load(self):
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("cupy sees no CUDA device")
        self.cp = cupy
        return cupy.__version__

    def ptr(self, a):
        return a.data.ptr

    def from_dlpack(self, x):
        return self.cp.from_dlpack(x)

    def from_cai(self, x):
        return self.cp.asarray(x)

    def from_host(self, h):
        return self.cp.asarray(h)

    def host(self, a):
        return self.cp.asnumpy(a)

    def sync(self):
        self.cp.cuda.Device().synchronize()

    def allocated(self):
        return self.cp.get_default_memory_pool().used_bytes()


class Jax(Framework):
    name = "jax"

    def load(self):
        import jax
        import jax.dlpack
        import jax.numpy as jnp
        if not jax.devices("gpu"):
            raise RuntimeError("jax sees no GPU")
        self.jax, self.jnp = jax, jnp
        self.gpu = jax.devices("gpu")[0]
        return jax.__version__

    def make(self, dtype, shape):
        if dtype == "bfloat16":
            n = 1
            for d in shape:
                n *= d
            return self.jax.device_put((self.jnp.arange(n) % 7).astype(self.jnp.bfloat16).reshape(shape), self.gpu)
        return super().make(dtype, shape)

    def transpose(self, a):
        return a.T  # jax has no strided views: this is a new, contiguous array

    def ptr(self, a):
        return a.unsafe_buffer_pointer()

    def from_dlpack(self, x):
        return self.jax.dlpack.from_dlpack(x)

    def from_host(self, h):
        return self.jax.device_put(h, self.gpu)

    def host(self, a):
        np = numpy()
        return np.asarray(a.astype(self.jnp.float32) if a.dtype == self.jnp.bfloat16 else a)

    def sync(self):
        (self.jnp.zeros(1, device=self.gpu) + 1).block_until_ready()

    def allocated(self):
        stats = self.gpu.memory_stats() or {}
        return stats.get("bytes_in_use")


class Numba(Framework):
    name = "numba"

    def load(self):
        import numba
        from numba import cuda
        if not cuda.is_available():
            raise RuntimeError("numba.cuda sees no CUDA device")
        self.cuda = cuda
        return getattr(numba, "__version__", "?")

    def from_dlpack(self, x):
        f = getattr(self.cuda, "from_dlpack", None)
        if f is None:
            raise Refused("numba.cuda has no from_dlpack")
        return f(x)

    def from_cai(self, x):
        return self.cuda.as_cuda_array(x)

    def from_host(self, h):
        return self.cuda.to_device(h)

    def host(self, a):
        return a.copy_to_host()

    def sync(self):
        self.cuda.synchronize()


class _Capsule:
    """Gives __dlpack__ to a framework that only exports capsules (cudf, tensorflow, mxnet)."""

    def __init__(self, make_capsule, device_id=0):
        self.make_capsule, self.device_id = make_capsule, device_id

    def __dlpack__(self, stream=None, **kwargs):
        if kwargs.get("max_version") is not None:
            raise TypeError("this producer has only the unversioned DLPack capsule")
        return self.make_capsule()

    def __dlpack_device__(self):
        return (2, self.device_id)  # kDLCUDA


def capsule_of(x):
    """A DLPack capsule from any producer, for consumers that take capsules."""
    return x.__dlpack__(stream=None)


class Cudf(Framework):
    name = "cudf"

    def load(self):
        import cudf
        self.cudf = cudf
        return cudf.__version__

    def make(self, dtype, shape):
        if len(shape) != 1:
            raise Refused("cudf columns are one-dimensional")
        if dtype in ("bfloat16", "float16", "complex64"):
            raise Refused(f"cudf has no {dtype} column")
        return super().make(dtype, shape)

    def transpose(self, a):
        raise Refused("cudf columns have no transposed view")

    def dlpack_source(self, a):
        return _Capsule(lambda: a.to_dlpack())

    def from_dlpack(self, x):
        return self.cudf.from_dlpack(capsule_of(x))

    def from_cai(self, x):
        return self.cudf.Series(x)

    def from_host(self, h):
        return self.cudf.Series(h)

    def host(self, a):
        return a.to_numpy()


class Tensorflow(Framework):
    name = "tensorflow"

    def load(self):
        import tensorflow as tf
        if not tf.config.list_physical_devices("GPU"):
            raise RuntimeError("tensorflow sees no GPU")
        self.tf = tf
        return tf.__version__

    def make(self, dtype, shape):
        tf = self.tf
        if dtype == "bfloat16":
            with tf.device("/GPU:0"):
                n = 1
                for d in shape:
                    n *= d
                return tf.reshape(tf.cast(tf.range(n) % 7, tf.bfloat16), shape)
        return super().make(dtype, shape)

    def transpose(self, a):
        return self.tf.transpose(a)

    def ptr(self, a):
        raise Refused("tensorflow does not show its device pointer")

    def dlpack_source(self, a):
        return _Capsule(lambda: self.tf.experimental.dlpack.to_dlpack(a))

    def from_dlpack(self, x):
        return self.tf.experimental.dlpack.from_dlpack(capsule_of(x))

    def from_host(self, h):
        with self.tf.device("/GPU:0"):
            return self.tf.identity(self.tf.constant(h))

    def host(self, a):
        return a.numpy()


class Mxnet(Framework):
    name = "mxnet"

    def load(self):
        import mxnet as mx
        if mx.context.num_gpus() < 1:
            raise RuntimeError("mxnet sees no GPU")
        self.mx = mx
        return mx.__version__

    def dlpack_source(self, a):
        return _Capsule(lambda: a.to_dlpack_for_read())

    def from_dlpack(self, x):
        return self.mx.nd.from_dlpack(capsule_of(x))

    def from_host(self, h):
        return self.mx.nd.array(h, ctx=self.mx.gpu(0), dtype=h.dtype)

    def host(self, a):
        return a.asnumpy()

    def ptr(self, a):
        raise Refused("mxnet does not show its device pointer")

    def sync(self):
        self.mx.nd.waitall()


ADAPTERS = {c.name: c for c in (Torch, Cupy, Jax, Numba, Cudf, Tensorflow, Mxnet)}
_loaded = {}  # name -> (adapter, version) or (None, why)


def numpy():
    import numpy as np
    return np


def load(name):
    if name not in _loaded:
        try:
            a = ADAPTERS[name]()
            _loaded[name] = (a, a.load())
        except Exception as e:  # ImportError, no GPU, a broken install
            _loaded[name] = (None, short(e))
    return _loaded[name]


def versions():
    return {n: v for n, (a, v) in _loaded.items() if a is not None}


# ---- one exchange -------------------------------------------------------------------------
def exchange(prod, cons, protocol, a):
    if protocol == "dlpack":
        return cons.from_dlpack(prod.dlpack_source(a))
    if not hasattr(a, "__cuda_array_interface__"):
        raise Refused(f"{prod.name} arrays have no __cuda_array_interface__")
    return cons.from_cai(a)


def fallback(prod, cons, a):
    return cons.from_host(prod.host(a))


def classify(prod, cons, protocol, a):
    """zero-copy / copies / refuses: ..., with the values checked."""
    np = numpy()
    try:
        b = exchange(prod, cons, protocol, a)
    except Exception as e:
        return "refuses: " + short(e)
    try:
        same_values = np.array_equal(np.asarray(prod.host(a)), np.asarray(cons.host(b)))
    except Exception as e:
        return "copies? values unreadable: " + short(e)
    if not same_values:
        return "wrong values"
    try:
        shared = prod.ptr(a) == cons.ptr(b)
    except Exception:
        return "exchanged (pointer unknown)"
    return "zero-copy" if shared else "copies"


def matrix(prod, cons):
    rows, cells = [], []
    for case in CASES:
        row = []
        for protocol in ("dlpack", "cai"):
            try:
                if case == "transposed":
                    a = prod.transpose(prod.make("float32", (64, 32)))
                elif case == "0-d":
                    a = prod.make("float32", ())
                elif case == "empty":
                    a = prod.make("float32", (0,))
                else:
                    a = prod.make(case, (1024,))
            except Exception as e:
                row.append("n/a: " + short(e))
                continue
            row.append(classify(prod, cons, protocol, a))
        rows.append(case)
        cells.append(row)
    return {"title": f"{prod.name} to {cons.name}", "rows": rows, "columns": ["dlpack", "cai"], "cells": cells}


def dlpack_versioned(prod, a):
    """Whether the producer hands out the versioned DLPack capsule when asked for it."""
    try:
        prod.dlpack_source(a).__dlpack__(stream=None, max_version=(1, 0))
        return True
    except Exception:
        return False


class Config:
    def __init__(self, params, sample_time_s):
        self.producer, self.consumer = params["producer"], params["consumer"]
        self.protocol, self.size = params["protocol"], int(params["size"])
        missing = []
        for n in dict.fromkeys((self.producer, self.consumer)):
            adapter, why = load(n)
            if adapter is None:
                missing.append(f"{MODULES.get(n, n)}: {why}")
        if missing:
            if all(load(n)[0] is None for n in FRAMEWORKS):
                raise Skip("no framework importable: tried " + ", ".join(MODULES.get(n, n) for n in FRAMEWORKS))
            raise Skip("not importable here: " + "; ".join(missing))
        self.prod, self.cons = load(self.producer)[0], load(self.consumer)[0]
        n = max(1, self.size // 4)
        self.a = self.prod.make("float32", (n,))
        self.bytes = n * 4
        self.error = ""
        before = self.cons.allocated()
        try:
            b = exchange(self.prod, self.cons, self.protocol, self.a)
            self.cons.sync()
            growth = self.cons.allocated()
            self.growth = None if before is None or growth is None else growth - before
            try:
                self.shared = self.prod.ptr(self.a) == self.cons.ptr(b)
            except Refused:
                self.shared = None  # judged by the allocator alone
            if self.shared is None:
                self.path = "unknown" if self.growth is None else "zero-copy" if self.growth == 0 else "copies"
            else:
                self.path = "zero-copy" if self.shared else "copies"
            del b
        except Exception as e:
            self.path, self.error, self.shared, self.growth = "refuses", short(e), None, None
        self.run = (lambda: fallback(self.prod, self.cons, self.a)) if self.path == "refuses" else \
            (lambda: exchange(self.prod, self.cons, self.protocol, self.a))
        self.copied = {"zero-copy": 0, "copies": self.bytes, "refuses": 2 * self.bytes}.get(self.path)  # None: unknown
        # Repetitions for about one sample time, from a second (warm) exchange.
        self.run()
        self.sync()
        t0 = time.perf_counter()
        self.run()
        self.sync()
        once = max(time.perf_counter() - t0, 1e-7)
        self.reps = int(min(100000, max(1, sample_time_s / once)))

    def sync(self):
        self.prod.sync()
        self.cons.sync()

    def measure(self):
        t0 = time.perf_counter()
        for _ in range(self.reps):
            self.run()
        self.sync()
        t = (time.perf_counter() - t0) / self.reps
        return {"time": t, "copied": self.copied, "bandwidth": self.bytes / t}, t * self.reps

    def check(self):
        np = numpy()
        b = self.run()
        self.sync()
        if not np.array_equal(self.prod.host(self.a), self.cons.host(b)):
            return "the consumer's values differ from the producer's"
        if self.path == "zero-copy" and self.shared is False:
            return "the zero-copy exchange handed over another pointer"
        return None

    def details(self):
        d = {"producer": self.producer, "consumer": self.consumer, "protocol": self.protocol,
             "path": self.path, "bytes": self.bytes, "exchanges_per_sample": self.reps,
             "pointer_shared": self.shared, "allocation_growth_bytes": self.growth,
             "frameworks": versions(), "python": sys.version.split()[0]}
        if self.protocol == "dlpack":
            d["dlpack_versioned_producer"] = dlpack_versioned(self.prod, self.a)
        if self.path == "refuses":
            d["error"] = self.error
            d["fallback"] = "through host memory: producer to numpy, numpy to consumer (timed instead)"
        try:
            d["matrix"] = matrix(self.prod, self.cons)
        except Exception as e:
            d["matrix_error"] = short(e)
        return d


class Skip(Exception):
    pass


DESCRIPTION = {
    "protocol": 1,
    "summary": "device arrays handed between Python GPU frameworks via DLPack or __cuda_array_interface__",
    "counting": "float32 array bytes made usable by the consumer per exchange; copied: bytes copied per exchange "
                "(0 zero-copy, the array once where the consumer copies, twice through host memory)",
    "axes": [
        {"name": "producer", "kind": "choice", "values": FRAMEWORKS, "help": "framework that owns the array"},
        {"name": "consumer", "kind": "choice", "values": FRAMEWORKS, "help": "framework that receives it"},
        {"name": "protocol", "kind": "choice", "values": ["dlpack", "cai"],
         "help": "dlpack: consumer.from_dlpack(producer array); cai: __cuda_array_interface__"},
        {"name": "size", "kind": "size", "values": ["4K", "64M"], "help": "bytes of the float32 array"},
    ],
    "metrics": [
        {"name": "time", "unit": "s", "better": "lower",
         "help": "time per exchange (or per host fallback where the protocol refuses)"},
        {"name": "copied", "unit": "B", "better": "lower", "help": "bytes copied per exchange"},
        {"name": "bandwidth", "unit": "B/s", "better": "higher", "help": "array bytes over time per exchange"},
    ],
}


def main():
    config = None
    for line in sys.stdin:
        request = json.loads(line)
        op = request.get("op")
        try:
            if op == "describe":
                answer = DESCRIPTION
            elif op == "prepare":
                config = None
                try:
                    config = Config(request["params"], float(request.get("sample_time_s", 0.01)))
                    answer = {}
                except Skip as e:
                    answer = {"skip": str(e)}
            elif op == "measure":
                values, elapsed = config.measure()
                answer = {"values": values, "clock": "host_perf_counter+device_sync", "elapsed_s": elapsed}
            elif op == "check":
                why = config.check()
                answer = {"error": why} if why else {}
            elif op == "details":
                answer = {"details": config.details() if config else {}}
            elif op == "teardown":
                config = None
                answer = {}
            else:
                answer = {"error": f"unknown request '{op}'"}
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            answer = {"error": short(e)}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
