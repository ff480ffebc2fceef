#!/usr/bin/python3
"""The int8 model benchmark: each model quantized by `tessel quantize` (a standard QDQ file), then,
side by side in one run, ONNX Runtime on the fp32 file and on the QDQ file, and tessel (cpu target,
-O3) on both. Accuracy next to every latency: each int8 run's cosine similarity to fp32, and
tessel's int8 output against ONNX Runtime's on the same file (cosine, and for an output a
DequantizeLinear produces, the share of elements within one quantization step). Writes the table,
the machine and the versions into docs/benchmarks.md between the int8-benchmark markers.

Usage: bench/run_int8_models.py TESSEL MODELS_DIR [--models a,b] [--threads 2] [--runs 20]
  MODELS_DIR is what bench/make_models.py writes (NAME_b1.onnx and NAME_b1/inputs/*.npy).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np
import onnx
import onnx.numpy_helper

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
MODELS = ["resnet50", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2_small"]
BEGIN_MARKER = "<!-- int8-benchmark:begin (written by bench/run_int8_models.py) -->"
END_MARKER = "<!-- int8-benchmark:end -->"
SECTION_TITLE = "## int8 (QDQ) models against ONNX Runtime"


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_json(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {(done.stderr or done.stdout).strip()[-400:]}")
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"{' '.join(command)}: no JSON in the output")


def outputs(folder):
    return {name[:-4]: np.load(os.path.join(folder, name)) for name in sorted(os.listdir(folder)) if name.endswith(".npy")}


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def output_steps(qdq_path):
    """The scale of each graph output a DequantizeLinear produces (its quantization step)."""
    model = onnx.load(qdq_path, load_external_data=False)
    inits = {t.name: t for t in model.graph.initializer}
    steps = {}
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and node.output[0] in {o.name for o in model.graph.output}:
            scale = inits.get(node.input[1])
            if scale is not None:
                steps[node.output[0]] = float(onnx.numpy_helper.to_array(scale).max())
    return steps


def machine():
    """The CPU's model name and the instruction-set extensions the int8 and bf16 kernels use."""
    try:
        info = open("/proc/cpuinfo").read()
    except OSError:
        return platform.machine()
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")),
                platform.machine())
    flags = [f for f in ("avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni") if f" {f}" in info]
    return f"{name} ({', '.join(flags) or 'no AVX-512'})"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tessel")
    parser.add_argument("models_dir")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--work", default="/tmp/tessel-int8-bench")
    parser.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        fp32 = os.path.join(args.models_dir, f"{name}_b1.onnx")
        inputs = os.path.join(args.models_dir, f"{name}_b1", "inputs")
        qdq = os.path.join(args.work, f"{name}.qdq.onnx")
        log(f"{name}: tessel quantize")
        subprocess.run([args.tessel, "quantize", fp32, "--calibration", inputs, "-o", qdq], check=True,
                       capture_output=True)
        times, outs = {}, {}
        for label, model, runtime in [("ort_fp32", fp32, "ort"), ("ort_int8", qdq, "ort"), ("tessel_fp32", fp32, "tessel"),
                                      ("tessel_int8", qdq, "tessel")]:
            out = os.path.join(args.work, f"{name}_{label}")
            os.makedirs(out, exist_ok=True)
            log(f"{name}: {label}")
            if runtime == "ort":
                result = run_json(["node", os.path.join(BENCH, "peers", "ort_bench.js"), model, "--inputs", inputs,
                                   "--threads", str(args.threads), "--runs", str(args.runs), "--warmup", "3",
                                   "--outputs", out])
            else:
                result = run_json([args.tessel, "bench", model, "--inputs", inputs, "--threads", str(args.threads),
                                   "--runs", str(args.runs), "--warmup", "3", "--outputs", out, "--json"])
            times[label] = result["median_ms"]
            outs[label] = outputs(out)
        steps = output_steps(qdq)
        accuracy = {}
        for label in ["ort_int8", "tessel_int8"]:
            accuracy[label] = min(cosine(outs[label][k], outs["ort_fp32"][k]) for k in outs["ort_fp32"])
        agree = min(cosine(outs["tessel_int8"][k], outs["ort_int8"][k]) for k in outs["ort_int8"])
        within = []
        for k, step in steps.items():
            diff = np.abs(outs["tessel_int8"][k].astype(np.float64) - outs["ort_int8"][k].astype(np.float64))
            within.append(float(np.mean(diff <= step * 1.0001)))
        rows.append((name, times, accuracy, agree, min(within) if within else None))
        log(f"{name}: {times}")

    lines = [BEGIN_MARKER, "",
             f"Machine: {machine()}, {os.cpu_count()} cpus; batch 1, "
             f"{args.threads} threads, median of {args.runs} runs. Command: `bench/run_int8_models.py build/bin/tessel "
             f"MODELS_DIR`. Each model is quantized by `tessel quantize` (min/max on the model's one sample input, "
             "uint8 activations, int8 per-channel weights); both runtimes run that same QDQ file.", "",
             "| model | ORT fp32 ms | ORT int8 ms | tessel fp32 ms | tessel int8 ms | tessel int8 / ORT int8 speed "
             "| cos(ORT int8, fp32) | cos(tessel int8, fp32) | cos(tessel int8, ORT int8) | within one step of ORT int8 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, t, acc, agree, within in rows:
        lines.append(f"| {name} | {t['ort_fp32']:.2f} | {t['ort_int8']:.2f} | {t['tessel_fp32']:.2f} | "
                     f"{t['tessel_int8']:.2f} | {t['ort_int8'] / t['tessel_int8']:.2f}x | {acc['ort_int8']:.5f} | "
                     f"{acc['tessel_int8']:.5f} | {agree:.5f} | "
                     f"{'-' if within is None else f'{100 * within:.1f}%'} |")
    lines += ["", END_MARKER]
    table = "\n".join(lines)
    print(table)
    doc = open(args.doc).read()
    if BEGIN_MARKER in doc:
        start, end = doc.index(BEGIN_MARKER), doc.index(END_MARKER) + len(END_MARKER)
        doc = doc[:start] + table + doc[end:]
    else:
        doc = doc.rstrip("\n") + f"\n\n{SECTION_TITLE}\n\n{table}\n"
    open(args.doc, "w").write(doc)


if __name__ == "__main__":
    main()
