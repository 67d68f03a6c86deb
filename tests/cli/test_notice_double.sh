#!/usr/bin/env bash
# test_notice_double.sh — the notice watcher against an EC2 metadata double written from AWS's
# documentation (tests/tools/imds_double.py), not against baton's own emulator:
#   - IMDSv2 required: a token is asked for (a TTL EC2 accepts), every read carries it, a terminate
#     notice is returned with the double's time as the deadline; when the double forgets its tokens
#     (401), the watcher asks for a new one and still sees the notice;
#   - IMDSv2 off (the token PUT refused): the watcher reads without a token (IMDSv1);
#   - stop and hibernate actions; a rebalance recommendation with --rebalance;
#   - answers that are almost right are not believed (an unknown action, a time with +00:00 instead
#     of Z): the wait times out (exit 1);
#   - `baton train` on the double: a terminate notice mid-run, exit 75 after a committed checkpoint
#     that verifies.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
unset AWS_EC2_METADATA_SERVICE_ENDPOINT AWS_EC2_METADATA_DISABLED
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
n=0
double() {   # double ARGS...: start the double; sets URL and LOG
    n=$((n + 1)); LOG=$T/double-$n.log
    python3 tests/tools/imds_double.py --log "$LOG" "$@" >"$T/double-$n.url" 2>"$T/double-$n.err" &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$T/double-$n.url" ] && break; sleep 0.05; done
    URL=$(cat "$T/double-$n.url")
}
W="$BATON notice wait --json --poll 0.1"

double --v2-required --action terminate --after 0.3
check '$W --endpoint "$URL" --timeout 10 >"$T/w1.json" 2>/dev/null' "IMDSv2 required: the notice is seen"
t=$(sed -n 's/.*instance-action 200 \(.*\)$/\1/p' "$LOG" | head -1)
check 'grep -q "\"action\":\"terminate\"" "$T/w1.json" && grep -q "\"deadline\":\"$t\"" "$T/w1.json" && grep -q "\"source\":\"imds-v2\"" "$T/w1.json"' \
    "terminate, the double's time ($t) as the deadline, over IMDSv2"
check 'grep -Eq "^PUT /latest/api/token 200 ttl=[0-9]+$" "$LOG" && ! grep -q " 401 " "$LOG" && ! grep -q "^PUT.* 400" "$LOG"' \
    "a token with a TTL EC2 accepts, and every read carried it"

double --v2-required --action terminate --after 1 --forget-tokens-after 0.5
check '$W --endpoint "$URL" --timeout 10 >"$T/w2.json" 2>/dev/null && grep -q "\"action\":\"terminate\"" "$T/w2.json"' \
    "tokens forgotten (401): the notice is still seen"
check '[ "$(grep -c "^PUT /latest/api/token 200" "$LOG")" -ge 2 ] && grep -q " 401 " "$LOG"' "a new token was asked for after the 401"

double --v1-only --action stop --after 0.3
check '$W --endpoint "$URL" --timeout 10 >"$T/w3.json" 2>/dev/null && grep -q "\"action\":\"stop\"" "$T/w3.json" &&
       grep -q "^PUT /latest/api/token 403" "$LOG"' "IMDSv2 off: read without a token (stop)"

double --v2-required --action hibernate --after 0.2 --slide
check '$W --endpoint "$URL" --timeout 10 2>/dev/null | grep -q "\"action\":\"hibernate\""' "hibernate"

double --v2-required --rebalance-after 0.2
check '$W --rebalance --endpoint "$URL" --timeout 10 2>/dev/null | grep -q "rebalance"' "a rebalance recommendation with --rebalance"
check '! $W --endpoint "$URL" --timeout 1 >/dev/null 2>&1' "without --rebalance it is not a notice (times out)"

double --v2-required --action terminated --after 0
expect_fail 1 "." $W --endpoint "$URL" --timeout 1.5
check 'grep -q "instance-action 200" "$LOG"' "an unknown action ('terminated') was answered and not believed"
double --v2-required --action terminate --after 0 --time-format offset
expect_fail 1 "." $W --endpoint "$URL" --timeout 1.5
check 'grep -q "instance-action 200 .*+00:00" "$LOG"' "a time with +00:00 instead of Z was answered and not believed"

# baton train on the double
D=$T/fm
check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"
double --v2-required --action terminate --after 1
AWS_EC2_METADATA_SERVICE_ENDPOINT=$URL BATON_NOTICE_POLL_S=0.1 OMP_NUM_THREADS=2 "$BATON" train --data "$D" --model lenet \
    --epochs 2 --batch 64 --seed 7 --threads 2 --quiet --ckpt-dir "$T/ck" >"$T/train.out" 2>"$T/train.err"
rc=$?
check '[ $rc -eq 75 ] && grep -q "stopped on a terminate notice (imds-v2)" "$T/train.out" && "$BATON" ckpt verify "$T/ck" >/dev/null 2>&1' \
    "train: exit 75 on the double's notice, its checkpoint verifies (exit $rc: $(tail -2 "$T/train.out"))"
finish
