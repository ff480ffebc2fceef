#!/usr/bin/env bash
# Installs what the model benchmark compares tessel against, skipping what is already there:
#   - Debian's python3-torch and python3-torchvision (model export and PyTorch eager), with apt;
#   - Debian's OpenBLAS for PyTorch, unpacked into bench/peers/openblas/ (see peers/peer_env.py);
#   - onnxruntime-node at the version pinned in bench/peers/package-lock.json, with `npm ci`.
# CI builds and tests without these; only bench/run_models.sh calls this script.
# Usage: bench/install-peers.sh   (as root, or with sudo available, when the apt packages are missing)
set -euo pipefail
cd "$(dirname "$0")/peers"

packages=(python3-torch python3-torchvision python3-numpy python3-onnx nodejs)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-peers: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian's python3-torch calls libblas.so.3, the netlib reference BLAS unless another is installed;
# PyTorch runs with Debian's OpenBLAS (OpenMP build), unpacked here rather than installed so the system's BLAS
# (and everything else that links it) stays as it is. See peers/peer_env.py.
if [ ! -d openblas/usr/lib/x86_64-linux-gnu/openblas-openmp ] || [ ! -f openblas/VERSION ]; then
  echo "install-peers: unpacking libopenblas0-openmp into bench/peers/openblas"
  tmp=$(mktemp -d)
  chmod 777 "$tmp"  # apt downloads as its sandbox user
  (cd "$tmp" && apt-get download -qq libopenblas0-openmp)
  rm -rf openblas
  dpkg-deb -x "$tmp"/libopenblas0-openmp_*.deb openblas
  dpkg-deb -f "$tmp"/libopenblas0-openmp_*.deb Version >openblas/VERSION
  rm -rf "$tmp"
fi

# The package bundles the CPU provider's binaries; its install script only fetches the optional
# CUDA provider from outside the npm registry, so it is skipped.
wanted=$(node -p "require('./package-lock.json').packages['node_modules/onnxruntime-node'].version")
have=$(node -p "try { require('./node_modules/onnxruntime-node/package.json').version } catch (e) { '' }")
if [ "$have" != "$wanted" ]; then
  echo "install-peers: npm ci (onnxruntime-node $wanted)"
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
fi
node -e "require('./node_modules/onnxruntime-node')" ||
  { echo "install-peers: onnxruntime-node does not load" >&2; exit 1; }
echo "install-peers: python3-torch $(dpkg-query -W -f='${Version}' python3-torch), OpenBLAS $(cat openblas/VERSION), onnxruntime-node $wanted"
