"""tessel.InferenceSession: onnxruntime's InferenceSession over tessel, so that switching is one line:

    sess = tessel.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {sess.get_inputs()[0].name: x})
"""

import warnings

from ._errors import InvalidArgumentError
from ._executable import compile as _compile

# onnxruntime's provider names that tessel runs, by the target they run on.
_PROVIDERS = {"CPUExecutionProvider": "cpu"}


def target_for_providers(providers):
    """The target and the compile options of the first provider tessel has (cpu when none is given).

    A provider is onnxruntime's name ("CPUExecutionProvider"), a tessel target ("cpu", "ref",
    "nc-v2", "nc-v3", or a machine profile .json), or a (name, options) pair whose options go to
    tessel.compile. onnxruntime's other providers are skipped, as onnxruntime skips those it lacks.
    """
    from . import targets

    known = set(targets())
    skipped = []
    for provider in providers or ["cpu"]:
        name, options = provider if isinstance(provider, tuple) else (provider, {})
        if not isinstance(name, str):
            raise InvalidArgumentError(f"providers: expected names or (name, options) pairs; got {provider!r}")
        target = _PROVIDERS.get(name, name)
        if target in known or target.endswith(".json"):
            if skipped:
                warnings.warn(f"tessel has no {', '.join(skipped)}; running on {target}", stacklevel=3)
            return target, dict(options)
        if not name.endswith("ExecutionProvider"):
            raise InvalidArgumentError(
                f"providers: unknown provider '{name}'; tessel runs CPUExecutionProvider and the targets {sorted(known)}")
        skipped.append(name)
    raise InvalidArgumentError(f"providers: tessel runs none of {providers}; it runs CPUExecutionProvider and "
                               f"the targets {sorted(known)}")


class InferenceSession:
    """A model compiled for the target its providers name, run the way onnxruntime runs it.

    `path_or_bytes`: a path, bytes or an onnx.ModelProto. `sess_options` is accepted for
    onnxruntime's signature and ignored; `provider_options` (one dict per provider) and keyword
    arguments are tessel.compile options.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **options):
        if provider_options:
            providers = list(zip(providers or ["cpu"], provider_options))
        target, provider_opts = target_for_providers(providers)
        self._providers = [target]
        self.executable = _compile(path_or_bytes, target=target, **{**provider_opts, **options})

    def get_inputs(self):
        """The inputs: objects with .name, .shape (ints, or str for symbolic dims) and .type ("tensor(float)")."""
        return list(self.executable.inputs)

    def get_outputs(self):
        return list(self.executable.outputs)

    def get_providers(self):
        """The target it runs on, as the one provider."""
        return list(self._providers)

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named (all when None or empty), as a list of numpy arrays."""
        return self.executable.run(output_names or None, input_feed)
