#!/usr/bin/env bash
# io.sh — the storage-mode experiment (REFERENCE.md §8), reproduced on one machine:
#   1. builds a realistic dataset: Fashion-MNIST upscaled to SIZE×SIZE (default 384) and JPEG-encoded,
#      about 1 GB in RecordIO shards;
#   2. serves it from nginx (HTTP) and from a real S3 endpoint (Ceph RADOS Gateway, SigV4) on loopback;
#   3. runs `baton bench-io --mode all` (file, pipe, mount, cache) over S3 and over HTTP, with the
#      same folder as the "mounted" path, through the full decode pipeline (crop+flip+normalise);
#   4. runs the PyTorch DataLoader peer and `baton bench-io --mode mount` side by side on 28×28 JPEG
#      shards with the same worker count (the peer's own setting: pad 4, flip).
# Prints tables and JSON lines; writes SVG charts into OUT (default bench/out).
#   bench/io.sh [EPOCHS]      env: SIZE, WORKERS (2), OUT, KEEP=1 keeps the scratch folder
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BATON=${BATON:-$ROOT/build/baton}
EPOCHS=${1:-3}
SIZE=${SIZE:-384}
WORKERS=${WORKERS:-2}
OUT=${OUT:-$ROOT/bench/out}
mkdir -p "$OUT"
export BATON_NO_PROGRESS=1 BATON_RGW_MEM_MB=${BATON_RGW_MEM_MB:-4096}
. tests/servers/lib.sh
srv_init
[ "${KEEP:-0}" = 1 ] && trap 'echo "kept $SRV"' EXIT
W=$SRV/data
mkdir -p "$W"

echo "== dataset: Fashion-MNIST train, ${SIZE}x${SIZE} JPEG q95"
t0=$(date +%s)
$BATON pack --from fashion-mnist --resize "${SIZE}x${SIZE}" --encode jpeg --quality 95 --shard-mb 64 --out "$W/big" --quiet
echo "packed in $(( $(date +%s) - t0 )) s: $(du -sh "$W/big" | cut -f1)"
$BATON pack --from fashion-mnist --encode jpeg --quality 95 --out "$W/small" --quiet >/dev/null

srv_nginx "$W"
if srv_have_rgw; then
    srv_rgw
    $BATON push "$W/big" s3://bench/big --create-bucket --quiet >/dev/null
fi

run_modes() {  # run_modes NAME URI
    echo "== bench-io over $1 ($2), $EPOCHS epochs, $WORKERS workers"
    $BATON bench-io --data "$2" --mount-path "$W/big" --mode all --epochs "$EPOCHS" --workers "$WORKERS" \
        --work-dir "$SRV/work" --svg "$OUT/bench-io-$1.svg" --quiet | tee "$OUT/bench-io-$1.txt"
    $BATON bench-io --data "$2" --mount-path "$W/big" --mode all --epochs "$EPOCHS" --workers "$WORKERS" \
        --work-dir "$SRV/work" --svg "$OUT/bench-io-$1.svg" --json --quiet >"$OUT/bench-io-$1.jsonl"
    cat "$OUT/bench-io-$1.jsonl"
}
srv_have_rgw && run_modes s3 s3://bench/big/
run_modes http "http://127.0.0.1:$NGINX_PORT/big/"

echo "== decode pipeline vs the PyTorch DataLoader peer (28x28 JPEG, $WORKERS workers, pad 4 + flip)"
PEER=${PEER:-$ROOT/../shared/peers/torch/loader_bench.py}
if python3 -c 'import torch, PIL' 2>/dev/null && [ -f "$PEER" ]; then
    for r in 1 2 3; do
        python3 "$PEER" "$W/small" --workers "$WORKERS" --epochs 2 --json | tail -n 1 >>"$OUT/peer.jsonl"
        $BATON bench-io --data "$W/small" --mode mount --epochs 2 --workers "$WORKERS" --crop-pad 4 --json \
            --quiet --svg "$OUT/bench-io-small.svg" >>"$OUT/baton-small.jsonl"
    done
    python3 - "$OUT/peer.jsonl" "$OUT/baton-small.jsonl" <<'PY'
import json, statistics, sys
peer = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-3:]
ours = [json.loads(l) for l in open(sys.argv[2]) if l.strip()][-3:]
p = statistics.median(r["samples_per_s"] for r in peer)
b = statistics.median(r["samples_per_s"] for r in ours)
pl = statistics.median(r["launch_s"] for r in peer)
bl = statistics.median(r["launch_s"] for r in ours)
print(f"peer  {p:10.0f} samples/s  launch {pl:.3f} s")
print(f"baton {b:10.0f} samples/s  launch {bl:.3f} s")
print(f"ratio {b / p:.2f}x")
print(json.dumps({"bench": "loader-vs-peer", "peer_samples_per_s": p, "baton_samples_per_s": b, "ratio": round(b / p, 2),
                  "peer_launch_s": pl, "baton_launch_s": bl}))
PY
else
    echo "skip: python3-torch / python3-pil not installed (scripts/deps.sh --bench)"
fi
