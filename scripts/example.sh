#!/usr/bin/env bash
# Installs dependencies, builds tessel, and runs the main job on the bundled example model:
# describe it; compile it for the host cpu (fused, planned, weights packed) into an artifact; run the
# artifact on the example input and check it against the reference target; time it per fused op;
# compile the same model for the accelerator (nc-v2), simulate it, check it against the reference
# and write its profile (out/small_cnn-nc-v2/report.html); then run a library kernel (matmul with a
# GELU epilogue) in the accelerator simulator the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
tessel=./build/bin/tessel
$tessel info examples/small_cnn.onnx
$tessel compile examples/small_cnn.onnx --target cpu -O3 --batch 2 --report -o out/small_cnn.tsl
$tessel run out/small_cnn.tsl --input image=examples/small_cnn_input.npy --output-dir out/small_cnn/cpu
$tessel run examples/small_cnn.onnx --target ref --input image=examples/small_cnn_input.npy --output-dir out/small_cnn/ref
/usr/bin/python3 - <<'PY'
import numpy as np
cpu = np.load("out/small_cnn/cpu/probabilities.npy")
ref = np.load("out/small_cnn/ref/probabilities.npy")
err = float(np.max(np.abs(cpu - ref)))
print(f"cpu vs ref: max abs difference {err:.3g}")
assert err < 1e-5, "the cpu target disagrees with the reference"
PY
$tessel bench out/small_cnn.tsl --threads 2 --runs 50 --profile
$tessel compile examples/small_cnn.onnx --target nc-v2 --batch 2 --report --time-passes -o out/small_cnn-nc-v2.tsl
$tessel run out/small_cnn-nc-v2.tsl --input image=examples/small_cnn_input.npy
$tessel profile out/small_cnn-nc-v2.tsl -o out/small_cnn-nc-v2
$tessel kernel run matmul --target nc-v2 --shape M=512,N=1024,K=1024 --option act=gelu \
  --profile out/matmul-nc-v2
