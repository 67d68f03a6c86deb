# lib.sh — helpers for CLI test scripts (sourced). Each script counts its own checks and ends
# with `finish`, which prints "N passed, N failed, N skipped" and sets the exit status: 1 when a
# check failed, else 77 (tests/run.sh's "skipped") when a part was skipped with `skip REASON`.
# $BATON is the binary under test (set by tests/run.sh; defaults to build/baton).
set -u
BATON=${BATON:-build/baton}
export BATON_NO_PROGRESS=1
# `baton train` watches for interruption notices: in tests it polls only endpoints a test sets,
# never a real metadata service (no cloud is detected from a DMI folder that does not exist)
export BATON_DMI_DIR=/nonexistent/dmi
unset AWS_EC2_METADATA_SERVICE_ENDPOINT BATON_GCE_METADATA_ENDPOINT GCE_METADATA_HOST
T=$(mktemp -d /tmp/baton-cli-XXXXXX)
trap '[ "${BATON_KEEP_TMP:-0}" = 1 ] || rm -rf "$T"' EXIT
npass=0 nfail=0 nskip=0

ok()   { npass=$((npass + 1)); }
bad()  { nfail=$((nfail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else bad "$2"; fi; }
skip() { nskip=$((nskip + 1)); echo "skip - $*"; }   # a part not run, and why: never a pass

# expect_fail CODE PATTERN CMD... : CMD must exit with CODE and print a single-line error on
# stderr matching the extended regex PATTERN.
expect_fail() {
    local code=$1 pat=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"
    local rc=$?
    if [ "$rc" -ne "$code" ]; then bad "exit $rc (want $code): $*: $(head -c 600 "$T/err")"; return; fi
    if ! grep -Eq -- "$pat" "$T/err"; then bad "stderr of '$*' lacks /$pat/: $(head -c 600 "$T/err")"; return; fi
    ok
}

# wait_ckpt DIR: until a background run has committed a checkpoint in DIR (any ckpt-*: retention
# deletes early ones). Polls every 5 ms, bounded at 120 s (a loaded machine running the sanitizer
# build is slow); returns 1 when none appeared.
wait_ckpt() {
    for _ in $(seq 24000); do
        compgen -G "$1/ckpt-*" >/dev/null && return 0
        sleep 0.005
    done
    return 1
}

finish() {
    echo "$npass passed, $nfail failed, $nskip skipped"
    [ "$nfail" -eq 0 ] || return 1
    [ "$nskip" -eq 0 ] || return 77
}

# mpi_setup: Open MPI for a test on loopback — as root, more ranks than cores, one compute thread a
# rank, collectives that give up after 60 s, and no LeakSanitizer report of the allocations Open
# MPI keeps until exit. Returns 1 (after a skip line) where mpirun is not installed.
mpi_setup() {
    if ! command -v mpirun >/dev/null; then skip "mpirun not installed (scripts/deps.sh installs openmpi-bin)"; return 1; fi
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    export OMP_NUM_THREADS=1 BATON_DIST_TIMEOUT_S=60
    export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
}
