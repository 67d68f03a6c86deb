#!/usr/bin/env bash
# tests/fuzz/replay.sh BUILD — every fuzz target built without libFuzzer in BUILD (`make
# BUILD=… fuzz-replay`: BUILD/fuzz/replay_NAME) over its seeds, tests/fuzz/seeds/NAME/, and 2,000
# deterministic mutations of each seed, at most REPLAY_SECONDS (default 1) of mutations a target.
# Prints one line per target; exits non-zero when a target aborts or a sanitizer reports (or when
# none is built, or a target has no seeds).
set -u
b=${1:?usage: $0 BUILD}
cd "$(dirname "$0")/../.." || exit 2
failed=0 ran=0
for bin in "$b"/fuzz/replay_*; do
    case "$bin" in *.d) continue ;; esac
    [ -x "$bin" ] || continue
    name=${bin##*/replay_}
    ran=$((ran + 1))
    if [ ! -d "tests/fuzz/seeds/$name" ]; then
        echo "FAIL $name: no seeds in tests/fuzz/seeds/$name"; failed=$((failed + 1)); continue
    fi
    if ! "$bin" -m "${REPLAY_MUTATIONS:-2000}" -s "${REPLAY_SECONDS:-1}" "tests/fuzz/seeds/$name"; then
        echo "FAIL $name"; failed=$((failed + 1))
    fi
done
[ "$ran" -gt 0 ] || { echo "no replay targets in $b/fuzz (make BUILD=$b fuzz-replay)"; exit 1; }
echo "$ran targets, $failed failed"
[ "$failed" -eq 0 ]
