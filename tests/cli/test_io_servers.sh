#!/usr/bin/env bash
# test_io_servers.sh — the input modes over real servers with faults in between: a packed dataset
# served by nginx (HTTP) and by the RADOS Gateway (S3, SigV4-checked), each behind the fault proxy
# (connections dropped mid-body, 500s now and then). test_io_loader then reads 3 epochs in every
# mode with 10 random restarts and checks every sample arrives exactly once per epoch, in the
# uninterrupted order. Then the bytes each server sends for train, eval, channel and bench-io: each
# epoch's data once. Also: push, a wrong secret, a missing dataset, a server that is down, and
# temporary credentials on the wire (AWS_SESSION_TOKEN: x-amz-security-token sent and signed, each
# signature the one botocore computes for the request nginx received).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../servers/lib.sh"
TESTS=${BATON_BUILD:-build}/tests
srv_init
trap 'srv_cleanup; [ "${BATON_KEEP_TMP:-0}" = 1 ] || rm -rf "$T"' EXIT   # srv_init's trap replaced lib.sh's, which removed $T

# (pieces of 4 KiB: a run that ends inside the dataset's one block fetches the whole pieces around
# the records it needs — at the default 256 KiB those are all of this small dataset — so the runs
# that stop early stop after 2 steps: 128 records, about a piece and a half each)
$BATON pack --from fashion-mnist --split test --out "$T/ds" --shard-mb 1 --piece-kb 4 >/dev/null 2>&1 || bad "pack"
srv_nginx "$T"
srv_proxy HP "$NGINX_PORT" --drop-after-bytes 200000 --drop-every 3 --fail-every 7 --seed 1 --log "$T/hp.log"
uris="http://127.0.0.1:$HP/ds/"

# temporary credentials on the wire: with AWS_SESSION_TOKEN every S3 request carries it in
# x-amz-security-token, signs it, and its SigV4 signature is botocore's for the same request (what
# nginx received, its headers log; nginx serves the folder as a path-style bucket and checks no
# signature itself, botocore does)
mkdir -p "$T/wire-bucket" && ln -s "$T/ds" "$T/wire-bucket/ds"
HL="$SRV/nginx/headers.log"
before=$(wc -l <"$HL")
TOKEN='FwoGZXIvYXdzEXAMPLE-session/token+x=='
AWS_ENDPOINT_URL="http://127.0.0.1:$NGINX_PORT" AWS_ACCESS_KEY_ID=AKIDWIRETEST AWS_SECRET_ACCESS_KEY=wire-secret-abc \
    AWS_SESSION_TOKEN=$TOKEN $BATON bench-io --data s3://wire-bucket/ds/ --mode pipe --epochs 1 --quiet --svg "$T/wire.svg" \
    >/dev/null 2>"$T/wire.err" || bad "bench-io with a session token: $(cat "$T/wire.err")"
tail -n +"$((before + 1))" "$HL" >"$T/wire.log"
check 'python3 tests/tools/sigv4_check.py "$T/wire.log" AKIDWIRETEST wire-secret-abc "$TOKEN" >"$T/wire.out" 2>&1 &&
       [ "$(grep -c " token=\[$TOKEN\]" "$T/wire.log")" -ge 10 ]' \
    "AWS_SESSION_TOKEN: every request carries and signs x-amz-security-token, botocore agrees: $(tail -3 "$T/wire.out")"
check '! python3 tests/tools/sigv4_check.py "$T/wire.log" AKIDWIRETEST another-secret "$TOKEN" >/dev/null 2>&1' \
    "the signature check fails with another secret (it can fail)"

if srv_have_rgw; then
    srv_rgw
    $BATON push "$T/ds" s3://baton-test/ds --create-bucket --quiet >/dev/null 2>"$T/e" || bad "push: $(cat "$T/e")"
    srv_proxy SP "$RGW_PORT" --drop-after-bytes 150000 --drop-every 4 --fail-every 9 --seed 2 --log "$T/sp.log"
    uris="$uris s3://baton-test/ds/"
    # errors: wrong secret names the key id, never the secret
    AWS_SECRET_ACCESS_KEY=wrong-secret-xyz $BATON bench-io --data s3://baton-test/ds/ --mode pipe --epochs 1 --quiet >"$T/o" 2>"$T/e"
    rc=$?
    check '[ $rc -eq 1 ] && grep -q "403" "$T/e" && grep -q "$AWS_ACCESS_KEY_ID" "$T/e" && ! grep -q "wrong-secret-xyz" "$T/e"' "wrong secret: $(cat "$T/e")"
    expect_fail 1 's3://baton-test/nothing-here/dataset.json.*(404|not found|NoSuchKey)' \
        $BATON bench-io --data s3://baton-test/nothing-here/ --mode pipe --epochs 1 --quiet
    export AWS_ENDPOINT_URL="http://127.0.0.1:$SP"
else
    skip "the S3 part: radosgw is not installed (scripts/deps.sh installs it)"
fi

BATON_TEST_URIS="$uris" BATON_TEST_DATASET="$T/ds" "$TESTS/test_io_loader" >"$T/loader.out" 2>&1 || bad "loader over servers: $(tail -20 "$T/loader.out")"
check 'grep -q "passed, 0 failed" "$T/loader.out"' "test_io_loader: $(tail -5 "$T/loader.out")"
grep ' ok:' "$T/loader.out" || true
for log in "$T"/hp.log "$T"/sp.log; do
    [ -f "$log" ] || continue
    drops=$(grep -c 'action=drop' "$log" || true); fails=$(grep -c 'action=fail500' "$log" || true)
    echo "$(basename "$log"): $(wc -l <"$log") connections, $drops dropped mid-body, $fails answered 500"
    check '[ "$drops" -gt 10 ] && [ "$fails" -gt 10 ]' "$log: too few faults injected ($drops drops, $fails 500s)"
done

# the data path alone (--no-decode): every mode reads every record of every epoch
n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$T/ds/dataset.json")
$BATON bench-io --data "http://127.0.0.1:$NGINX_PORT/ds/" --mount-path "$T/ds" --mode all --epochs 2 --no-decode \
    --json --quiet --work-dir "$T/w" --svg "$T/nd.svg" >"$T/nd.json" 2>"$T/nd.err" || bad "bench-io --no-decode: $(cat "$T/nd.err")"
check "[ \$(grep -c '\"samples\":$((2 * n)),' \"$T/nd.json\") -eq 4 ]" "bench-io --no-decode: $(cat "$T/nd.json")"
# what the servers send: each epoch's bytes once, nothing past the run's end (pipe mode used to
# fetch the data 2-4 times per pass: the loader streamed the next epochs ahead of time). nginx's
# access log gives the body bytes of every shard GET; for S3 a fault-free proxy's log gives the
# bytes of every answer (headers included: up to 1 KiB a request is allowed for them).
data=$(python3 -c 'import json,sys; print(sum(s["bytes"] for s in json.load(open(sys.argv[1]))["shards"]))' "$T/ds/dataset.json")
ACC="$SRV/nginx/access.log"
sent() {  # sent KIND: shard bytes sent since the last reset, and the number of requests
    sleep 0.3   # the servers log a request when it has ended
    if [ "$1" = http ]; then awk '$7 ~ /^\/ds\/[^ ]*\.rec$/ {b += $10; n++} END {print b + 0, n + 0}' "$ACC"
    else awk '/request="GET [^ ]*\/ds\/[^ ]*\.rec / {split($4, d, "="); b += d[2]; n++} END {print b + 0, n + 0}' "$T/s3count.log"; fi
}
reset_sent() { : >"$ACC"; [ -f "$T/s3count.log" ] && : >"$T/s3count.log"; true; }
once() {  # once KIND LABEL TIMES CMD...: the server sent TIMES x the dataset's bytes for CMD
    local kind=$1 label=$2 times=$3 b n want; shift 3
    reset_sent
    "$@" >"$T/once.out" 2>&1 || { bad "$label: $(tail -3 "$T/once.out")"; return; }
    read -r b n <<<"$(sent "$kind")"
    want=$(python3 -c "print(int($times * $data))")
    if [ "$kind" = http ]; then check "[ $b -eq $want ]" "$label: $kind server sent $b bytes in $n requests, want $want"
    else check "[ $b -ge $want ] && [ $b -le $((want + n * 1024)) ]" "$label: $kind server sent $b bytes in $n requests, want $want"; fi
    echo "$label ($kind): $b bytes in $n requests ($(python3 -c "print(f'{$b / $data:.2f}')")x the dataset)"
}
fewer() {  # fewer KIND LABEL CMD...: the server sent less than a quarter of the dataset
    local kind=$1 label=$2 b n; shift 2
    reset_sent
    "$@" >"$T/once.out" 2>&1 || { bad "$label: $(tail -3 "$T/once.out")"; return; }
    read -r b n <<<"$(sent "$kind")"
    check "[ $b -gt 0 ] && [ $b -lt $((data / 4)) ]" "$label: $kind server sent $b bytes in $n requests of $data"
    echo "$label ($kind): $b bytes in $n requests ($(python3 -c "print(f'{$b / $data:.2f}')")x the dataset)"
}
H="http://127.0.0.1:$NGINX_PORT/ds/"
once http "train --epochs 1" 1 $BATON train --data "$H" --model mlp --epochs 1 --ckpt-dir "$T/o1" --quiet
once http "train --epochs 2" 2 $BATON train --data "$H" --model mlp --epochs 2 --ckpt-dir "$T/o2" --quiet
fewer http "train --max-steps 2" $BATON train --data "$H" --model mlp --epochs 1 --max-steps 2 --ckpt-dir "$T/o3" --quiet
once http "train --val, 2 epochs" 4 $BATON train --data "$H" --val "$H" --model mlp --epochs 2 --ckpt-dir "$T/o4" --quiet
once http "eval" 1 $BATON eval --ckpt "$T/o1" --data "$H"
mkdir -p "$T/fifo"
( for _ in $(seq 1 100); do [ -p "$T/fifo/train_0" ] && break; sleep 0.05; done; cat "$T/fifo/train_0" >/dev/null ) &
reader=$!
once http "channel --epochs 1" 1 $BATON channel --data "$H" --fifo-dir "$T/fifo" --epochs 1 --quiet --open-timeout 30
wait "$reader"
once http "bench-io pipe, 2 epochs" 2 $BATON bench-io --data "$H" --mode pipe --epochs 2 --json --quiet --work-dir "$T/w" --svg "$T/b.svg"
check "grep -q '\"epoch_fetched\":\[$data,$data\]' \"$T/once.out\"" "bench-io pipe's epoch_fetched: $(cat "$T/once.out")"
once http "bench-io cache, 2 epochs" 1 $BATON bench-io --data "$H" --mode cache --epochs 2 --json --quiet --work-dir "$T/w" --svg "$T/b.svg"
check "grep -q '\"epoch_fetched\":\[$data,0\]' \"$T/once.out\"" "bench-io cache's epoch_fetched: $(cat "$T/once.out")"
once http "bench-io file, 2 epochs" 1 $BATON bench-io --data "$H" --mode file --epochs 2 --quiet --work-dir "$T/w" --svg "$T/b.svg"
once http "train --mode file, 2 epochs" 1 $BATON train --data "$H" --mode file --model mlp --epochs 2 --ckpt-dir "$T/o5" --quiet
once http "train --mode cache, 2 epochs" 1 $BATON train --data "$H" --mode cache --model mlp --epochs 2 --ckpt-dir "$T/o6" --quiet
# data-parallel ranks share one copy per machine: W = 2 on one machine fetches the dataset once in
# cache and file modes (each rank used to keep and fetch its own); 4 ranks on two machines (two per
# BATON_DIST_NODE, this machine standing in for both) fetch it once per machine. The plain build
# only: under the sanitizers test_io_share covers the same threads (and mpirun quadruples the time)
if command -v mpirun >/dev/null && [ "${BATON_BUILD:-build}" != build-san ]; then
    MR="env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 mpirun --bind-to none -n"
    DT="$BATON train --data $H --model mlp --batch 128 --threads 1 --quiet --no-notice"
    once http "train, 2 ranks, --mode cache, 2 epochs" 1 $MR 2 $DT --mode cache --epochs 2 --ckpt-dir "$T/dc"
    check '[ -d "$T/dc/data" ] && ! ls -d "$T/dc"/data-rank* 2>/dev/null' "2 ranks of one machine keep one copy"
    once http "train, 2 ranks, --mode file, 1 epoch" 1 $MR 2 $DT --mode file --epochs 1 --ckpt-dir "$T/df"
    once http "train, 4 ranks on 2 machines, --mode cache, 2 epochs" 2 $MR 4 sh -c \
        "BATON_DIST_NODE=m\$((OMPI_COMM_WORLD_RANK / 2)) exec $DT --mode cache --epochs 2 --ckpt-dir $T/d4"
    check '[ -d "$T/d4/data" ] && [ -d "$T/d4/data-rank2" ] && [ "$(ls -d "$T/d4"/data* | wc -l)" -eq 2 ]' \
        "two machines: one copy each, named after their first rank ($(ls "$T/d4" | tr '\n' ' '))"
    # ranks of one machine whose --ckpt-dir is not the same folder (a relative path under another
    # working directory) each keep and fetch their own copy instead of waiting for one another
    mkdir -p "$T/dd0" "$T/dd1"
    AB="$(cd "$(dirname "$BATON")" && pwd)/$(basename "$BATON")"
    once http "train, 2 ranks, each its own folder, --mode cache, 1 epoch" 2 $MR 2 sh -c \
        "cd $T/dd\$OMPI_COMM_WORLD_RANK && exec ${DT/$BATON/$AB} --mode cache --epochs 1 --ckpt-dir ck"
fi
if [ -n "${RGW_PORT:-}" ]; then
    srv_proxy CP "$RGW_PORT" --log "$T/s3count.log"
    S="s3://baton-test/ds/"
    once s3 "train --epochs 1" 1 env AWS_ENDPOINT_URL="http://127.0.0.1:$CP" $BATON train --data "$S" --model mlp --epochs 1 --ckpt-dir "$T/s1" --quiet
    once s3 "train --epochs 2" 2 env AWS_ENDPOINT_URL="http://127.0.0.1:$CP" $BATON train --data "$S" --model mlp --epochs 2 --ckpt-dir "$T/s2" --quiet
    fewer s3 "train --max-steps 2" env AWS_ENDPOINT_URL="http://127.0.0.1:$CP" $BATON train --data "$S" --model mlp --epochs 1 --max-steps 2 --ckpt-dir "$T/s3" --quiet
    once s3 "eval" 1 env AWS_ENDPOINT_URL="http://127.0.0.1:$CP" $BATON eval --ckpt "$T/s1" --data "$S"
    once s3 "bench-io pipe, 2 epochs" 2 env AWS_ENDPOINT_URL="http://127.0.0.1:$CP" $BATON bench-io --data "$S" --mode pipe --epochs 2 --quiet --work-dir "$T/w" --svg "$T/b.svg"
    once s3 "bench-io cache, 2 epochs" 1 env AWS_ENDPOINT_URL="http://127.0.0.1:$CP" $BATON bench-io --data "$S" --mode cache --epochs 2 --quiet --work-dir "$T/w" --svg "$T/b.svg"
    once s3 "bench-io file, 2 epochs" 1 env AWS_ENDPOINT_URL="http://127.0.0.1:$CP" $BATON bench-io --data "$S" --mode file --epochs 2 --quiet --work-dir "$T/w" --svg "$T/b.svg"
fi

# server down: a closed port fails fast and names host:port
srv_port DEAD
t0=$SECONDS
expect_fail 1 "127.0.0.1:$DEAD" $BATON bench-io --data "http://127.0.0.1:$DEAD/ds/" --mode pipe --epochs 1 --quiet
check '[ $((SECONDS - t0)) -le 10 ]' "a dead server took $((SECONDS - t0)) s to report"
# 404 shard over HTTP: file mode names the object
mkdir -p "$T/broken"; cp "$T/ds/dataset.json" "$T/ds"/*.idx "$T/broken/"
# every shard is missing; file mode asks for the pieces of its first records at once, so any shard
# and offset may be named first
expect_fail 1 'test-[0-9]+\.rec at offset [0-9]+: .*(404|not found)' $BATON bench-io --data "http://127.0.0.1:$NGINX_PORT/broken/" --mode file --epochs 1 --quiet --work-dir "$T/w"
# checksum mismatch in file mode: fetched again once, then a clear failure
cp -r "$T/ds" "$T/flipped"
python3 - "$T/flipped/test-00002.rec" <<'PY'
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[100]^=1; open(p,'wb').write(b)
PY
expect_fail 1 'test-00002.rec.*(checksum|CRC)' $BATON bench-io --data "http://127.0.0.1:$NGINX_PORT/flipped/" --mode file --epochs 1 --quiet --work-dir "$T/w"
finish
