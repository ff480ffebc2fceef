"""The figures tessel reports, as small objects that print as text and, in a notebook, as a table."""

import html
from dataclasses import dataclass, field, fields


def html_table(title, rows):
    """A two-column HTML table with a caption: the notebook view of every summary here."""
    cells = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
                    f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f"<table><caption style='text-align:left'><b>{html.escape(title)}</b></caption>{cells}</table>"


class _Figures:
    """Text and HTML views from the dataclass's fields."""

    _title = ""

    def _rows(self):
        return [(f.name, getattr(self, f.name)) for f in fields(self)]

    def __str__(self):
        return "\n".join(f"{k}: {v}" for k, v in self._rows())

    def _repr_html_(self):
        return html_table(self._title, self._rows())


@dataclass
class RunSummary(_Figures):
    """The last run: latency (host wall time; on an accelerator the simulated device time plus the
    link model's transfers plus the host stages' measured time), MFU, the bounding engine, where
    the nodes ran and why each host node is not on the device."""

    _title = "last run"
    simulated: bool = False
    latency_us: float = 0.0
    device_us: float = 0.0
    transfer_us: float = 0.0
    host_us: float = 0.0
    mfu_percent: float = 0.0
    bounding_engine: str = ""
    device_nodes: int = 0
    host_nodes: int = 0
    fallbacks: list = field(default_factory=list)
    bucket: str = ""             # Compiled with buckets: the one the run took ("S=128").
    padding_waste: float = 0.0   # The share of its padded inputs' elements that were padding.


@dataclass
class OpProfile(_Figures):
    """One op's share of the runs since profiling was turned on."""

    _title = "op profile"
    node: str = ""
    op: str = ""
    kernel: str = ""
    total_ms: float = 0.0
    runs: int = 0


@dataclass
class KernelRunResult(_Figures):
    """One simulated library-kernel run (tessel.nc.kernel_run): timing, MFU, the check against the
    reference, races found, and the profile summary as `tessel kernel run` prints it."""

    _title = "kernel run"
    latency_us: float = 0.0
    estimated_us: float = 0.0
    mfu_percent: float = 0.0
    bounding_engine: str = ""
    instructions: int = 0
    checked: bool = False
    passed: bool = False
    max_abs_error: float = 0.0
    max_error_ratio: float = 0.0
    races: int = 0
    summary: str = ""

    def __str__(self):
        return self.summary
