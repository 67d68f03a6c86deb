#!/usr/bin/env bash
# slurm.sh — a real one-node Slurm cluster on loopback for baton's tests: munged, slurmctld and
# slurmd (Debian's slurm-wlm packages) configured as in REFERENCE.md §11: this machine is the only
# node (NodeAddr 127.0.0.1), everything runs as root without systemd or cgroups, and all state,
# spool, logs, sockets and pid files live under DIR.
#
# Two partitions share the node: `batch` (the default, PriorityTier 1, PreemptMode REQUEUE) and
# `urgent` (PriorityTier 10): a job submitted to `urgent` that needs the node preempts and
# requeues what runs in `batch`, as a higher-priority tenant would on a real cluster.
#
# Owns: everything under DIR. Touches nothing else: no /etc/slurm, no /etc/munge, no systemd.
#
# Usage:
#   slurm.sh start DIR CTLD_PORT SLURMD_PORT   # start munged, slurmctld, slurmd; wait for `idle`
#   slurm.sh stop DIR                          # stop them by their pid files, wait for them to exit
#
# On success `start` prints one line of shell exports on stdout (SLURM_CONF=DIR/slurm.conf) and
# writes it to DIR/env.sh. Progress, the start time and errors go to stderr; on failure the
# daemons it started are stopped again and the log tails printed.
# Environment: BATON_SLURM_TIMEOUT  seconds allowed for start (default 30).
set -euo pipefail

prog=slurm.sh
. "$(dirname "${BASH_SOURCE[0]}")/daemon.sh"
usage() { echo "usage: $prog start DIR CTLD_PORT SLURMD_PORT | $prog stop DIR" >&2; exit 2; }

do_stop() {
    local dir=$1 rc=0 pf pid
    # slurmd first (it kills what still runs of its jobs), then the controller, then munge.
    for pf in "$dir/run/slurmd.pid" "$dir/run/slurmctld.pid" "$dir/run/munged.pid"; do
        pid=$(live_pid "$pf")
        [ -n "$pid" ] || { rm -f "$pf"; continue; }
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_gone "$pid" 100; then
            log "pid $pid ($(basename "$pf" .pid)) ignored TERM for 10 s; sending KILL"
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone "$pid" 50 || { log "pid $pid did not exit"; rc=1; }
        fi
        rm -f "$pf"
    done
    return $rc
}

fail_start() {
    local f
    for f in "$DIR"/log/*.log "$DIR"/log/*.out; do
        [ -f "$f" ] || continue
        echo "--- $f" >&2
        tail -n 15 "$f" >&2
    done
    do_stop "$DIR" || true
    die "$*"
}

# Start a daemon in the foreground mode (-D) in the background; record its pid.
spawn() {   # spawn NAME CMD...
    local name=$1; shift
    "$@" </dev/null >"$DIR/log/$name.out" 2>&1 &
    echo $! >"$DIR/run/$name.pid"
}

do_start() {
    DIR=$1
    local cport=$2 dport=$3 t0 node secs deadline st
    case "$cport$dport" in ''|*[!0-9]*) usage ;; esac
    for c in munged mungekey slurmctld slurmd sinfo; do
        command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] \
            || die "$c not found (run scripts/deps.sh: slurmctld slurmd slurm-client munge)"
    done
    export PATH="$PATH:/usr/sbin:/sbin"
    [ "$(id -u)" -eq 0 ] || die "needs root (slurmd runs jobs as their submitting user)"
    mkdir -p "$DIR"
    DIR=$(cd "$DIR" && pwd)
    [ -n "$(live_pid "$DIR/run/slurmctld.pid")" ] && die "slurm still running in $DIR (run: $prog stop $DIR)"
    rm -rf "$DIR/run" "$DIR/log" "$DIR/state" "$DIR/spool" "$DIR/munge"
    mkdir -p "$DIR/run" "$DIR/log" "$DIR/state" "$DIR/spool" "$DIR/munge"
    chmod 755 "$DIR" "$DIR/munge"   # munged: the socket's folders must be searchable by all
    local up=$DIR
    while [ "$up" != / ]; do
        up=$(dirname "$up")
        [ "$(( $(stat -c %a "$up") % 10 & 1 ))" = 1 ] \
            || die "munged needs every folder above its socket searchable by all: chmod o+x $up"
    done
    t0=$(now)

    mungekey -c -k "$DIR/munge/munge.key" >/dev/null 2>&1 || die "mungekey failed"
    # munged refuses keys and sockets in folders writable by others, and sockets in folders
    # that others cannot search.
    spawn munged munged -F -S "$DIR/munge/munge.socket.2" --key-file="$DIR/munge/munge.key" \
        --log-file="$DIR/log/munged.log" --pid-file="$DIR/munge/munged.pid" \
        --seed-file="$DIR/munge/munge.seed"
    for _ in $(seq 1 100); do
        [ -S "$DIR/munge/munge.socket.2" ] && break
        [ -n "$(live_pid "$DIR/run/munged.pid")" ] || break
        sleep 0.05
    done
    [ -S "$DIR/munge/munge.socket.2" ] || fail_start "munged did not create its socket"

    # The node line comes from the machine itself (CPUs, cores, memory), addressed on loopback.
    node=$(slurmd -C | head -n1) || fail_start "slurmd -C failed"
    case "$node" in NodeName=*) ;; *) fail_start "slurmd -C printed '$node'" ;; esac
    NODE_NAME=${node%% *}; NODE_NAME=${NODE_NAME#NodeName=}
    cat >"$DIR/slurm.conf" <<EOF
# Written by tests/servers/slurm.sh: one node on loopback; state under $DIR.
ClusterName=baton
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$cport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket.2,cred_expire=10
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
JobRequeue=1
MailProg=/bin/true
SchedulerParameters=bf_interval=1,sched_interval=2
KillWait=10
MinJobAge=600
ReturnToService=2
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.daemon.pid
SlurmdPidFile=$DIR/run/slurmd.daemon.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=batch Nodes=$NODE_NAME Default=YES MaxTime=INFINITE PriorityTier=1 PreemptMode=REQUEUE State=UP
PartitionName=urgent Nodes=$NODE_NAME MaxTime=INFINITE PriorityTier=10 PreemptMode=OFF State=UP
EOF
    export SLURM_CONF=$DIR/slurm.conf
    spawn slurmctld slurmctld -D -i -f "$DIR/slurm.conf"
    spawn slurmd slurmd -D -f "$DIR/slurm.conf"

    deadline=$(awk -v n="$t0" -v t="${BATON_SLURM_TIMEOUT:-30}" 'BEGIN { printf "%.3f", n + t }')
    while :; do
        st=$(sinfo -h -N -o %t 2>/dev/null | head -n1) || true
        [ "$st" = idle ] && break
        for d in slurmctld slurmd munged; do
            [ -n "$(live_pid "$DIR/run/$d.pid")" ] || fail_start "$d exited during start"
        done
        if awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n > d) }'; then
            fail_start "the node is not idle after ${BATON_SLURM_TIMEOUT:-30}s (state '$st')"
        fi
        sleep 0.1
    done
    secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
    log "slurm up: node $NODE_NAME idle after $secs s (ctld 127.0.0.1:$cport, slurmd :$dport)"
    echo "export SLURM_CONF=$DIR/slurm.conf" | tee "$DIR/env.sh"
}

[ $# -ge 2 ] || usage
case "$1" in
start) [ $# -eq 4 ] || usage; do_start "$2" "$3" "$4" ;;
stop)  [ $# -eq 2 ] || usage; [ -d "$2" ] || exit 0; do_stop "$2" ;;
*) usage ;;
esac
