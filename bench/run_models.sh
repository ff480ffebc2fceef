#!/usr/bin/env bash
# The model benchmark in one run: installs the peers (bench/install-peers.sh) and makes the models
# (bench/make_models.py) when missing, builds tessel in Release, then runs bench/run_models.py:
# tessel, ONNX Runtime and PyTorch eager on ResNet-50, MobileNetV2, ViT-B/16, BERT-base and
# GPT-2-small at batch 1 and 8, 1 and 2 threads, and writes the table into docs/benchmarks.md.
# Usage: bench/run_models.sh [--quick] [run_models.py options]   (--quick: ResNet-50, batch 1, 5 runs)
# BUILD_DIR (default build-release) is the tessel build it makes; TESSEL=PATH uses that binary
# instead and skips the build.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-release}

quick=0
for arg in "$@"; do
  [ "$arg" = "--quick" ] && quick=1
done

bench/install-peers.sh
if [ $quick -eq 1 ]; then
  /usr/bin/python3 bench/make_models.py bench/models --models resnet50 --batches 1
else
  /usr/bin/python3 bench/make_models.py bench/models
fi

tessel=${TESSEL:-}
if [ -z "$tessel" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSEL_BUILD_TESTS=OFF \
    -DTESSEL_BUILD_BENCHMARKS=OFF >/dev/null
  ninja -C "$build_dir" tessel
  tessel=$build_dir/bin/tessel
fi

exec /usr/bin/python3 bench/run_models.py --tessel "$tessel" "$@"
