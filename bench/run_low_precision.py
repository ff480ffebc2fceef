#!/usr/bin/python3
"""The low-precision model benchmark, side by side in one run: ONNX Runtime on the fp32 file and on
a QDQ int8 file, and tessel (cpu target, -O3) on the fp32 file, on the fp32 file compiled with
`--auto-cast matmul` (bf16 operands for matmul and conv, fp32 sums) and on the same QDQ file. The
QDQ file is the model quantized by `tessel quantize`. Accuracy next to every latency: each
low-precision run's cosine similarity to fp32, and tessel's int8 output against ONNX Runtime's on the
same file (cosine, and for an output a DequantizeLinear produces, the share of elements within one
quantization step). The runtimes take turns (--rounds rounds of --runs timed runs each; the median of
the rounds' medians is reported), the two runtimes of each ratio back to back, and each speed-up is
the median of the rounds' ratios, so a noisy machine slows both sides of a ratio alike. Writes the
tables and the machine into docs/benchmarks.md between the low-precision-benchmark markers.

Usage: bench/run_low_precision.py TESSEL MODELS_DIR [--models a,b] [--threads 2] [--runs 10] [--rounds 5]
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
BEGIN_MARKER = "<!-- low-precision-benchmark:begin (written by bench/run_low_precision.py) -->"
END_MARKER = "<!-- low-precision-benchmark:end -->"
SECTION_TITLE = "## Low precision (bf16 auto-cast, int8 QDQ) against ONNX Runtime"


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


def median(values):
    return float(np.median(np.array(values)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tessel")
    parser.add_argument("models_dir")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", default="/tmp/tessel-low-precision-bench")
    parser.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        fp32 = os.path.join(args.models_dir, f"{name}_b1.onnx")
        inputs = os.path.join(args.models_dir, f"{name}_b1", "inputs")
        qdq = os.path.join(args.work, f"{name}.qdq.onnx")
        bf16 = os.path.join(args.work, f"{name}.bf16.tsl")
        log(f"{name}: tessel quantize, tessel compile --auto-cast matmul")
        subprocess.run([args.tessel, "quantize", fp32, "--calibration", inputs, "-o", qdq], check=True,
                       capture_output=True)
        subprocess.run([args.tessel, "compile", fp32, "--target", "cpu", "--auto-cast", "matmul", "-o", bf16],
                       check=True, capture_output=True)
        # Each compared pair runs back to back, so a round's ratio sees one state of the (shared) machine.
        runs = [("ort_fp32", fp32, "ort"), ("tessel_bf16", bf16, "tessel"), ("ort_int8", qdq, "ort"),
                ("tessel_int8", qdq, "tessel"), ("tessel_fp32", fp32, "tessel")]
        times, outs = {label: [] for label, _, _ in runs}, {}
        for round_index in range(args.rounds):
            for label, model, runtime in runs:
                out = os.path.join(args.work, f"{name}_{label}")
                os.makedirs(out, exist_ok=True)
                if runtime == "ort":
                    result = run_json(["node", os.path.join(BENCH, "peers", "ort_bench.js"), model, "--inputs", inputs,
                                       "--threads", str(args.threads), "--runs", str(args.runs), "--warmup", "3",
                                       "--outputs", out])
                else:
                    result = run_json([args.tessel, "bench", model, "--inputs", inputs, "--threads",
                                       str(args.threads), "--runs", str(args.runs), "--warmup", "3", "--outputs", out,
                                       "--json"])
                times[label].append(result["median_ms"])
                outs[label] = outputs(out)
            log(f"{name}: round {round_index + 1}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in times.items()))
        speed = {"bf16": median([a / b for a, b in zip(times["ort_fp32"], times["tessel_bf16"])]),
                 "int8": median([a / b for a, b in zip(times["ort_int8"], times["tessel_int8"])])}
        times = {label: median(values) for label, values in times.items()}
        steps = output_steps(qdq)
        accuracy = {}
        for label in ["tessel_bf16", "ort_int8", "tessel_int8"]:
            accuracy[label] = min(cosine(outs[label][k], outs["ort_fp32"][k]) for k in outs["ort_fp32"])
        agree = min(cosine(outs["tessel_int8"][k], outs["ort_int8"][k]) for k in outs["ort_int8"])
        within = []
        for k, step in steps.items():
            diff = np.abs(outs["tessel_int8"][k].astype(np.float64) - outs["ort_int8"][k].astype(np.float64))
            within.append(float(np.mean(diff <= step * 1.0001)))
        rows.append((name, times, speed, accuracy, agree, min(within) if within else None))

    lines = [BEGIN_MARKER, "",
             f"Machine: {machine()}, {os.cpu_count()} cpus; batch 1, {args.threads} threads; each runtime "
             f"{args.rounds} times in turn, {args.runs} timed runs each: the times are the median of the "
             "medians, each speed the median over the rounds of that round's ratio (the two runtimes compared "
             "run back to back). Command: "
             "`bench/run_low_precision.py build/bin/tessel MODELS_DIR`. bf16: `tessel compile --target cpu "
             "--auto-cast matmul` (matmul and conv operands rounded to bf16, sums and the rest fp32). int8: the "
             "model quantized by `tessel quantize` (min/max on the model's one sample input, uint8 activations, "
             "int8 per-channel weights); both runtimes run that same QDQ file.", "",
             "| model | ORT fp32 ms | tessel fp32 ms | tessel bf16 ms | bf16 / ORT fp32 speed | ORT int8 ms "
             "| tessel int8 ms | tessel int8 / ORT int8 speed |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, t, speed, _, _, _ in rows:
        lines.append(f"| {name} | {t['ort_fp32']:.2f} | {t['tessel_fp32']:.2f} | {t['tessel_bf16']:.2f} | "
                     f"{speed['bf16']:.2f}x | {t['ort_int8']:.2f} | {t['tessel_int8']:.2f} | {speed['int8']:.2f}x |")
    lines += ["", "Accuracy, on the same runs (cosine similarity of the outputs; the worst output of each model):", "",
              "| model | cos(tessel bf16, fp32) | cos(ORT int8, fp32) | cos(tessel int8, fp32) "
              "| cos(tessel int8, ORT int8) | within one step of ORT int8 |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, _, _, acc, agree, within in rows:
        lines.append(f"| {name} | {acc['tessel_bf16']:.6f} | {acc['ort_int8']:.6f} | {acc['tessel_int8']:.6f} | "
                     f"{agree:.6f} | {'-' if within is None else f'{100 * within:.1f}%'} |")
    lines += ["", END_MARKER]
    table = "\n".join(lines)
    print(table)
    doc = open(args.doc).read() if os.path.exists(args.doc) else ""
    if BEGIN_MARKER in doc:
        start, end = doc.index(BEGIN_MARKER), doc.index(END_MARKER) + len(END_MARKER)
        doc = doc[:start] + table + doc[end:]
    else:
        doc = doc.rstrip("\n") + f"\n\n{SECTION_TITLE}\n\n{table}\n"
    open(args.doc, "w").write(doc)


if __name__ == "__main__":
    main()
