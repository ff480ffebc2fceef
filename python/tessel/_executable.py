"""Executables: compile a model, load an artifact, run it on numpy arrays.

The per-run work (feeds to tensors, the run, tensors to arrays) happens in the compiled module
with the GIL released; this layer adds the calling conventions, the metadata objects and the
summaries.
"""

import os

import numpy as np

from . import _tessel
from ._errors import InvalidArgumentError
from ._summary import OpProfile, RunSummary, html_table

# onnxruntime's type strings (NodeArg.type) by tessel's dtype names.
_ORT_TYPES = {
    "float32": "float", "float64": "double", "float16": "float16", "bfloat16": "bfloat16",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "bool": "bool", "string": "string", "complex64": "complex64", "complex128": "complex128",
    "float8_e4m3fn": "float8e4m3fn", "float8_e4m3fnuz": "float8e4m3fnuz",
    "float8_e5m2": "float8e5m2", "float8_e5m2fnuz": "float8e5m2fnuz",
}


class TensorInfo:
    """A graph input or output as the model declares it.

    ``name``; ``dtype`` (a numpy dtype; numpy's lacking types, bfloat16 and float8, are the
    dtype name as a str); ``shape`` (a list: an int per static dim, the symbol's name as a str for
    a symbolic one, None when unknown; None when even the rank is unknown); ``type``
    (onnxruntime's spelling, e.g. "tensor(float)").
    """

    __slots__ = ("name", "dtype", "shape", "type")

    def __init__(self, name, dtype_name, shape):
        self.name = name
        try:
            self.dtype = np.dtype(dtype_name)
        except TypeError:
            self.dtype = dtype_name
        self.shape = shape
        self.type = f"tensor({_ORT_TYPES.get(dtype_name, dtype_name)})"

    def __repr__(self):
        return f"TensorInfo(name={self.name!r}, dtype={self.dtype}, shape={self.shape})"


class Executable:
    """A model compiled for one target (made by tessel.compile or tessel.load).

    ``run(output_names, feeds)`` follows onnxruntime; ``exe(*arrays)`` and ``exe(**feeds)``
    return one array, or a tuple when the model has several outputs. Arrays of an input's dtype
    that are C-contiguous go in without a copy, and outputs view tessel's memory without one.
    One executable may be run from several threads at once; its runs take turns.
    """

    def __init__(self, native):
        self._native = native
        self.inputs = [TensorInfo(*i) for i in native.inputs]
        self.outputs = [TensorInfo(*o) for o in native.outputs]
        self._input_names = [i.name for i in self.inputs]

    @property
    def target(self):
        """The target it was compiled for: "ref", "cpu", "nc-v2", ..."""
        return self._native.target

    def run(self, output_names, feeds):
        """The outputs named in `output_names` (all when None), as a list, for the feeds (name -> array)."""
        return self._native.run(output_names, feeds)

    def __call__(self, *arrays, **feeds):
        if arrays:
            if len(arrays) > len(self._input_names):
                raise InvalidArgumentError(
                    f"{len(arrays)} inputs given; the model takes {len(self._input_names)}: {self._input_names}")
            feeds.update(zip(self._input_names, arrays))
        outputs = self._native.run(None, feeds)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def save(self, path):
        """Writes the artifact (cpu and accelerator targets); tessel.load reads it back."""
        self._native.save(os.fspath(path))

    def report(self):
        """The compile report: kernels per op and fallbacks (cpu); stages, transfers, memory (accelerator)."""
        return self._native.report()

    @property
    def last_run(self):
        """The figures of the last run (or profile/timeline) as a RunSummary."""
        return RunSummary(**self._native.last_run())

    def set_profiling(self, on=True):
        """Turns per-op timing on or off (targets that run natively); op_profile() reads it."""
        self._native.set_profiling(bool(on))

    def op_profile(self):
        """Each op's share of the runs since profiling was turned on, as a list of OpProfile."""
        return [OpProfile(*row) for row in self._native.op_profile()]

    def timeline(self):
        """Accelerator targets: simulates one run on seeded inputs; its trace as Perfetto JSON text."""
        return self._native.timeline()

    def profile(self, dir):
        """Accelerator targets: simulates one run on seeded inputs and writes trace.json, the summary
        and report.html to `dir`. Returns the run's RunSummary."""
        self._native.profile(os.fspath(dir))
        return self.last_run

    def __repr__(self):
        return f"<tessel.Executable target={self.target!r} inputs={self._input_names}>"

    def _repr_html_(self):
        rows = [("target", self.target)]
        rows += [(f"input {i.name}", f"{i.dtype} {i.shape}") for i in self.inputs]
        rows += [(f"output {o.name}", f"{o.dtype} {o.shape}") for o in self.outputs]
        summary = self.last_run
        ran = summary.simulated or summary.latency_us > 0
        return html_table("tessel.Executable", rows) + (summary._repr_html_() if ran else "<p>not run yet</p>")


def _model_source(model):
    """("path", str) or ("bytes", bytes, name) for a path, bytes or an onnx.ModelProto."""
    if isinstance(model, (str, os.PathLike)):
        return ("path", os.fspath(model))
    if isinstance(model, (bytes, bytearray, memoryview)):
        return ("bytes", bytes(model), "<bytes>")
    if hasattr(model, "SerializeToString") and hasattr(model, "graph"):
        name = model.graph.name or "model"
        return ("bytes", model.SerializeToString(), f"<onnx.ModelProto {name}>")
    raise InvalidArgumentError(
        f"model: expected a path, bytes or an onnx.ModelProto; got {type(model).__name__}")


def compile(model, target="cpu", **options):
    """Compiles `model` (a path, bytes or an onnx.ModelProto) for `target` (see tessel.targets()).

    Options: opt_level (0-3, default 3), threads (cpu; 0 = all cores), shapes (input name ->
    sizes, for symbolic dims), batch (the size of a symbolic leading dim), auto_cast ("none",
    "matmul" or "all"; default: matmul on accelerators, none on cpu, where both others cast
    matmul/conv operands to bf16), auto_cast_type ("bf16", "fp16" or "fp8_e4m3"), cores
    (accelerator cores to shard over).
    """
    if not isinstance(target, str):
        raise InvalidArgumentError(f"target: expected a name such as 'cpu'; got {target!r}")
    source = _model_source(model)
    if source[0] == "path":
        native = _tessel.compile_path(source[1], target, options)
    else:
        native = _tessel.compile_bytes(source[1], source[2], target, options)
    return Executable(native)


def load(path, threads=0):
    """Loads an artifact written by Executable.save; it runs on the target it was compiled for."""
    return Executable(_tessel.load(os.fspath(path), threads))
