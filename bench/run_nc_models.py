#!/usr/bin/env python3
"""Whole models on the simulated accelerator: for each model, generation and core count, compile it with
`tessel compile --target nc-vN --cores C` (timed, with --report for the fallbacks), run it with
`tessel run` (simulated latency, MFU, bounding engine, output check against the reference on the
bundled inputs) and print one markdown table row. Usage:
  bench/run_nc_models.py TESSEL MODELS_DIR [--models resnet50,...] [--targets nc-v2,nc-v3] [--cores 1,2]
                         [--timing-only]   (simulate the timing only: no outputs, no check; much faster)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

MODELS = {
    "resnet50": "ResNet-50",
    "mobilenet_v2": "MobileNetV2",
    "vit_b_16": "ViT-B/16",
    "bert_base": "BERT-base (seq 128)",
    "gpt2_small": "GPT-2 small (seq 128)",
}


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tessel")
    parser.add_argument("models_dir")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--targets", default="nc-v2,nc-v3")
    parser.add_argument("--cores", default="1,2")
    parser.add_argument("--timing-only", action="store_true")
    args = parser.parse_args()

    print("| model | target | cores | latency (us) | throughput (inf/s) | MFU | compile (s) | host fallbacks | bounding engine | check |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            onnx = os.path.join(args.models_dir, f"{model}_b1.onnx")
            inputs_dir = os.path.join(args.models_dir, f"{model}_b1", "inputs")
            feeds = []
            if os.path.isdir(inputs_dir):
                for f in sorted(os.listdir(inputs_dir)):
                    feeds += ["--input", f"{os.path.splitext(f)[0]}={os.path.join(inputs_dir, f)}"]
            for target in args.targets.split(","):
                for cores in args.cores.split(","):
                    artifact = os.path.join(tmp, f"{model}-{target}-{cores}.tsl")
                    start = time.monotonic()
                    rc, out = run([args.tessel, "compile", onnx, "--target", target, "--cores", cores,
                                   "--report", "-o", artifact])
                    compile_s = time.monotonic() - start
                    if rc != 0:
                        print(f"| {MODELS[model]} | {target} | {cores} | compile failed: {out.strip().splitlines()[-1]} |||||||", flush=True)
                        continue
                    fallbacks = re.search(r"host fallbacks: (\d+)", out).group(1)
                    ops = sorted(set(re.findall(r"^  \S.* \((\w+)\): ", out, re.M)))
                    fallback_text = fallbacks + (f" ({', '.join(ops)})" if ops else "")
                    timing = ["--timing-only"] if args.timing_only else []
                    rc, out = run([args.tessel, "run", artifact] + feeds + timing)
                    os.remove(artifact)
                    def grab(pattern):
                        m = re.search(pattern, out)
                        return m.group(1) if m else "?"
                    latency = grab(r"simulated latency: ([\d.]+) us")
                    throughput = grab(r"throughput: ([\d.]+) inferences/s")
                    mfu = grab(r"MFU: ([\d.]+%)")
                    bounding = grab(r"bounding engine: (\w+)")
                    check = "PASS" if rc == 0 and "FAIL" not in out else "FAIL " + grab(r"max error / tolerance ([\d.]+)")
                    if args.timing_only and rc == 0:
                        check = "not run"
                    print(f"| {MODELS[model]} | {target} | {cores} | {latency} | {throughput} | {mfu} | {compile_s:.1f} | "
                          f"{fallback_text} | {bounding} | {check} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
