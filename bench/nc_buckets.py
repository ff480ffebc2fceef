#!/usr/bin/python3
"""Sequence buckets on the accelerator: one artifact for every length, against one bucket alone.

For a model with a symbolic sequence dim (default bench/models/bert_base_dyn_b1.onnx, made by
`bench/make_models.py --models bert_base_dyn --batches 1`), this
  - compiles the largest bucket alone (`tessel compile --shape ...`) and the bucketed artifact
    (`tessel compile --buckets DIM=...`), each with --time-passes, and prints both compile times
    (the compiler's own figure, the graph import and artifact write left out, and the wall time);
  - runs the bucketed artifact timing-only at every bucket size and at lengths between them
    (simulated device latency, the bucket taken and its padding);
  - runs it with numerics at the --check lengths (inputs made by make_models.make_inputs at that
    length, rows padded as the benchmark pads them) and takes `tessel run`'s checks: against the
    reference with the device's casts on the padded feeds, and against the f32 reference on the
    unpadded ones. A numerics run of BERT-base takes minutes (the reference interpreter runs it
    three times), so the default checks a few lengths; tests/targets/nc/compiler/buckets_test.cpp
    checks every length of a small model.

Usage: bench/nc_buckets.py [--tessel build/bin/tessel] [--model M.onnx] [--buckets sequence=32,...]
                           [--target nc-v2] [--check 1,100,300] [--between 20,100,200,300]
Exit status 1 when a check fails.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402


def run(command):
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout + result.stderr, wall, result.returncode


def bert_inputs(length, directory):
    import make_models  # Imports torch; only the numerics runs need it.
    ids, mask, segments = make_models.make_inputs("bert_base", 1, sequence=length)
    paths = []
    for name, array in zip(["input_ids", "attention_mask", "token_type_ids"], [ids, mask, segments]):
        path = os.path.join(directory, f"{name}_{length}.npy")
        np.save(path, array)
        paths += ["--input", f"{name}={path}"]
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tessel", default=os.path.join(ROOT, "build", "bin", "tessel"))
    parser.add_argument("--model", default=os.path.join(HERE, "models", "bert_base_dyn_b1.onnx"))
    parser.add_argument("--buckets", default="sequence=32,64,128,256,512")
    parser.add_argument("--target", default="nc-v2")
    parser.add_argument("--check", default="1,100,300", help="lengths run with numerics (empty: none)")
    parser.add_argument("--between", default="20,100,200,300", help="lengths between buckets, timing only")
    args = parser.parse_args()

    dim, sizes = args.buckets.split("=")
    sizes = [int(s) for s in sizes.split(",")]
    largest = max(sizes)
    work = tempfile.mkdtemp(prefix="tessel_buckets_")
    inputs = ["input_ids", "attention_mask", "token_type_ids"]

    single = os.path.join(work, "single.tsl")
    shape_flags = [f for n in inputs for f in ("--shape", f"{n}=1,{largest}")]
    out, single_wall, _ = run([args.tessel, "compile", args.model, "--target", args.target, *shape_flags,
                               "--time-passes", "-o", single])
    single_ms = float(re.findall(r"([\d.]+) ms  total", out)[-1])
    bucketed = os.path.join(work, "bucketed.tsl")
    out, bucketed_wall, _ = run([args.tessel, "compile", args.model, "--target", args.target, "--batch", "1",
                                 "--buckets", args.buckets, "--report", "--time-passes", "-o", bucketed])
    bucketed_ms = float(re.search(r"all \d+ buckets: ([\d.]+) ms", out).group(1))
    hbm = re.search(r"HBM for all buckets: .*", out).group(0)
    print(f"model {os.path.basename(args.model)}, target {args.target}, buckets {args.buckets}")
    print(f"compile, one bucket ({dim}={largest}): {single_ms / 1000:.2f} s (wall {single_wall:.1f} s, "
          f"artifact {os.path.getsize(single) / 2**20:.0f} MiB)")
    print(f"compile, {len(sizes)} buckets: {bucketed_ms / 1000:.2f} s = {bucketed_ms / single_ms:.2f}x one bucket "
          f"(wall {bucketed_wall:.1f} s, artifact {os.path.getsize(bucketed) / 2**20:.0f} MiB)")
    print(hbm)

    print(f"\n| {dim} | bucket | padding | simulated device us |")
    print("|---:|---|---:|---:|")
    lengths = sorted(set(sizes + [int(n) for n in args.between.split(",") if n]))
    for length in lengths:
        out, _, _ = run([args.tessel, "run", bucketed, "--timing-only", "--dim", f"{dim}={length}", "--dim", "batch=1"])
        device = float(re.search(r"simulated latency: ([\d.]+) us", out).group(1))
        bucket = re.search(r"bucket: (\S+) \(padding is ([\d.]+)%", out)
        print(f"| {length} | {bucket.group(1)} | {bucket.group(2)}% | {device:.1f} |")

    failed = False
    checks = [int(n) for n in args.check.split(",") if n]
    if checks:
        print(f"\n| {dim} | bucket | check on the padded feeds (same casts) | sliced outputs vs unpadded f32 reference |")
        print("|---:|---|---|---|")
    for length in checks:
        out, _, code = run([args.tessel, "run", bucketed, *bert_inputs(length, work)])
        ratios = re.findall(r"max error / tolerance ([\d.]+|inf|nan): (PASS|FAIL)", out)
        bucket = re.search(r"bucket: (\S+)", out).group(1)
        failed = failed or code != 0 or any(v == "FAIL" for _, v in ratios)
        cells = [f"{r} of the tolerance: {v}" for r, v in ratios]
        print(f"| {length} | {bucket} | {' | '.join(cells)} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
