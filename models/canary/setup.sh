#!/usr/bin/env bash
# Installs what training the canary model needs from Debian 12's packages (when missing):
# python3-torch (1.13, CPU) and numpy, and OpenBLAS built with OpenMP, which train.sh loads in
# place of the reference BLAS that Debian's torch links (about 2 GFLOP/s otherwise).
# Then builds kvrt (tools/setup.sh) and canary_eval, which the default build leaves out (meson
# option canary): their tools generate the data and export the model.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

packages=(python3-torch python3-numpy libopenblas0-openmp)
. "$root/tools/apt_need.sh"
apt_need "${packages[@]}"
"$root/tools/setup.sh"
build="${KVRT_BUILD:-$root/build}"
meson configure "$build" -Dcanary=true >&2
ninja -C "$build" models/canary/canary_eval >&2
