"""tessel's exceptions: one class per error code of the C++ API (tessel::api::ErrorCode).

Every one is a tessel.Error; those with a natural built-in counterpart also derive from it, so
``except ValueError`` still catches a bad argument. ``str(error)`` names the file, the node and
the op, as the command-line tool prints them.
"""


class Error(Exception):
    """An error from tessel.

    Attributes: ``code`` (the C++ code's name, e.g. "invalid-model"), ``message`` (without the
    location), ``file``, ``node`` and ``op`` (empty when not known).
    """

    code = "error"

    def __init__(self, text, *, message=None, file="", node="", op=""):
        super().__init__(text)
        self.message = text if message is None else message
        self.file, self.node, self.op = file, node, op


class InvalidArgumentError(Error, ValueError):
    """A bad option, feed or attribute value."""
    code = "invalid-argument"


class ParseError(Error):
    """A file that could not be parsed."""
    code = "parse-error"


class InvalidModelError(Error):
    """A structurally wrong model."""
    code = "invalid-model"


class UnsupportedOpError(Error):
    """An op (at the model's opset) that tessel does not have."""
    code = "unsupported-op"


class UnsupportedOpsetError(Error):
    """An opset outside the supported range."""
    code = "unsupported-opset"


class ShapeMismatchError(Error, ValueError):
    """A feed or tensor whose shape does not match."""
    code = "shape-mismatch"


class TypeMismatchError(Error, TypeError):
    """A feed or tensor whose dtype does not match."""
    code = "type-mismatch"


class NotFoundError(Error, FileNotFoundError):
    """A model or artifact file that does not exist."""
    code = "file-not-found"


class IoError(Error, OSError):
    """A file that could not be read or written."""
    code = "io-error"


class ExecutionError(Error, RuntimeError):
    """An error found only while running."""
    code = "runtime-error"


class InternalError(Error):
    """A bug in tessel."""
    code = "internal"


class ExportError(Error):
    """torch.onnx.export could not export a module (tessel.torch.compile)."""
    code = "export-error"


_BY_CODE = {cls.code: cls for cls in Error.__subclasses__()}


def from_status(code, text, message, file, node, op):
    """The exception for a C++ Status (the binding raises what this returns)."""
    cls = _BY_CODE.get(code, Error)
    return cls(text, message=message, file=file, node=node, op=op)
