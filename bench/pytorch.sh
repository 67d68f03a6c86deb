#!/usr/bin/env bash
# pytorch.sh — baton for your own PyTorch trainer, side by side with the peer in one run:
#   1. loader: batches per second delivered into a PyTorch loop by baton.Loader (2 decode threads)
#      and by torch.utils.data.DataLoader in its best configuration here (the best of 1-4 worker
#      processes each round; Pillow, pin_memory off, persistent workers), both with random crop
#      (pad 4) and flip, over the same Fashion-MNIST train shards as JPEG and as PNG;
#   2. the C pipeline alone (`baton bench-io --mode mount`, the same work) against the Python
#      module's batches per second;
#   3. end to end: examples/pytorch/train.py (ResNet-8 in channels-last, 2 compute threads, malloc
#      tuned as the peer's best configuration) with baton's Loader
#      against the same script with the DataLoader (bench/pytorch_train_peer.py, its best of 1 and
#      2 workers), one epoch of the test split as JPEG;
#   4. bytes: what nginx sent for two epochs in pipe mode, against the shards' size.
# ROUNDS rounds (default 3), the contenders alternated within each; medians, the ratio of the
# medians, and the median of each round's own ratio (the two sides of a round ran minutes apart at
# most, so a slow stretch of this shared machine falls on both).
# Prints a table and, last, one JSON line (with the CPU model). About 10 minutes on 2 cores.
#   bench/pytorch.sh            env: ROUNDS, DATA=DIR (pack once, reuse), PY (default /usr/bin/python3)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
PY=${PY:-/usr/bin/python3}
BATON=$PWD/build/baton
export PYTHONPATH=$PWD/build/python OMP_NUM_THREADS=2 BATON_DMI_DIR=/nonexistent/dmi
# PyTorch's best configuration on these machines (shared/peers/torch): malloc keeps its large blocks
# instead of mapping and unmapping them every step (about 1.5x faster training here), for both sides
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295
make -s all >/dev/null
DATA=${DATA:-$(mktemp -d /tmp/baton-bench-pt-XXXXXX)}
mkdir -p "$DATA"
for enc in jpeg png; do
    [ -f "$DATA/train-$enc/dataset.json" ] ||
        $BATON pack --from fashion-mnist --out "$DATA/train-$enc" --encode $enc --quiet >/dev/null
done
[ -f "$DATA/test-jpeg/dataset.json" ] ||
    $BATON pack --from fashion-mnist --split test --out "$DATA/test-jpeg" --encode jpeg --quiet >/dev/null
OUT=$(mktemp -d /tmp/baton-bench-pt-out-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
J=$OUT/results.jsonl
loader() { $PY bench/pytorch_loaders.py "$@" 2>/dev/null | tail -1; }

for r in $(seq "$ROUNDS"); do
    for enc in jpeg png; do
        D=$DATA/train-$enc
        echo "{\"round\":$r,\"enc\":\"$enc\",\"what\":\"baton\",\"r\":$(loader "$D" --loader baton --workers 2 --epochs 2)}" >>"$J"
        best=""
        for w in 1 2 3 4; do
            o=$(loader "$D" --loader torch --workers $w --epochs 1)
            best=$(printf '%s\n%s\n' "$best" "$o" | $PY -c 'import sys, json
rows = [json.loads(l) for l in sys.stdin if l.strip()]
print(json.dumps(max(rows, key=lambda d: d["batches_per_s"])))')
        done
        echo "{\"round\":$r,\"enc\":\"$enc\",\"what\":\"torch\",\"r\":$best}" >>"$J"
        c=$($BATON bench-io --data "$D" --mode mount --epochs 2 --crop-pad 4 --workers 2 --json --quiet --svg /dev/null | tail -1)
        echo "{\"round\":$r,\"enc\":\"$enc\",\"what\":\"c\",\"r\":$c}" >>"$J"
        echo "round $r $enc: $(tail -3 "$J" | $PY -c 'import sys, json
for l in sys.stdin:
    d = json.loads(l); r = d["r"]
    print("%s %.0f samples/s" % (d["what"], r["samples_per_s"]), end="; ")')" >&2
    done
    for side in baton peer; do
        if [ $side = baton ]; then
            o=$($PY examples/pytorch/train.py --data "$DATA/test-jpeg" --ckpt "$OUT/e2e-$r" --epochs 1 --every off \
                --loader-threads 2 2>/dev/null | tail -1)
        else
            o=""
            for w in 1 2; do
                x=$($PY bench/pytorch_train_peer.py --data "$DATA/test-jpeg" --ckpt "$OUT/e2p-$r-$w" --epochs 1 \
                    --every off --loader-threads $w 2>/dev/null | tail -1)
                o=$(printf '%s\n%s\n' "$o" "$x" | $PY -c 'import sys, json
rows = [json.loads(l) for l in sys.stdin if l.strip()]
print(json.dumps(max(rows, key=lambda d: d["samples_per_s"])))')
            done
        fi
        echo "{\"round\":$r,\"enc\":\"e2e\",\"what\":\"$side\",\"r\":$o}" >>"$J"
        rm -rf "$OUT"/e2*
    done
    echo "round $r end to end: $(tail -2 "$J" | $PY -c 'import sys, json
for l in sys.stdin:
    d = json.loads(l); print("%s %.0f samples/s" % (d["what"], d["r"]["samples_per_s"]), end="; ")')" >&2
done

# bytes over HTTP: nginx's access log for two epochs of pipe mode
. tests/servers/lib.sh
srv_init
mkdir -p "$SRV/www" && ln -s "$DATA/test-jpeg" "$SRV/www/ds"
srv_nginx "$SRV/www" >/dev/null 2>&1
before=$(awk -F'"' '$2 ~ /\.rec/ { split($3, a, " "); s += a[2] } END { print s + 0 }' "$SRV/nginx/access.log")
b=$($PY bench/pytorch_loaders.py "http://127.0.0.1:$NGINX_PORT/ds/" --loader baton --mode pipe --epochs 2 | tail -1)
after=$(awk -F'"' '$2 ~ /\.rec/ { split($3, a, " "); s += a[2] } END { print s + 0 }' "$SRV/nginx/access.log")
echo "{\"round\":0,\"enc\":\"http\",\"what\":\"bytes\",\"r\":$b,\"nginx_sent\":$((after - before))}" >>"$J"

$PY - "$J" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(enc, what, key):
    v = [r["r"][key] for r in rows if r["enc"] == enc and r["what"] == what]
    return st.median(v), v
def paired(a, b):   # each round's ratio, and their median
    q = [x / y for x, y in zip(a, b)]
    return st.median(q), q
out = {"cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
       "cores": sum(1 for l in open("/proc/cpuinfo") if l.startswith("processor"))}
print("%-34s %14s %14s %8s %s" % ("", "baton", "peer", "ratio", " per round (median)"))
def row(label, b, t, pr):
    print("%-34s %14.1f %14.1f %7.2fx  %s (%.2fx)" % (label, b, t, b / t, " ".join("%.2f" % x for x in pr[1]), pr[0]))
for enc in ("jpeg", "png"):
    b, bv = med(enc, "baton", "batches_per_s")
    t, tv = med(enc, "torch", "batches_per_s")
    c, cv = med(enc, "c", "samples_per_s")
    c /= 128
    workers = [r["r"]["workers"] for r in rows if r["enc"] == enc and r["what"] == "torch"]
    cv = [x / 128 for x in cv]
    pt, pc = paired(bv, tv), paired(bv, cv)
    row("loader %s, batches/s (128)" % enc, b, t, pt)
    row("module against C pipeline %s" % enc, b, c, pc)
    out[enc] = {"baton_batches_per_s": bv, "dataloader_batches_per_s": tv, "dataloader_workers": workers,
                "c_batches_per_s": cv, "ratio_vs_dataloader": b / t, "ratio_vs_c": b / c,
                "round_ratios_vs_dataloader": pt[1], "round_ratios_vs_c": pc[1]}
b, bv = med("e2e", "baton", "samples_per_s")
t, tv = med("e2e", "peer", "samples_per_s")
pe = paired(bv, tv)
row("example end to end, samples/s", b, t, pe)
out["e2e"] = {"baton_samples_per_s": bv, "dataloader_samples_per_s": tv, "ratio": b / t, "round_ratios": pe[1]}
h = next(r for r in rows if r["what"] == "bytes")
per = [e / h["r"]["dataset_bytes"] for e in h["r"]["epoch_fetched"]]
print("%-34s %s (nginx sent %.4fx the shards for 2 epochs)" % ("bytes fetched per epoch / dataset", ", ".join(
    "%.4fx" % p for p in per), h["nginx_sent"] / h["r"]["dataset_bytes"]))
out["bytes"] = {"per_epoch": per, "nginx_sent_ratio_2_epochs": h["nginx_sent"] / h["r"]["dataset_bytes"]}
print(json.dumps(out))
PY
