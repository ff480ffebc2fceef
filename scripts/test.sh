#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test: the normal build (unit, text, error, fuzz, the
# full ONNX conformance suite, the published-model corpus and the Python package), then the
# ASan+UBSan build over the C++ tests (unit, text, error, fuzz, conformance). The corpus and the
# Python tests run on the normal build only, to keep the run short; the C++ tests reach the same
# kernels under the sanitizers. Prints CTest's summaries.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

scripts/build.sh build
(cd build && ctest -j"$jobs" --output-on-failure)

scripts/build.sh build-asan -DTESSEL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
  -DTESSEL_BUILD_BENCHMARKS=OFF -DTESSEL_BUILD_PYTHON=OFF
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest -j"$jobs" --output-on-failure -LE models)
