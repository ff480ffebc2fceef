#!/usr/bin/env bash
# Installs dependencies, builds tessel, and runs the main job on the bundled example model:
# describe it, then run it on the reference target with seeded random input, writing .npy outputs;
# then run a library kernel (matmul with a GELU epilogue) in the accelerator simulator, check it
# against the reference and write its profile (out/matmul-nc-v2/report.html).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
./build/bin/tessel info examples/small_cnn.onnx
./build/bin/tessel run examples/small_cnn.onnx --output-dir out/small_cnn
./build/bin/tessel kernel run matmul --target nc-v2 --shape M=512,N=1024,K=1024 --option act=gelu \
  --profile out/matmul-nc-v2
