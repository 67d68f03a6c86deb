#!/usr/bin/env bash
# test_pack_inspect.sh — `baton pack` and `baton inspect` end to end, and every kind of bad input
# the records issue lists: each must give exit code 1 and a one-line error naming the file and
# (where there is one) the byte offset — never a crash.
. "$(dirname "$0")/lib.sh"
FM=/usr/share/datasets/fashion-mnist

# --- pack: RecordIO raw in several shards, TFRecord PNG, JPEG ---
$BATON pack --from fashion-mnist --out "$T/raw" --shard-mb 8 >/dev/null 2>"$T/e" || bad "pack raw: $(cat "$T/e")"
check '[ -f "$T/raw/dataset.json" ]' "no dataset.json"
check '[ $(ls "$T/raw"/train-*.rec | wc -l) -ge 6 ]' "expected >= 6 shards at 8 MB"
check '! ls "$T/raw" | grep -q tmp' "temporary files left behind"
# every shard's index in one file, in dataset.json's order (what readers of the indexed order fetch)
check 'cat $(ls "$T/raw"/train-*.idx | sort) | cmp -s - "$T/raw/dataset.idx"' "dataset.idx is not the shards' .idx in order"
check 'grep -q "\"indexes\"" "$T/raw/dataset.json"' "dataset.json does not list dataset.idx"
cp -r "$T/raw" "$T/rawx" && printf 9 | dd of="$T/rawx/dataset.idx" bs=1 seek=0 conv=notrunc status=none
expect_fail 1 'dataset.idx: the part of train-00000.idx' $BATON inspect "$T/rawx" --verify
$BATON inspect "$T/raw" --verify --json >"$T/j" 2>"$T/e" || bad "inspect raw: $(cat "$T/e")"
check 'grep -q "\"records\":60000" "$T/j"' "records != 60000: $(head -c 300 "$T/j")"
check 'grep -q "\"ok\":true" "$T/j"' "verify not ok"
check 'grep -q "\"format\":\"recordio\"" "$T/j"' "format field"
check 'grep -q "\"label_histogram\":\[6000,6000,6000,6000,6000,6000,6000,6000,6000,6000\]" "$T/j"' "label histogram"
$BATON inspect "$T/raw" >"$T/o" 2>"$T/e" || bad "plain inspect failed"
check 'grep -q "28x28x1:60000" "$T/o"' "shape line: $(cat "$T/o")"

$BATON pack --from fashion-mnist --split test --format tfrecord --encode png --out "$T/png" >/dev/null 2>&1 || bad "pack png tfrecord"
$BATON inspect "$T/png" --verify --json >"$T/j" 2>"$T/e" || bad "inspect png: $(cat "$T/e")"
check 'grep -q "\"records\":10000" "$T/j" && grep -q "\"format\":\"tfrecord\"" "$T/j" && grep -q "\"png\":10000" "$T/j"' "png/tfrecord report: $(head -c 300 "$T/j")"

# --- determinism: same options, same bytes ---
$BATON pack --from fashion-mnist --split test --encode jpeg --quality 90 --seed 7 --out "$T/j1" >/dev/null 2>&1
$BATON pack --from fashion-mnist --split test --encode jpeg --quality 90 --seed 7 --out "$T/j2" >/dev/null 2>&1
check 'cmp -s "$T/j1/test-00000.rec" "$T/j2/test-00000.rec" && cmp -s "$T/j1/dataset.json" "$T/j2/dataset.json"' "pack is not deterministic"
$BATON pack --from fashion-mnist --split test --encode jpeg --quality 90 --seed 8 --out "$T/j3" >/dev/null 2>&1
check '! cmp -s "$T/j1/test-00000.rec" "$T/j3/test-00000.rec"' "seed does not change the order"

# a loose .rec, with and without its .idx
$BATON inspect "$T/j1/test-00000.rec" --verify >/dev/null 2>"$T/e" || bad "loose rec: $(cat "$T/e")"
cp "$T/j1/test-00000.rec" "$T/loose.rec"
$BATON inspect "$T/loose.rec" --verify --json >"$T/j" 2>"$T/e" || bad "loose rec without idx: $(cat "$T/e")"
check 'grep -q "\"records\":10000" "$T/j"' "loose rec count"

# --- bad input ---
small() {  # small DIR: a fresh small dataset (test split, 1 MB shards)
    rm -rf "$1"; $BATON pack --from fashion-mnist --split test --out "$1" --shard-mb 1 >/dev/null 2>&1
}
small "$T/s"
rec="$T/s/test-00000.rec"
size=$(stat -c %s "$rec")

cp -r "$T/s" "$T/trunc"; truncate -s $((size - 100)) "$T/trunc/test-00000.rec"
expect_fail 1 'test-00000.rec: offset [0-9]+: .*truncated' $BATON inspect "$T/trunc" --verify

cp -r "$T/s" "$T/flip"
python3 - "$T/flip/test-00000.rec" <<'PY'
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[5000]^=0x10; open(p,'wb').write(b)
PY
expect_fail 1 'test-00000.rec: (offset [0-9]+|CRC32C)' $BATON inspect "$T/flip" --verify

$BATON pack --from fashion-mnist --split test --format tfrecord --out "$T/tf" --shard-mb 1 >/dev/null 2>&1
python3 - "$T/tf/test-00000.tfrecord" <<'PY'
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[3000]^=0x01; open(p,'wb').write(b)
PY
expect_fail 1 'test-00000.tfrecord: offset [0-9]+: .*(CRC|corrupt|checksum)' $BATON inspect "$T/tf" --verify
expect_fail 1 'offset [0-9]+' $BATON inspect "$T/tf/test-00000.tfrecord"

python3 - "$T/biglen.rec" <<'PY'
import struct, sys
open(sys.argv[1],'wb').write(struct.pack('<II', 0xced7230a, 1000) + b'x'*16)
PY
expect_fail 1 'biglen.rec: offset 0: .*(truncated|past|end)' $BATON inspect "$T/biglen.rec"

cp -r "$T/s" "$T/idx1"
printf '0\t99999999\n' >>"$T/idx1/test-00000.idx"
expect_fail 1 'test-00000.idx' $BATON inspect "$T/idx1" --verify
cp "$T/s/test-00000.rec" "$T/loose2.rec"
{ head -n 3 "$T/s/test-00000.idx"; printf '3\t99999999\n'; } >"$T/loose2.idx"
expect_fail 1 'loose2.idx: offset 99999999 is past the end' $BATON inspect "$T/loose2.rec" --verify
{ head -n 3 "$T/s/test-00000.idx"; printf '3\t12\n'; } >"$T/loose2.idx"
expect_fail 1 'loose2.idx: offset 12 is not the start of a record' $BATON inspect "$T/loose2.rec" --verify
printf '0\tzero\n' >"$T/loose2.idx"
expect_fail 1 'loose2.idx: line 1' $BATON inspect "$T/loose2.rec" --verify

python3 - "$T/legacy.rec" <<'PY'
import struct, sys
open(sys.argv[1],'wb').write(struct.pack('<II', 0x3ed7230a, 5) + b'hello\0\0\0')
PY
expect_fail 1 'legacy.rec: .*legacy' $BATON inspect "$T/legacy.rec"

: >"$T/empty.rec"
expect_fail 1 'empty.rec: .*empty' $BATON inspect "$T/empty.rec"

mkdir -p "$T/nojson"; cp "$rec" "$T/nojson/"
expect_fail 1 'no dataset.json' $BATON inspect "$T/nojson"
expect_fail 1 'no such file' $BATON inspect "$T/does-not-exist"

cp -r "$T/s" "$T/badjson"; echo '{"baton_dataset": 1, "samples": "many"}' >"$T/badjson/dataset.json"
expect_fail 1 'dataset.json' $BATON inspect "$T/badjson"

# undecodable image bytes: a JPEG record whose image data is garbage
$BATON pack --from fashion-mnist --split test --encode jpeg --out "$T/jp" --shard-mb 1 >/dev/null 2>&1
python3 - "$T/jp/test-00000.rec" <<'PY'
import sys
p=sys.argv[1]; b=bytearray(open(p,'rb').read())
# record 0: 8-byte RecordIO header, 24-byte IRHeader, then the JPEG: keep SOI, smash all that follows
import struct
n = struct.unpack_from('<I', b, 4)[0] & ((1 << 29) - 1)
for i in range(8+24+2, 8+n): b[i]=0x41
open(p,'wb').write(b)
PY
expect_fail 1 'test-00000.rec: offset 0: record id [0-9]+ is not a PNG or JPEG' $BATON inspect "$T/jp/test-00000.rec" --verify
expect_fail 1 'test-00000.rec: offset 0: record id [0-9]+: .*JPEG' $BATON inspect "$T/jp" --verify
# a JPEG cut short inside its entropy-coded data (framing intact): the decoder's complaint, by offset
python3 - "$T/jp/test-00001.rec" "$T/cut.rec" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack_from('<I', b, 4)[0] & ((1 << 29) - 1)
payload = b[8:8 + n]
cut = payload[:24 + (n - 24) * 6 // 10]
rec = struct.pack('<II', 0xced7230a, len(cut)) + cut + b'\0' * ((4 - len(cut) % 4) % 4)
good = b[:8 + ((n + 3) & ~3)]
open(sys.argv[2], 'wb').write(good + rec)
PY
expect_fail 1 'cut.rec: offset [1-9][0-9]*: record id [0-9]+: .*([Tt]runcat|[Pp]remature|[Cc]orrupt)' $BATON inspect "$T/cut.rec" --verify

# wrong IDX magic in the source
mkdir -p "$T/fm"; cp $FM/t10k-labels-idx1-ubyte.gz "$T/fm/"; cp $FM/t10k-labels-idx1-ubyte.gz "$T/fm/t10k-images-idx3-ubyte.gz"
expect_fail 1 't10k-images-idx3-ubyte.gz: .*magic' $BATON pack --from "fashion-mnist:$T/fm" --split test --out "$T/o1"
check '[ ! -e "$T/o1/dataset.json" ]' "a failed pack published dataset.json"

# usage errors are exit 2
expect_fail 2 'required' $BATON pack --out "$T/x"
expect_fail 2 'encode' $BATON pack --from fashion-mnist --out "$T/x" --encode webp
expect_fail 2 'unknown option' $BATON inspect "$T/s" --frobnicate
expect_fail 2 '^baton pack: --quality 0 is outside 1..100$' $BATON pack --from fashion-mnist --out "$T/x" --quality 0
expect_fail 2 '^baton pack: --shard-mb 0 is outside' $BATON pack --from fashion-mnist --out "$T/x" --shard-mb 0

# repacking into the same folder leaves exactly the new dataset's files (and the user's own), and
# clears temporary files of packs that were killed; a live pack's temporary file stays
check '$BATON pack --from fashion-mnist --split test --out "$T/re" --shard-mb 1 --quiet >/dev/null' "pack 1 MB shards"
touch "$T/re/mine.txt" "$T/re/test-00003.rec.tmp.2147483646" "$T/re/test-00004.rec.tmp.$$"
check '$BATON pack --from fashion-mnist --split test --out "$T/re" --shard-mb 4 --quiet >/dev/null 2>&1' "repack with 4 MB shards"
check '[ "$(ls "$T/re" | tr "\n" " ")" = "dataset.idx dataset.json mine.txt test-00000.idx test-00000.rec test-00001.idx test-00001.rec test-00004.rec.tmp.$$ " ]' \
    "only the new shards remain: $(ls "$T/re" | tr "\n" " ")"
check '$BATON inspect "$T/re" --verify >/dev/null 2>&1' "the repacked folder verifies"

# --json says what the exit status says
$BATON inspect "$T/nonexistent" --json >"$T/ij" 2>/dev/null
rc=$?
check '[ $rc -eq 1 ] && grep -q "\"ok\":false" "$T/ij" && grep -q "\"error_count\":1" "$T/ij" && grep -q "no such file or folder" "$T/ij"' \
    "inspect --json of a missing path: $(cat "$T/ij")"
mkdir -p "$T/broken" && echo '{"baton_dataset": 1, ' >"$T/broken/dataset.json"
$BATON inspect "$T/broken" --json >"$T/ij2" 2>/dev/null
rc=$?
check '[ $rc -eq 1 ] && grep -q "\"ok\":false" "$T/ij2" && grep -q "dataset.json" "$T/ij2"' "inspect --json of a broken dataset.json: $(cat "$T/ij2")"

finish
