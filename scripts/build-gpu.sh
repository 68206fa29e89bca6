#!/usr/bin/env bash
# Runs on the GPU machine: builds dlbench, dlbench-null, dlbench-torch and the tests against the
# LibTorch and CUDA of the installed PyTorch. Works whether or not the build dependencies are
# installed there: a dependency whose header is missing is taken from .gpu-deps/debs (made by
# scripts/fetch-gpu-debs.sh on a machine with network), unpacked with dpkg -x into
# .gpu-deps/root and put on CMAKE_PREFIX_PATH.
# Usage: scripts/build-gpu.sh   (env: BUILD_DIR, default build-gpu; PYTHON, default python3;
#                                JOBS, default nproc; BUILD_TARGETS, default everything;
#                                DLBENCH_CMAKE_ARGS, more cmake arguments;
#                                DLBENCH_SOURCE_COMMIT, the commit the version string names,
#                                for a tree copied with a .git that is not its own: the device
#                                tool's copy carries a stale one, so `git describe` there names
#                                an older commit)
# <torch/torch.h> is not precompiled here (DLBENCH_TORCH_PCH=OFF; -DDLBENCH_TORCH_PCH=ON in
# DLBENCH_CMAKE_ARGS turns it on): it saves CPU time on 2 cores, but with 16 the header's own build
# (about 30 s) sits before every runner source: the H200 build of 2026-12-06 took 172 s with it,
# against about 140 s without in earlier sessions (not timed side by side).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="${BUILD_DIR:-$ROOT/build-gpu}"
PY="${PYTHON:-python3}"
JOBS="${JOBS:-$(nproc)}"
DEPS="$ROOT/.gpu-deps"

TORCH_PREFIX=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')
echo "build-gpu: torch $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)') at $TORCH_PREFIX"
prefixes=("$TORCH_PREFIX")

# A probe is a header under /usr/include or /usr/local/include, or an absolute path.
have_header() {
  local h
  for h in "$@"; do
    case "$h" in
      /*) [ -e "$h" ] || return 1 ;;
      *) [ -e "/usr/include/$h" ] || [ -e "/usr/local/include/$h" ] || return 1 ;;
    esac
  done
}

# package-glob:header... ; a package group is unpacked only when one of its headers is missing.
groups=(
  "libsqlite3-dev libsqlite3-0:sqlite3.h"
  "libboost1.74-dev:boost/version.hpp"
  "libyaml-cpp-dev libyaml-cpp0.7:yaml-cpp/yaml.h"
  "nlohmann-json3-dev:nlohmann/json.hpp"
  "libfmt-dev libfmt9:fmt/core.h"
  "libcli11-dev:CLI/CLI.hpp"
  "libgtest-dev libgmock-dev:gtest/gtest.h gmock/gmock.h"
  "libbenchmark-dev libbenchmark1debian:benchmark/benchmark.h"
  "libjs-chart.js:/usr/share/javascript/chart.js/chart.min.js"
  "libcpp-httplib-dev libcpp-httplib0.11:httplib.h"
  "libmicrohttpd-dev libmicrohttpd12:microhttpd.h"
  "libbrotli-dev:brotli/decode.h"
  "libssl-dev:openssl/ssl.h"
  "zlib1g-dev:zlib.h"
  "libturbojpeg0-dev libturbojpeg0:turbojpeg.h"
  "libisal-dev libisal2:isa-l/crc.h"
  "libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32:google/protobuf/message.h /usr/bin/protoc"
)
used_deps=0
for g in "${groups[@]}"; do
  pkgs="${g%%:*}"
  headers="${g#*:}"
  # shellcheck disable=SC2086
  if have_header $headers; then continue; fi
  for p in $pkgs; do
    deb=$(ls "$DEPS"/debs/"${p}"_*.deb 2>/dev/null | head -n1 || true)
    if [ -z "$deb" ]; then
      echo "build-gpu: $headers missing here and no $p .deb in $DEPS/debs (run scripts/fetch-gpu-debs.sh where there is network)" >&2
      continue
    fi
    echo "build-gpu: unpacking $(basename "$deb") (this machine lacks $headers)"
    dpkg -x "$deb" "$DEPS/root"
    used_deps=1
  done
done
extra_args=()
if ! command -v pkg-config >/dev/null; then
  for p in pkgconf pkgconf-bin libpkgconf3; do
    deb=$(ls "$DEPS"/debs/"${p}"_*.deb 2>/dev/null | head -n1 || true)
    [ -n "$deb" ] && dpkg -x "$deb" "$DEPS/root" && used_deps=1
  done
  if [ -x "$DEPS/root/usr/bin/pkgconf" ]; then
    echo "build-gpu: using the unpacked pkgconf (this machine has no pkg-config)"
    extra_args+=(-DPKG_CONFIG_EXECUTABLE="$DEPS/root/usr/bin/pkgconf")
  fi
fi
if [ "$used_deps" = 1 ]; then
  prefixes+=("$DEPS/root/usr")
  if [ -e "$DEPS/root/usr/share/javascript/chart.js/chart.min.js" ]; then
    extra_args+=(-DDLBENCH_CHARTJS_PATH="$DEPS/root/usr/share/javascript/chart.js/chart.min.js"
                 -DDLBENCH_CHARTJS_LICENSE_PATH="$DEPS/root/usr/share/doc/libjs-chart.js/copyright")
  fi
  # Unpacked .pc files still say /usr (some in prefix alone, libturbojpeg's in every directory
  # variable); point them at the unpacked tree. The private requirements (openssl, brotli, zlib
  # -dev) matter only for static links and may be absent here.
  for pc in "$DEPS"/root/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
    [ -e "$pc" ] || continue
    sed -i -E -e "s#^(prefix|exec_prefix|libdir|includedir)=/usr(/|\$)#\1=$DEPS/root/usr\2#" \
      -e '/^Requires.private:/d' "$pc"
  done
  # protoc from the unpacked protobuf-compiler, when this machine has none.
  if [ -x "$DEPS/root/usr/bin/protoc" ] && ! command -v protoc >/dev/null; then
    extra_args+=(-DProtobuf_PROTOC_EXECUTABLE="$DEPS/root/usr/bin/protoc")
  fi
  export LD_LIBRARY_PATH="$DEPS/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

cuda_args=()
if [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda_args+=(-DCUDAToolkit_ROOT=/usr/local/cuda -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
prefix_path=$(IFS=';'; echo "${prefixes[*]}")
cmake -S "$ROOT" -B "$BUILD" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix_path" \
  -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DTORCH_CUDA_ARCH_LIST=9.0 \
  -DDLBENCH_WITH_TORCH=ON \
  -DDLBENCH_TORCH_PCH=OFF \
  -DDLBENCH_SOURCE_COMMIT="${DLBENCH_SOURCE_COMMIT:-}" \
  "${cuda_args[@]}" "${extra_args[@]}" ${DLBENCH_CMAKE_ARGS:-}

# The programs first, so a broken test elsewhere cannot keep them from being built.
# A failure is reported and the others still built (-k 0 shows every failing file at once); the
# exit status says whether anything failed.
failed=0
cmake --build "$BUILD" -j "$JOBS" --target dlbench-torch -- -k 0 || { echo "build-gpu: ERROR: dlbench-torch did not build" >&2; failed=1; }
if [ -n "${BUILD_TARGETS:-}" ]; then
  # shellcheck disable=SC2086
  cmake --build "$BUILD" -j "$JOBS" --target $BUILD_TARGETS -- -k 0 || { echo "build-gpu: ERROR: some of $BUILD_TARGETS did not build" >&2; failed=1; }
  echo "build-gpu: built $BUILD_TARGETS in $BUILD (failed=$failed)"
  exit "$failed"
fi
for t in dlbench dlbench-null; do
  cmake --build "$BUILD" -j "$JOBS" --target "$t" || echo "build-gpu: WARNING: $t did not build" >&2
done
# Everything else (tests); -k 0 builds all that can be built and reports the rest.
if ! cmake --build "$BUILD" -j "$JOBS" -- -k 0; then
  echo "build-gpu: WARNING: some targets failed to build (see above)" >&2
fi
echo "build-gpu: programs in $BUILD/bin:"
ls -l "$BUILD/bin"
echo "build-gpu: tests in $BUILD/tests; run: ctest --test-dir $BUILD -L gpu"
exit "$failed"
