#!/usr/bin/env bash
# run.sh — the mutation check: applies each entry of tests/mutations/list alone to a scratch copy
# of the sources, builds it (BUILD=build-mut in that copy) and runs the entry's test, which must
# fail. Prints "caught" or "NOT CAUGHT" per entry and a total; exit 1 when an entry was not caught,
# its text was not found exactly once, or the unmutated copy fails its own tests (then every
# "caught" would mean nothing). Run by `make chaos`, not by `make test` (minutes).
#
#   tests/mutations/run.sh [PATTERN]     only entries whose WHAT matches PATTERN
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
only=${1:-}
W=$(mktemp -d /tmp/baton-mut-XXXXXX)
trap 'rm -rf "$W"' EXIT
( cd "$root" && tar --exclude='./build*' --exclude='./.git' -cf - . ) | ( cd "$W" && tar -xf - )
cd "$W" || exit 1
export B=build-mut BATON_NO_PROGRESS=1
jobs=$(nproc 2>/dev/null || echo 2)
uncaught=0 caught=0 broken=0
apply() {   # apply FILE TEXT REPLACEMENT: exactly one occurrence, else exit 3
    python3 - "$@" <<'PY'
import sys
f, a, b = sys.argv[1], sys.argv[2].replace("\\n", "\n"), sys.argv[3].replace("\\n", "\n")
s = open(f).read()
if s.count(a) != 1:
    sys.exit(3)
open(f, "w").write(s.replace(a, b))
PY
}
entries=()
while IFS= read -r line; do
    case $line in ''|'#'*) continue ;; esac
    entries+=("$line")
done <"$root/tests/mutations/list"
# the unmutated copy must pass each test first
make -s -j"$jobs" BUILD=$B all tests >/dev/null 2>"$W/build.log" || { cat "$W/build.log"; echo "the unmutated build fails"; exit 1; }
declare -A baseline=()
for e in "${entries[@]}"; do
    test=$(awk -F' \\|\\|\\| ' '{print $4}' <<<"$e"); what=$(awk -F' \\|\\|\\| ' '{print $5}' <<<"$e")
    [ -n "$only" ] && ! grep -q -- "$only" <<<"$what" && continue
    [ -n "${baseline[$test]:-}" ] && continue
    if bash -c "$test" >/dev/null 2>&1; then baseline[$test]=ok; else baseline[$test]=fail; echo "BASELINE FAILS: $test"; broken=1; fi
done
[ "$broken" = 0 ] || exit 1
for e in "${entries[@]}"; do
    IFS=$'\x1f' read -r file text repl test what < <(sed 's/ ||| /\x1f/g' <<<"$e")
    [ -n "$only" ] && ! grep -q -- "$only" <<<"$what" && continue
    cp "$file" "$W/orig"
    if ! apply "$file" "$text" "$repl"; then
        echo "BROKEN ENTRY (text not found exactly once in $file): $what"; broken=1; continue
    fi
    if ! make -s -j"$jobs" BUILD=$B all tests >/dev/null 2>&1; then
        result="caught (does not build)"
    elif bash -c "$test" >/dev/null 2>&1; then
        result="NOT CAUGHT"
    else
        result="caught"
    fi
    cp "$W/orig" "$file"
    case $result in caught*) caught=$((caught + 1)) ;; *) uncaught=$((uncaught + 1)) ;; esac
    printf '%-24s %s — %s\n' "$result" "$file" "$what"
done
make -s -j"$jobs" BUILD=$B all tests >/dev/null 2>&1
echo "mutations: $caught caught, $uncaught not caught"
[ "$uncaught" = 0 ] && [ "$broken" = 0 ]
