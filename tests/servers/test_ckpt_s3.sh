#!/usr/bin/env bash
# test_ckpt_s3.sh — `baton train --ckpt-uri s3://…` against a real RADOS Gateway (SigV4-checked):
# every committed checkpoint is uploaded with its MANIFEST object last; a run whose local
# checkpoint folder was deleted restores from the bucket and ends byte-identical to an
# uninterrupted local run; a corrupted newest remote object makes the restore fall back to the
# previous checkpoint (and still end byte-identical); remote retention; a SIGTERM makes the trainer
# upload its final checkpoint before it exits 75, and a fresh machine continues from it; a notice
# whose deadline a slow store's upload cannot meet: the local commit is in at once, the upload is
# left to the next machine, which uploads it and resumes from it (about 16 s); a wrong
# secret and a missing bucket fail with messages that name the bucket and never the secret.
# Skips (exit 77, tests/run.sh's "skipped", with the reason) when radosgw is not installed.
#
# Usage: tests/servers/test_ckpt_s3.sh   (BATON: the binary, default build/baton)
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
. tests/servers/lib.sh
if ! srv_have_rgw; then
    skip "radosgw is not installed (scripts/deps.sh installs it)"
    finish
    exit $?
fi
srv_init
trap 'srv_cleanup; [ "${BATON_KEEP_TMP:-0}" = 1 ] || rm -rf "$T"' EXIT
srv_rgw
export OMP_NUM_THREADS=2
D=$T/fm
B=ckpt-test
URI=s3://$B/runs/r1
TR="$BATON train --data $D --model mlp --epochs 2 --batch 64 --seed 7 --threads 2 --quiet --ckpt-every-steps 5"

# SigV4-signed curl against the gateway (curl 7.88 needs the payload header added by hand)
s3curl() {
    curl -sS -m 30 --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
        --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}
EP=${AWS_ENDPOINT_URL%/}
keys() { s3curl "$EP/$B?list-type=2&prefix=runs%2Fr1%2F" | grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g' | sort; }

check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"
check '[ "$(s3curl -o /dev/null -w "%{http_code}" -X PUT "$EP/$B")" = 200 ]' "create bucket"

# the uninterrupted local run
check '$TR --ckpt-dir "$T/a" --max-steps 30 >/dev/null' "local run to 30 steps"

# upload: 15 steps, checkpoints at 5, 10, 15
$TR --ckpt-dir "$T/b" --ckpt-uri "$URI" --max-steps 15 >/dev/null 2>"$T/b1.err"
check '[ $? -eq 0 ]' "run with --ckpt-uri to 15: $(cat "$T/b1.err")"
keys >"$T/keys1"
check 'grep -qx "runs/r1/ckpt-000000015/MANIFEST" "$T/keys1"' "MANIFEST of step 15 uploaded: $(cat "$T/keys1")"
for f in model.safetensors optim.safetensors state.json; do
    check 'grep -qx "runs/r1/ckpt-000000015/$f" "$T/keys1"' "$f of step 15 uploaded"
done
# background uploads may be superseded by newer ones, so 1 to 3 of steps 5, 10, 15 are complete
n=$(grep -c /MANIFEST "$T/keys1")
check '[ "$n" -ge 1 ] && [ "$n" -le 3 ]' "$n complete checkpoints remotely"
s3curl -o "$T/man15" "$EP/$B/runs/r1/ckpt-000000015/MANIFEST"
check 'cmp -s "$T/man15" "$T/b/ckpt-000000015/MANIFEST"' "remote MANIFEST equals the local one"
s3curl -o "$T/model15" "$EP/$B/runs/r1/ckpt-000000015/model.safetensors"
check 'cmp -s "$T/model15" "$T/b/ckpt-000000015/model.safetensors"' "remote model equals the local one"

# stateless compute: the local folder is gone; restore from S3 and continue to 30
rm -rf "$T/b"
$TR --ckpt-dir "$T/b" --ckpt-uri "$URI" --max-steps 30 >/dev/null 2>"$T/b2.err"
check '[ $? -eq 0 ]' "resumed run: $(cat "$T/b2.err")"
check 'grep -q "restored s3://$B/runs/r1/ckpt-000000015/" "$T/b2.err"' "restored from step 15: $(cat "$T/b2.err")"
check 'cmp -s "$T/a/ckpt-000000030/model.safetensors" "$T/b/ckpt-000000030/model.safetensors"' \
    "restored run's final model is byte-identical to the uninterrupted one"
check 'cmp -s "$T/a/ckpt-000000030/optim.safetensors" "$T/b/ckpt-000000030/optim.safetensors"' \
    "restored run's final optimizer state is byte-identical"
keys >"$T/keys2"
n=$(grep -c /MANIFEST "$T/keys2")
check '[ "$n" -ge 2 ] && [ "$n" -le 3 ] && grep -q ckpt-000000030/MANIFEST "$T/keys2"' \
    "2 or 3 complete checkpoints, 30 among them: $(tr '\n' ' ' <"$T/keys2")"

# a corrupted newest remote object: the restore skips step 30 and falls back to 25
s3curl -o "$T/m30" "$EP/$B/runs/r1/ckpt-000000030/model.safetensors"
python3 - "$T/m30" <<'PY'
import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[-5] ^= 0x40; open(p, 'wb').write(b)
PY
check '[ "$(s3curl -o /dev/null -w "%{http_code}" -T "$T/m30" "$EP/$B/runs/r1/ckpt-000000030/model.safetensors")" = 200 ]' "corrupt the remote model of step 30"
rm -rf "$T/b"
$TR --ckpt-dir "$T/b" --ckpt-uri "$URI" --max-steps 30 >/dev/null 2>"$T/b3.err"
check '[ $? -eq 0 ]' "run after corruption: $(cat "$T/b3.err")"
check 'grep -q "skipping remote checkpoint s3://$B/runs/r1/ckpt-000000030/.*model.safetensors.*CRC32C" "$T/b3.err"' \
    "the corrupted checkpoint is skipped with a warning naming the object: $(cat "$T/b3.err")"
check 'grep -Eq "restored s3://$B/runs/r1/ckpt-0000000(15|20|25)/" "$T/b3.err"' "fell back to an earlier step"
check 'cmp -s "$T/a/ckpt-000000030/model.safetensors" "$T/b/ckpt-000000030/model.safetensors"' \
    "after the fallback the final model is still byte-identical"
s3curl -o "$T/m30b" "$EP/$B/runs/r1/ckpt-000000030/model.safetensors"
check 'cmp -s "$T/m30b" "$T/a/ckpt-000000030/model.safetensors"' "step 30 uploaded again, intact"

# retention with --keep 1: after the final (synchronous) upload only ckpt-15 is left, complete
check '$TR --ckpt-dir "$T/k" --ckpt-uri s3://$B/runs/r2 --keep 1 --max-steps 15 >/dev/null' "run with --keep 1"
s3curl "$EP/$B?list-type=2&prefix=runs%2Fr2%2F" | grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g' | sort >"$T/keys3"
check '[ "$(cat "$T/keys3" | tr "\n" " ")" = "runs/r2/ckpt-000000015/MANIFEST runs/r2/ckpt-000000015/model.safetensors runs/r2/ckpt-000000015/optim.safetensors runs/r2/ckpt-000000015/state.json " ]' \
    "remote retention keeps one checkpoint: $(tr '\n' ' ' <"$T/keys3")"

# an interruption (SIGTERM): exit 75 only after the final checkpoint is committed AND uploaded; a
# fresh machine restores it and ends byte-identical to an uninterrupted run. The signal goes out
# once any checkpoint is committed (retention deletes early ones); 600 steps (~0.8 s here) leave a
# fast machine time to be interrupted mid-run
TN="$BATON train --data $D --model mlp --epochs 4 --batch 64 --seed 7 --threads 2 --quiet --max-steps 600"
check '$TN --ckpt-dir "$T/u600" --ckpt-every-steps 10 >/dev/null' "local run to 600 steps"
$TN --ckpt-dir "$T/s" --ckpt-uri s3://$B/runs/r3 --ckpt-every-steps 10 >"$T/s.out" 2>"$T/s.err" &
tp=$!
check 'wait_ckpt "$T/s"' "SIGTERM: first checkpoint appears"
kill -TERM "$tp"
wait "$tp"
rc=$?
last=$(ls -d "$T/s"/ckpt-* 2>/dev/null | sort | tail -n 1 | xargs -n1 basename 2>/dev/null)
echo "interrupted: exit $rc, newest checkpoint ${last:-none}"
check '[ "$rc" -eq 75 ] && [ -n "$last" ]' "SIGTERM: exit $rc (want 75), newest local checkpoint ${last:-none}: $(tail -c 400 "$T/s.err")"
s3curl "$EP/$B?list-type=2&prefix=runs%2Fr3%2F" | grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g' >"$T/keys4"
check 'grep -qx "runs/r3/$last/MANIFEST" "$T/keys4"' "the interruption checkpoint $last is uploaded before exit 75"
check 'grep -Eq "^interruption: sigterm notice at .*, deadline \+30\.0 s, step [0-9]+ committed at \+[0-9.]+ s, uploaded at \+[0-9.]+ s, exit at \+[0-9.]+ s, margin [0-9.]+ s$" "$T/s.out"' \
    "a fast store: the summary says uploaded before the exit, inside the deadline: $(cat "$T/s.out")"
rm -rf "$T/s"
$TN --ckpt-dir "$T/s" --ckpt-uri s3://$B/runs/r3 --ckpt-every-steps 10 >/dev/null 2>"$T/s2.err"
check '[ $? -eq 0 ] && grep -q "restored s3://$B/runs/r3/$last/" "$T/s2.err"' "a fresh machine restores $last: $(cat "$T/s2.err")"
check 'cmp -s "$T/u600/ckpt-000000600/model.safetensors" "$T/s/ckpt-000000600/model.safetensors"' \
    "after interruption and restore the final model is byte-identical"

# a deadline the upload cannot meet: each request through the proxy waits 2 s, so an upload (about
# six requests) takes 12 s or more; a SIGTERM with a 10 s deadline (margin 2 s) once one upload has
# been measured. The checkpoint is committed locally at once, its upload is left to the next
# machine (no MANIFEST object: nothing claimed), exit 75 long before the deadline; the next run on
# the same folder (the volume a fleet carries over) uploads it through the fast store and resumes.
srv_proxy SLOW "$RGW_PORT" --delay-ms 2000
TD="$BATON train --data $D --model mlp --epochs 50 --batch 64 --seed 7 --threads 2 --quiet --ckpt-every-steps 20 --term-grace 10 --deadline-margin 2"
BATON_RESULT_FILE=$T/dl.json $TD --ckpt-dir "$T/dl" --ckpt-uri s3://$B/runs/r4 --s3-endpoint "http://127.0.0.1:$SLOW" \
    --max-steps 100000 >"$T/dl.out" 2>"$T/dl.err" &
tp=$!
r4keys() { s3curl "$EP/$B?list-type=2&prefix=runs%2Fr4%2F" | grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g'; }
for _ in $(seq 1 400); do r4keys | grep -q /MANIFEST && break; sleep 0.1; done
t0=$(date +%s.%N)
kill -TERM "$tp"
wait "$tp"
rc=$?
took=$(echo "$(date +%s.%N) - $t0" | bc)
last=$(ls -d "$T/dl"/ckpt-* 2>/dev/null | sort | tail -n 1 | xargs -n1 basename 2>/dev/null)
echo "slow store: exit $rc after $took s, newest checkpoint ${last:-none}"
check '[ "$rc" -eq 75 ] && [ -n "$last" ] && [ "$(echo "$took < 8" | bc)" = 1 ]' \
    "slow store: exit $rc (want 75) $took s after the signal (want < 8): $(tail -c 600 "$T/dl.err")"
check '"$BATON" ckpt verify "$T/dl/$last" >/dev/null' "slow store: the local commit $last verifies"
check 'grep -q "^interruption: sigterm notice at .*, deadline +10.0 s, step [0-9]* committed at +[0-9.]* s, left to the next machine, exit at" "$T/dl.out"' \
    "slow store: the summary says the upload is left to the next machine: $(cat "$T/dl.out")"
check 'grep -q "left to the next machine: an upload takes [0-9.]* s here" "$T/dl.err"' \
    "slow store: why, from the measured upload: $(grep -i left "$T/dl.err")"
check '! r4keys | grep -qx "runs/r4/$last/MANIFEST"' "slow store: no upload of $last is claimed"
check 'python3 - "$T/dl.json" <<PY
import json, sys
i = json.load(open(sys.argv[1]))["interruption"]
assert i["upload"] == "left to the next machine" and i["upload_estimate_s"] >= 10, i
assert i["notice_at"] <= i["commit_at"] <= i["exit_at"] < i["deadline"] - 2 and i["margin_s"] > 2, i
PY' "slow store: the result file's interruption: $(cat "$T/dl.json")"
n=$((10#${last#ckpt-}))
$TD --ckpt-dir "$T/dl" --ckpt-uri s3://$B/runs/r4 --max-steps $((n + 20)) >"$T/dl2.out" 2>"$T/dl2.err"
check '[ $? -eq 0 ] && grep -q "checkpoint $n was left to this machine by the previous one: uploading it" "$T/dl2.err"' \
    "the next machine uploads $last: $(cat "$T/dl2.err")"
check 'r4keys | grep -qx "runs/r4/$last/MANIFEST" && grep -q "^step $((n + 20)), " "$T/dl2.out"' \
    "$last is uploaded, and the run resumed from it to step $((n + 20)): $(cat "$T/dl2.out")"

# errors name the bucket, never the secret
rm -rf "$T/c"
AWS_SECRET_ACCESS_KEY=wrong-secret-xyz $TR --ckpt-dir "$T/c" --ckpt-uri "$URI" --max-steps 5 >/dev/null 2>"$T/e1"
rc=$?
check '[ $rc -eq 1 ] && grep -q "s3://$B/runs/r1/" "$T/e1" && grep -q 403 "$T/e1" && ! grep -q wrong-secret-xyz "$T/e1"' \
    "wrong secret: exit $rc: $(cat "$T/e1")"
expect_fail 1 "s3://no-such-bucket-x/r/.*(NoSuchBucket|404)" $TR --ckpt-dir "$T/d" --ckpt-uri s3://no-such-bucket-x/r --max-steps 5
[ -n "${BATON_TEST_VERBOSE:-}" ] && cat "$T/b3.err" "$T/e1" "$T/err" >&2
finish
