"""tessel: an ahead-of-time ML compiler for the host cpu and a simulated tensor accelerator.

    import tessel
    exe = tessel.compile("model.onnx", target="cpu")      # or "nc-v2", "ref"; path, bytes or onnx.ModelProto
    y = exe(x)                                            # numpy in, numpy out
    y, = exe.run(None, {"input": x})                      # onnxruntime's convention

tessel.InferenceSession replaces onnxruntime's; tessel.torch.compile takes a torch.nn.Module;
tessel.nc runs the accelerator's library kernels. Errors are tessel.Error subclasses.
"""

import importlib

from . import _tessel, nc
from ._errors import (Error, ExecutionError, ExportError, InternalError, InvalidArgumentError, InvalidModelError,
                      IoError, NotFoundError, ParseError, ShapeMismatchError, TypeMismatchError, UnsupportedOpError,
                      UnsupportedOpsetError)
from ._executable import Executable, TensorInfo, compile, load
from ._summary import OpProfile, RunSummary
from .session import InferenceSession

__version__ = _tessel.version()

__all__ = [
    "Error", "ExecutionError", "ExportError", "InternalError", "InvalidArgumentError", "InvalidModelError", "IoError",
    "NotFoundError", "ParseError", "ShapeMismatchError", "TypeMismatchError", "UnsupportedOpError",
    "UnsupportedOpsetError", "Executable", "InferenceSession", "OpProfile", "RunSummary", "TensorInfo", "compile",
    "load", "targets", "nc", "torch",
]


def targets():
    """The target names tessel.compile takes ("ref", "cpu", "nc-v2", "nc-v3"); a profile .json path works too."""
    return list(_tessel.targets())


def __getattr__(name):
    # tessel.torch imports torch, which takes a second: only when asked for.
    if name == "torch":
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'tessel' has no attribute '{name}'")
