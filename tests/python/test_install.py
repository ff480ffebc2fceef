"""The built package installs with pip, without network, into a fresh venv, and imports from outside
the source and build trees."""

import os
import pathlib
import subprocess
import sys

import pytest

import tessel

pytestmark = pytest.mark.install


def test_pip_install_into_a_venv(tmp_path):
    package = pathlib.Path(tessel.__file__).resolve().parents[1]  # build/python: setup.py and tessel/
    assert (package / "setup.py").exists(), f"{package} is not the built package"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    subprocess.run([venv / "bin" / "pip", "install", "-q", "--no-build-isolation", package], check=True, env=env,
                   cwd=tmp_path)
    script = ("import tessel, numpy as np; from onnx import helper, TensorProto as T; "
              "g = helper.make_graph([helper.make_node('Relu', ['x'], ['y'])], 'g', "
              "[helper.make_tensor_value_info('x', T.FLOAT, [3])], [helper.make_tensor_value_info('y', T.FLOAT, [3])]); "
              "exe = tessel.compile(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), target='cpu'); "
              "print(tessel.__file__); print(exe(np.array([-1, 0, 2], np.float32)).tolist())")
    run = subprocess.run([venv / "bin" / "python", "-c", script], check=True, env=env, cwd=tmp_path,
                         capture_output=True, text=True)
    where, values = run.stdout.splitlines()
    assert pathlib.Path(where).is_relative_to(venv)
    assert values == "[0.0, 0.0, 2.0]"
