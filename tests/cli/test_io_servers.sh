#!/usr/bin/env bash
# test_io_servers.sh — the input modes over real servers with faults in between: a packed dataset
# served by nginx (HTTP) and by the RADOS Gateway (S3, SigV4-checked), each behind the fault proxy
# (connections dropped mid-body, 500s now and then). test_io_loader then reads 3 epochs in every
# mode with 10 random restarts and checks every sample arrives exactly once per epoch, in the
# uninterrupted order. Also: push, a wrong secret, a missing dataset, a server that is down.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../servers/lib.sh"
TESTS=${BATON_BUILD:-build}/tests
srv_init
trap 'srv_cleanup; rm -rf "$T"' EXIT   # srv_init's trap replaced lib.sh's, which removed $T

$BATON pack --from fashion-mnist --split test --out "$T/ds" --shard-mb 1 >/dev/null 2>&1 || bad "pack"
srv_nginx "$T"
srv_proxy HP "$NGINX_PORT" --drop-after-bytes 200000 --drop-every 3 --fail-every 7 --seed 1 --log "$T/hp.log"
uris="http://127.0.0.1:$HP/ds/"

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
    echo "skip: S3 part (radosgw not installed)"
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
# server down: a closed port fails fast and names host:port
srv_port DEAD
t0=$SECONDS
expect_fail 1 "127.0.0.1:$DEAD" $BATON bench-io --data "http://127.0.0.1:$DEAD/ds/" --mode pipe --epochs 1 --quiet
check '[ $((SECONDS - t0)) -le 10 ]' "a dead server took $((SECONDS - t0)) s to report"
# 404 shard over HTTP: file mode names the object
mkdir -p "$T/broken"; cp "$T/ds/dataset.json" "$T/ds"/*.idx "$T/broken/"
# every shard is missing; file mode downloads several at once, so any of them may be named first
expect_fail 1 'test-[0-9]+\.rec at offset 0: .*(404|not found)' $BATON bench-io --data "http://127.0.0.1:$NGINX_PORT/broken/" --mode file --epochs 1 --quiet --work-dir "$T/w"
# checksum mismatch in file mode: downloaded again once, then a clear failure
cp -r "$T/ds" "$T/flipped"
python3 - "$T/flipped/test-00002.rec" <<'PY'
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[100]^=1; open(p,'wb').write(b)
PY
expect_fail 1 'test-00002.rec.*(checksum|CRC)' $BATON bench-io --data "http://127.0.0.1:$NGINX_PORT/flipped/" --mode file --epochs 1 --quiet --work-dir "$T/w"
finish
