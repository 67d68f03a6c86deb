#!/bin/sh
# fake_trainer.sh TOTAL EVERY [CRASH_AT] — a stand-in for a trainer, for fleet tests: "trains" TOTAL
# steps (about 20 ms each), commits a checkpoint folder ckpt/ckpt-<step>/ every EVERY steps (the
# layout `baton train` uses, published by rename), resumes from the newest one, keeps its step in
# $BATON_PROGRESS_FILE, and on an interruption notice (`baton notice wait` in the background)
# checkpoints the step it reached and exits 75. With CRASH_AT it exits 3 at that step once (a
# marker file on the volume remembers). Done: writes done.txt with the final step, exits 0.
total=$1 every=$2 crash_at=${3:-}
mkdir -p ckpt
step=0
for d in ckpt/ckpt-*; do
    [ -f "$d/MANIFEST" ] || continue
    s=$(echo "${d#ckpt/ckpt-}" | sed 's/^0*//'); s=${s:-0}
    [ "$s" -gt "$step" ] && step=$s
done
echo "resumed at $step" >&2
echo "ckpt-every ${BATON_CKPT_EVERY:-} mtbi ${BATON_SPOT_MTBI_S:-}" >&2   # what the fleet tells a trainer to plan with
commit() {
    name=$(printf 'ckpt-%09d' "$step")
    [ -d "ckpt/$name" ] && return
    rm -rf "ckpt/.$name.tmp"
    mkdir -p "ckpt/.$name.tmp"
    printf 'weights at %s\n' "$step" >"ckpt/.$name.tmp/model.safetensors"
    printf 'optim\n' >"ckpt/.$name.tmp/optim.safetensors"
    printf '{"step":%s}\n' "$step" >"ckpt/.$name.tmp/state.json"
    {
        echo "baton-ckpt 1"
        for f in model.safetensors optim.safetensors state.json; do
            echo "$f $(wc -c <"ckpt/.$name.tmp/$f" | tr -d ' ') 00000000"
        done
    } >"ckpt/.$name.tmp/MANIFEST"
    mv "ckpt/.$name.tmp" "ckpt/$name"
}
baton notice wait >notice.txt 2>/dev/null &
watcher=$!
while [ "$step" -lt "$total" ]; do
    if ! kill -0 "$watcher" 2>/dev/null; then
        wait "$watcher" && { commit; echo "notice at step $step" >&2; exit 75; }
    fi
    if [ -n "$crash_at" ] && [ "$step" -eq "$crash_at" ] && [ ! -e crashed.once ]; then
        touch crashed.once
        echo "crashing at step $step" >&2
        kill -KILL "$watcher" 2>/dev/null
        exit 3
    fi
    sleep 0.02
    step=$((step + 1))
    if [ -n "${BATON_PROGRESS_FILE:-}" ]; then   # replaced whole, never seen half-written
        echo "$step" >"$BATON_PROGRESS_FILE.tmp" && mv "$BATON_PROGRESS_FILE.tmp" "$BATON_PROGRESS_FILE"
    fi
    [ $((step % every)) -eq 0 ] && commit
done
commit
kill -KILL "$watcher" 2>/dev/null
echo "$step" >done.txt
exit 0
