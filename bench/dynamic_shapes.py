#!/usr/bin/python3
"""One cpu artifact for every shape, against an artifact compiled statically for each shape.

For each model with symbolic dims (bench/make_models.py NAME_dyn), this compiles ONE dynamic cpu
artifact (`tessel compile MODEL --target cpu`, no --shape) and loads it once (the Python package,
build/python), and for each shape of the list:
  - makes the inputs (make_models.make_inputs at that shape) and PyTorch's outputs on them;
  - compiles a static artifact for that shape (`tessel compile MODEL --target cpu --shape ...`) and
    loads it in the same process;
  - runs both side by side, alternating run by run (RUNS runs each after 2 warm-up runs), so both
    see the same machine; prints the fastest and the median run of each, the time of the dynamic
    artifact's first run at that shape over its median run (what planning the shape cost; the
    first shape's also packs the weights), and both artifacts' errors against PyTorch.

Usage: bench/dynamic_shapes.py [--tessel build/bin/tessel] [--python build/python]
                               [--models bert_base_dyn,...] [--threads N] [--runs R] [--quick]
Exit status 1 when an output differs from PyTorch beyond the tolerance.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))
import peer_env  # noqa: E402

if __name__ == "__main__":
    peer_env.reexec_in_peer_environment(os.cpu_count() or 1)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import make_models  # noqa: E402

# max |got - want| / max |want|, as the model benchmark checks fp32 outputs.
TOLERANCE = 1e-3
SHAPES = {
    # (batch, sequence)
    "bert_base_dyn": [(1, 16), (1, 64), (1, 128), (1, 256), (1, 512)],
    # (batch, image side)
    "resnet50_dyn": [(1, 224), (8, 224), (1, 320), (4, 320)],
    "mobilenet_v2_dyn": [(1, 224), (8, 224), (1, 320), (8, 320)],
}
QUICK_SHAPES = {"bert_base_dyn": [(1, 16), (1, 64)], "resnet50_dyn": [(1, 224), (2, 320)],
                "mobilenet_v2_dyn": [(1, 224), (2, 320)]}


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")
    return result.stdout


def max_error(got, want):
    if got.shape != want.shape:
        return float("inf")
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def timed(executable, feeds):
    start = time.perf_counter()
    outputs = executable.run(None, feeds)
    return (time.perf_counter() - start) * 1000, outputs


def shape_label(model, batch, size):
    return f"batch {batch}, sequence {size}" if model.startswith("bert") else f"batch {batch}, {size}x{size}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tessel", default=os.path.join(ROOT, "build", "bin", "tessel"))
    parser.add_argument("--python", default=os.path.join(ROOT, "build", "python"), help="where the tessel package is")
    parser.add_argument("--models", default="bert_base_dyn,resnet50_dyn,mobilenet_v2_dyn")
    parser.add_argument("--model-dir", default=os.path.join(HERE, "models"))
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="two shapes per model")
    args = parser.parse_args()
    sys.path.insert(0, args.python)
    import tessel
    torch.set_num_threads(args.threads)

    failed = False
    rows = []
    with tempfile.TemporaryDirectory(prefix="tessel-dynamic-") as tmp:
        for model_name in args.models.split(","):
            onnx_path = os.path.join(args.model_dir, f"{model_name}_b1.onnx")
            if not os.path.exists(onnx_path):
                raise SystemExit(f"{onnx_path} is missing: run bench/make_models.py --models {model_name} --batches 1")
            dynamic_path = os.path.join(tmp, f"{model_name}.tsl")
            run([args.tessel, "compile", onnx_path, "--target", "cpu", "--threads", str(args.threads), "-o", dynamic_path])
            dynamic = tessel.load(dynamic_path, threads=args.threads)
            module = make_models.build_model(model_name)
            names = make_models.input_names(model_name)
            for batch, size in (QUICK_SHAPES if args.quick else SHAPES)[model_name]:
                label = shape_label(model_name, batch, size)
                if model_name.startswith("bert"):
                    arrays = make_models.make_inputs(model_name, batch, sequence=size)
                else:
                    arrays = make_models.make_inputs(model_name, batch, image=size)
                feeds = dict(zip(names, arrays))
                with torch.inference_mode():
                    want = module(*[torch.from_numpy(a) for a in arrays]).numpy()

                static_path = os.path.join(tmp, f"{model_name}_{batch}_{size}.tsl")
                shapes = [f"--shape={name}={','.join(map(str, a.shape))}" for name, a in feeds.items()]
                run([args.tessel, "compile", onnx_path, "--target", "cpu", "--threads", str(args.threads),
                     "-o", static_path] + shapes)
                static = tessel.load(static_path, threads=args.threads)

                first_ms, dynamic_out = timed(dynamic, feeds)
                _, static_out = timed(static, feeds)
                for _ in range(2):
                    timed(dynamic, feeds)
                    timed(static, feeds)
                times = {"dynamic": [], "static": []}
                for i in range(args.runs):
                    for kind in (("dynamic", "static") if i % 2 == 0 else ("static", "dynamic")):
                        ms, _ = timed(dynamic if kind == "dynamic" else static, feeds)
                        times[kind].append(ms)
                del static
                os.remove(static_path)
                best = {k: min(v) for k, v in times.items()}
                median = {k: statistics.median(v) for k, v in times.items()}
                plan_ms = first_ms - median["dynamic"]
                errors = {"dynamic": max_error(dynamic_out[0], want), "static": max_error(static_out[0], want)}
                ok = max(errors.values()) <= TOLERANCE
                failed = failed or not ok
                ratio = median["dynamic"] / median["static"]
                rows.append((model_name, label, median["static"], median["dynamic"], ratio, best["static"],
                             best["dynamic"], plan_ms, errors["dynamic"], errors["static"], ok))
                print(f"{model_name:18s} {label:26s} median static {median['static']:9.2f} ms dynamic "
                      f"{median['dynamic']:9.2f} ms ratio {ratio:5.3f} (best {best['static']:.2f} / "
                      f"{best['dynamic']:.2f}), first run +{plan_ms:.0f} ms, error vs PyTorch "
                      f"{errors['dynamic']:.1e} / static {errors['static']:.1e}{'' if ok else '  FAIL'}", flush=True)

    print("\n| model | shape | static artifact, median (ms) | one dynamic artifact, median (ms) | dynamic / static | "
          "fastest static / dynamic (ms) | first run at the shape, over the median (ms) | max rel. error vs PyTorch, dynamic / static |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for model_name, label, static_ms, dynamic_ms, ratio, static_best, dynamic_best, plan_ms, error, static_error, ok in rows:
        print(f"| {model_name} | {label} | {static_ms:.2f} | {dynamic_ms:.2f} | {ratio:.3f} | "
              f"{static_best:.2f} / {dynamic_best:.2f} | {plan_ms:.0f} | {error:.1e} / {static_error:.1e}"
              f"{'' if ok else ' (over the tolerance)'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
