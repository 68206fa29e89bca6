#!/usr/bin/env bash
# Runs HERE (Debian 12, which has network access): downloads the Debian packages that the GPU
# machine (Ubuntu 24.04 with PyTorch, no network) may lack for building dlbench, into
# .gpu-deps/debs/ (git-ignored). Nothing is installed here. scripts/build-gpu.sh unpacks, on the
# GPU machine, only the packages whose headers that machine does not have (dpkg -x into
# .gpu-deps/root), so the carried tree stays small (Boost's headers unpacked are ~150 MB; the
# .deb is ~10 MB). Pass the tree with the device tool's carry: [".gpu-deps"].
# Usage: scripts/fetch-gpu-debs.sh            (idempotent; re-downloads nothing already there)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST="$ROOT/.gpu-deps/debs"
mkdir -p "$DEST"

# -dev packages with the runtime libraries their .so links point to. Header-only ones have none.
packages=(
  libsqlite3-dev libsqlite3-0
  libboost1.74-dev
  libyaml-cpp-dev libyaml-cpp0.7
  nlohmann-json3-dev
  libfmt-dev libfmt9
  libcli11-dev
  libgtest-dev libgmock-dev
  libbenchmark-dev libbenchmark1debian
  libjs-chart.js                          # embedded into HTML reports (src/report)
  libcpp-httplib-dev libcpp-httplib0.11   # the HTTP client of the server tests (src/report)
  libmicrohttpd-dev libmicrohttpd12       # the Prometheus endpoint (src/report), event-driven
  libbrotli-dev libssl-dev zlib1g-dev     # headers that Debian's httplib.h includes (its .pc enables brotli, TLS, zlib)
  pkgconf pkgconf-bin libpkgconf3         # pkg-config, which finds cpp-httplib
  libturbojpeg0-dev libturbojpeg0        # JPEG decode of the input pipeline (runners/torch/data)
  libisal-dev libisal2                    # CRC-32C of TFRecord files (src/tfrecord)
  libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32  # tf.train.Example
)

cd "$DEST"
for p in "${packages[@]}"; do
  if compgen -G "${p}_*.deb" >/dev/null; then
    echo "fetch-gpu-debs: have $(ls ${p}_*.deb)"
    continue
  fi
  # apt-get download fetches exactly the named package (no dependencies), as the user's apt sees it.
  apt-get download -q "$p"
done
echo "fetch-gpu-debs: $(ls "$DEST" | wc -l) packages in $DEST ($(du -sh "$DEST" | cut -f1))"

# Fashion-MNIST for bench/gpu/converge.sh (30 MB), kept apart from the build packages: on the GPU
# machine `dpkg -x .gpu-deps/data/dataset-fashion-mnist_*.deb /tmp/fm` and
# DATASET=/tmp/fm/usr/share/datasets/fashion-mnist.
mkdir -p "$ROOT/.gpu-deps/data"
cd "$ROOT/.gpu-deps/data"
if compgen -G "dataset-fashion-mnist_*.deb" >/dev/null; then
  echo "fetch-gpu-debs: have $(ls dataset-fashion-mnist_*.deb)"
else
  apt-get download -q dataset-fashion-mnist
fi
