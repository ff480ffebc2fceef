#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test: the normal build (unit, text, error, fuzz and
# the full ONNX conformance suite), then the ASan+UBSan build over the same tests. Prints CTest's
# summaries.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

scripts/build.sh build
(cd build && ctest -j"$jobs" --output-on-failure)

scripts/build.sh build-asan -DTESSEL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest -j"$jobs" --output-on-failure)
