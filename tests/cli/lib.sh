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
# python3 is Debian's (as tests/run.sh sets it for the suite), also in a script run by hand
if [ "$(command -v python3)" != /usr/bin/python3 ] && [ -x /usr/bin/python3 ]; then
    mkdir -p "$T/.py" && ln -s /usr/bin/python3 "$T/.py/python3" && export PATH="$T/.py:$PATH"
fi

ok()   { npass=$((npass + 1)); }
bad()  { nfail=$((nfail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else bad "$2"; fi; }
skip() { nskip=$((nskip + 1)); echo "skip - $*"; }   # a part not run, and why: never a pass
# json FILE EXPR: a Python expression over the JSON document d in FILE (an error's text instead)
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>&1; }

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

# ---- a document's walk-through, run as written (tests/cli/test_docs_*.sh)
# doc_setup: the user's side of a walk-through — W, an empty folder to run it in, and the baton
# under test first on PATH as `baton` (tests/cli/doc_baton.sh: the flags a test sets in
# DOC_ARGS_* are added after the document's, to shorten a step without editing it). The wrapper
# runs a copy of the baton under test beside it: `baton fleet` puts its own folder first on the
# PATH of the commands it runs, so they run the wrapper too.
doc_setup() {
    case "$BATON" in /*) ;; *) BATON=$PWD/$BATON ;; esac
    mkdir -p "$T/bin" "$T/walk"
    cp "$BATON" "$T/bin/baton-under-test" || return 1
    export DOC_BATON=$T/bin/baton-under-test
    cp tests/cli/doc_baton.sh "$T/bin/baton" && chmod +x "$T/bin/baton"
    export PATH="$T/bin:$PATH"
    W=$T/walk
}
# doc_walk DOC NAME [--inline PREFIX]: the walk-through NAME of DOC (tests/cli/docwalk.py) into
# $T/NAME/ and its sh blocks run in $W, in order, in one bash; then doc_ran N says whether block N
# ran to its end without a failed command (doc_ran N 'STATUS' allows a command that failed with
# STATUS, as a document's "baton train …; echo "exit $?"" shows), and doc_why N what went wrong.
doc_walk() {
    local doc=$1 name=$2; shift 2
    D=$T/$name
    python3 tests/cli/docwalk.py "$doc" "$name" "$D" "$@" || return 1
    (cd "$W" && bash "$D/run.sh")
}
doc_ran() {
    local f=$D/$(printf %02d "$1")
    [ -e "$f.done" ] || return 1
    [ -e "$f.failed" ] || return 0
    [ -n "${2:-}" ] && ! grep -qv "^$2 " "$f.failed"
}
doc_why() {
    local f=$D/$(printf %02d "$1")
    echo "block $1: $(head -c 300 "$D/$(printf %02d "$1").sh" | tr '\n' ';') =>" \
        "$([ -e "$f.done" ] || echo "did not end;") $(cat "$f.failed" 2>/dev/null | tr '\n' ';')" \
        "$(tail -n 4 "$f.err" 2>/dev/null | tr '\n' ' ')"
}
# doc_pat TEXT: an extended regex matching TEXT with any numbers in place of its numbers (a
# document's example output: times and rates differ from run to run)
doc_pat() { printf '%s' "$1" | sed -e 's/[][\.*^$()+?{}|]/\\&/g' -e 's/[0-9][0-9]*/[0-9]+/g'; }
# doc_quote FILE START: the first inline code span of FILE that starts with START (what a document
# says a command prints)
doc_quote() { grep -o "\`$2[^\`]*\`" "$1" | head -n1 | tr -d '`'; }
