#!/usr/bin/env bash
# io.sh — the storage-mode experiment (REFERENCE.md §8), reproduced on one machine:
#   1. builds a realistic dataset: Fashion-MNIST upscaled to SIZE×SIZE (default 448) and JPEG-encoded,
#      about 1 GB in RecordIO shards;
#   2. serves it from nginx (HTTP) and from a real S3 endpoint (Ceph RADOS Gateway, SigV4) on loopback;
#   3. runs `baton bench-io --mode all` (file, pipe, mount, cache) over S3 and over HTTP, with the
#      same local folder as the "mounted" path (data in the page cache: the best a mount can do),
#      through the full decode pipeline (crop+flip+normalise); and, when s3fs and /dev/fuse are
#      there, once more over S3 with the bucket mounted through s3fs as the "mounted" path (a real
#      network file system, as a user mounting S3/EFS/FSx would read it);
#   4. measures the reading alone (`bench-io --no-decode`: records read and checksummed, not decoded),
#      pipe against mount, per source: what streaming costs the trainer's CPU, without the decoders;
#   5. runs the PyTorch DataLoader peer and `baton bench-io --mode mount` side by side on 28×28 JPEG
#      shards with the same worker count (the peer's own setting: pad 4, flip).
# Each source is measured in ROUNDS rounds (default 3); a round runs the four modes one after the
# other (`bench-io --mode M`), in an order that rotates from round to round, so a slow minute of
# this shared machine does not always fall on the same mode. The table gives per mode the median
# over the rounds of the N-epoch total and of the median epoch time, and the ratios of those
# medians (the goals: pipe/mount epoch <= 1.05, cache total <= the best other total). bench-io also
# reports the CPU seconds baton spent per epoch.
# Prints tables and JSON lines; writes SVG charts into OUT (default bench/out).
# SPLIT=1 gives the servers (nginx, the Ceph daemons) the machine's last core and baton the others
# (taskset; s3fs, a client, runs on baton's cores): the store then takes no CPU from the decoders,
# as when it is another machine, and every mode gets the same cores — mount mode leaves the
# server's core idle. Without SPLIT the servers and the decoders share every core.
# SHAPE="QDISC" (root) runs the whole script in a new network namespace whose loopback gets
# `tc qdisc add dev lo root QDISC`: "netem delay 10ms rate 1gbit" is a remote store 20 ms away at
# 1 Gbit/s; where the kernel has no netem (sch_netem), "tbf rate 1gbit burst 256kb latency 100ms"
# limits the bandwidth alone. Every request crosses the shaped loopback; the local folder that
# mount mode reads does not. Over S3 the gateway's own traffic to its OSD crosses it too, so SHAPE
# is meant for the HTTP source (SOURCES=http).
# SHAPE_RATE=RATE (root) shapes only the store's replies instead — traffic from nginx's and the
# RADOS Gateway's ports (an htb class of RATE, e.g. 1gbit, chosen by a u32 filter on the source
# port) — so the gateway's own traffic to its OSD runs free and the store behaves as one machine at
# the far end of a RATE link; with SOURCES=s3-s3fs the s3fs mount crosses that link as well, as a
# network file system mounted from a remote store would.
# With the defaults (3 epochs, 3 rounds) a source takes about 25 minutes on 2 cores.
#   bench/io.sh [EPOCHS]      env: SIZE, WORKERS (2; with SPLIT the cores left to baton), ROUNDS (3),
#                             OUT, KEEP=1 keeps the scratch folder, DATA=DIR packs the datasets into
#                             DIR once and reuses them, SOURCES (default "s3 s3-s3fs http"),
#                             PEER=0 skips the DataLoader comparison, SPLIT=1, SHAPE, SHAPE_RATE
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${SHAPE:-}${SHAPE_RATE:-}" ] && [ -z "${BATON_IO_NETNS:-}" ]; then
    NS=baton-io-$$
    ip netns add "$NS" || { echo "SHAPE and SHAPE_RATE need root and ip netns" >&2; exit 2; }
    trap 'ip netns del "$NS" 2>/dev/null' EXIT
    ip netns exec "$NS" ip link set lo up
    if [ -n "${SHAPE_RATE:-}" ]; then   # class 1:30 at SHAPE_RATE; the filters come once the ports are known
        ip netns exec "$NS" tc qdisc add dev lo root handle 1: htb default 10 &&
            ip netns exec "$NS" tc class add dev lo parent 1: classid 1:10 htb rate 100gbit quantum 60000 &&
            ip netns exec "$NS" tc class add dev lo parent 1: classid 1:30 htb rate "$SHAPE_RATE" ceil "$SHAPE_RATE" \
                quantum 60000 || { echo "tc htb with a $SHAPE_RATE class failed" >&2; exit 2; }
        echo "== in network namespace $NS, the store's replies limited to $SHAPE_RATE"
    else
        # shellcheck disable=SC2086  # the qdisc and its options are words
        ip netns exec "$NS" tc qdisc add dev lo root $SHAPE || { echo "tc qdisc add dev lo root $SHAPE failed" >&2; exit 2; }
        echo "== in network namespace $NS, loopback shaped: $SHAPE"
    fi
    rc=0
    BATON_IO_NETNS=1 ip netns exec "$NS" "$0" "$@" || rc=$?
    exit $rc
fi
ROOT=$(pwd)
BATON=${BATON:-$ROOT/build/baton}
EPOCHS=${1:-3}
SIZE=${SIZE:-448}
NCPU=$(nproc)
if [ "${SPLIT:-0}" = 1 ]; then
    [ "$NCPU" -ge 2 ] || { echo "SPLIT=1 needs two cores" >&2; exit 2; }
    SRV_CPUS=$(( NCPU - 1 )) BATON_CPUS=0-$(( NCPU - 2 ))
    WORKERS=${WORKERS:-$(( NCPU - 1 ))}
else
    SRV_CPUS= BATON_CPUS=
    WORKERS=${WORKERS:-2}
fi
SOURCES=${SOURCES:-s3 s3-s3fs http}
want() { case " $SOURCES " in *" $1 "*) return 0 ;; esac; return 1; }
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-$ROOT/bench/out}
mkdir -p "$OUT"
export BATON_NO_PROGRESS=1 BATON_RGW_MEM_MB=${BATON_RGW_MEM_MB:-4096}
. tests/servers/lib.sh
srv_init
S3FS_MNT=
io_cleanup() {   # the FUSE mount goes first: a recursive delete must not walk into the bucket
    if [ -n "$S3FS_MNT" ]; then fusermount -u "$S3FS_MNT" 2>/dev/null || umount -l "$S3FS_MNT" 2>/dev/null || true; fi
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $SRV"; else srv_cleanup; fi
}
trap io_cleanup EXIT
W=${DATA:-$SRV/data}
mkdir -p "$W"

echo "== dataset: Fashion-MNIST train, ${SIZE}x${SIZE} JPEG q95 ($W)"
if [ ! -f "$W/big/dataset.json" ]; then
    t0=$(date +%s)
    $BATON pack --from fashion-mnist --resize "${SIZE}x${SIZE}" --encode jpeg --quality 95 --shard-mb 64 --out "$W/big" --quiet
    echo "packed in $(( $(date +%s) - t0 )) s"
fi
echo "$(du -sh "$W/big" | cut -f1) in $(ls "$W/big" | grep -c '\.rec$') shards"
[ -f "$W/small/dataset.json" ] || $BATON pack --from fashion-mnist --encode jpeg --quality 95 --out "$W/small" --quiet >/dev/null

[ -n "$SRV_CPUS" ] && taskset -cp "$SRV_CPUS" $$ >/dev/null   # the servers inherit this core
srv_nginx "$W"
USE_RGW=0
if srv_have_rgw && { want s3 || want s3-s3fs; }; then USE_RGW=1; fi
[ "$USE_RGW" = 1 ] && srv_rgw
if [ -n "${SHAPE_RATE:-}" ]; then   # replies from the store's ports take the shaped class
    for p in "$NGINX_PORT" ${RGW_PORT:+"$RGW_PORT"}; do
        tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip sport "$p" 0xffff flowid 1:30
    done
fi
if [ -n "$SRV_CPUS" ]; then
    taskset -cp "$BATON_CPUS" $$ >/dev/null
    echo "servers on core $SRV_CPUS, baton on cores $BATON_CPUS ($WORKERS workers)"
fi
if [ "$USE_RGW" = 1 ]; then
    $BATON push "$W/big" s3://bench/big --create-bucket --quiet >/dev/null
    srv_s3fs bench big/dataset.json || true
fi

table() {  # JSON lines of bench-io (with a "round" field) -> medians per mode and the DoD ratios
    python3 - "$1" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if "skipped" not in r]
med = statistics.median
modes = [m for m in ("file", "pipe", "mount", "cache") if any(r["mode"] == m for r in rows)]
print(f"{'mode':6} {'launch_s':>9} {'samples/s':>10} {'median epoch_s':>15} {'total_s':>8} {'cpu_s/epoch':>11}  totals by round")
agg = {}
for m in modes:
    rs = [r for r in rows if r["mode"] == m]
    a = {"launch_s": med(r["launch_s"] for r in rs), "samples_per_s": med(r["samples_per_s"] for r in rs),
         "epoch_s": med(med(r["epoch_s"]) for r in rs), "total_s": med(r["total_s"] for r in rs),
         "cpu_s": med(med(r["epoch_cpu_s"]) for r in rs) if all("epoch_cpu_s" in r for r in rs) else float("nan")}
    agg[m] = a
    totals = " ".join("%.2f" % r["total_s"] for r in rs)
    print(f"{m:6} {a['launch_s']:9.3f} {a['samples_per_s']:10.0f} {a['epoch_s']:15.2f} {a['total_s']:8.2f} "
          f"{a['cpu_s']:11.2f}  {totals}")
out = {"bench": "io", "rounds": max(r.get("round", 1) for r in rows), "modes": agg}
# Also the ratios within each round (the modes of a round ran back to back, so a slow spell of the
# machine that spans a round cancels out), and their median over the rounds.
by_round = {}
for r in rows:
    by_round.setdefault(r.get("round", 1), {})[r["mode"]] = r
def per_round(f):
    v = [f(m) for m in by_round.values()]
    v = [x for x in v if x is not None]
    return (med(v), min(v), max(v)) if v else None
if "pipe" in agg and "mount" in agg:
    out["pipe_over_mount_epoch"] = round(agg["pipe"]["epoch_s"] / agg["mount"]["epoch_s"], 3)
    print(f"pipe/mount median epoch time: {out['pipe_over_mount_epoch']:.3f} (goal <= 1.05)")
    pr = per_round(lambda m: med(m["pipe"]["epoch_s"]) / med(m["mount"]["epoch_s"])
                   if "pipe" in m and "mount" in m else None)
    if pr:
        out["pipe_over_mount_epoch_per_round"] = [round(x, 3) for x in pr]
        print(f"  within a round: median {pr[0]:.3f} (range {pr[1]:.3f}-{pr[2]:.3f})")
if "cache" in agg:
    best = min(agg[k]["total_s"] for k in ("file", "pipe", "mount") if k in agg)
    out["cache_over_best_total"] = round(agg["cache"]["total_s"] / best, 3)
    print(f"cache total / best of the others: {out['cache_over_best_total']:.3f} (goal <= 1.00)")
    cr = per_round(lambda m: m["cache"]["total_s"] / min(m[k]["total_s"] for k in ("file", "pipe", "mount") if k in m)
                   if "cache" in m and any(k in m for k in ("file", "pipe", "mount")) else None)
    if cr:
        out["cache_over_best_total_per_round"] = [round(x, 3) for x in cr]
        print(f"  within a round: median {cr[0]:.3f} (range {cr[1]:.3f}-{cr[2]:.3f})")
    # Cache's later epochs read the local copy exactly as mount mode reads its folder when that is
    # a local one: identical work, so their ratio within a round gauges this machine's noise, and
    # cache's total can beat such a mount only by that noise (its first epoch also streams and writes).
    ir = per_round(lambda m: med(m["cache"]["epoch_s"][1:]) / med(m["mount"]["epoch_s"])
                   if "cache" in m and "mount" in m and len(m["cache"]["epoch_s"]) > 1 else None)
    if ir:
        out["cache_later_over_mount_epoch_per_round"] = [round(x, 3) for x in ir]
        print(f"cache's later epochs / mount's epochs, within a round: median {ir[0]:.3f} "
              f"(range {ir[1]:.3f}-{ir[2]:.3f}; identical work when mount reads a local folder)")
print(json.dumps(out))
PY
}

run_modes() {  # run_modes NAME URI [MOUNTED-PATH]
    local mnt=${3:-$W/big} order=(file pipe mount cache) r i m
    echo "== bench-io over $1 ($2; mount mode reads $mnt), $EPOCHS epochs, $WORKERS workers, $ROUNDS rounds"
    : >"$OUT/bench-io-$1.jsonl"
    for r in $(seq "$ROUNDS"); do
        for i in 0 1 2 3; do
            m=${order[$(( (i + r - 1) % 4 ))]}
            $BATON bench-io --data "$2" --mount-path "$mnt" --mode "$m" --epochs "$EPOCHS" --workers "$WORKERS" \
                --work-dir "$SRV/work" --svg "$OUT/bench-io-$1-$m.svg" --json --quiet |
                sed "s/^{/{\"round\":$r,/" | tee -a "$OUT/bench-io-$1.jsonl"
        done
    done
    table "$OUT/bench-io-$1.jsonl"
}
datapath() {  # datapath NAME URI [MOUNTED-PATH]: the reading alone (bench-io --no-decode), pipe against mount
    local mnt=${3:-$W/big} r m
    echo "== data path alone over $1 (--no-decode: records read and checksummed, not decoded), $EPOCHS epochs, $ROUNDS rounds"
    : >"$OUT/datapath-$1.jsonl"
    for r in $(seq "$ROUNDS"); do
        for m in $([ $((r % 2)) = 1 ] && echo pipe mount || echo mount pipe); do
            $BATON bench-io --data "$2" --mount-path "$mnt" --mode "$m" --epochs "$EPOCHS" --no-decode --json --quiet \
                --work-dir "$SRV/work" --svg "$OUT/datapath-$1.svg" | sed "s/^{/{\"round\":$r,/" >>"$OUT/datapath-$1.jsonl"
        done
    done
    python3 - "$OUT/datapath-$1.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = statistics.median
for m in ("pipe", "mount"):
    rs = [r for r in rows if r["mode"] == m]
    gb = rs[0]["bytes_read"] / len(rs[0]["epoch_s"]) / 1e9
    e = med(med(r["epoch_s"]) for r in rs)
    c = med(med(r["epoch_cpu_s"]) for r in rs)
    print(f"{m:6} median epoch {e:7.3f} s ({gb / e:6.2f} GB/s), CPU {c:6.3f} s per epoch ({c / gb:.3f} CPU-s per GB)")
PY
}
want s3 && [ "$USE_RGW" = 1 ] && run_modes s3 s3://bench/big/
want s3-s3fs && [ -n "$S3FS_MNT" ] && [ -f "$S3FS_MNT/big/dataset.json" ] && run_modes s3-s3fs s3://bench/big/ "$S3FS_MNT/big"
want http && run_modes http "http://127.0.0.1:$NGINX_PORT/big/"
want s3 && [ "$USE_RGW" = 1 ] && datapath s3 s3://bench/big/
want http && datapath http "http://127.0.0.1:$NGINX_PORT/big/"
[ "${PEER:-1}" = 0 ] && exit 0
[ -n "$SRV_CPUS" ] && taskset -cp "0-$(( NCPU - 1 ))" $$ >/dev/null   # the peer comparison uses every core
[ -n "$SRV_CPUS" ] && WORKERS=${PEER_WORKERS:-2}

echo "== decode pipeline vs the PyTorch DataLoader peer (28x28 JPEG, $WORKERS workers, pad 4 + flip)"
PEER=${PEER:-$ROOT/../shared/peers/torch/loader_bench.py}
if /usr/bin/python3 -c 'import torch, PIL' 2>/dev/null && [ -f "$PEER" ]; then
    for r in 1 2 3; do
        /usr/bin/python3 "$PEER" "$W/small" --workers "$WORKERS" --epochs 2 --json | tail -n 1 >>"$OUT/peer.jsonl"
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
