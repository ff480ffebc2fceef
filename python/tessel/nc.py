"""tessel.nc: the accelerator's kernel library, run one kernel at a time in the simulator, as
`tessel kernel run` does:

    r = tessel.nc.kernel_run("matmul", shape={"M": 512, "N": 1024, "K": 1024}, options={"act": "gelu"})
    print(r.latency_us, r.mfu_percent, r.bounding_engine, r.passed)
"""

import os
from dataclasses import dataclass

from . import _tessel
from ._summary import KernelRunResult

__all__ = ["KernelInfo", "KernelRunResult", "kernel_run", "kernels"]


@dataclass(frozen=True)
class KernelInfo:
    """A library kernel: its name, what it computes, its dim names and the dtypes it takes."""

    name: str
    summary: str
    dims: tuple
    dtypes: tuple


def kernels():
    """The library's kernels, as a list of KernelInfo."""
    return [KernelInfo(name, summary, tuple(dims), tuple(dtypes)) for name, summary, dims, dtypes in _tessel.nc.kernels()]


def kernel_run(name, target="nc-v2", shape=None, dtype=None, options=None, timing_only=False, seed=1, profile_dir=None):
    """Runs library kernel `name` on seeded random inputs in the simulator and checks it against the reference.

    shape: dim sizes ({"M": 512, ...}; defaults fill the rest); dtype: default the kernel's first;
    options: kernel options ({"act": "gelu"}); timing_only: simulate the timing only (no numerics,
    no check); profile_dir: where the trace, summary and report.html go. Returns a KernelRunResult.
    """
    result = _tessel.nc.kernel_run(
        name, target, {str(k): int(v) for k, v in (shape or {}).items()}, dtype or "",
        {str(k): str(v) for k, v in (options or {}).items()}, bool(timing_only), int(seed),
        os.fspath(profile_dir) if profile_dir is not None else "")
    return KernelRunResult(**result)
