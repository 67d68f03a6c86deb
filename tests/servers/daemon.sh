# daemon.sh — what the server scripts (nginx.sh, slurm.sh, rgw.sh) share, sourced after they set
# $prog: messages, the clock, and waiting for a daemon to exit. (lib.sh is for the tests that use
# the servers; it is sourced into test scripts, whose own names these would shadow.)
#   die MSG          "$prog: error: MSG" on stderr, exit 1
#   log MSG          "$prog: MSG" on stderr
#   now              seconds since the epoch, with nanoseconds
#   exited PID       0 when PID is gone, or a zombie whose threads have all ended (its sockets and
#                    memory are released; only init's reaping is left, which can lag by a second or
#                    two where PID 1 reaps orphans slowly)
#   wait_gone PID T  wait until PID has exited, at most T tenths of a second; 0 if it did
#   live_pid FILE    the pid a pid file names, if that process lives; else nothing
die() { echo "$prog: error: $*" >&2; exit 1; }
log() { echo "$prog: $*" >&2; }
now() { date +%s.%N; }

exited() {
    local st
    st=$(grep -E '^(State|Threads):' "/proc/$1/status" 2>/dev/null | tr -s ' \t\n' ' ') || return 0
    [ -z "$st" ] && return 0
    case "$st" in *"State: Z"*"Threads: 1 "*|*"State: X"*) return 0 ;; esac
    return 1
}

wait_gone() {
    local pid=$1 n=$(( $2 * 2 ))
    while ! exited "$pid" && [ "$n" -gt 0 ]; do
        sleep 0.05
        n=$((n - 1))
    done
    exited "$pid"
}

live_pid() {
    local pid
    pid=$(cat "$1" 2>/dev/null || true)
    case "$pid" in ''|*[!0-9]*) return 0 ;; esac
    kill -0 "$pid" 2>/dev/null && echo "$pid"
    return 0
}
