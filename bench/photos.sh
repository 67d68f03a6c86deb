#!/usr/bin/env bash
# photos.sh — the data-path seed's experiment at its scale: 125,350 photo-sized JPEGs in 500
# classes (~16 GB), ImageNet's random-resized crop 224 + flip as the work, through every input mode,
# beside torchvision's DataLoader on the original files and a whole-image libjpeg-turbo decode.
#   1. generates the files (bench/photos: deterministic from SEED, sides 300-800 px, ~110 KB each, 4:2:0,
#      textured and noisy so they cost what photos cost to decode) and packs them into 64 MB
#      RecordIO shards (each file's bytes kept), and again with --jpeg-restart (every JPEG
#      transcoded losslessly to a restart marker after every MCU: crops decode only their MCUs);
#   2. measures the decode cost per megapixel of these files against real photographs where a
#      Debian package ships some (python3-skimage's data folder), one thread each;
#   3. with the RADOS Gateway (memstore: the shards live in RAM — BATON_RGW_MEM_MB, default the
#      shards' size × 1.2 + 1 GiB; BlueStore on disk when that is over half the memory), pushes
#      the shards and runs `baton bench-io` in file, pipe and cache mode over S3, mount mode over
#      the local disk and over an s3fs mount of the bucket (the FSx stand-in; s3fs-cache: with
#      s3fs's local cache, each shard downloaded whole at its first open, as a lazily loaded FSx
#      for Lustre does, then read through FUSE from that copy): launch (start → first batch),
#      samples/s, epoch times, EPOCHS epochs measured and 20 projected, bytes
#      fetched per epoch, peak memory (GNU time's maximum RSS); the --jpeg-restart pack in mount
#      mode over the local disk (local-rst);
#   4. the naive limits: bench/decode_whole (every pixel of every file decoded, WORKERS threads) and
#      `bench-io --reference` (the pipeline decoding whole images, then the same crop);
#   5. the peer: bench/photos_peer.py, DataLoader + torchvision (ImageFolder, RandomResizedCrop,
#      flip, ToTensor, Normalize) with 1 to 4 workers, its best, and baton's Loader through the same
#      loop, each for PEER_S seconds.
# Needs about 4.3 × the dataset on disk under DATA's folder (files, shards, s3fs cache) and 1.2 × its
# size in memory for the gateway: checked first. SCALE=0.04 makes a 5,014-image run of a few minutes.
#   bench/photos.sh            env: SCALE (1), SEED (1), EPOCHS (3), WORKERS (2), PEER_S (60),
#                              DATA=DIR (keep and reuse the files and shards there), OUT (bench/out),
#                              REAL=DIR (real photographs to compare the decode cost with),
#                              SOURCES ("local local-file s3 s3fs", or s3fs-cache too),
#                              PEER=0 skips the peer
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${BUILD:-build}
BATON=${BATON:-$ROOT/$BUILD/baton}
SCALE=${SCALE:-1}
N=$(python3 -c "print(max(100, round(125350 * $SCALE)))")
CLASSES=$(( N / 250 > 500 ? 500 : (N / 250 > 2 ? N / 250 : 2) ))
EPOCHS=${EPOCHS:-3}
WORKERS=${WORKERS:-2}
PEER_S=${PEER_S:-60}
SOURCES=${SOURCES:-local local-file s3 s3fs}
OUT=${OUT:-$ROOT/bench/out}
want() { case " $SOURCES " in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$OUT"
export BATON_NO_PROGRESS=1
make -s "$BUILD/baton" "$BUILD/bench/photos" "$BUILD/bench/decode_whole" "$BUILD/python/baton/__init__.py" >/dev/null 2>&1 ||
    make -s all bench-build >/dev/null
W=${DATA:-$(mktemp -d /var/tmp/baton-photos-XXXXXX)}
mkdir -p "$W"
need_gb=$(python3 -c "print(round($N * 116e3 * 4.3 / 1e9 + 1, 1))")
free_gb=$(df -P -B1 "$W" | awk 'NR==2 { printf "%.1f", $4 / 1e9 }')
echo "== $N images in $CLASSES classes (SCALE=$SCALE): about $need_gb GB of disk needed under $W, $free_gb GB free"
if [ ! -f "$W/shards/dataset.json" ] && python3 -c "import sys; sys.exit(0 if $free_gb >= $need_gb else 1)"; then :;
elif [ ! -f "$W/shards/dataset.json" ]; then echo "not enough disk: $need_gb GB needed, $free_gb GB free (DATA=DIR elsewhere, or a smaller SCALE)" >&2; exit 1; fi
model=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
echo "cpu: $model, $(nproc) cores"

if [ ! -f "$W/files.done" ]; then
    t0=$(date +%s.%N)
    for k in $(seq 0 $((WORKERS - 1))); do
        "$BUILD/bench/photos" --out "$W/files" --n "$N" --classes "$CLASSES" --seed "${SEED:-1}" --part "$k/$WORKERS" --json >"$W/gen.$k" &
    done
    wait
    python3 - "$W" "$(date +%s.%N)" "$t0" <<'PY'
import glob, json, sys
rows = [json.loads(open(f).read()) for f in glob.glob(sys.argv[1] + "/gen.*")]
n, b = sum(r["images"] for r in rows), sum(r["bytes"] for r in rows)
print("generated %d files, %.2f GB, %.1f KB each on average, %.3f megapixels each, in %.0f s" %
      (n, b / 1e9, b / n / 1e3, sum(r["mean_megapixels"] * r["images"] for r in rows) / n, float(sys.argv[2]) - float(sys.argv[3])))
PY
    touch "$W/files.done"
fi
if [ ! -f "$W/shards/dataset.json" ]; then
    t0=$(date +%s)
    "$BATON" pack --from "imagefolder:$W/files" --out "$W/shards" --shard-mb 64 --quiet
    echo "packed in $(( $(date +%s) - t0 )) s: $(du -sh "$W/shards" | cut -f1) in $(ls "$W/shards" | grep -c '\.rec$') shards"
fi
if [ ! -f "$W/shards-rst/dataset.json" ]; then
    t0=$(date +%s)
    "$BATON" pack --from "imagefolder:$W/files" --out "$W/shards-rst" --shard-mb 64 --quiet --jpeg-restart
    echo "packed with --jpeg-restart in $(( $(date +%s) - t0 )) s: $(du -sh "$W/shards-rst" | cut -f1)"
fi
RES=$OUT/photos.jsonl
: >"$RES"

echo "== decode cost per megapixel, one thread"
"$BUILD/bench/decode_whole" "$W/files" --threads 1 --limit 2000 --json | tee -a "$RES" | sed 's/^/synthetic: /'
REAL=${REAL:-/usr/share/skimage-data}   # a folder of real photographs (JPEG); else python3-skimage's, where installed
[ -d "$REAL" ] || REAL=$(python3 -c "import skimage, os; print(os.path.join(os.path.dirname(skimage.__file__), 'data'))" 2>/dev/null || true)
if [ -n "$REAL" ] && [ -d "$REAL" ] && ls "$REAL"/*.jpg >/dev/null 2>&1; then
    mkdir -p "$W/real/a" && cp "$REAL"/*.jpg "$W/real/a/"
    "$BUILD/bench/decode_whole" "$W/real" --threads 1 --json | sed 's/^{/{"real": true, /' | tee -a "$RES" | sed 's/^/real photos: /'
else
    echo "no real photographs here (apt-get install python3-skimage ships a few): not compared"
fi

bench() {   # bench NAME ARGS...: one bench-io run under GNU time; its JSON line with the peak RSS
    local name=$1; shift
    /usr/bin/time -f "%M" -o "$W/time.out" "$BATON" bench-io "$@" --crop random-resized --size 224 --workers "$WORKERS" \
        --work-dir "$W/work" --svg "$OUT/photos-$name.svg" --json --quiet >"$W/b.out" 2>"$W/b.err" ||
        { echo "$name: bench-io failed: $(tail -c 400 "$W/b.err")"; return 0; }
    python3 - "$name" "$W/b.out" "$(tail -1 "$W/time.out")" "$EPOCHS" <<'PY' | tee -a "$RES"
import json, sys
for l in open(sys.argv[2]):
    r = json.loads(l)
    if "skipped" in r:
        continue
    r.update(source=sys.argv[1], peak_rss_mb=round(int(sys.argv[3]) / 1024, 1))
    ep = r.get("epoch_s") or [r["total_s"]]
    r["projected_20_epochs_s"] = round(r["launch_s"] + sum(ep) / len(ep) * 20, 1)
    print(json.dumps(r))
PY
}

echo "== baton bench-io, random-resized crop 224 + flip, $EPOCHS epochs"
want local && bench local --data "$W/shards" --mode mount --epochs "$EPOCHS"
want local-file && bench local-file --data "$W/shards" --mode file --epochs "$EPOCHS"
want local && bench local-rst --data "$W/shards-rst" --mode mount --epochs "$EPOCHS"
# the whole-image decode right after the local rows, so the ratio pairs runs minutes apart, not an hour
echo "== the naive limits"
"$BUILD/bench/decode_whole" "$W/files" --threads "$WORKERS" --json | sed 's/^{/{"naive": "decode_whole", /' | tee -a "$RES"
if { want s3 || want s3fs || want s3fs-cache; } && [ -x "$(command -v radosgw)" ]; then
    . tests/servers/lib.sh
    srv_init
    S3FS_MNT=
    cleanup() {
        [ -n "$S3FS_MNT" ] && { fusermount -u "$S3FS_MNT" 2>/dev/null || umount -l "$S3FS_MNT" 2>/dev/null || true; }
        srv_cleanup
        [ -n "${DATA:-}" ] || rm -rf "$W"
    }
    trap cleanup EXIT
    # the OSD refuses writes past 95 % full (Ceph's full ratio), and RADOS keeps more than the bytes:
    # the shards' size x 1.2 + 1 GiB (a 13.6 GB dataset did not fit in its size + 1 GiB). A dataset
    # that needs more than half the memory available goes to BlueStore on a file instead (memstore
    # took 23.7 GB of RSS pushing 13.6 GB, and the kernel killed it)
    shards_mb=$(du -sm "$W/shards" | cut -f1)
    avail_mb=$(awk '/MemAvailable/ { print int($2 / 1024) }' /proc/meminfo)
    if [ -z "${BATON_RGW_MEM_MB:-}" ] && [ $(( shards_mb * 12 / 10 + 1024 )) -gt $(( avail_mb / 2 )) ]; then
        export BATON_RGW_DISK_MB=${BATON_RGW_DISK_MB:-$(( shards_mb * 13 / 10 + 2048 ))}
        echo "the gateway keeps the shards on disk (BlueStore, $BATON_RGW_DISK_MB MiB): $shards_mb MB of shards, $avail_mb MB of memory available"
    else
        export BATON_RGW_MEM_MB=${BATON_RGW_MEM_MB:-$(( shards_mb * 12 / 10 + 1024 ))}
    fi
    srv_rgw
    "$BATON" push "$W/shards" s3://bench/photos --create-bucket --quiet >/dev/null
    if want s3; then
        for m in file pipe cache; do bench "s3-$m" --data s3://bench/photos/ --mode "$m" --epochs "$EPOCHS"; done
    fi
    if want s3fs && srv_s3fs bench photos/dataset.json; then
        bench s3fs-mount --data "$S3FS_MNT/photos" --mode mount --epochs "$EPOCHS"
    fi
    if want s3fs-cache; then   # s3fs with its local cache: every shard downloaded whole at the open
        [ -n "$S3FS_MNT" ] && { fusermount -u "$S3FS_MNT" 2>/dev/null || umount -l "$S3FS_MNT"; }
        S3FS_MNT=
        if srv_s3fs bench photos/dataset.json "$W/s3fs-cache"; then
            bench s3fs-cache-mount --data "$S3FS_MNT/photos" --mode mount --epochs "$EPOCHS"
        fi
        rm -rf "$W/s3fs-cache"
    fi
else
    [ -n "${DATA:-}" ] || trap 'rm -rf "$W"' EXIT
fi

bench reference --data "$W/shards" --mode mount --epochs 1 --reference

if [ "${PEER:-1}" = 1 ]; then
    echo "== the peer: DataLoader + torchvision on the files (best of 1-4 workers) and baton's Loader, ${PEER_S} s each"
    for w in 1 2 3 4; do
        /usr/bin/python3 bench/photos_peer.py --loader torch --folder "$W/files" --workers "$w" --seconds "$PEER_S" | tee -a "$RES"
    done
    PYTHONPATH=$BUILD/python /usr/bin/python3 bench/photos_peer.py --loader baton --data "$W/shards" --threads "$WORKERS" \
        --seconds "$PEER_S" | tee -a "$RES"
fi

echo "== summary ($RES)"
python3 - "$RES" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
io = [r for r in rows if "source" in r and r["source"] != "reference"]
rst = next((r for r in io if r["source"] == "local-rst"), None)
print("%-16s %9s %10s %9s %10s %14s %9s" % ("source/mode", "launch_s", "samples/s", "epoch_s", "20 ep (h)", "fetched/dataset", "peak MB"))
for r in io:
    ep = r.get("epoch_s") or [0]
    fetched = "%.2fx in %d ep" % (r["bytes_fetched"] / r["dataset_bytes"], len(ep)) if r.get("dataset_bytes") else "-"
    print("%-16s %9.3f %10.0f %9.1f %10.2f %14s %9.0f" % (r["source"] + "/" + r["mode"], r["launch_s"], r["samples_per_s"],
          sorted(ep)[len(ep) // 2], r["projected_20_epochs_s"] / 3600, fetched, r["peak_rss_mb"]))
mount = next((r for r in io if r["source"] == "local"), None)
torch = [r for r in rows if r.get("loader") == "torch"]
whole = next((r for r in rows if r.get("naive") == "decode_whole"), None)
ref = next((r for r in rows if r.get("source") == "reference"), None)
if mount:
    best = max(torch, key=lambda r: r["samples_per_s"]) if torch else None
    if best:
        print("baton (mount) / DataLoader + torchvision's best (%d workers): %.2fx" % (best["workers"], mount["samples_per_s"] / best["samples_per_s"]))
    if whole:
        print("baton (mount) / whole-image decode alone: %.2fx" % (mount["samples_per_s"] / whole["images_per_s"]))
    if rst and best:
        print("baton (mount, --jpeg-restart pack) / DataLoader + torchvision's best: %.2fx" % (rst["samples_per_s"] / best["samples_per_s"]))
    if rst and whole:
        print("baton (mount, --jpeg-restart pack) / whole-image decode alone: %.2fx" % (rst["samples_per_s"] / whole["images_per_s"]))
    if ref:
        print("baton (mount) / its reference path (whole images, then the crop): %.2fx" % (mount["samples_per_s"] / ref["samples_per_s"]))
    pipe = next((r for r in io if r["mode"] == "pipe"), None)
    if pipe:
        print("pipe epoch / mount epoch: %.3f" % ((sum(pipe["epoch_s"]) / len(pipe["epoch_s"])) / (sum(mount["epoch_s"]) / len(mount["epoch_s"]))))
PY
