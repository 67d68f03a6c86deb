#!/usr/bin/env bash
# rgw.sh — a real, SigV4-verifying S3 endpoint on loopback for baton's tests
# and benchmarks: Ceph's RADOS Gateway on a one-node cluster (one monitor, one
# memstore OSD, no mgr), set up as described in REFERENCE.md §12.
#
# Owns: everything under DIR (ceph.conf, monmap, mon/osd data, logs, pid files,
# admin sockets, env.sh). Touches nothing else: no /etc/ceph, no systemd.
#
# Usage:
#   rgw.sh start DIR PORT [MON_PORT]   # S3 on 127.0.0.1:PORT, mon on MON_PORT (default PORT+1)
#   rgw.sh stop DIR                    # stop the daemons by their pid files, wait for them to exit
#
# On success `start` prints ONE line of shell exports on stdout and writes the
# same line to DIR/env.sh, so either works:
#   eval "$(tests/servers/rgw.sh start "$d" 7480)"     or     . "$d/env.sh"
# Progress, timings and errors go to stderr. Exit status non-zero on failure
# (the daemons it started are stopped again and the log tails are printed).
#
# Environment:
#   BATON_RGW_ACCESS_KEY   access key of the S3 user   (default batontest)
#   BATON_RGW_SECRET_KEY   its secret                  (default batontestsecret)
#   BATON_RGW_MEM_MB       memstore capacity in MiB    (default 2048; data lives in RAM)
#   BATON_RGW_DISK_MB      when set: BlueStore on a file of this many MiB in DIR instead of
#                          memstore (data on disk, about 1 GiB of RAM: datasets larger than
#                          memory; slower writes)
#   BATON_RGW_TIMEOUT      seconds allowed for start   (default 60)
#   BATON_RGW_GRACEFUL=1   stop with TERM, one daemon after the other (~0.5 s)
#                          instead of KILL (~0.05 s; nothing in DIR is kept anyway)
# Needs: scripts/deps.sh (radosgw ceph-mon ceph-osd ceph-common), curl.
# Data are in RAM and are lost at stop; a new start begins with an empty cluster.
set -euo pipefail

prog=rgw.sh
. "$(dirname "${BASH_SOURCE[0]}")/daemon.sh"
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

usage() {
    echo "usage: $prog start DIR PORT [MON_PORT] | $prog stop DIR" >&2
    exit 2
}

# ---------------------------------------------------------------- stop
# Default: KILL every daemon at once, then wait until all have exited. Nothing
# in the cluster is worth a clean shutdown: memstore data die with the OSD and
# the next start wipes DIR. With BATON_RGW_GRACEFUL=1: TERM one daemon after
# the other (gateway, OSD, monitor), 10 s each before KILL. (Sending TERM to
# all at once is slower: the OSD then waits ~5 s for the vanished monitor.)

do_stop() {
    local dir=$1 rc=0 pf pid pids=""
    [ -d "$dir/run" ] || return 0
    # Gateway first, then the OSD, then the monitor.
    for pf in "$dir"/run/client.rgw.*.pid "$dir"/run/osd.*.pid "$dir"/run/mon.*.pid; do
        [ -e "$pf" ] || continue
        pid=$(live_pid "$pf")
        rm -f "$pf"
        [ -n "$pid" ] || continue
        if [ "${BATON_RGW_GRACEFUL:-0}" = 1 ]; then
            kill -TERM "$pid" 2>/dev/null || true
            wait_gone "$pid" 100 && continue
            log "pid $pid ($(basename "$pf" .pid)) ignored TERM for 10 s; sending KILL"
        fi
        kill -KILL "$pid" 2>/dev/null || true
        pids="$pids $pid"
    done
    for pid in $pids; do
        wait_gone "$pid" 100 || { log "pid $pid did not exit after KILL"; rc=1; }
    done
    return $rc
}

# ---------------------------------------------------------------- start
port_busy() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# Print the last lines of every log in DIR to stderr (for failures).
dump_logs() {
    local f
    for f in "$DIR"/log/*; do
        [ -s "$f" ] || continue
        echo "----- tail of $f" >&2
        tail -n 15 "$f" >&2
    done
}

fail() {
    dump_logs
    do_stop "$DIR" || true
    echo "$prog: error: $* (logs in $DIR/log)" >&2
    exit 1
}

remaining() { awk -v d="$DEADLINE" -v n="$(now)" 'BEGIN { r = d - n; print (r > 0 ? int(r) + 1 : 0) }'; }
past_deadline() { awk -v d="$DEADLINE" -v n="$(now)" 'BEGIN { exit !(n > d) }'; }

# ceph CLI against our cluster, bounded in time.
cephc() {
    local t
    t=$(remaining)
    [ "$t" -gt 0 ] || t=1
    timeout "$((t + 5))" ceph -c "$CONF" --connect-timeout "$t" "$@"
}

do_start() {
    local t0 fsid osd_uuid osd_id code
    t0=$(now)
    for b in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph curl ss timeout; do
        command -v "$b" >/dev/null 2>&1 || die "$b not found (run scripts/deps.sh)"
    done
    case "$PORT$MON_PORT" in *[!0-9]*) usage ;; esac
    [ "$PORT" != "$MON_PORT" ] || die "PORT and MON_PORT must differ"
    port_busy "$PORT" && die "port $PORT is already in use"
    port_busy "$MON_PORT" && die "mon port $MON_PORT is already in use"

    mkdir -p "$DIR"
    DIR=$(cd "$DIR" && pwd)
    CONF=$DIR/ceph.conf
    # Refuse to start over a cluster that is still running in DIR.
    for pf in "$DIR"/run/*.pid; do
        [ -e "$pf" ] || continue
        if kill -0 "$(cat "$pf" 2>/dev/null || echo x)" 2>/dev/null; then
            die "daemons still running in $DIR (run: $prog stop $DIR)"
        fi
    done
    # Fresh cluster each start: memstore data do not survive a stop anyway.
    rm -rf "$DIR/mon" "$DIR/osd" "$DIR/run" "$DIR/log" "$DIR/rgw" "$DIR/monmap" "$DIR/env.sh" \
          "$DIR/user.json" "$DIR/start_seconds" "$DIR/crash"
    mkdir -p "$DIR/mon" "$DIR/osd" "$DIR/run" "$DIR/log" "$DIR/rgw"
    if [ ${#DIR} -gt 80 ]; then
        log "warning: DIR is long; admin sockets (108-byte limit) may not bind"
    fi

    fsid=$(cat /proc/sys/kernel/random/uuid)
    osd_uuid=$(cat /proc/sys/kernel/random/uuid)
    local mem_bytes=$(( MEM_MB * 1024 * 1024 )) store_conf
    if [ -n "$DISK_MB" ]; then   # BlueStore on a file in DIR (bluestore block create makes it at mkfs)
        store_conf="osd objectstore = bluestore
bluestore block create = true
bluestore block size = $(( DISK_MB * 1024 * 1024 ))
bluestore block db create = false
bluestore block wal create = false
osd memory target = 1073741824
bluestore cache autotune = false
bluestore cache size = 268435456"
    else
        store_conf="osd objectstore = memstore
memstore device bytes = $mem_bytes"
    fi

    # Note: "$name", "$cluster" and "$id" below are ceph metavariables, not shell.
    cat > "$CONF" <<EOF
# Written by tests/servers/rgw.sh: one-node loopback cluster, auth none.
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$MON_PORT
ms bind msgr1 = false
ms bind msgr2 = true
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
paxos propose interval = 0.01
run dir = $DIR/run
pid file = $DIR/run/\$name.pid
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
keyring = $DIR/keyring
crash dir = $DIR/crash
mon data = $DIR/mon/\$cluster-\$id
osd data = $DIR/osd/\$cluster-\$id
$store_conf

[client.rgw.test]
rgw frontends = beast endpoint=127.0.0.1:$PORT
rgw data = $DIR/rgw
# Without these two radosgw never connects when auth is none: it logs
# "get_initial_auth_request returned -13" forever (REFERENCE.md §12).
ms mon client mode = crc
ms client mode = crc
EOF
    : > "$DIR/keyring"

    # --- monitor
    monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$MON_PORT]" "$DIR/monmap" \
        >"$DIR/log/setup.log" 2>&1 || fail "monmaptool failed"
    ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" >>"$DIR/log/setup.log" 2>&1 \
        || fail "ceph-mon --mkfs failed"
    ceph-mon -c "$CONF" -i a </dev/null >>"$DIR/log/daemons.out" 2>&1 || fail "ceph-mon did not start"
    until cephc mon stat >/dev/null 2>>"$DIR/log/setup.log"; do
        past_deadline && fail "monitor did not answer within ${TIMEOUT}s"
        sleep 0.1
    done
    log "mon up after $(elapsed "$t0") s"

    # --- OSD (memstore: data in RAM)
    osd_id=$(cephc osd new "$osd_uuid" 2>>"$DIR/log/setup.log") || fail "ceph osd new failed"
    case "$osd_id" in ''|*[!0-9]*) fail "ceph osd new returned '$osd_id'" ;; esac
    mkdir -p "$DIR/osd/ceph-$osd_id"
    ceph-osd -c "$CONF" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" >>"$DIR/log/setup.log" 2>&1 \
        || fail "ceph-osd --mkfs failed"
    ceph-osd -c "$CONF" -i "$osd_id" </dev/null >>"$DIR/log/daemons.out" 2>&1 || fail "ceph-osd did not start"
    until cephc osd dump 2>>"$DIR/log/setup.log" | grep -q "^osd\.$osd_id up"; do
        past_deadline && fail "osd.$osd_id not up within ${TIMEOUT}s"
        sleep 0.1
    done
    log "osd.$osd_id up after $(elapsed "$t0") s"

    # --- rgw pools, all in ONE ceph call reading commands from stdin; else
    # radosgw creates them one at a time and start-up takes ~15 s longer.
    {
        for p in .rgw.root default.rgw.log default.rgw.control default.rgw.meta \
                 default.rgw.buckets.index default.rgw.buckets.data default.rgw.buckets.non-ec; do
            echo "osd pool create $p 8 8"
            echo "osd pool application enable $p rgw"
        done
    } | cephc >>"$DIR/log/setup.log" 2>&1 || fail "creating the rgw pools failed"
    log "pools created after $(elapsed "$t0") s"

    # --- S3 user
    timeout "$(( $(remaining) + 5 ))" radosgw-admin -c "$CONF" -n client.rgw.test user create \
        --uid=test --display-name=test --access-key="$AK" --secret="$SK" \
        >"$DIR/user.json" 2>>"$DIR/log/setup.log" || fail "radosgw-admin user create failed"
    log "user created after $(elapsed "$t0") s"

    # --- gateway
    radosgw -c "$CONF" -n client.rgw.test </dev/null >>"$DIR/log/daemons.out" 2>&1 \
        || fail "radosgw did not start"
    while :; do
        code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$PORT/" 2>/dev/null) || true
        case "$code" in [1-5][0-9][0-9]) break ;; esac
        past_deadline && fail "radosgw did not answer HTTP on 127.0.0.1:$PORT within ${TIMEOUT}s"
        sleep 0.1
    done
    local secs
    secs=$(elapsed "$t0")
    log "radosgw answers on http://127.0.0.1:$PORT (HTTP $code) after $secs s total start time"
    echo "$secs" > "$DIR/start_seconds"

    local line="export AWS_ENDPOINT_URL=http://127.0.0.1:$PORT AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_REGION=us-east-1"
    echo "$line" > "$DIR/env.sh"
    echo "$line"
}

# ---------------------------------------------------------------- main
[ $# -ge 2 ] || usage
cmd=$1 DIR=$2
case "$cmd" in
start)
    if [ $# -lt 3 ] || [ $# -gt 4 ]; then usage; fi
    PORT=$3
    case "$PORT" in ''|*[!0-9]*) usage ;; esac
    MON_PORT=${4:-$((PORT + 1))}
    AK=${BATON_RGW_ACCESS_KEY:-batontest}
    SK=${BATON_RGW_SECRET_KEY:-batontestsecret}
    MEM_MB=${BATON_RGW_MEM_MB:-2048}
    DISK_MB=${BATON_RGW_DISK_MB:-}
    case "$DISK_MB" in *[!0-9]*) die "BATON_RGW_DISK_MB must be an integer" ;; esac
    TIMEOUT=${BATON_RGW_TIMEOUT:-60}
    case "$MEM_MB$TIMEOUT" in *[!0-9]*) die "BATON_RGW_MEM_MB and BATON_RGW_TIMEOUT must be integers" ;; esac
    case "$AK$SK" in *[!A-Za-z0-9._/+=-]*) die "access key / secret: use only [A-Za-z0-9._/+=-]" ;; esac
    DEADLINE=$(awk -v n="$(now)" -v t="$TIMEOUT" 'BEGIN { printf "%.3f", n + t }')
    # Interrupted half-way: stop what was started already.
    trap 'trap - INT TERM HUP; do_stop "$DIR" || true; echo "$prog: interrupted" >&2; exit 130' INT TERM HUP
    do_start
    trap - INT TERM HUP
    ;;
stop)
    [ $# -eq 2 ] || usage
    [ -d "$DIR" ] || exit 0
    do_stop "$DIR"
    ;;
*) usage ;;
esac
