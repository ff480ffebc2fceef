#!/usr/bin/env python3
"""Simulator fidelity: runs every calibration anchor of accelerator-model.md section 11 and prints one
markdown table, anchor | target | published | simulated | ratio | tolerance | within.

Whole-kernel anchors run the tutorial kernels as library variants (`tessel kernel run NAME --variant V
--timing-only`) at the published shape on the published generation; the same variants on the other
generation are printed without a published figure (no anchor exists there). The mechanism anchors
(PE stream, dependent ACT issue, one DMA engine) are single-instruction programs that live in the
simulator's calibration test; their measured values are read from its output. The table is what
tests/targets/nc/kernels/calibration_test.cpp and tests/targets/nc/sim/calibration_test.cpp assert.

Usage: bench/nc_fidelity.py [BUILD_DIR] [--output docs/fidelity.md]   (BUILD_DIR default build/)
"""
import argparse
import re
import subprocess
import sys

MATMUL_URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/nki/tutorials/matrix_multiplication.html"
MAMBA_URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/nki/tutorials/fused_mamba.html"
LAYERNORM_URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/nki/tutorials/layernorm.html"
WALKTHROUGH_URL = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/how-to-guides/kernel-optimization.html"

MATMUL_SHAPE = "M=4096,N=8192,K=8192"
# (anchor, kernel, variant, shape, dtype, published us on nc-v2, tolerance)
KERNEL_ANCHORS = [
    ("2: matmul tiled, bf16 4096x8192x8192", "matmul", "tiled", MATMUL_SHAPE, "bf16", 51800, 0.15),
    ("2: matmul loads hoisted", "matmul", "hoisted", MATMUL_SHAPE, "bf16", 42960, 0.15),
    ("2: matmul M/N blocked", "matmul", "mn-blocked", MATMUL_SHAPE, "bf16", 22070, 0.15),
    ("2: matmul M/N/K blocked", "matmul", "mnk-blocked", MATMUL_SHAPE, "bf16", 6970, 0.15),
    ("5: mamba v1, fp32 C=256 L=512 S=16", "mamba", "v1", "B=1,C=256,L=512,S=16", "f32", 172.93, 0.20),
    ("5: mamba v1, C=4096 L=512", "mamba", "v1", "B=1,C=4096,L=512,S=16", "f32", 2340, 0.20),
    ("5: mamba v2 (loop reorder), C=4096 L=512", "mamba", "v2", "B=1,C=4096,L=512,S=16", "f32", 1610, 0.20),
    ("5: mamba v3 (L tiled), C=4096 L=8192", "mamba", "v3", "B=1,C=4096,L=8192,S=16", "f32", 27800, 0.20),
]

# The nc-v3 kernel-optimization walk-through: the same matmul kernels in fp32 on one Trainium2 core,
# published as engine activity: (variant, DMA active %, PE active %, what the test asserts).
WALKTHROUGH_STEPS = [
    ("tiled", 99.93, 87.28, "DMA >= 90%"),
    ("hoisted", 99.73, 99.85, "DMA, PE >= 90%"),
    ("mn-blocked", 95.70, 99.52, "DMA >= 80%, PE >= 70%"),
    ("mnk-blocked", 21.54, 99.50, "DMA <= 35%, PE >= 90%"),
]

# The simulator calibration test prints "[calibration] anchor N ..." lines; these patterns read them.
MECHANISM_ANCHORS = [
    ("1: back-to-back 128x128x512 bf16 matmuls, % of PE peak", "nc-v2",
     r"anchor 1 nc-v2: .* = ([0-9.]+)% of", 100.0, ">= 97%", lambda v: v >= 97),
    ("1: same", "nc-v3", r"anchor 1 nc-v3: .* = ([0-9.]+)% of", 100.0, ">= 97%", lambda v: v >= 97),
    ("3: dependent 1-element ACT instructions, ACT cycles apart", "nc-v2",
     r"anchor 3 nc-v2: dependent ACT issue period ([0-9.]+) ACT cycles", 264, "15%", None),
    ("4: one DMA engine, 32 KiB HBM->SBUF, ns of data time", "nc-v3",
     r"anchor 4 nc-v3: 32 KiB per engine in ([0-9.]+) ns", 1416, "15%", None),
]


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def kernel_us(tessel, kernel, variant, shape, dtype, target, timing_only=True):
    cmd = [tessel, "kernel", "run", kernel, "--variant", variant, "--target", target, "--shape", shape,
           "--dtype", dtype]
    if timing_only:
        cmd.append("--timing-only")
    rc, out = run(cmd)
    match = re.search(r"^simulated time: ([0-9.]+) us", out, re.M)
    if rc != 0 or not match:
        sys.exit(f"{' '.join(cmd)} failed:\n{out}")
    return float(match.group(1))


def engine_active(tessel, variant):
    """(DMA active %, PE active %, simulated ms) of a walk-through step, from the kernel run's summary."""
    cmd = [tessel, "kernel", "run", "matmul", "--variant", variant, "--target", "nc-v3", "--shape", MATMUL_SHAPE,
           "--dtype", "f32", "--timing-only"]
    rc, out = run(cmd)
    dma = re.search(r"^DMA active +([0-9.]+) %", out, re.M)
    pe = re.search(r"^  PE +([0-9.]+) %", out, re.M)
    time = re.search(r"^simulated time: ([0-9.]+) us", out, re.M)
    if rc != 0 or not (dma and pe and time):
        sys.exit(f"{' '.join(cmd)} failed:\n{out}")
    return float(dma.group(1)), float(pe.group(1)), float(time.group(1)) / 1000


def fmt_us(us):
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} us"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build", nargs="?", default="build")
    parser.add_argument("--output", help="also write the table, with its header, to this file")
    args = parser.parse_args()
    tessel = f"{args.build}/bin/tessel"

    rows = ["| anchor | target | published | simulated | ratio | tolerance | within |",
            "|---|---|---:|---:|---:|---:|---|"]
    for anchor, kernel, variant, shape, dtype, published, tolerance in KERNEL_ANCHORS:
        simulated = kernel_us(tessel, kernel, variant, shape, dtype, "nc-v2")
        ratio = simulated / published
        ok = abs(ratio - 1) <= tolerance
        rows.append(f"| {anchor} | nc-v2 | {fmt_us(published)} | {fmt_us(simulated)} | {ratio:.3f} | "
                    f"{tolerance:.0%} | {'yes' if ok else '**no**'} |")
        other = kernel_us(tessel, kernel, variant, shape, dtype, "nc-v3")
        rows.append(f"| {anchor} | nc-v3 | - | {fmt_us(other)} | - | - | no anchor |")
        print(rows[-2], file=sys.stderr, flush=True)

    v1 = kernel_us(tessel, "layernorm", "v1", "R=300,C=1000", "f32", "nc-v2", timing_only=False)
    v2 = kernel_us(tessel, "layernorm", "v2", "R=300,C=1000", "f32", "nc-v2", timing_only=False)
    speedup = 1 - v2 / v1
    rows.append(f"| layernorm 300x1000 fp32, v2 faster than v1 by | nc-v2 | ~15% | {speedup:.1%} "
                f"({v1:.1f} vs {v2:.1f} us) | - | 10 points | {'yes' if abs(speedup - 0.15) <= 0.10 else '**no**'} |")

    rc, out = run([f"{args.build}/bin/nc_sim_tests", "--gtest_filter=Calibration.*"])
    for anchor, target, pattern, published, tolerance, check in MECHANISM_ANCHORS:
        match = re.search(pattern, out)
        if not match:
            rows.append(f"| {anchor} | {target} | {published} | not found | - | {tolerance} | **no** |")
            continue
        value = float(match.group(1))
        if check:
            rows.append(f"| {anchor} | {target} | {published:g}% | {value:.2f}% | - | {tolerance} | "
                        f"{'yes' if check(value) else '**no**'} |")
        else:
            ratio = value / published
            rows.append(f"| {anchor} | {target} | {published:g} | {value:.1f} | {ratio:.3f} | {tolerance} | "
                        f"{'yes' if abs(ratio - 1) <= 0.15 else '**no**'} |")

    rows += ["", "The nc-v3 kernel-optimization walk-through (fp32 4096x8192x8192, one nc-v3 core; published as "
             "engine activity only):", "",
             "| step | published DMA / PE active | simulated DMA / PE active | simulated time | test asserts |",
             "|---|---:|---:|---:|---|"]
    for variant, dma_published, pe_published, asserts in WALKTHROUGH_STEPS:
        dma, pe, ms = engine_active(tessel, variant)
        rows.append(f"| matmul {variant} | {dma_published:.2f}% / {pe_published:.2f}% | {dma:.2f}% / {pe:.2f}% | "
                    f"{ms:.2f} ms | {asserts} |")

    table = "\n".join(rows)
    print(table)
    if args.output:
        with open(args.output, "w") as f:
            f.write(HEADER + table + "\n" + FOOTER)


HEADER = f"""# Simulator fidelity

Every accelerator figure tessel prints is simulated, so it is worth what the simulator's agreement
with the real chip is worth. This page is the output of `bench/nc_fidelity.py build` (regenerate it
with `bench/nc_fidelity.py build --output docs/fidelity.md`): each calibration anchor of
[accelerator-model.md](accelerator-model.md) section 11, published against simulated. The same
anchors are tests: `tests/targets/nc/kernels/calibration_test.cpp` (whole kernels) and
`tests/targets/nc/sim/calibration_test.cpp` (single mechanisms).

Sources: anchor 2, the NKI matrix-multiplication tutorial's performance table ({MATMUL_URL});
the nc-v3 walk-through, "Introduction to NKI Kernel Optimization" ({WALKTHROUGH_URL});
anchor 5, the NKI fused-Mamba tutorial ({MAMBA_URL}; the v3 figure is its seq_len scaling table at
8192); the LayerNorm tutorial ({LAYERNORM_URL}); anchors 1, 3 and 4 as accelerator-model.md lists
them. The tutorial kernels are `tessel kernel run matmul --variant tiled|hoisted|mn-blocked|mnk-blocked`,
`mamba --variant v1|v2|v3` and `layernorm --variant v1|v2`. The nc-v3 rows of the kernel anchors
have no published figure; they show what the same kernels do on the other generation.

"""

FOOTER = """
## What the anchors constrain

- **DMA chunk efficiency** (`dma.chunkEfficiency`, `dma.chunkMinNs`): the matmul ladder. The four
  kernels move 5.37, 4.36, 2.21 and 0.64 GB in 51.80, 42.96, 22.07 and 6.97 ms, a flat ~100-110 GB/s
  per byte although the tiled kernel's a_t tiles have 256 B rows and every b tile 1 KiB rows. A cost
  per chunk (the former 64 ns floor) or per transfer would make the tiled kernel, with twice the
  chunks per byte of the hoisted one, 1.6x slower per byte; the published ratio is 1.02. So the cost
  is per byte, and depends on the contiguous chunk size: 0.4 of the engine rate from 256 B to 1 KiB
  (the assumption these anchors fix), 0.8 at 2 KiB, the full rate from 4 KiB, the shape of the DMA
  bandwidth guide's curve and of the runtime's 4 KiB default DMA packet ("the empirically determined
  minimum for DMA/HBM efficiency"). Anchor 4 (8 KiB chunks at 23 B/ns on one engine) pins the top.
- **The PE's stationary switch**: every matmul of the four tutorial kernels loads a new stationary.
  With a 512-column moving stream a LoadStationary (M / 4 = 32 cycles) hides under the previous
  MultiplyMoving (512 cycles), so it is free, as the model has it; the fully blocked kernel lands
  at 0.92 of its published time with the PE 94% busy, the rest being its DVE accumulation, memsets
  and the DMA of the first blocks.
- **DVE streaming cost** (`dve.*`, section 6.1 formulas): the Mamba kernels, which are VectorE bound
  (v2 and v3 at 99% DVE active in the tutorial's profiles); v1 is bound by reloading delta and u.
- **ACT/DVE pipeline and semaphore latencies**: anchor 3.

- **The walk-through's engine activity** (nc-v3, fp32): the tiled, hoisted and fully blocked
  steps land on the published pattern (DMA 99.9 / 99.8 / 19.6% against 99.9 / 99.7 / 21.5%; PE
  93.0 / 97.3% on the last two against 99.9 / 99.5%). The tiled step's PE is 69.8% against the
  page's 87.28%, which the same page also gives as "about 69.83%" in its text.

## Not covered yet

- The walk-through's M/N-blocked step in fp32 holds 2 x 64 b tiles of 2 KiB per partition, more
  than SBUF. tessel's spiller loads the b tiles it evicts again (from the input, no save) right
  before their next use, so the PE waits on those loads: PE 74% and DMA 86% active against the
  published 99.5% and 95.7%, 39.2 ms against the hoisted step's 30.7 ms. The chip's compiler
  evidently fetched them ahead; a spiller that places restores ahead of their use where room allows
  would close it (a fixed lookahead tried here made small kernels spill in cycles).
- No whole-kernel time anchor exists on nc-v3: its DMA chunk-efficiency curve is carried from nc-v2;
  the walk-through gives activity, not times.
- Mamba v2 lands at 1.195, at the edge of its 20%: the model's DVE work per state step is 8 N
  cycles (four two-input passes), the tutorial's profile implies about 6.9 N.
"""

if __name__ == "__main__":
    main()
