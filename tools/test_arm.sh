#!/usr/bin/env bash
# Cross-builds kvrt for 64-bit ARM (NEON) in build-aarch64/ and runs the test suite under
# qemu-user (all of it but the suites 'slow' and 'flow'). Installs what it needs from Debian on first use (cross g++, qemu-user, arm64 toml++ and runtime).
# oneDNN is disabled there: kvrt's blocked GEMM does the matrix products (docs/arm.md).
# Extra arguments go to `meson test`, e.g. tools/test_arm.sh matmul
# KVRT_QEMU_CPU: the qemu CPU models to run them on, in turn (default "max", which has every
# extension: the neon-dotprod and neon-i8mm rungs run; "cortex-a72" is plain ARMv8.0 NEON), e.g.
#   KVRT_QEMU_CPU="max cortex-a72" tools/test_arm.sh checkasm attention
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_ARM_BUILD:-$root/build-aarch64}"
cross="$root/tools/cross/aarch64-linux-gnu.ini"

# toml++ is a compiled library and tests run on the arm64 runtime: both from Debian multiarch
# (apt_need updates the package lists, as a new architecture needs, when anything is missing).
. "$root/tools/apt_need.sh"
dpkg --print-foreign-architectures | grep -qx arm64 || as_root dpkg --add-architecture arm64
apt_need g++ g++-aarch64-linux-gnu qemu-user meson ninja-build pkg-config libxsimd-dev doctest-dev \
  libtomlplusplus-dev:arm64 libsodium-dev:arm64 libstdc++6:arm64 libgomp1:arm64

if [ ! -f "$build/build.ninja" ]; then
  # kvrt serve is left out: its arm64 HTTP library would pull arm64 OpenSSL, zlib and brotli
  # development packages for a server that the native suite tests.
  meson setup "$build" "$root" --cross-file "$cross" -Ddnnl=disabled -Dserve=disabled --buildtype=release >&2
fi
ninja -C "$build" >&2

start=$(date +%s)
status=0
# Emulation runs the tests some 10-70x slower than native, hence the longer timeouts. qemu-user
# reads its CPU model from QEMU_CPU (the kernel's HWCAP words follow it), also for the kvrt
# processes tests start through the cross file's wrapper.
read -ra cpus <<< "${KVRT_QEMU_CPU:-max}"
# Without arguments: the whole suite but the suites 'slow' and 'flow' (see tests/meson.build), which run natively.
args=("$@")
(($#)) || args=(--no-suite slow --no-suite flow)
rebuild=()
for cpu in "${cpus[@]}"; do
  echo "kvrt test_arm: qemu -cpu $cpu" >&2
  QEMU_CPU="$cpu" meson test -C "$build" "${rebuild[@]}" --print-errorlogs --timeout-multiplier 3 "${args[@]}" || status=$?
  rebuild=(--no-rebuild)
done
if (($# == 0)); then
  # The kernel tests again on a plain ARMv8.0 core (NEON without the dot-product extensions), so
  # the run-time fallback from the sdot and smmla rungs is tested as well: checkasm (every slot of
  # every rung the core runs against the scalar rung) and attention.
  echo "kvrt test_arm: qemu -cpu cortex-a72" >&2
  QEMU_CPU=cortex-a72 meson test -C "$build" --no-rebuild --print-errorlogs --timeout-multiplier 3 \
    checkasm attention || status=$?
fi
echo "kvrt test_arm: emulated test run took $(($(date +%s) - start)) s" >&2
exit "$status"
