#!/usr/bin/env bash
# test_piece_verify.sh — no sample is delivered from bytes that were not checked against
# dataset.json. Fashion-MNIST (its test split) is packed twice with different seeds (raw records of one size, so
# shard N of one pack has the size and the offsets of shard N of the other); a shard of the second
# pack put in place of the first pack's is refused by `baton train` in file, pipe, mount and cache
# mode, resumed in the middle of a shard, on 1, 2 and 4 MPI ranks and over HTTP (nginx) — exit 1,
# the error naming the shard, the piece (its bytes) and both CRC32Cs — and not one sample it
# trained on differs from what the same run trains on from the untouched pack (its --sample-log,
# position by position). `baton bench-io` and `baton channel` refuse it the same way. A dataset
# packed before piece checksums trains as before, with one warning. A shard cut short under a
# running reader (mount mode's folder, file and cache mode's local copy) is an error naming it,
# never SIGBUS. (The Python Loader's part:
# tests/python/test_pieces.py.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../servers/lib.sh"
srv_init
trap 'srv_cleanup; [ "${BATON_KEEP_TMP:-0}" = 1 ] || rm -rf "$T"' EXIT   # srv_init's trap replaced lib.sh's

PACK="$BATON pack --from fashion-mnist --split test --shard-mb 1 --quiet"
$PACK --out "$T/a" --seed 1 >/dev/null 2>&1 || bad "pack a"
$PACK --out "$T/b" --seed 2 >/dev/null 2>&1 || bad "pack b"
S=test-00005
check 'cmp -s "$T/a/$S.idx" "$T/b/$S.idx" && ! cmp -s "$T/a/$S.rec" "$T/b/$S.rec"' \
    "the two packs' $S.rec differ in bytes only (same size, same index)"
cp -r "$T/a" "$T/bad"
cp "$T/b/$S.rec" "$T/bad/$S.rec"
cp -r "$T/a" "$T/badall"   # every shard of the size of the other pack's (all but the last)
for f in "$T"/b/*.rec; do
    n=$(basename "$f")
    [ "$(stat -c %s "$f")" = "$(stat -c %s "$T/a/$n")" ] && cp "$f" "$T/badall/$n"
done
PIECE='test-[0-9]{5}\.rec: bytes [0-9]+\.\.[0-9]+ \(piece [0-9]+ of [0-9]+\): CRC32C [0-9a-f]{8}, dataset\.json says [0-9a-f]{8}'
ONE="$S\\.rec: bytes [0-9]+\\.\\.[0-9]+ \\(piece [0-9]+ of 16\\): CRC32C [0-9a-f]{8}, dataset\\.json says [0-9a-f]{8}"

# wrong REF LOG: samples LOG trained on that differ from REF's at the same epoch, position and rank
wrong() {
    python3 - "$1" "$2" <<'PY'
import os, sys
ref = {}
for l in open(sys.argv[1]):
    e, p, r, lab, crc = l.split()
    ref[(e, p, r)] = (lab, crc)
n = 0
if os.path.exists(sys.argv[2]):
    for l in open(sys.argv[2]):
        e, p, r, lab, crc = l.split()
        n += ref.get((e, p, r)) != (lab, crc)
print(n)
PY
}
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
# train NAME URI MODE [options]: one epoch of the MLP, its samples in $T/NAME.log
train() {
    local name=$1 uri=$2 mode=$3
    shift 3
    $BATON train --data "$uri" --model mlp --epochs 1 --batch 64 --seed 5 --threads 2 --mode "$mode" \
        --ckpt-dir "$T/ck-$name" --sample-log "$T/$name.log" --quiet --no-notice "$@"
}

# --- every mode: the reference run, then the one with the other pack's shard
for m in file pipe mount cache; do
    train "ok-$m" "$T/a" $m >/dev/null 2>"$T/e" || bad "$m mode, the untouched pack: $(cat "$T/e")"
    expect_fail 1 "$ONE" train "bad-$m" "$T/bad" $m
    n=$(wrong "$T/ok-$m.log" "$T/bad-$m.log")
    echo "$m mode: $(lines "$T/bad-$m.log") samples trained before the error, $n of them wrong"
    check '[ "$n" = 0 ]' "$m mode: $n samples trained from the wrong shard"
done

# --- resumed in the middle of a shard: 60 steps of the untouched pack, then every shard swapped
for m in pipe mount cache; do
    rm -rf "$T/r-$m"
    cp -r "$T/a" "$T/r-$m"
    train "r-$m" "$T/r-$m" $m --max-steps 60 >/dev/null 2>"$T/e" || bad "$m mode, 60 steps: $(cat "$T/e")"
    before=$(lines "$T/r-$m.log")
    for f in "$T"/badall/*.rec; do cp "$f" "$T/r-$m/"; done
    rm -rf "$T/ck-r-$m/data"   # cache mode's copy of the old bytes: read the folder again
    expect_fail 1 "$PIECE" train "r-$m" "$T/r-$m" $m
    n=$(wrong "$T/ok-$m.log" "$T/r-$m.log")
    echo "$m mode resumed after $before samples: $(( $(lines "$T/r-$m.log") - before )) more trained, $n wrong"
    check '[ "$before" = 3840 ] && [ "$n" = 0 ]' "$m mode, resumed mid-shard: $n samples trained from wrong shards"
done

# --- 2 and 4 ranks (Open MPI)
if mpi_setup; then
    for w in 2 4; do
        for m in mount pipe; do
            mpirun --bind-to none -n $w $BATON train --data "$T/a" --model mlp --epochs 1 --batch 64 --seed 5 \
                --threads 1 --mode $m --ckpt-dir "$T/ck-w$w-ok-$m" --sample-log "$T/w$w-ok-$m.log" --quiet \
                --no-notice >/dev/null 2>"$T/e" || bad "$w ranks, $m mode, the untouched pack: $(cat "$T/e")"
            mpirun --bind-to none -n $w $BATON train --data "$T/bad" --model mlp --epochs 1 --batch 64 --seed 5 \
                --threads 1 --mode $m --ckpt-dir "$T/ck-w$w-bad-$m" --sample-log "$T/w$w-bad-$m.log" --quiet \
                --no-notice >/dev/null 2>"$T/e"
            rc=$?
            n=$(wrong "$T/w$w-ok-$m.log" "$T/w$w-bad-$m.log")
            echo "$w ranks, $m mode: exit $rc, $(lines "$T/w$w-bad-$m.log") samples trained, $n wrong"
            check '[ $rc -ne 0 ] && grep -Eq "$ONE" "$T/e" && [ "$n" = 0 ]' \
                "$w ranks, $m mode: exit $rc, $n wrong samples: $(head -c 600 "$T/e")"
        done
    done
fi

# --- bench-io and channel refuse it too
for m in pipe mount cache file; do
    expect_fail 1 "$ONE" $BATON bench-io --data "$T/bad" --mode $m --epochs 1 --quiet --svg "$T/b.svg" \
        --work-dir "$T/bw-$m"
done
mkdir -p "$T/fifo"
(for _ in $(seq 3000); do [ -p "$T/fifo/c_0" ] && exec cat "$T/fifo/c_0" >"$T/chan.out"; sleep 0.01; done) &
reader=$!
expect_fail 1 "$ONE" $BATON channel --data "$T/bad" --fifo-dir "$T/fifo" --channel c --epochs 1 --mode mount \
    --open-timeout 30 --quiet
kill $reader 2>/dev/null
wait $reader 2>/dev/null

# --- over HTTP: the pieces checked as the ranges stream in
srv_nginx "$T"
H="http://127.0.0.1:$NGINX_PORT"
for m in pipe cache; do
    train "http-ok-$m" "$H/a/" $m >/dev/null 2>"$T/e" || bad "$m mode over HTTP, the untouched pack: $(cat "$T/e")"
    expect_fail 1 "$ONE" train "http-bad-$m" "$H/bad/" $m
    n=$(wrong "$T/http-ok-$m.log" "$T/http-bad-$m.log")
    check '[ "$n" = 0 ]' "$m mode over HTTP: $n samples trained from the wrong shard"
done

strip_pieces() {
    python3 - "$1/dataset.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["shards"]:
    s.pop("piece_bytes", None), s.pop("piece_crc32c", None)
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
}

# --- a dataset packed before piece checksums: one warning, checked whole as before
cp -r "$T/a" "$T/old"
strip_pieces "$T/old"
train old "$T/old" mount >/dev/null 2>"$T/e" || bad "a dataset without pieces: $(cat "$T/e")"
check '[ "$(grep -c "lists no piece checksums" "$T/e")" = 1 ] && grep -q "pack the dataset again" "$T/e"' \
    "a dataset without pieces says so once: $(cat "$T/e")"
check '[ "$(wrong "$T/ok-mount.log" "$T/old.log")" = 0 ] && [ "$(lines "$T/old.log")" = 10000 ]' \
    "a dataset without pieces trains the same samples"
cp "$T/b/$S.rec" "$T/old/$S.rec"   # and its whole-shard check still speaks
expect_fail 1 "$S\\.rec: CRC32C [0-9a-f]{8} over its 1048560 bytes" train old-bad "$T/old" mount

# --- shards cut short under a running reader: an error naming one, no SIGBUS. Mount mode cuts the
# dataset's files, file and cache mode their local copy (in the checkpoint folder) once they read
# it (cache mode: after its streamed epoch 0). (Pieces of 4 KiB: most are not read yet when the files
# shrink; without pieces: every record is read.)
for kb in 4 none; do
    rm -rf "$T/cut"
    if [ $kb = none ]; then $PACK --out "$T/cut" --seed 1; else $PACK --out "$T/cut" --seed 1 --piece-kb $kb; fi \
        >/dev/null 2>&1 || bad "pack ($kb)"
    [ $kb = none ] && strip_pieces "$T/cut"
    for mode in file cache mount; do   # mount last: it cuts the pack itself
        rm -f "$T/cut.log"
        ck="$T/ck-cut-$kb-$mode" at=640
        [ $mode = cache ] && at=10640
        $BATON train --data "$T/cut" --model mlp --epochs 50 --batch 64 --threads 1 --mode $mode --ckpt-dir "$ck" \
            --sample-log "$T/cut.log" --quiet --no-notice >/dev/null 2>"$T/e" &
        pid=$!
        for _ in $(seq 12000); do [ "$(lines "$T/cut.log")" -ge $at ] && break; sleep 0.005; done
        if [ $mode = mount ]; then dir="$T/cut"; else dir=$(dirname "$(ls "$ck"/data*/test-00000.rec)"); fi
        for f in "$dir"/*.rec; do truncate -s 1000 "$f"; done
        wait $pid
        rc=$?
        echo "$mode mode, pieces: $kb (KiB), shards cut short after $(lines "$T/cut.log") samples: exit $rc: $(head -c 300 "$T/e")"
        check '[ $rc = 1 ] && grep -Eq "$dir/test-[0-9]{5}\.rec: the file ends at offset [0-9]+ \(now 1000 bytes\), dataset\.json says [0-9]+" "$T/e"' \
            "$mode mode, shards cut short while training ($kb KiB pieces): exit $rc (a signal is > 128): $(head -c 600 "$T/e")"
    done
done
finish
