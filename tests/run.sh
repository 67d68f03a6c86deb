#!/usr/bin/env bash
# run.sh — the whole test suite, as `make test` and CI run it:
#   1. install missing Debian packages (scripts/deps.sh),
#   2. check every #include against README's component table (make check-layers) and the code's
#      shape (make check-code: scripts/check-code.sh), build normally
#      and with ASan+UBSan,
#   3. run every unit test program and every CLI test script against the plain build, and under the
#      sanitizers every unit test program and every CLI script but those tests/san-set.txt leaves
#      out (scripts/san-select.sh chooses from line coverage: the rest reach 97 % of the lines of
#      src/ that only CLI scripts reach, in the fewest seconds),
#   4. run every fuzz target in the sanitizer build over its seeds and 2,000 deterministic
#      mutations of each (tests/fuzz/replay.c; at most 1 s a target),
#   5. run the loopback server tests (nginx, RADOS Gateway, Slurm, fault proxy), started in the
#      last pass after its unit tests, so that their long ones do not end the run alone,
#   6. print the ten slowest tests.
# Tests run two at a time (BATON_TEST_LANES; a script whose header says "# alone: WHY" runs by
# itself, at the start of its pass). Each program or script is one test (failed too when it leaves
# one of this tree's programs running); one that exits 77 was skipped (a server not installed,
# not root): it prints its "skip - REASON" lines, and under CI (BATON_CI=1, set by .ci/run) a skip
# fails the run — a skip is never a pass. The last line is "N passed, N failed, N skipped".
# BATON_TEST_FULL=1 (make test-full) repeats every CLI script under the sanitizers and runs every
# libFuzzer target briefly (FUZZ_SECONDS, default 2 s each) in a third, clang-built library.
# BATON_TEST_QUICK=1 skips the sanitizer pass and fuzzing (for a fast local loop).
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh || { echo "0 passed, 1 failed, 0 skipped"; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)

ROOT=$PWD
# ours [TAG]: the pids of processes running this tree's baton or test programs (a test that leaves
# one running — a worker, a watcher, a server of baton's — fails, and what it left is killed); with
# a TAG, only those started under that test (BATON_TEST_TAG=TAG in their environment)
ours() {
    local dir exe tag=${1:-}
    find /proc -mindepth 2 -maxdepth 2 -path '/proc/[0-9]*/exe' -printf '%h %l\n' 2>/dev/null |
        while read -r dir exe; do
            case "$exe" in "$ROOT"/build*/baton | "$ROOT"/build*/tests/test_*) ;; *) continue ;; esac
            if [ -n "$tag" ]; then
                tr '\0' '\n' 2>/dev/null <"$dir/environ" | grep -qx "BATON_TEST_TAG=$tag" || continue
            fi
            echo "${dir#/proc/}"
        done
}
left_running() {  # left_running TAG: the pids of ours under TAG (any, with none), after a grace of 2 s
    local left
    for _ in 1 2 3 4 5; do
        left=$(ours "$1" | tr '\n' ' ')
        [ -z "${left// /}" ] && return 0
        sleep 0.5
    done
    echo "$left"
}

# Tests run in LANES lanes at once (BATON_TEST_LANES, default 2: most tests wait on processes,
# servers and timers more than they compute, and these machines have two cores); a CLI script
# with a "# alone: REASON" line in its header runs with no other test beside it (it times
# something against the clock, installs into the build, or starts a server that is one per
# machine). Each test's line is printed when it ends, so lines come in the order tests end.
LANES=${BATON_TEST_LANES:-2}
case "$LANES" in [1-9]) ;; *) LANES=2 ;; esac
# The lanes share two cores, and an OpenMP team (oneDNN's and ours, libgomp) spins up to 300,000
# times at a barrier before it sleeps: two race trainings side by side took 30 s instead of 2.5 here
# and 230-310 s each on a CI machine, each team spinning on the core the other needed. A short spin
# leaves a test alone as fast (1.7-1.8 s either way) and the pair at 2.5 s.
export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}
# `python3` in every test is Debian's /usr/bin/python3 (scripts/deps.sh installs its numpy, torch and
# boto3), whatever comes first on PATH: a pyenv shim there costs 0.4 s a call (a hundred bash
# processes), and the scripts call python3 hundreds of times (test_verify_resume.sh 36).
if [ "$(command -v python3)" != /usr/bin/python3 ] && [ -x /usr/bin/python3 ]; then
    PYBIN=$(mktemp -d /tmp/baton-pybin-XXXXXX) && ln -s /usr/bin/python3 "$PYBIN/python3" && export PATH="$PYBIN:$PATH"
    trap 'rm -rf "$PYBIN"' EXIT
fi
pass=0 fail=0 skipped=0 failed=() skips=() times=()
declare -A job_name=() job_t0=() job_log=() job_tag=()
seq_no=0
# report NAME RC LOG T0 TAG: judge one test that ended (its leftovers too) and print its line
report() {
    local name=$1 rc=$2 log=$3 t0=$4 tag=$5 left ok=0
    [ "$rc" = 0 ] && ok=1
    [ "$rc" = 77 ] && ok=skip
    left=$(left_running "$tag")
    if [ -n "${left// /}" ]; then
        ok=0
        for p in $left; do
            echo "left running: pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" >>"$log"
            kill -9 "$p" 2>/dev/null
        done
    fi
    if [ "$ok" = skip ]; then
        local why
        why=$(grep -m 3 -i '^skip' "$log" | sed 's/^skip[: -]*//I' | paste -sd ';' -)
        skipped=$((skipped + 1)); skips+=("$name: ${why:-no reason given}")
        printf 'SKIP  %-48s %3ds  %s\n' "$name" $((SECONDS - t0)) "${why:-no reason given}"
        if [ "${BATON_CI:-0}" = 1 ]; then
            fail=$((fail + 1)); failed+=("$name (skipped under CI)")
        fi
    elif [ "$ok" = 1 ]; then
        pass=$((pass + 1)); printf 'ok    %-48s %3ds\n' "$name" $((SECONDS - t0))
    else
        fail=$((fail + 1)); failed+=("$name"); printf 'FAIL  %-48s %3ds\n' "$name" $((SECONDS - t0))
        tail -n 40 "$log" | sed 's/^/      | /'
    fi
    rm -f "$log"
    times+=("$((SECONDS - t0)) $name")
}
# reap [PID...]: wait for one running test (or one of the PIDs) to end and report it
reap() {
    local pid rc
    wait -n -p pid "${!job_name[@]}" "$@"
    rc=$?
    [ -n "$pid" ] && [ -n "${job_name[$pid]+set}" ] || return 0   # none, or not a test's (the sanitizer build)
    report "${job_name[$pid]}" "$rc" "${job_log[$pid]}" "${job_t0[$pid]}" "${job_tag[$pid]}"
    unset "job_name[$pid]" "job_t0[$pid]" "job_log[$pid]" "job_tag[$pid]"
}
drain() { while [ ${#job_name[@]} -gt 0 ]; do reap; done; }
# start NAME CMD...: run a test in the next free lane
start() {
    local name=$1; shift
    while [ ${#job_name[@]} -ge "$LANES" ]; do reap; done
    seq_no=$((seq_no + 1))
    local tag="$$-$seq_no" log
    log=$(mktemp)
    BATON_TEST_TAG=$tag "$@" >"$log" 2>&1 &
    job_name[$!]=$name; job_t0[$!]=$SECONDS; job_log[$!]=$log; job_tag[$!]=$tag
}
# run NAME CMD...: a test alone (the lanes drained first)
run() {
    drain
    start "$@"
    drain
}

run "check-layers (README's component table)" make -s check-layers
run "check-code (one JSON reader, file/function/header sizes)" make -s check-code

full=${BATON_TEST_FULL:-0}
builds=(build)
[ "${BATON_TEST_QUICK:-0}" = 1 ] || builds+=(build-san)
# left_out_of_san SCRIPT: whether tests/san-set.txt leaves the script out of the sanitizer pass
# ("-NAME", chosen from coverage: what it alone reaches is counted in the file's header); a
# script it does not name runs there
left_out_of_san() { grep -qx -- "-$(basename "$1" .sh)" tests/san-set.txt; }
# build B SAN LOG TARGET...: make the targets in build B, its output in LOG, its status returned
build() { local b=$1 san=$2 log=$3; shift 3; make -s -j"$jobs" BUILD="$b" SAN="$san" "$@" >"$log" 2>&1; }
san_build=
# san_done: wait for the sanitizer build and return its status. Its status comes from a file, not
# from `wait`: reap's `wait -n` may already have collected the process (then `wait` says "not a
# child of this shell" and returns 127, which failed a clean run once with every build fine).
# The plain pass's tests are reported as they end meanwhile (their seconds are taken at the report).
san_done() {
    local f=/tmp/baton-build-$$-build-san.rc rc
    while kill -0 "$san_build" 2>/dev/null; do
        if [ ${#job_name[@]} -gt 0 ]; then reap "$san_build"; else sleep 1; fi
    done
    rc=$(cat "$f" 2>/dev/null || echo 1)
    rm -f "$f"
    return "$rc"
}
# start_servers: the loopback server tests (tests/servers/test_*.sh; nginx, the RADOS Gateway,
# Slurm, the fault proxy), in the lanes but for a "# alone" one
start_servers() {
    local s r
    for s in tests/servers/test_*.sh; do
        [ -e "$s" ] || continue
        if sed -n 1,25p "$s" | grep -q '^# alone'; then r=run; else r=start; fi
        $r "servers/$(basename "$s" .sh)" bash "$s"
    done
}
for b in "${builds[@]}"; do
    san=0; [ "$b" = build-san ] && san=1
    if [ "$san" = 1 ]; then san_done; else build "$b" 0 /tmp/baton-build-$$-"$b".log all tests; fi
    if [ $? -ne 0 ]; then
        drain >/dev/null   # the plain build's tests still running
        cat /tmp/baton-build-$$-"$b".log; rm -f /tmp/baton-build-$$-"$b".log
        echo "0 passed, 1 failed, 0 skipped"; exit 1
    fi
    rm -f /tmp/baton-build-$$-"$b".log
    # the sanitizer build compiles while the plain build's tests run, at a lower priority than
    # theirs (they wait on processes and servers more than they compute)
    if [ "$san" = 0 ] && [ "${BATON_TEST_QUICK:-0}" != 1 ]; then
        nice -n 10 bash -c "$(declare -f build); jobs=$jobs; build build-san 1 /tmp/baton-build-$$-build-san.log all tests fuzz-replay; echo \$? >/tmp/baton-build-$$-build-san.rc" &
        san_build=$!
    fi
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
    # the scripts that run alone first, then the rest in the lanes: one drain a pass (the plain
    # pass's alone scripts find the lanes empty, with the sanitizer build compiling niced beside
    # them), and no drain at a pass's end — the next pass's tests and the fuzz replay start as
    # lanes free up
    alone=() lane=()
    for s in tests/cli/test_*.sh; do
        [ -e "$s" ] || continue
        # a walk-through of a document checks what it promises, not memory safety (the tests of
        # the commands it runs cover that in both builds): "# plain build only" keeps it to one
        [ "$san" = 1 ] && grep -q '^# plain build only' "$s" && continue
        [ "$san" = 1 ] && [ "$full" != 1 ] && left_out_of_san "$s" && continue
        if sed -n 1,25p "$s" | grep -q '^# alone'; then alone+=("$s"); else lane+=("$s"); fi
    done
    for s in "${alone[@]}"; do
        run "$b/cli/$(basename "$s" .sh)" env BATON="$b/baton" BATON_BUILD="$b" bash "$s"
    done
    for t in "$b"/tests/test_*; do
        case "$t" in *.d) continue ;; esac
        start "$b/$(basename "$t")" "$t"
    done
    # the loopback server tests before the last pass's scripts, not after them: their longest two
    # (test_chaos about 55 s, test_slurm 35 s) at the very end left a lane idle for a minute
    [ "$b" = "${builds[-1]}" ] && start_servers
    for s in "${lane[@]}"; do
        start "$b/cli/$(basename "$s" .sh)" env BATON="$b/baton" BATON_BUILD="$b" bash "$s"
    done
done

if [ "${BATON_TEST_QUICK:-0}" != 1 ] && [ "$full" != 1 ]; then
    start "fuzz targets replayed (seeds + mutations, sanitizers)" tests/fuzz/replay.sh build-san
fi
if [ "${BATON_TEST_QUICK:-0}" != 1 ] && [ "$full" = 1 ]; then
    if make -s -j"$jobs" fuzz-build >/tmp/baton-fuzz-$$.log 2>&1; then
        run "fuzz (${FUZZ_SECONDS:-2}s per target)" tests/fuzz/run.sh "${FUZZ_SECONDS:-2}"
    else
        cat /tmp/baton-fuzz-$$.log; fail=$((fail + 1)); failed+=("fuzz-build")
    fi
    rm -f /tmp/baton-fuzz-$$.log
fi

drain
left=$(left_running "")
if [ -n "${left// /}" ]; then
    fail=$((fail + 1)); failed+=("left running after the suite: $left")
    for p in $left; do kill -9 "$p" 2>/dev/null; done
fi

echo "the ten slowest:"
printf '%s\n' "${times[@]}" | sort -rn | head -n 10 | awk '{ s = $1; $1 = ""; printf "  %4ds %s\n", s, $0 }'
[ ${#skips[@]} -eq 0 ] || printf 'skipped: %s\n' "${skips[@]}"
[ ${#failed[@]} -eq 0 ] || printf 'failed: %s\n' "${failed[*]}"
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
