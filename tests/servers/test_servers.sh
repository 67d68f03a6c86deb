#!/usr/bin/env bash
# test_servers.sh — self-test of the loopback test servers in tests/servers/:
# nginx.sh (static files, full and Range GETs, byte-exact), faultproxy.c
# (transparent relay, mid-body drop, HTTP 500 injection, self-exit), and, when
# the Ceph packages are installed, rgw.sh + s3check.sh (a real SigV4-verifying
# S3 endpoint, directly and through the proxy).
#
# Owns: one mktemp folder (faultproxy binary, served files, server state),
# the servers it starts on free 127.0.0.1 ports; all stopped and removed by a
# trap on EXIT. Needs: cc, curl, ss, nginx; radosgw & co. optional (skipped).
#
# Usage: tests/servers/test_servers.sh
# Output: one "ok - ..." / "FAIL - ..." / "skip - ..." line per check; the
# last line is "N passed, N failed"; exit status 1 if anything failed.
# Environment: CC (default cc), BATON_KEEP_TMP=1 keeps the temp folder.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/baton-servers.XXXXXX")
pass=0 failed=0 skipped=0
fp_pids=()
nginx_dir="" rgw_dir=""
used_ports=" "

ok()   { echo "ok - $*"; pass=$((pass + 1)); }
bad()  { echo "FAIL - $*"; failed=$((failed + 1)); }
skip() { echo "skip - $*"; skipped=$((skipped + 1)); }
check() { # check NAME COMMAND...: ok if the command succeeds
    local name=$1; shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}

finish() {
    local rc=$?
    set +e
    for p in "${fp_pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    [ -n "$nginx_dir" ] && "$here/nginx.sh" stop "$nginx_dir"
    [ -n "$rgw_dir" ] && "$here/rgw.sh" stop "$rgw_dir"
    if [ "${BATON_KEEP_TMP:-0}" = 1 ]; then echo "# kept $work" >&2; else rm -rf "$work"; fi
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        echo "FAIL - test script aborted (status $rc)"
        failed=1
    fi
    echo "$pass passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ] || exit 1
    [ "$skipped" -eq 0 ] || exit 77
    exit 0
}
trap finish EXIT
trap 'exit 130' INT TERM HUP   # run finish (stop the servers) on signals too

# A free TCP port on 127.0.0.1 below the ephemeral range (so that outgoing
# connections cannot take it meanwhile), not handed out before in this run.
free_port() {
    local p
    for _ in $(seq 1 200); do
        p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12000 ))
        case "$used_ports" in *" $p "*) continue ;; esac
        if ! ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then
            used_ports="$used_ports$p "
            echo "$p"
            return 0
        fi
    done
    echo "no free port found" >&2
    return 1
}

# Start faultproxy in the background with the given options in front of
# UPSTREAM; sets FP_PORT. Waits (at most 5 s) for its "listening PORT" line.
start_proxy() {
    local upstream=$1; shift
    local out="$work/fp.$RANDOM.out"
    "$work/faultproxy" --max-seconds 120 --log "$work/faultproxy.log" "$@" 0 "$upstream" >"$out" 2>&1 &
    fp_pids+=("$!")
    FP_PID=$!
    for _ in $(seq 1 100); do
        FP_PORT=$(awk '/^listening /{ print $2; exit }' "$out")
        [ -n "$FP_PORT" ] && return 0
        kill -0 "$FP_PID" 2>/dev/null || break
        sleep 0.05
    done
    cat "$out" >&2
    return 1
}
stop_proxy() { kill "$FP_PID" 2>/dev/null || true; wait "$FP_PID" 2>/dev/null || true; }

CURL=(curl -sS --connect-timeout 5 -m 30)

# ------------------------------------------------------------ faultproxy build
have_proxy=0
if ${CC:-cc} -O2 -Wall -Wextra -Werror -std=c11 -D_GNU_SOURCE "$here/faultproxy.c" \
        -o "$work/faultproxy" -lpthread 2>"$work/cc.log"; then
    ok "faultproxy builds with -Wall -Wextra -Werror -std=c11"
    have_proxy=1
else
    cat "$work/cc.log"
    bad "faultproxy builds with -Wall -Wextra -Werror -std=c11"
fi

# ------------------------------------------------------------ nginx
mkdir -p "$work/www/data"
head -c $((5 * 1024 * 1024)) /dev/urandom > "$work/www/data/blob.bin"
nginx_port=$(free_port)
nginx_dir=$work/nginx   # set first: an interrupted start is stopped too
if "$here/nginx.sh" start "$nginx_dir" "$nginx_port" "$work/www" >"$work/nginx.url" 2>"$work/nginx.err"; then
    ok "nginx starts on 127.0.0.1:$nginx_port ($(cat "$nginx_dir/start_seconds") s)"
    url="http://127.0.0.1:$nginx_port/data/blob.bin"

    code=$("${CURL[@]}" -o "$work/full.bin" -w '%{http_code}' "$url") || code="curl-$?"
    if [ "$code" = 200 ] && cmp -s "$work/full.bin" "$work/www/data/blob.bin"; then
        ok "nginx full GET of 5 MiB: 200 and byte-exact"
    else
        bad "nginx full GET (code $code)"
    fi

    off=1000003 len=1048576
    code=$("${CURL[@]}" -o "$work/range.bin" -w '%{http_code}' -H "Range: bytes=$off-$((off + len - 1))" "$url") \
        || code="curl-$?"
    dd if="$work/www/data/blob.bin" of="$work/want.bin" iflag=skip_bytes,count_bytes \
        skip="$off" count="$len" status=none
    if [ "$code" = 206 ] && cmp -s "$work/range.bin" "$work/want.bin"; then
        ok "nginx Range GET bytes=$off-$((off + len - 1)): 206 and byte-exact"
    else
        bad "nginx Range GET (code $code)"
    fi

    code=$("${CURL[@]}" -o "$work/tail.bin" -w '%{http_code}' -H "Range: bytes=-1000" "$url") || code="curl-$?"
    if [ "$code" = 206 ] && cmp -s "$work/tail.bin" <(tail -c 1000 "$work/www/data/blob.bin"); then
        ok "nginx suffix Range GET bytes=-1000: 206 and byte-exact"
    else
        bad "nginx suffix Range GET (code $code)"
    fi

    code=$("${CURL[@]}" -o /dev/null -w '%{http_code}' -X PUT --data-binary x "http://127.0.0.1:$nginx_port/data/new") \
        || code="curl-$?"
    check "nginx is read-only (PUT refused: $code)" test "$code" = 403 -a ! -e "$work/www/data/new"
else
    cat "$work/nginx.err"
    bad "nginx starts"
    nginx_dir=""
fi

# ------------------------------------------------------------ faultproxy
if [ "$have_proxy" = 1 ] && [ -n "$nginx_dir" ]; then
    # Transparent relay.
    if start_proxy "$nginx_port"; then
        code=$("${CURL[@]}" -o "$work/p_full.bin" -w '%{http_code}' "http://127.0.0.1:$FP_PORT/data/blob.bin") \
            || code="curl-$?"
        if [ "$code" = 200 ] && cmp -s "$work/p_full.bin" "$work/www/data/blob.bin"; then
            ok "faultproxy relays a 5 MiB GET byte-exactly"
        else
            bad "faultproxy relay (code $code)"
        fi
        code=$("${CURL[@]}" -o "$work/p_range.bin" -w '%{http_code}' \
            -H "Range: bytes=$off-$((off + len - 1))" "http://127.0.0.1:$FP_PORT/data/blob.bin") || code="curl-$?"
        if [ "$code" = 206 ] && cmp -s "$work/p_range.bin" "$work/want.bin"; then
            ok "faultproxy relays a Range GET byte-exactly"
        else
            bad "faultproxy Range relay (code $code)"
        fi
        # Two requests on one keep-alive curl: the proxy forces Connection: close,
        # so curl must open a second connection and both must succeed.
        res=$("${CURL[@]}" -o /dev/null -o /dev/null -w '%{http_code} ' \
            "http://127.0.0.1:$FP_PORT/data/blob.bin" "http://127.0.0.1:$FP_PORT/data/blob.bin") || res="curl-$?"
        check "faultproxy: two requests of one keep-alive client both succeed ($res)" test "$res" = "200 200 "
        stop_proxy
    else
        bad "faultproxy starts"
    fi

    # Drop mid-body after 100000 bytes.
    if start_proxy "$nginx_port" --drop-after-bytes 100000; then
        rc=0
        got=$("${CURL[@]}" -o "$work/p_drop.bin" -w '%{size_download}' \
            "http://127.0.0.1:$FP_PORT/data/blob.bin" 2>/dev/null) || rc=$?
        sz=$(stat -c %s "$work/p_drop.bin" 2>/dev/null || echo 0)
        if [ "$rc" -ne 0 ] && [ "$sz" -lt 100000 ] && [ "$sz" -gt 0 ] \
                && cmp -s "$work/p_drop.bin" <(head -c "$sz" "$work/www/data/blob.bin"); then
            ok "faultproxy --drop-after-bytes 100000: short body ($sz bytes, curl exit $rc), prefix intact"
        else
            bad "faultproxy --drop-after-bytes 100000 (curl exit $rc, $sz bytes, reported ${got:-?})"
        fi
        stop_proxy
    else
        bad "faultproxy --drop-after-bytes starts"
    fi

    # Drop only every 2nd connection.
    if start_proxy "$nginx_port" --drop-after-bytes 1000 --drop-every 2; then
        r1=0 r2=0 r3=0
        "${CURL[@]}" -o /dev/null "http://127.0.0.1:$FP_PORT/data/blob.bin" 2>/dev/null || r1=$?
        "${CURL[@]}" -o /dev/null "http://127.0.0.1:$FP_PORT/data/blob.bin" 2>/dev/null || r2=$?
        "${CURL[@]}" -o /dev/null "http://127.0.0.1:$FP_PORT/data/blob.bin" 2>/dev/null || r3=$?
        check "faultproxy --drop-every 2: only the 2nd of 3 fails (curl exits $r1 $r2 $r3)" \
            test "$r1" = 0 -a "$r2" != 0 -a "$r3" = 0
        stop_proxy
    else
        bad "faultproxy --drop-every starts"
    fi

    # HTTP 500 on every 2nd request.
    if start_proxy "$nginx_port" --fail-every 2; then
        codes=""
        for _ in 1 2 3 4; do
            c=$("${CURL[@]}" -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FP_PORT/data/blob.bin") || c="curl-$?"
            codes="$codes$c "
        done
        check "faultproxy --fail-every 2: 200 500 200 500 (got $codes)" test "$codes" = "200 500 200 500 "
        stop_proxy
    else
        bad "faultproxy --fail-every starts"
    fi

    # It never runs forever: --max-seconds 1 ends it by itself.
    "$work/faultproxy" --max-seconds 1 0 "$nginx_port" >/dev/null 2>&1 &
    mp=$!
    fp_pids+=("$mp")
    t0=$SECONDS
    for _ in $(seq 1 60); do kill -0 "$mp" 2>/dev/null || break; sleep 0.1; done
    if ! kill -0 "$mp" 2>/dev/null && wait "$mp"; then
        ok "faultproxy --max-seconds 1 exits by itself with status 0"
    else
        bad "faultproxy --max-seconds 1 still running after $((SECONDS - t0)) s"
    fi
else
    skip "faultproxy checks (no faultproxy binary or no nginx)"
fi

# ------------------------------------------------------------ rgw + s3check
missing=""
for b in radosgw radosgw-admin ceph-mon ceph-osd ceph monmaptool; do
    command -v "$b" >/dev/null 2>&1 || missing="$missing $b"
done
if [ -n "$missing" ]; then
    skip "rgw: not installed:$missing (scripts/deps.sh installs them)"
else
    rgw_port=$(free_port)
    mon_port=$(free_port)
    rgw_dir=$work/rgw   # set first: an interrupted start is stopped too
    if line=$(BATON_RGW_MEM_MB=256 "$here/rgw.sh" start "$rgw_dir" "$rgw_port" "$mon_port" 2>"$work/rgw.err"); then
        ok "radosgw starts on 127.0.0.1:$rgw_port ($(cat "$rgw_dir/start_seconds") s)"
        check "rgw.sh prints the exports and writes env.sh" \
            test "$line" = "$(cat "$rgw_dir/env.sh")"
        if (eval "$line" && timeout 120 "$here/s3check.sh"); then
            ok "s3check against radosgw"
        else
            bad "s3check against radosgw"
        fi
        # SigV4 signs the Host header with its port: a transparent proxy keeps it valid.
        if [ "$have_proxy" = 1 ] && start_proxy "$rgw_port"; then
            if (eval "$line" && AWS_ENDPOINT_URL="http://127.0.0.1:$FP_PORT" timeout 120 "$here/s3check.sh"); then
                ok "s3check against radosgw through faultproxy"
            else
                bad "s3check against radosgw through faultproxy"
            fi
            stop_proxy
        fi
        if "$here/rgw.sh" stop "$rgw_dir" 2>>"$work/rgw.err" \
                && ! ss -Hltn "sport = :$rgw_port" | grep -q . && ! ss -Hltn "sport = :$mon_port" | grep -q .; then
            ok "rgw.sh stop: daemons gone, ports free"
            rgw_dir=""
        else
            bad "rgw.sh stop"
        fi
    else
        cat "$work/rgw.err"
        bad "radosgw starts"
        rgw_dir=""
    fi
fi

if [ -n "$nginx_dir" ]; then
    if "$here/nginx.sh" stop "$nginx_dir" && ! ss -Hltn "sport = :$nginx_port" | grep -q .; then
        ok "nginx.sh stop: nginx gone, port free"
        nginx_dir=""
    else
        bad "nginx.sh stop"
    fi
fi
