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
# python3-jinja2: the chat-template oracle (tools/render_template.py, test chat_oracle).
# json-schema-test-suite: the official JSON Schema test suite that json_schema_suite runs.
packages=(g++ meson ninja-build pkg-config cmake libdnnl-dev ocl-icd-opencl-dev libxsimd-dev libtomlplusplus-dev
          doctest-dev libsodium-dev libcpp-httplib-dev nlohmann-json3-dev curl python3-jinja2
          json-schema-test-suite)
. "$root/tools/apt_need.sh"
apt_need "${packages[@]}"

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$root" --buildtype=release >&2
fi
ninja -C "$build" >&2
