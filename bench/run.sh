#!/usr/bin/env bash
# run.sh — every benchmark, one after the other (`make bench`). Each prints a table and JSON lines;
# copy the figures with the command that produced them into bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --bench
echo "== record scan: baton inspect --verify vs cat (bench/scan.sh)"
bench/scan.sh
echo "== input modes over HTTP and S3, and the loader peer (bench/io.sh)"
bench/io.sh
echo "== training throughput against the PyTorch peer (bench/train.sh)"
bench/train.sh
echo "== what interruptions cost on the local spot fleet (bench/fleet.sh)"
bench/fleet.sh
echo "== inference latency against the PyTorch peer (bench/infer.sh)"
bench/infer.sh
echo "== checkpoint cost and resume latency (bench/ckpt.sh)"
bench/ckpt.sh
if [ "${BATON_BENCH_LONG:-0}" = 1 ]; then
    echo "== accuracy on Fashion-MNIST against the PyTorch peer (bench/accuracy.sh; ~40 min)"
    bench/accuracy.sh
else
    echo "== skipped: bench/accuracy.sh (~40 min on 2 cores; BATON_BENCH_LONG=1 runs it)"
fi
if [ "${BATON_BENCH_LONG:-0}" = 1 ]; then
    echo "== photographs at the seed's scale: 125,350 JPEGs, every mode, DataLoader + torchvision (bench/photos.sh; hours, ~50 GB)"
    bench/photos.sh
else
    echo "== photographs, a fiftieth of the seed's scale (bench/photos.sh with SCALE=0.02; BATON_BENCH_LONG=1 runs all of it)"
    SCALE=0.02 EPOCHS=2 PEER_S=20 bench/photos.sh
fi
echo "== data-parallel training: 2 ranks against 2 threads, the allreduce (bench/dist.sh)"
bench/dist.sh
echo "== baton for your own PyTorch trainer: the Loader against DataLoader, end to end (bench/pytorch.sh)"
bench/pytorch.sh
