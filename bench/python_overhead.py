#!/usr/bin/env python3
"""The Python binding's overhead per run: one `Executable.run` from Python against the same run
through the C++ API (bench/api_overhead.cpp, built as build/bin/tessel_api_overhead), with the same
model, input, thread count and timing (median of N runs after a tenth as warm-up).

Two models: the bundled example (examples/small_cnn.onnx, cpu) and a one-node Relu on 16 floats,
whose run is almost all fixed cost, so the difference shows above the noise. C++ and Python take
turns, R rounds each, and the best round of each counts (a shared machine only ever adds time).
Prints the table of docs/benchmarks.md ("Python API overhead").

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--runs 2000] [--rounds 5] [--threads 1]
"""

import argparse
import pathlib
import subprocess
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

import tessel

ROOT = pathlib.Path(__file__).resolve().parents[1]


def python_median_us(model, input_path, runs, threads):
    x = np.load(input_path)
    name = onnx.load(str(model)).graph.input[0].name
    exe = tessel.compile(model, target="cpu", threads=threads, shapes={name: list(x.shape)})
    feeds = {name: x}
    times = []
    for i in range(-(runs // 10), runs):
        start = time.perf_counter_ns()
        exe.run(None, feeds)
        end = time.perf_counter_ns()
        if i >= 0:
            times.append((end - start) / 1000)
    return float(np.median(times))


def cpp_median_us(binary, model, input_path, runs, threads):
    out = subprocess.run([binary, model, input_path, str(runs), str(threads)], check=True, capture_output=True,
                         text=True).stdout
    return float(out.split()[1])


def tiny_model(folder):
    """A one-node Relu over float32[1, 16] and its input, written to `folder`."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu16",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])])
    model, data = folder / "relu16.onnx", folder / "relu16_input.npy"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    np.save(data, np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16))
    return model, data


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=ROOT / "build" / "bin" / "tessel_api_overhead")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5, help="C++ then Python, this many times; the best of each")
    parser.add_argument("--threads", type=int, default=1, help="cpu threads per run (0 = all cores)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        models = [(ROOT / "examples" / "small_cnn.onnx", ROOT / "examples" / "small_cnn_input.npy"),
                  tiny_model(pathlib.Path(tmp))]
        print(f"cpu target, threads {args.threads}; median of {args.runs} runs, best of {args.rounds} rounds")
        print("| model | C++ `Executable::run` (us) | Python `Executable.run` (us) | overhead (us) |")
        print("|---|---:|---:|---:|")
        for model, data in models:
            cpp, py = [], []
            for _ in range(args.rounds):
                cpp.append(cpp_median_us(args.binary, model, data, args.runs, args.threads))
                py.append(python_median_us(model, data, args.runs, args.threads))
            print(f"| {model.name} | {min(cpp):.2f} | {min(py):.2f} | {min(py) - min(cpp):.2f} |")


if __name__ == "__main__":
    main()
