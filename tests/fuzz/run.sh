#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS [NAME...] — run every libFuzzer target already built under build-fuzz/
# (`make fuzz-build` builds them; this script builds nothing), or only the NAMEd ones (fuzz_NAME),
# for SECONDS each; FUZZ_RUNS=N stops a target sooner, after N executions (the long campaign:
# FUZZ_RUNS=10000000 and 1800 seconds).
#
# Each target fuzz_NAME keeps its corpus in build-fuzz/corpus/NAME, seeded from
# tests/fuzz/seeds/NAME/ when that folder exists; its log goes to build-fuzz/logs/fuzz_NAME.log
# and any crashing input to build-fuzz/artifacts/. Prints one line per target and exits non-zero
# when any target crashes, leaks, times out or runs out of memory (or when none is built).
set -u
secs=${1:-10}
case $secs in
    '' | *[!0-9]*) echo "usage: $0 SECONDS [NAME...]" >&2; exit 2 ;;
esac
shift $(($# > 0 ? 1 : 0))
runs_opt=()
[ -n "${FUZZ_RUNS:-}" ] && runs_opt=(-runs="$FUZZ_RUNS")
cd "$(dirname "$0")/../.." || exit 2

mkdir -p build-fuzz/corpus build-fuzz/logs build-fuzz/artifacts
failed=0
ran=0
bins=(build-fuzz/fuzz_*)
[ $# -gt 0 ] && bins=("${@/#/build-fuzz/fuzz_}")
for bin in "${bins[@]}"; do
    [ -f "$bin" ] && [ -x "$bin" ] || continue
    target=$(basename "$bin")
    name=${target#fuzz_}
    corpus=build-fuzz/corpus/$name
    log=build-fuzz/logs/$target.log
    mkdir -p "$corpus"
    dirs=("$corpus")
    [ -d "tests/fuzz/seeds/$name" ] && dirs+=("tests/fuzz/seeds/$name")
    ran=$((ran + 1))
    t0=$SECONDS
    "$bin" -max_total_time="$secs" "${runs_opt[@]}" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="build-fuzz/artifacts/$target-" "${dirs[@]}" >"$log" 2>&1
    status=$?
    if [ "$status" -eq 0 ]; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
        printf '%-24s ok: %s runs in %ss, corpus %s files\n' "$target" "${runs:-?}" "$((SECONDS - t0))" \
            "$(find "$corpus" -type f | wc -l)"
    else
        why=$(grep -m 1 -o 'ERROR: [A-Za-z]*: [^ ]*\|deadly signal\|ERROR: libFuzzer: [a-z-]*' "$log")
        printf '%-24s FAILED (%s); see %s\n' "$target" "${why:-exit status $status}" "$log"
        failed=$((failed + 1))
    fi
done
if [ "$ran" -eq 0 ]; then
    echo "no fuzz targets under build-fuzz/ (run make fuzz-build first)" >&2
    exit 1
fi
[ "$failed" -eq 0 ] || { echo "$failed of $ran fuzz targets failed" >&2; exit 1; }
exit 0
