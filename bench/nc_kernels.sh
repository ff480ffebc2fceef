#!/usr/bin/env bash
# Runs the accelerator kernel library in the simulator on both generations and prints a Markdown
# table: kernel, shape, generation, simulated time, MFU, MBU and the engine that bounds it. Large
# shapes run timing-only (the numerics of those shapes are checked at smaller sizes by the tests);
# the others are checked against the reference in the same run.
# Usage: bench/nc_kernels.sh [BUILD_DIR]   (default build/; build it first with scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
tessel="${1:-build}/bin/tessel"

# name | shape | extra arguments
runs=(
  "matmul|M=4096,N=8192,K=8192|--timing-only"
  "matmul|M=2048,N=2048,K=2048|--dtype f8e4m3 --timing-only"
  "matmul|M=512,N=1024,K=1024|--option bias=1 --option act=gelu"
  "attention|H=12,S=2048,D=64|--timing-only"
  "attention|H=12,S=2048,D=64|--option causal=1 --timing-only"
  "attention|H=2,S=512,D=64|--option causal=1"
  "attention|H=1,S=4096,D=128|--timing-only"
  "attention|H=12,S=128,D=64|--variant heads"
  "attention|H=12,S=197,D=64|--variant heads"
  "attention|H=12,S=128,D=64|--variant heads --option causal=1"
  "attention|H=12,S=128,D=64|"
  "attention|H=12,S=197,D=64|"
  "attention|H=12,S=128,D=64|--option causal=1"
  "softmax|R=4096,C=4096|"
  "layernorm|R=4096,C=4096|"
  "layernorm|R=4096,C=4096|--variant features"
  "rmsnorm|R=4096,C=4096|"
  "rmsnorm|R=4096,C=4096|--variant features"
  "gelu|R=4096,C=4096|"
  "add|R=4096,C=4096|--option broadcast=row"
  "reduce_sum|R=4096,C=4096|"
  "transpose|R=2048,C=2048|"
)

echo "| kernel | shape | options | target | simulated time | MFU | MBU | bounded by | check |"
echo "|---|---|---|---|---:|---:|---:|---|---|"
for run in "${runs[@]}"; do
  IFS='|' read -r name shape extra <<<"$run"
  for target in nc-v2 nc-v3; do
    # shellcheck disable=SC2086
    out=$("$tessel" kernel run "$name" --target "$target" --shape "$shape" $extra 2>&1) || true
    time=$(sed -n 's/^simulated time: \([0-9.]*\) us.*/\1 us/p' <<<"$out")
    mfu=$(sed -n 's/^MFU: *\([0-9.]*%\).*/\1/p' <<<"$out")
    mbu=$(awk '$1 == "MBU" {print $2 " " $3}' <<<"$out" | head -1)
    bound=$(sed -n 's/^bounding engine *\(.*\)$/\1/p' <<<"$out" | head -1)
    check=$(sed -n 's/^check: \([A-Za-z]*\).*/\1/p' <<<"$out")
    opts=$(sed 's/--option //g; s/--timing-only/timing-only/; s/--dtype /dtype=/; s/--variant /variant=/' <<<"$extra")
    echo "| $name | $shape | ${opts:-} | $target | ${time:-error} | ${mfu:--} | ${mbu:--} | ${bound:--} | ${check:-error} |"
  done
done
