#!/usr/bin/env bash
# Every model family on the accelerator (JAX), float32 against mixed_bfloat16:
#   benchmarks/gpu_check.sh OUT_DIR            # on a GPU; about 5 minutes on one H100
#   benchmarks/gpu_check.sh --dry-run [OUT_DIR] # the same code at tiny sizes, on CPU (CI)
# Figures go to OUT_DIR/gpu_check.json, trained weights to OUT_DIR/*.npz.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "${1:-}" = "--dry-run" ]; then
  out="${2:-$(mktemp -d)}"
  exec env KERAS_BACKEND=jax python3 "$here/gpu_check.py" "$out" --dry-run
fi
exec env KERAS_BACKEND=jax python3 "$here/gpu_check.py" "${1:?usage: gpu_check.sh OUT_DIR | --dry-run [OUT_DIR]}" "${@:2}"
