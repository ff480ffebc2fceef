"""tessel.torch: compile a torch.nn.Module with tessel.

Debian's torch 1.13 has no torch.compile, so this is the entry point: the module is exported with
torch.onnx.export into memory, compiled, and wrapped in a callable that takes and returns torch
tensors (CPU tensors cross as numpy arrays over the same memory, without copies):

    fast = tessel.torch.compile(model, (x,), target="cpu")
    y = fast(x)
"""

import io

import torch

from ._errors import ExportError, InvalidArgumentError
from ._executable import compile as _compile

__all__ = ["CompiledModule", "compile"]

# torch 1.13 exports opsets 7-17; tessel imports the same range. 13 is the first with the modern
# Split/Squeeze/Reduce signatures and is what torch exports best.
DEFAULT_OPSET = 13


class CompiledModule:
    """A module compiled by tessel: call it with tensors, get a tensor (or a tuple of them) back."""

    def __init__(self, executable, module_name):
        self.executable = executable
        self.module_name = module_name
        self._input_names = [i.name for i in executable.inputs]

    def __call__(self, *inputs):
        if len(inputs) != len(self._input_names):
            raise InvalidArgumentError(f"{self.module_name} was compiled for {len(self._input_names)} inputs; "
                                       f"got {len(inputs)}")
        feeds = {name: t.detach().cpu().contiguous().numpy() if isinstance(t, torch.Tensor) else t
                 for name, t in zip(self._input_names, inputs)}
        outputs = [torch.from_numpy(a) for a in self.executable.run(None, feeds)]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def __repr__(self):
        return f"<tessel.torch.CompiledModule {self.module_name} on {self.executable.target}>"


def export(module, example_inputs, opset_version=DEFAULT_OPSET):
    """The module as ONNX bytes, exported by torch.onnx.export with `example_inputs`."""
    inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    name = type(module).__name__
    buffer = io.BytesIO()
    try:
        with torch.no_grad():
            torch.onnx.export(module, inputs, buffer, opset_version=opset_version,
                              input_names=[f"input{i}" for i in range(len(inputs))], do_constant_folding=True)
    except Exception as e:
        raise ExportError(f"torch.onnx.export could not export {name} (opset {opset_version}): "
                          f"{type(e).__name__}: {e}") from e
    return buffer.getvalue()


def compile(module, example_inputs, target="cpu", opset_version=DEFAULT_OPSET, **options):
    """Exports `module` with `example_inputs` (a tensor or a tuple of them), compiles it for `target`
    with tessel.compile's `options`, and returns a CompiledModule. Raises tessel.ExportError
    (naming the module's class) when the export fails."""
    return CompiledModule(_compile(export(module, example_inputs, opset_version), target=target, **options),
                          type(module).__name__)
