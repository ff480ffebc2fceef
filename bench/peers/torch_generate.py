#!/usr/bin/python3
"""Greedy generation in PyTorch eager mode with the decoder of bench/make_llm.py (its LlamaDecoder,
same seed, so the same weights as the exported ONNX file) and the model's own KV cache: a prefill
with an empty past, then one token per forward with the returned keys/values fed back, as
make_llm.greedy() does, under torch.inference_mode. Prints one JSON line:
  {"ids", "ttft_ms", "step_ms" (each decode forward), "p50_ms", "p90_ms", "tokens_per_s", ...}
As `tessel generate` does, a step's time is the forward alone (not the argmax or building the
inputs), the first token's time is the prefill (the module's first forward), and tokens/s is the
decode forwards over their summed time.

Usage: bench/peers/torch_generate.py --prompt IDS.npy [--size small|1b] [--max-new-tokens T] [--threads N]
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
import make_llm  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompt", required=True, help="prompt ids, int64 [batch, length] (.npy)")
    parser.add_argument("--size", choices=sorted(make_llm.SIZES), default="small")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.threads < 1 or args.max_new_tokens < 1:
        parser.error("--threads and --max-new-tokens must be >= 1")

    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    model = make_llm.LlamaDecoder(make_llm.SIZES[args.size]).eval()
    build_ms = (time.perf_counter() - start) * 1e3
    prompt = torch.from_numpy(np.load(args.prompt))
    batch = prompt.shape[0]

    past, ids, cached, out, step_ms = make_llm.empty_cache(model.c, batch), prompt, 0, [], []
    loop_start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(args.max_new_tokens):
            t = ids.shape[1]
            mask = torch.ones(batch, cached + t, dtype=torch.long)
            positions = torch.arange(cached, cached + t)[None].expand(batch, t)
            start = time.perf_counter()
            logits, *past = model(ids, mask, positions, *past)
            step_ms.append((time.perf_counter() - start) * 1e3)
            cached += t
            ids = logits[:, -1].argmax(-1, keepdim=True)
            out.append(ids)
    loop_ms = (time.perf_counter() - loop_start) * 1e3

    decode = step_ms[1:]
    result = {
        "runtime": "pytorch",
        "version": torch.__version__,
        "blas": peer_env.blas_name(),
        "ids": torch.cat(out, 1).tolist(),
        "ttft_ms": step_ms[0],
        "step_ms": decode,
        "p50_ms": float(np.median(decode)) if decode else None,
        "p90_ms": float(np.percentile(decode, 90, method="higher")) if decode else None,
        "tokens_per_s": 1000.0 * len(decode) * batch / sum(decode) if decode else None,
        "loop_ms": loop_ms,
        "load_ms": build_ms,
        "batch": int(batch),
        "threads": torch.get_num_threads(),
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
