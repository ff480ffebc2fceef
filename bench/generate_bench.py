#!/usr/bin/python3
"""Greedy generation on the cpu, side by side: `tessel generate` (KV cache in padded buffers, and
with --exact-cache), ONNX Runtime on the same ONNX file (bench/peers/ort_generate.js) and PyTorch
eager on the same module (bench/peers/torch_generate.py), batch 1, the same prompt, thread count and
number of new tokens. Every runtime reports the time to the first token (the prefill, its first run
after loading), the decode steps' p50/p90 and tokens/s (decode steps over their summed time), each
step timed as the model run alone. The runtimes take turns for --rounds rounds so that machine noise
falls on all alike; the table gives the median over the rounds of each figure. Every run's ids must
equal PyTorch's greedy ids from bench/make_llm.py (torch_greedy.npy); a mismatch is printed and the
script exits 1.

`--size 1b` runs the 1B-class model (make_llm.py --size 1b: 6 GB of fp32 weights, made once into
--models) and adds a `tessel --weights bf16` row; the small model's default rows stay as they are.

Needs bench/install-peers.sh (onnxruntime-node, PyTorch with OpenBLAS) and build/bin/tessel.
Usage: bench/generate_bench.py [--models DIR] [--size small|1b] [--threads 2] [--new-tokens 64] [--rounds 3]
       [--tessel PATH]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
PEERS = os.path.join(BENCH, "peers")
sys.path.insert(0, PEERS)
import peer_env  # noqa: E402


NAMES = {"small": "llama_small", "1b": "llama_1b"}  # make_llm.py's file names per --size.


def ensure_model(models, size, new_tokens):
    name = NAMES[size]
    onnx_path = os.path.join(models, name + ".onnx")
    greedy_path = os.path.join(models, name, "torch_greedy.npy")
    if not (os.path.exists(onnx_path) and os.path.exists(greedy_path) and np.load(greedy_path).shape[1] >= new_tokens):
        subprocess.run([sys.executable, os.path.join(BENCH, "make_llm.py"), models, "--size", size, "--new-tokens",
                        str(new_tokens)], check=True, env=peer_env.peer_environment(1))
    return onnx_path, os.path.join(models, name, "prompt.npy"), np.load(greedy_path)[:, :new_tokens]


def number(pattern, text):
    match = re.search(pattern, text)
    if not match:
        raise RuntimeError(f"tessel generate printed no match for {pattern!r}:\n{text}")
    return float(match.group(1))


def run_tessel(tessel, model, prompt, args, extra):
    with tempfile.TemporaryDirectory() as tmp:
        ids_path = os.path.join(tmp, "ids.npy")
        command = [tessel, "generate", model, "--prompt", prompt, "--max-new-tokens", str(args.new_tokens),
                   "--threads", str(args.threads), "--target", "cpu", "-o", ids_path] + extra
        text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        ids = np.load(ids_path)
    return {
        "ids": ids,
        "ttft_ms": number(r"time to first token: ([0-9.]+) ms", text),
        "p50_ms": number(r"decode: p50 ([0-9.]+) ms/token", text),
        "p90_ms": number(r"p90 ([0-9.]+) ms/token", text),
        "tokens_per_s": number(r"([0-9.]+) tokens/s", text),
    }


def run_json(command, env=None):
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=PEERS)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["ids"] = np.array(result["ids"], dtype=np.int64)
    return result


def difference(got, expected):
    if got.shape != expected.shape:
        return f"ids of shape {list(got.shape)} instead of {list(expected.shape)}"
    i = int(np.flatnonzero(got != expected)[0])
    return f"ids differ first at token {i}: {got.flat[i]} instead of {expected.flat[i]}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=os.path.join(BENCH, "models"), help="make_llm.py's output folder")
    parser.add_argument("--size", choices=sorted(NAMES), default="small")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tessel", default=os.path.join(ROOT, "build", "bin", "tessel"))
    args = parser.parse_args()
    if args.threads < 1 or args.new_tokens < 2 or args.rounds < 1:
        parser.error("--threads and --rounds must be >= 1, --new-tokens >= 2")
    if not os.path.exists(os.path.join(PEERS, "node_modules", "onnxruntime-node")):
        sys.exit("generate_bench: onnxruntime-node is missing; run bench/install-peers.sh")

    model, prompt, expected = ensure_model(args.models, args.size, args.new_tokens)
    common = ["--prompt", prompt, "--max-new-tokens", str(args.new_tokens), "--threads", str(args.threads)]
    tessel = [("tessel", [])]
    # bf16 weights round the products, so their ids are compared with PyTorch's fp32 ones only as
    # a report (a rounded product may tip a close argmax); every other row must match.
    tessel += [("tessel --weights bf16", ["--weights", "bf16"])] if args.size == "1b" else [
        ("tessel --exact-cache", ["--exact-cache"])]
    peers = [(name, lambda extra=extra: run_tessel(args.tessel, model, prompt, args, extra)) for name, extra in tessel]
    peers += [
        ("onnxruntime", lambda: run_json(["node", os.path.join(PEERS, "ort_generate.js"), model] + common)),
        ("pytorch eager", lambda: run_json([sys.executable, os.path.join(PEERS, "torch_generate.py"), "--size",
                                            args.size] + common, env=peer_env.peer_environment(args.threads))),
    ]
    exact = {name for name, _ in peers if "bf16" not in name}
    results = {name: [] for name, _ in peers}
    versions = {}
    mismatches = []
    for r in range(args.rounds):
        for name, run in peers:
            result = run()
            results[name].append(result)
            if "version" in result:
                versions[name] = result["version"] + (f", {result['blas']}" if "blas" in result else "")
            if name in exact and not np.array_equal(result["ids"], expected):
                mismatches.append(f"round {r + 1}, {name}: {difference(result['ids'], expected)}")
            print(f"round {r + 1} {name}: ttft {result['ttft_ms']:.2f} ms, p50 {result['p50_ms']:.3f} ms/token, "
                  f"{result['tokens_per_s']:.1f} tokens/s", file=sys.stderr, flush=True)

    figures = ("ttft_ms", "p50_ms", "p90_ms", "tokens_per_s")
    median = {name: {key: statistics.median(run[key] for run in runs) for key in figures} for name, runs in results.items()}
    reference = median["tessel"]["tokens_per_s"]
    print(f"{NAMES[args.size]}, batch 1, prompt {np.load(prompt).shape[1]} tokens, {args.new_tokens} new, --threads {args.threads}, "
          f"median of {args.rounds} rounds; " + "; ".join(f"{k}: {v}" for k, v in versions.items()))
    print()
    print("| peer | TTFT ms | decode ms/token p50 | p90 | tokens/s | tessel tokens/s ÷ peer's | ids = PyTorch greedy |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, m in median.items():
        same = all(np.array_equal(run["ids"], expected) for run in results[name])
        print(f"| {name} | {m['ttft_ms']:.2f} | {m['p50_ms']:.3f} | {m['p90_ms']:.3f} | {m['tokens_per_s']:.1f} | "
              f"{reference / m['tokens_per_s']:.2f} | {'yes' if same else 'NO'} |")
    loads = [f"{name} {statistics.median(run['load_ms'] for run in runs):.0f} ms" for name, runs in results.items()
             if "load_ms" in runs[0]]
    print(f"\nLoading before the first token, outside TTFT: {', '.join(loads)} (session create / module build); "
          "tessel runs the shapes it will use once before its timed runs (its warm-up line), outside TTFT.")
    if mismatches:
        print("\nGREEDY IDS MISMATCH (against torch_greedy.npy):\n" + "\n".join(mismatches), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
