#!/usr/bin/env bash
# test_storage_faults.sh — the disk itself failing, on a real size-limited file system (a tmpfs
# with a size; needs root): no mock and no injected errno, the kernel's own ENOSPC and EROFS.
#   - checkpoints: the disk full at a sweep of points of a save (free space from a tenth of a
#     checkpoint to several, so the write, the fsyncs, the MANIFEST and the rename each meet it):
#     train exits 1 naming the disk full, every checkpoint listed ok verifies, nothing damaged is
#     listed, no temporary folder is left, the step reached is at most --ckpt-every-steps + 1
#     past the newest committed checkpoint (the background-save bound of docs/checkpoints.md),
#     and once there is room again the rerun ends byte-identical to an uninterrupted run;
#   - the disk remounted read-only in the middle of a run: it stops within the same bound with a
#     clear error, and continues byte-identically once writable again;
#   - cache mode on a disk too small for the copy: a warning, reading goes on in pipe mode, the run
#     finishes;
#   - a pack that does not fit: exit 1 naming the disk full, no dataset.json (so no reader sees a
#     dataset whose shards are not all there), no temporary file left;
#   - the fleet's state folder full: `fleet run` exits 1 with a message, never a crash.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
M=$T/mnt
mkdir -p "$M"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=32m tmpfs "$M" 2>/dev/null; then
    skip "cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)"; finish; exit
fi
trap 'umount -l "$M" 2>/dev/null; [ "${BATON_KEEP_TMP:-0}" = 1 ] || rm -rf "$T"' EXIT
export OMP_NUM_THREADS=1
newest_ok() { "$BATON" ckpt ls "$1" 2>/dev/null | awk '$NF == "ok" { print $1 + 0; exit }'; }
avail() { df -B1 --output=avail "$M" | tail -n 1 | tr -d ' '; }
fill_to() {   # fill_to BYTES: leave about BYTES free on the tmpfs
    rm -f "$M/filler"
    local n=$(($(avail) - $1))
    [ "$n" -gt 0 ] && head -c "$n" /dev/zero >"$M/filler"
    true
}

D=$T/fm
check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"
K=5 STEPS=60
TR="$BATON train --data $D --model mlp --batch 64 --max-steps $STEPS --ckpt-every-steps $K --keep 2 --seed 7 --threads 1 --quiet --no-notice"
FIN=$(printf 'ckpt-%09d' "$STEPS")
check '$TR --ckpt-dir "$T/ref" >/dev/null' "uninterrupted reference run"
CK=$(du -sb "$T/ref/$FIN" | cut -f1)

# checkpoints: the disk full at a sweep of points of a save
fulls=0 points=""
for tenths in 1 3 5 7 9 11 13 16 19 23 27 32; do
    C=$M/ck$tenths
    fill_to $((CK * tenths / 10))
    $TR --ckpt-dir "$C" --progress-file "$T/p" >/dev/null 2>"$T/e"
    rc=$?
    newest=$(newest_ok "$C")
    reached=$((10#$(cat "$T/p" 2>/dev/null || echo 0)))
    if [ "$rc" -ne 0 ]; then
        fulls=$((fulls + 1)) points="$points ${newest:-none}/$reached"
        check '[ "$rc" -eq 1 ] && grep -Eqi "no space left|disk full" "$T/e"' \
            "free $tenths/10 of a checkpoint: exit $rc, want 1 naming the full disk: $(head -c 400 "$T/e")"
        check '[ $((reached - ${newest:-0})) -le $((K + 1)) ]' \
            "free $tenths/10: reached step $reached with the newest checkpoint at ${newest:-none}: more than $((K + 1)) steps at risk"
    fi
    check '! "$BATON" ckpt ls "$C" 2>/dev/null | grep -q CORRUPT' "free $tenths/10: a damaged checkpoint listed: $("$BATON" ckpt ls "$C" 2>&1 | head -4)"
    check '! compgen -G "$C/.ckpt-*" >/dev/null' "free $tenths/10: left behind: $(ls -a "$C" | tr '\n' ' ')"
    [ -z "$newest" ] || check '"$BATON" ckpt verify "$C/$(printf "ckpt-%09d" "$newest")" >/dev/null 2>&1' \
        "free $tenths/10: the newest ok checkpoint ($newest) does not verify"
    rm -f "$M/filler"
    $TR --ckpt-dir "$C" >/dev/null 2>"$T/e2"
    check '[ $? -eq 0 ] && cmp -s "$T/ref/$FIN/model.safetensors" "$C/$FIN/model.safetensors" &&
           cmp -s "$T/ref/$FIN/optim.safetensors" "$C/$FIN/optim.safetensors"' \
        "free $tenths/10: with room again the run does not end byte-identical: $(head -c 300 "$T/e2")"
    rm -rf "$C"
done
check '[ "$fulls" -ge 8 ]' "only $fulls of 12 runs met a full disk"
echo "disk full: $fulls of 12 runs stopped (newest checkpoint/step reached:$points), a checkpoint is $CK bytes"

# the disk remounted read-only mid-run
TL="$BATON train --data $D --model lenet --batch 64 --max-steps 150 --ckpt-every-steps $K --keep 2 --seed 7 --threads 1 --quiet --no-notice"
FL=$(printf "ckpt-%09d" 150)
check '$TL --ckpt-dir "$T/lref" >/dev/null' "uninterrupted lenet run"
C=$M/ro
$TL --ckpt-dir "$C" --progress-file "$T/p" >/dev/null 2>"$T/e" &
pid=$!
for _ in $(seq 400); do [ -n "$(newest_ok "$C")" ] && [ "$(newest_ok "$C")" -ge 20 ] && break; sleep 0.02; done
# the kernel refuses (EBUSY) while a file on it is open for writing, e.g. a checkpoint being
# written: try again until a moment between writes
for _ in $(seq 500); do mount -o remount,ro "$M" 2>/dev/null && break; sleep 0.01; done
wait "$pid"
rc=$?
reached=$((10#$(cat "$T/p" 2>/dev/null || echo 0)))
newest=$(newest_ok "$C")
mount -o remount,rw "$M"
check '[ "$rc" -eq 1 ] && grep -Eqi "read-only" "$T/e"' "read-only mid-run: exit $rc, want 1 naming it: $(head -c 400 "$T/e")"
check '[ -n "$newest" ] && [ $((reached - newest)) -le $((K + 1)) ]' \
    "read-only mid-run: reached $reached, the newest checkpoint ${newest:-none}: more than $((K + 1)) steps at risk"
$TL --ckpt-dir "$C" >/dev/null 2>"$T/e2"
check '[ $? -eq 0 ] && cmp -s "$T/lref/$FL/model.safetensors" "$C/$FL/model.safetensors" &&
       cmp -s "$T/lref/$FL/optim.safetensors" "$C/$FL/optim.safetensors"' \
    "read-only mid-run: writable again, the run does not end byte-identical: $(head -c 300 "$T/e2")"
echo "read-only remount: stopped at step $reached, newest checkpoint $newest"
rm -rf "$C"

# cache mode on a disk too small for the copy: pipe from then on, the run finishes
fill_to $((3 * 1024 * 1024))
$TR --ckpt-dir "$M/cache" --mode cache --epochs 2 >/dev/null 2>"$T/e"
check '[ $? -eq 0 ]' "cache mode on a small disk: $(head -c 400 "$T/e")"
check 'grep -q "caching stops, reading goes on in pipe mode" "$T/e"' "cache mode on a small disk: the warning: $(head -c 300 "$T/e")"
rm -rf "$M/cache" "$M/filler"

# a pack that does not fit
fill_to $((3 * 1024 * 1024))
expect_fail 1 "[Nn]o space left|disk full" "$BATON" pack --from fashion-mnist --split test --out "$M/pk" --shard-mb 1 --quiet
check '[ ! -e "$M/pk/dataset.json" ] && ! compgen -G "$M/pk/*.tmp.*" >/dev/null' \
    "a pack that does not fit left: $(ls "$M/pk" 2>/dev/null | tr '\n' ' ')"
rm -rf "$M/pk" "$M/filler"

# the fleet's state folder full
printf 'name: full\ncommand: sh -c true\ninstance_types: [c5.xlarge]\nzones: [us-east-1a]\n' >"$T/full.yaml"
fill_to 8192
"$BATON" fleet run "$T/full.yaml" --state "$M/st" --quiet >/dev/null 2>"$T/e"
rc=$?
check '[ "$rc" -eq 1 ] && grep -q . "$T/e"' "fleet run with its state folder full: exit $rc, want 1 with a message: $(head -c 300 "$T/e")"
rm -f "$M/filler"
finish
