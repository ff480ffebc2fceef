"""The environment the PyTorch side of the benchmark runs in.

Debian's python3-torch calls BLAS through libblas.so.3, which on a default Debian system is the
netlib reference implementation (about 0.5 GFLOP/s here); benchmarking PyTorch on it would compare
against a strawman. bench/install-peers.sh unpacks Debian's libopenblas0-openmp into
bench/peers/openblas/ (without installing it system-wide), and the PyTorch processes put it first
on the library path. It is the OpenMP build, so BLAS calls run on PyTorch's own OpenMP threads
instead of a second pool competing for the same cores. The host's OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE overrides are dropped so
OpenBLAS picks its kernels from the CPU, and OPENBLAS_NUM_THREADS follows the benchmark's thread
count (torch.set_num_threads does not reach a BLAS it was not built against).
"""
import os
import sys

PEERS = os.path.dirname(os.path.abspath(__file__))
OPENBLAS_DIR = os.path.join(PEERS, "openblas", "usr", "lib", "x86_64-linux-gnu", "openblas-openmp")


def peer_environment(threads, base=None):
    env = dict(os.environ if base is None else base)
    for variable in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(variable, None)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    if os.path.isdir(OPENBLAS_DIR):
        paths = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p and p != OPENBLAS_DIR]
        env["LD_LIBRARY_PATH"] = ":".join([OPENBLAS_DIR] + paths)
    return env


def requested_threads(argv):
    """The --threads N (or --threads=N) a driver was given, at least 1; 1 when absent."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv) and argv[i + 1].isdigit():
            return max(1, int(argv[i + 1]))
        if a.startswith("--threads=") and a[10:].isdigit():
            return max(1, int(a[10:]))
    return 1


def reexec_in_peer_environment(threads):
    """Restarts this script in peer_environment(threads) unless it already runs in it; the dynamic
    loader and OpenBLAS read these variables only at process start. Call before importing torch."""
    env = peer_environment(threads)
    keys = set(env) | set(os.environ)
    if all(env.get(k) == os.environ.get(k) for k in keys):
        return
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def blas_name():
    """Which BLAS the PyTorch side uses, for the benchmark report."""
    if not os.path.isdir(OPENBLAS_DIR):
        return "netlib reference BLAS"
    try:
        with open(os.path.join(PEERS, "openblas", "VERSION")) as f:
            return f"OpenBLAS {f.read().strip()} (OpenMP)"
    except OSError:
        return "OpenBLAS (OpenMP)"
