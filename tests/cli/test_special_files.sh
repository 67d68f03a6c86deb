#!/usr/bin/env bash
# test_special_files.sh — special files where baton expects regular ones: every file a command
# reads from outside — a track (.npy), a job file, a dataset's dataset.json and its shards, a
# checkpoint's MANIFEST and model, a reward or model_metadata.json, a catalog and a latencies
# file, the league's database — given as a FIFO with no writer, a character device (/dev/zero,
# endless) and a symbolic link to a FIFO. Each command must refuse at once (exit 1, "is a FIFO" /
# "is a character device" naming the file) and never block: each runs under a 20 s timeout that
# would otherwise end it with 124.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
unset BATON_LEAGUE_DB
mkfifo "$T/fifo"
ln -s "$T/fifo" "$T/link"

# refused WHAT CMD...: every {} in CMD is replaced by each special file in turn
refused() {
    local what=$1; shift
    local f kind
    for f in "$T/fifo" /dev/zero "$T/link"; do
        case $f in /dev/zero) kind="is a character device" ;; *) kind="is a FIFO" ;; esac
        local args=() a
        for a in "$@"; do args+=("${a//\{\}/$f}"); done
        timeout 20 "${args[@]}" >"$T/out" 2>"$T/err"
        local rc=$?
        if [ "$rc" = 1 ] && grep -q "$kind, expected a regular file" "$T/err"; then ok
        else bad "$what as $f: exit $rc (124: it blocked): $(head -c 300 "$T/err")"; fi
    done
}
# replaced WHAT DIR FILE CMD...: DIR/FILE is moved aside and replaced by each special file
replaced() {
    local what=$1 dir=$2 file=$3; shift 3
    local f kind
    mv "$dir/$file" "$T/aside"
    for f in "$T/fifo" /dev/zero; do
        case $f in /dev/zero) kind="is a character device" ;; *) kind="is a FIFO" ;; esac
        ln -sf "$f" "$dir/$file"
        [ "$f" = "$T/fifo" ] && { rm -f "$dir/$file"; mkfifo "$dir/$file"; }
        timeout 20 "$@" >"$T/out" 2>"$T/err"
        local rc=$?
        if [ "$rc" = 1 ] && grep -q "$kind" "$T/err" && grep -qF "$file" "$T/err"; then ok
        else bad "$what: $file as $f: exit $rc (124: it blocked): $(head -c 300 "$T/err")"; fi
        rm -f "$dir/$file"
    done
    mv "$T/aside" "$dir/$file"
}

refused "a track" "$BATON" race track {}
refused "a job file" "$BATON" fleet run {}
# a reward is known by its name's ending: a FIFO named .py, /dev/zero behind a name ending .c
mkfifo "$T/reward.py"
ln -s /dev/zero "$T/reward.c"
expect_fail 1 "reward.py: is a FIFO, expected a regular file" timeout 20 "$BATON" race drive oval --reward "$T/reward.py"
expect_fail 1 "reward.c: is a character device, expected a regular file" timeout 20 "$BATON" race drive oval --reward "$T/reward.c"
refused "model_metadata.json" "$BATON" race train --track oval --metadata {} --ckpt-dir "$T/r" --episodes 1
refused "a catalog" "$BATON" plan infer --slo-p90-ms 10 --latencies docs/README.md --catalog {}
refused "a latencies file" "$BATON" plan infer --slo-p90-ms 10 --latencies {}

check '"$BATON" pack --from fashion-mnist --split test --out "$T/fm" --shard-mb 2 --quiet >/dev/null' "pack a dataset"
shard=$(cd "$T/fm" && ls | grep -v dataset.json | head -n 1)
replaced "inspect" "$T/fm" dataset.json "$BATON" inspect "$T/fm"
replaced "train" "$T/fm" "$shard" "$BATON" train --data "$T/fm" --model mlp --epochs 1 --max-steps 2 --batch 32 --threads 1 --quiet --ckpt-dir "$T/ck0"
replaced "bench-io" "$T/fm" "$shard" "$BATON" bench-io --data "$T/fm" --mode file --epochs 1 --quiet

check '"$BATON" race train --track oval --metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json --ckpt-dir "$T/m" --episodes 100 --threads 1 --quiet >/dev/null' \
    "train a race model"
ck=$(ls -d "$T"/m/ckpt-* | head -n 1)
replaced "ckpt verify" "$ck" MANIFEST "$BATON" ckpt verify "$ck"
replaced "ckpt verify" "$ck" model.safetensors "$BATON" ckpt verify "$ck"
refused "a league database" "$BATON" race leaderboard --db {}

# outputs: a character device or a FIFO with a reader is written into, never replaced by a
# regular file (renaming a temporary file over /dev/null, as root, replaced the device itself);
# a FIFO nobody reads is refused at once, a folder named as the file is refused
mknod "$T/null" c 1 3 && ln -s "$T/null" "$T/nlink"
check '"$BATON" race track oval --svg "$T/null" >/dev/null 2>"$T/err" && [ -c "$T/null" ]' \
    "--svg to a character device: written into, still a device: $(ls -l "$T/null"; head -c 300 "$T/err")"
check '"$BATON" race track oval --svg "$T/nlink" >/dev/null 2>"$T/err" && [ -L "$T/nlink" ] && [ -c "$T/null" ]' \
    "--svg to a link to a device: the link and the device stay: $(ls -l "$T/nlink" "$T/null")"
check '[ -z "$(ls "$T" | grep "\.tmp\.")" ]' "no temporary file left beside them: $(ls "$T")"
mkfifo "$T/out.fifo"
expect_fail 1 "out.fifo: is a FIFO with no reader" timeout 20 "$BATON" race track oval --svg "$T/out.fifo"
check '[ -p "$T/out.fifo" ]' "the FIFO nobody reads is left as it was"
cat "$T/out.fifo" >"$T/fifo.got" &
rd=$!
check 'timeout 20 "$BATON" race track oval --svg "$T/out.fifo" >/dev/null 2>"$T/err"; wait "$rd"; [ -p "$T/out.fifo" ] && grep -q "</svg>" "$T/fifo.got"' \
    "--svg to a FIFO with a reader: the reader gets the whole picture: $(head -c 300 "$T/err")"
# (/proc/self/fd/1, where /dev/stdout leads: a regression fails here rather than replace /dev/stdout)
check '[ "$("$BATON" race track oval --svg /proc/self/fd/1 2>/dev/null | grep -c "</svg>")" -ge 1 ]' "--svg to standard output prints the picture"
mkdir "$T/adir"
expect_fail 1 "adir: is a directory, expected a regular file" "$BATON" race track oval --svg "$T/adir"
finish
