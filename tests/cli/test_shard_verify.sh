#!/usr/bin/env bash
# test_shard_verify.sh — a shard that is not the file dataset.json lists (issue 30: two packs into
# one folder left one pack's shards under the other's dataset.json) is refused by every input mode
# — pipe, cache, file, mount; from a path and over HTTP (nginx); by `baton train`, `baton channel`
# and `baton bench-io` — with exit 1 and the shard named: a shard of the wrong size at its first
# byte, one of the right size whose CRC32C differs at its first piece read (dataset.json's piece
# checksums: tests/cli/test_piece_verify.sh). The same dataset untouched, and partial reads of it,
# train; a partial read of a damaged one stops at the damaged piece. Then `baton pack`: a second pack into a
# folder that a pack is writing fails at once naming the first, and a pack says when it replaces
# the dataset that was there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../servers/lib.sh"
srv_init
trap 'srv_cleanup; [ "${BATON_KEEP_TMP:-0}" = 1 ] || rm -rf "$T"' EXIT   # srv_init's trap replaced lib.sh's

$BATON pack --from fashion-mnist --split test --out "$T/ok" --shard-mb 1 --quiet >/dev/null 2>&1 || bad "pack"
size=$(stat -c %s "$T/ok/test-00003.rec")
cp -r "$T/ok" "$T/flip"   # the same size, another CRC32C: only the checksum tells
python3 - "$T/flip/test-00000.rec" <<'PY'
import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[5000] ^= 0x10; open(p, 'wb').write(bytes(b))
PY
cp -r "$T/ok" "$T/long"   # a larger file, as another pack's shard under this dataset.json
head -c 5000 /dev/zero >>"$T/long/test-00003.rec"
cp -r "$T/ok" "$T/short"
truncate -s 1000000 "$T/short/test-00003.rec"

CRC='test-00000\.rec: (bytes 0\.\.65535 \(piece 1 of 16\): CRC32C [0-9a-f]{8}, dataset\.json says [0-9a-f]{8}|checksum mismatch .*dataset\.json)'
LONG="test-00003\.rec: $((size + 5000)) bytes.*dataset\.json says $size"
SHORT='test-00003\.rec.*[ (]1000000 bytes'

train() {   # train URI MODE [options]: one epoch of the MLP in a fresh checkpoint folder
    local uri=$1 mode=$2
    shift 2
    rm -rf "$T/ck"
    $BATON train --data "$uri" --model mlp --epochs 1 --batch 64 --threads 2 --mode "$mode" --ckpt-dir "$T/ck" --quiet "$@"
}
channel() {   # channel URI MODE: one epoch into a named pipe, drained by a reader
    rm -rf "$T/fifo" "$T/cl"
    mkdir -p "$T/fifo"
    (for _ in $(seq 3000); do [ -p "$T/fifo/c_0" ] && exec cat "$T/fifo/c_0" >/dev/null; sleep 0.01; done) &
    local reader=$! rc
    $BATON channel --data "$1" --fifo-dir "$T/fifo" --channel c --epochs 1 --mode "$2" --local-dir "$T/cl" \
        --open-timeout 30 --quiet
    rc=$?
    kill "$reader" 2>/dev/null
    wait "$reader" 2>/dev/null
    return $rc
}

# --- baton train, every mode, from a path
for m in pipe cache file mount; do
    expect_fail 1 "$CRC" train "$T/flip" $m
    expect_fail 1 "$LONG" train "$T/long" $m
    expect_fail 1 "$SHORT" train "$T/short" $m
done
train "$T/ok" pipe >/dev/null 2>"$T/e" || bad "pipe mode, the dataset untouched: $(cat "$T/e")"
train "$T/ok" mount >/dev/null 2>"$T/e" || bad "mount mode, the dataset untouched: $(cat "$T/e")"
# partial reads raise no false alarm: 10 steps of pipe mode that end inside the first block,
# resumed to the end; and they check what they read: mount mode's first 10 steps of the damaged
# shard stop at its damaged piece
train "$T/ok" pipe --max-steps 10 >/dev/null 2>"$T/e" || bad "pipe mode, 10 steps: $(cat "$T/e")"
$BATON train --data "$T/ok" --model mlp --epochs 1 --batch 64 --threads 2 --mode pipe --ckpt-dir "$T/ck" --quiet \
    >/dev/null 2>"$T/e" || bad "pipe mode, resumed after 10 steps: $(cat "$T/e")"
expect_fail 1 "$CRC" train "$T/flip" mount --max-steps 10

# --- baton channel and bench-io
for m in pipe cache file mount; do
    expect_fail 1 "$CRC" channel "$T/flip" $m
    expect_fail 1 "$LONG" channel "$T/long" $m
done
channel "$T/ok" pipe 2>"$T/e" || bad "channel, the dataset untouched: $(cat "$T/e")"
expect_fail 1 "$LONG" $BATON bench-io --data "$T/long" --mode pipe --epochs 1 --quiet --svg "$T/b.svg"
expect_fail 1 "$CRC" $BATON bench-io --data "$T/flip" --mode mount --epochs 1 --quiet --svg "$T/b.svg"

# --- over HTTP (nginx): the size from Content-Range, the CRC32C from the streamed bytes
srv_nginx "$T"
H="http://127.0.0.1:$NGINX_PORT"
for m in pipe cache file; do
    expect_fail 1 "$CRC" train "$H/flip/" $m
    expect_fail 1 "$LONG" train "$H/long/" $m
done
expect_fail 1 "$SHORT" train "$H/short/" pipe
expect_fail 1 "$LONG" channel "$H/long/" pipe
train "$H/ok/" pipe >/dev/null 2>"$T/e" || bad "pipe mode over HTTP, the dataset untouched: $(cat "$T/e")"

# --- pack: one at a time in a folder, and it says when it replaces a dataset
$BATON pack --from fashion-mnist --out "$T/dup" --shard-mb 16 --seed 1 --encode png --quiet >/dev/null 2>"$T/pa" &
pa=$!
for _ in $(seq 6000); do [ "$(cat "$T/dup/.lock" 2>/dev/null)" = "$pa" ] && break; sleep 0.005; done
expect_fail 1 "dataset folder .*dup is in use by process $pa .*another pack" \
    $BATON pack --from fashion-mnist --out "$T/dup" --shard-mb 48 --seed 2 --quiet
wait $pa || bad "the first pack failed: $(cat "$T/pa")"
$BATON inspect "$T/dup" --verify >/dev/null 2>"$T/e" || bad "the folder after the refused pack: $(cat "$T/e")"
check '! grep -q replacing "$T/pa"' "a pack into a new folder says it replaces something: $(cat "$T/pa")"
$BATON pack --from fashion-mnist --out "$T/dup" --shard-mb 48 --seed 2 --quiet >/dev/null 2>"$T/pb" || bad "pack again"
check 'grep -Eq "replacing the dataset in .*dup \(fashion-mnist/train, 60000 records in [0-9]+ shard" "$T/pb"' \
    "a pack that replaces a dataset does not say so: $(cat "$T/pb")"
$BATON inspect "$T/dup" --verify >/dev/null 2>"$T/e" || bad "the replaced dataset: $(cat "$T/e")"
finish
