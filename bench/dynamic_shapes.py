#!/usr/bin/python3
"""One cpu artifact for every shape, against an artifact compiled statically for each shape.

For each model with symbolic dims (bench/make_models.py NAME_dyn), this compiles ONE dynamic cpu
artifact (`tessel compile MODEL --target cpu`, no --shape), and for each shape of the list:
  - makes the inputs (make_models.make_inputs at that shape) and PyTorch's outputs on them;
  - compiles a static artifact for that shape (`tessel compile MODEL --target cpu --shape ...`);
  - times both side by side (`tessel bench --json`, alternating, ROUNDS rounds of RUNS runs each; the
    fastest run of each counts, the figure least moved by other work on the machine; the best
    median is printed too), and checks both artifacts' outputs against PyTorch.

Usage: bench/dynamic_shapes.py [--tessel build/bin/tessel] [--models bert_base_dyn,...]
                               [--threads N] [--runs R] [--rounds K] [--quick]
Exit status 1 when an output differs from PyTorch beyond the tolerance.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

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


def bench(tessel, artifact, inputs, outputs, threads, runs):
    text = run([tessel, "bench", artifact, "--inputs", inputs, "--outputs", outputs, "--threads", str(threads),
                "--runs", str(runs), "--warmup", "2", "--json"])
    return json.loads(text.strip().splitlines()[-1])


def max_error(outputs_dir, want):
    worst = 0.0
    for name, expected in want.items():
        got = np.load(os.path.join(outputs_dir, name + ".npy"))
        if got.shape != expected.shape:
            return float("inf")
        worst = max(worst, float(np.max(np.abs(got - expected)) / max(float(np.max(np.abs(expected))), 1e-30)))
    return worst


def shape_label(model, batch, size):
    return f"batch {batch}, sequence {size}" if model.startswith("bert") else f"batch {batch}, {size}x{size}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tessel", default=os.path.join(ROOT, "build", "bin", "tessel"))
    parser.add_argument("--models", default="bert_base_dyn,resnet50_dyn,mobilenet_v2_dyn")
    parser.add_argument("--model-dir", default=os.path.join(HERE, "models"))
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="two shapes per model")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    failed = False
    rows = []
    with tempfile.TemporaryDirectory(prefix="tessel-dynamic-") as tmp:
        for model_name in args.models.split(","):
            onnx_path = os.path.join(args.model_dir, f"{model_name}_b1.onnx")
            if not os.path.exists(onnx_path):
                raise SystemExit(f"{onnx_path} is missing: run bench/make_models.py --models {model_name} --batches 1")
            dynamic = os.path.join(tmp, f"{model_name}.tsl")
            run([args.tessel, "compile", onnx_path, "--target", "cpu", "--threads", str(args.threads), "-o", dynamic])
            module = make_models.build_model(model_name)
            names = make_models.input_names(model_name)
            for batch, size in (QUICK_SHAPES if args.quick else SHAPES)[model_name]:
                label = shape_label(model_name, batch, size)
                if model_name.startswith("bert"):
                    arrays = make_models.make_inputs(model_name, batch, sequence=size)
                else:
                    arrays = make_models.make_inputs(model_name, batch, image=size)
                case = os.path.join(tmp, f"{model_name}_{batch}_{size}")
                os.makedirs(os.path.join(case, "inputs"))
                for name, array in zip(names, arrays):
                    np.save(os.path.join(case, "inputs", name + ".npy"), array)
                with torch.inference_mode():
                    out = module(*[torch.from_numpy(a) for a in arrays])
                want = dict(zip(make_models.output_names(model_name), [out.numpy()]))

                static = os.path.join(case, "static.tsl")
                shapes = [f"--shape={name}={','.join(map(str, a.shape))}" for name, a in zip(names, arrays)]
                run([args.tessel, "compile", onnx_path, "--target", "cpu", "--threads", str(args.threads), "-o", static]
                    + shapes)
                best = {"dynamic": None, "static": None}
                medians = {"dynamic": None, "static": None}
                plan_ms = None
                errors = {}
                for _ in range(args.rounds):
                    for kind, artifact in (("dynamic", dynamic), ("static", static)):
                        outputs = os.path.join(case, kind + "_outputs")
                        result = bench(args.tessel, artifact, os.path.join(case, "inputs"), outputs, args.threads,
                                       args.runs)
                        if best[kind] is None or result["min_ms"] < best[kind]:
                            best[kind] = result["min_ms"]
                        if medians[kind] is None or result["median_ms"] < medians[kind]:
                            medians[kind] = result["median_ms"]
                        if kind == "dynamic":
                            plan_ms = result.get("last_shape_plan_ms")
                        errors[kind] = max_error(outputs, want)
                ratio = best["dynamic"] / best["static"]
                ok = errors["dynamic"] <= TOLERANCE and errors["static"] <= TOLERANCE
                failed = failed or not ok
                row = (model_name, label, best["static"], best["dynamic"], ratio, medians["static"],
                       medians["dynamic"], plan_ms, max(errors.values()), ok)
                rows.append(row)
                print(f"{model_name:18s} {label:26s} static {best['static']:9.2f} ms  dynamic {best['dynamic']:9.2f} ms"
                      f"  ratio {ratio:5.3f}  (medians {medians['static']:.2f} / {medians['dynamic']:.2f})"
                      f"  plan {plan_ms or 0:.1f} ms  max rel err vs PyTorch {max(errors.values()):.1e}"
                      f"{'' if ok else '  FAIL'}", flush=True)

    print("\n| model | shape | static artifact, best (ms) | one dynamic artifact, best (ms) | dynamic / static | "
          "best medians static / dynamic (ms) | plan for the shape (ms) | max rel. error vs PyTorch |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for model_name, label, static_ms, dynamic_ms, ratio, static_med, dynamic_med, plan_ms, error, ok in rows:
        print(f"| {model_name} | {label} | {static_ms:.2f} | {dynamic_ms:.2f} | {ratio:.3f} | "
              f"{static_med:.2f} / {dynamic_med:.2f} | {plan_ms or 0:.0f} | {error:.1e}"
              f"{'' if ok else ' (over the tolerance)'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
