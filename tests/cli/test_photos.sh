#!/usr/bin/env bash
# test_photos.sh — photographs of any size through the CLI: a folder of photo-like JPEGs and PNGs
# of varying size (bench/photos: greyscale, progressive, RGB and grey PNG, 1×1, 6000 px wide)
#   - packs keeping every file's bytes (each record's payload hashes to its file's SHA-256), into a
#     dataset.json that says the shape varies and the encoding is mixed; `inspect` shows the sizes;
#   - `--jpeg-restart` transcodes every JPEG (the same pixels, a restart marker after every MCU) and
#     keeps every PNG, and is refused when nothing would be JPEG;
#   - a CMYK JPEG and a truncated JPEG are refused by pack, naming the file;
#   - `--resize 64` resizes the shorter side keeping the aspect;
#   - `baton train --crop random-resized --size 32 --flip` trains on it, and a run SIGKILLed after a
#     checkpoint and started again ends with the uninterrupted run's bytes (model and optimizer);
#   - `baton eval` takes the centre crop of the trained size, the same result twice; `--crop none`
#     on images of varying size is refused with the way out;
#   - `bench-io --crop random-resized` runs every mode on it.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
B=${BATON_BUILD:-build}
PHOTOS=$B/bench/photos
if [ ! -x "$PHOTOS" ]; then bad "$PHOTOS is not built (make tests builds it)"; finish; exit 1; fi

check '"$PHOTOS" --out "$T/f" --n 90 --classes 3 --min 40 --max 160 --specials >/dev/null' "a photo-like folder"
check '"$BATON" pack --from "imagefolder:$T/f" --out "$T/d" --shard-mb 1 --quiet >/dev/null' "pack it"
check '[ "$(json "$T/d/dataset.json" "d[\"encoding\"], d[\"shape\"], d[\"channels\"], d[\"samples\"]")" = "mixed [0, 0, 0] 3 96" ]' \
    "dataset.json: mixed encodings, a varying shape: $(json "$T/d/dataset.json" "d[\"encoding\"], d[\"shape\"], d[\"samples\"]")"
# each record's payload against its file (ids are the source order: classes sorted, files sorted)
check 'python3 - "$T/f" "$T/d" <<"PY"
import glob, hashlib, os, struct, sys
src, ds = sys.argv[1], sys.argv[2]
files = [os.path.join(src, c, f) for c in sorted(os.listdir(src)) for f in sorted(os.listdir(os.path.join(src, c)))]
want = {i: hashlib.sha256(open(p, "rb").read()).hexdigest() for i, p in enumerate(files)}
seen = 0
for rec in sorted(glob.glob(ds + "/*.rec")):
    b, off = open(rec, "rb").read(), 0
    while off < len(b):
        magic, lrec = struct.unpack_from("<II", b, off)
        assert magic == 0xced7230a, (rec, off)
        n = lrec & ((1 << 29) - 1)
        flag, label, id1, id2 = struct.unpack_from("<IfQQ", b, off + 8)
        img = b[off + 8 + 24 + 4 * flag: off + 8 + n]
        assert hashlib.sha256(img).hexdigest() == want[id1], "record %d is not %s" % (id1, files[id1])
        seen += 1
        off += 8 + (n + 3) // 4 * 4
assert seen == len(files), (seen, len(files))
PY' "every record holds its file's bytes unchanged"

# --jpeg-restart: every JPEG transcoded to a restart marker after every MCU, the same pixels; PNGs kept
check '"$BATON" pack --from "imagefolder:$T/f" --out "$T/rst" --shard-mb 1 --jpeg-restart >/dev/null 2>"$T/rst.err"' \
    "pack --jpeg-restart"
check 'grep -q "jpeg-restart: 94 JPEG(s) transcoded" "$T/rst.err"' "pack --jpeg-restart says what it cost"
if ! /usr/bin/python3 -c "import numpy, PIL" 2>/dev/null; then
    skip "no /usr/bin/python3 with numpy and PIL: the transcoded pack's pixels are not compared (scripts/deps.sh --bench installs PIL)"
else check '/usr/bin/python3 - "$T/f" "$T/rst" <<"PY"
import glob, hashlib, io, os, struct, sys
import numpy as np
from PIL import Image
src, ds = sys.argv[1], sys.argv[2]
files = [os.path.join(src, c, f) for c in sorted(os.listdir(src)) for f in sorted(os.listdir(os.path.join(src, c)))]
seen = 0
for rec in sorted(glob.glob(ds + "/*.rec")):
    b, off = open(rec, "rb").read(), 0
    while off < len(b):
        magic, lrec = struct.unpack_from("<II", b, off)
        n = lrec & ((1 << 29) - 1)
        flag, label, id1, id2 = struct.unpack_from("<IfQQ", b, off + 8)
        img = b[off + 8 + 24 + 4 * flag: off + 8 + n]
        orig = open(files[id1], "rb").read()
        if orig[:2] == b"\xff\xd8":
            assert b"\xff\xdd\x00\x04\x00\x01" in img and b"\xff\xc2" not in img, "record %d: no DRI 1" % id1
            a, o = np.asarray(Image.open(io.BytesIO(img))), np.asarray(Image.open(files[id1]))
            assert a.shape == o.shape and (a == o).all(), "record %d: pixels differ from %s" % (id1, files[id1])
        else:
            assert img == orig, "record %d: a PNG was changed" % id1
        seen += 1
        off += 8 + (n + 3) // 4 * 4
assert seen == len(files), (seen, len(files))
PY' "--jpeg-restart: every JPEG record decodes to its file's pixels (PIL), every PNG is its file"
fi
check '"$BATON" inspect "$T/rst" --verify >/dev/null' "inspect --verify passes on the transcoded pack"
expect_fail 2 "jpeg-restart applies to JPEG records" "$BATON" pack --from "imagefolder:$T/f" --out "$T/x" --encode png --jpeg-restart --quiet
"$BATON" inspect "$T/d" >"$T/inspect.out" 2>&1
check 'grep -q "^sizes      h 1\.\.375, w 1\.\.6000" "$T/inspect.out" && grep -q "png:2 jpeg:94" "$T/inspect.out"' \
    "inspect shows the size distribution: $(cat "$T/inspect.out")"
check '"$BATON" inspect "$T/d" --verify >/dev/null' "inspect --verify passes"

# refused, naming the file
mkdir -p "$T/bad/a"
cp "$T/f/c001/"*.jpg "$T/bad/a/"
check '"$PHOTOS" --cmyk "$T/bad/a/zz-cmyk.jpg"' "a CMYK JPEG"
expect_fail 1 "zz-cmyk.jpg.*CMYK" "$BATON" pack --from "imagefolder:$T/bad" --out "$T/bad-d" --quiet
rm "$T/bad/a/zz-cmyk.jpg"
f=$(ls "$T/bad/a/"*.jpg | head -1)
head -c 2000 "$f" >"$T/bad/a/zz-cut.jpg"
expect_fail 1 "zz-cut.jpg" "$BATON" pack --from "imagefolder:$T/bad" --out "$T/bad-d" --quiet

# --resize N: the shorter side
check '"$BATON" pack --from "imagefolder:$T/f" --out "$T/r" --resize 64 --quiet >/dev/null' "pack --resize 64"
"$BATON" inspect "$T/r" --json >"$T/r.json"
check 'python3 - "$T/r.json" <<"PY"
import json, sys
d = json.load(open(sys.argv[1]))
assert all(min(s["shape"][:2]) == 64 for s in d["shapes"]), d["shapes"]
assert d["sizes"]["min_h"] >= 64 and d["sizes"]["min_w"] >= 64, d["sizes"]
PY' "--resize 64 leaves every shorter side at 64: $(head -c 400 "$T/r.json")"

# training on crops, killed and resumed
TR="$BATON train --data $T/d --model lenet --crop random-resized --size 32 --flip --batch 16 --epochs 3 --seed 3 --threads 1 --quiet"
check '$TR --ckpt-dir "$T/ref" >/dev/null 2>"$T/ref.err"' "train on crops"
FIN=$(printf 'ckpt-%09d' 18)   # 96 samples, batch 16: 6 steps an epoch
check '[ -f "$T/ref/$FIN/model.safetensors" ] && grep -q "\"crop\":\"random-resized\"" "$T/ref/$FIN/state.json"' \
    "the final checkpoint records its crop: $(ls "$T/ref")"
$TR --ckpt-dir "$T/k" --ckpt-every-steps 2 >/dev/null 2>&1 &
pid=$!
wait_ckpt "$T/k"
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
check '[ ! -e "$T/k/$FIN" ]' "the kill landed before the run's end: $(ls "$T/k")"
check '$TR --ckpt-dir "$T/k" --ckpt-every-steps 2 >/dev/null 2>"$T/k.err" && grep -q "resuming from" "$T/k.err"' "the killed run resumes"
check 'cmp -s "$T/ref/$FIN/model.safetensors" "$T/k/$FIN/model.safetensors" && cmp -s "$T/ref/$FIN/optim.safetensors" "$T/k/$FIN/optim.safetensors"' \
    "after SIGKILL and resume, the uninterrupted run's bytes ($(grep -m1 -o "resuming from [^;]*" "$T/k.err"))"
expect_fail 2 "crop" "$BATON" train --data "$T/d" --model lenet --crop sideways --ckpt-dir "$T/x"
expect_fail 1 "trained with --crop random-resized --size 32 .*this run has --crop random-resized --size 48" \
    "$BATON" train --data "$T/d" --model lenet --crop random-resized --size 48 --flip --batch 16 --seed 3 --ckpt-dir "$T/ref" --quiet
expect_fail 1 "vary in size.*--crop random-resized" "$BATON" train --data "$T/d" --model lenet --ckpt-dir "$T/y" --quiet

# evaluation: the centre crop of the trained size, deterministic
check '"$BATON" eval --ckpt "$T/ref" --data "$T/d" --json >"$T/e1" && "$BATON" eval --ckpt "$T/ref" --data "$T/d" --json >"$T/e2"' "eval twice"
check 'cmp -s "$T/e1" "$T/e2" && [ "$(json "$T/e1" "d[\"samples\"]")" = 96 ]' "the same evaluation twice: $(head -c 200 "$T/e1")"
expect_fail 1 "vary in size" "$BATON" eval --ckpt "$T/ref" --data "$T/d" --crop none

check '"$BATON" bench-io --data "$T/d" --crop random-resized --size 64 --epochs 1 --work-dir "$T/w" --svg "$T/b.svg" --json --quiet >"$T/b.json" 2>"$T/b.err"' \
    "bench-io on crops"
check '[ "$(grep -c "\"samples\":96" "$T/b.json")" = 4 ]' "bench-io: 96 samples in every mode: $(head -c 300 "$T/b.json")"
finish
