#!/usr/bin/env bash
# Installs dependencies, builds tessel, and runs the main job on the bundled example model:
# describe it, then run it on the reference target with seeded random input, writing .npy outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build
./build/bin/tessel info examples/small_cnn.onnx
./build/bin/tessel run examples/small_cnn.onnx --output-dir out/small_cnn
