#!/usr/bin/python3
"""Times one benchmark model in PyTorch eager mode and prints one JSON line:
  {"median_ms", "p90_ms", "mean_ms", "min_ms", "throughput" (items/s), "runs", "threads", ...}

The module is rebuilt by bench/make_models.py's build_model() (same code, same seed, so the same
weights as the exported ONNX file); inputs come from DIR/NAME.npy; with --outputs, the outputs of
the last run are written as DIR/NAME.npy.

Usage: bench/peers/torch_bench.py MODEL --inputs DIR [--threads N] [--runs R] [--warmup W] [--outputs DIR]
"""
import argparse
import json
import os
import sys
import time

import peer_env


# BLAS library and thread variables are read at process start, so this goes before torch loads.
peer_env.reexec_in_peer_environment(peer_env.requested_threads(sys.argv))

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import make_models  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", choices=make_models.ALL_MODELS)
    parser.add_argument("--inputs", required=True, help="folder with one NAME.npy per model input")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--outputs", help="folder for the outputs of the last run")
    args = parser.parse_args()
    if args.threads < 1 or args.runs < 1 or args.warmup < 0:
        parser.error("--threads and --runs must be >= 1, --warmup >= 0")

    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    model = make_models.build_model(args.model)
    build_ms = (time.perf_counter() - start) * 1e3
    inputs = []
    for name in make_models.input_names(args.model):
        path = os.path.join(args.inputs, name + ".npy")
        if not os.path.exists(path):
            sys.exit(f"torch_bench: error: input '{name}': {path} not found")
        inputs.append(torch.from_numpy(np.load(path)))
    batch = inputs[0].shape[0]

    times = []
    with torch.inference_mode():
        for _ in range(args.warmup):
            outputs = model(*inputs)
        for _ in range(args.runs):
            start = time.perf_counter()
            outputs = model(*inputs)
            times.append((time.perf_counter() - start) * 1e3)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)

    if args.outputs:
        os.makedirs(args.outputs, exist_ok=True)
        for name, y in zip(make_models.output_names(args.model), outputs):
            np.save(os.path.join(args.outputs, name + ".npy"), y.numpy())

    median = float(np.median(times))
    result = {
        "runtime": "pytorch",
        "version": torch.__version__,
        "blas": peer_env.blas_name(),
        "median_ms": median,
        "p90_ms": float(np.percentile(times, 90, method="higher")),
        "mean_ms": float(np.mean(times)),
        "min_ms": float(np.min(times)),
        "throughput": batch * 1000.0 / median,
        "batch": int(batch),
        "runs": args.runs,
        "warmup": args.warmup,
        "threads": torch.get_num_threads(),
        "load_ms": build_ms,
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
