#!/usr/bin/env bash
# deps.sh — installs the Debian packages baton needs to build, test and benchmark, and nothing
# else: apt-get only, no downloads from anywhere but the configured Debian mirrors. Idempotent and
# quick when everything is present (one dpkg-query). Run as root on Debian 12.
#
#   scripts/deps.sh            build + test dependencies (the default)
#   scripts/deps.sh --bench    also the benchmark peers (Pillow and torchvision for PyTorch's DataLoader) and
#                              s3fs (bench/io.sh mounts the RADOS Gateway bucket for mount mode)
#   scripts/deps.sh --check    list what is missing, install nothing (exit 1 if anything is)
#
# Groups (kept together here so there is exactly one place to look):
#   build:   compilers and libraries the library and CLI link against
#   test:    clang + libFuzzer runtime (fuzz targets), the Fashion-MNIST data set, rsvg-convert and
#            DejaVu fonts (charts are rendered and measured), loopback servers
#            (nginx for HTTP sources, Ceph's RADOS Gateway for a real SigV4-checking S3 endpoint),
#            a one-node Slurm (munge, slurmctld, slurmd), botocore's AWS service models, and
#            libpython3-dev (the embedded interpreter for Python reward functions; the headers of
#            the baton Python module), PyTorch and NumPy (the module's tests and examples/pytorch),
#            boto3 (reads the checkpoints the module copies to S3), pip and setuptools (its install)
set -euo pipefail

build=(make gcc libc6-dev pkg-config git ca-certificates
       libpng-dev libturbojpeg0-dev libjpeg62-turbo-dev zlib1g-dev libcjson-dev libcurl4-openssl-dev libdnnl-dev libmicrohttpd-dev)
build+=(libyaml-dev libsqlite3-dev)     # fleet: job files (YAML), event history (SQLite); the league's results
build+=(libssl-dev)                    # the league: SHA-256 of a submitted model (libcrypto)
build+=(libopenmpi-dev openmpi-bin)    # dist: data-parallel training (libmpi; mpirun for the tests)
test=(clang libclang-rt-14-dev dataset-fashion-mnist python3 curl iproute2 bc
      nginx-light radosgw ceph-mon ceph-osd ceph-common)
test+=(librsvg2-bin fonts-dejavu-core)                       # charts: rendered and measured in tests
test+=(slurmctld slurmd slurm-client munge python3-botocore)   # fleet backends: one-node Slurm, AWS models
test+=(libpython3-dev)   # race: DeepRacer's Python reward functions in an embedded CPython
test+=(chromium)         # race: the league's page loaded in a headless browser
test+=(python3-torch python3-numpy libopenblas0-openmp   # the baton Python module: its tests, the PyTorch example
       python3-boto3 python3-pip python3-setuptools)     # an independent S3 client; pip install ./python offline

bench=(python3-pil s3fs python3-torchvision)   # torchvision: bench/photos.sh's peer, examples' --model resnet50

want=("${build[@]}" "${test[@]}")
[ "${1:-}" = "--bench" ] && want+=("${bench[@]}")
missing=()
for p in "${want[@]}"; do
    st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$st" = "installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "${1:-}" = "--check" ]; then
    echo "missing: ${missing[*]}"
    exit 1
fi
if [ "$(id -u)" != 0 ]; then
    echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
    echo "deps.sh: run as root (or: sudo apt-get install ${missing[*]})" >&2
    exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps.sh: done" >&2
