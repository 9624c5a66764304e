#!/usr/bin/env bash
# Installs what kvrt needs from Debian 12's packages (when missing), then configures and builds
# the native release build in build/. Safe to run again: it only does what is not done yet.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_BUILD:-$root/build}"

# libdnnl-dev's CMake config calls find_package(OpenCL): ocl-icd-opencl-dev is only its Recommends.
# libsodium-dev: Ed25519 signatures of validation records (kvrt validate --sign, run --trust).
# libcpp-httplib-dev, nlohmann-json3-dev: kvrt serve's HTTP server and JSON (docs/serve.md);
# curl: the serve test's curl client and tools/serve_bench.sh.
packages=(g++ meson ninja-build pkg-config cmake libdnnl-dev ocl-icd-opencl-dev libxsimd-dev libtomlplusplus-dev
          doctest-dev libsodium-dev libcpp-httplib-dev nlohmann-json3-dev curl)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "kvrt setup: installing ${missing[*]}" >&2
  sudo_cmd=(); [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$root" --buildtype=release >&2
fi
ninja -C "$build" >&2
