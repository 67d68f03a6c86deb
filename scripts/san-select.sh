#!/usr/bin/env bash
# san-select.sh — choose, by line coverage, which CLI test scripts `make test` repeats under the
# sanitizers, and write the choice to tests/san-set.txt (tests/run.sh reads it).
#
# The rule: the sanitizer pass runs every unit test program, and of the CLI scripts (tests/cli/
# test_*.sh, less those marked "# plain build only") the cheapest set whose coverage holds at least
# SAN_COVER (default 0.97) of the lines of src/ that some CLI script reaches and no unit test does —
# a weighted set cover, solved greedily (most such lines per second first, which is within a
# logarithmic factor of the best), stopped when the share is reached. The lines left to the plain
# pass alone are counted per file in the list's header. `make test-full` still repeats every script.
# (0.97, not 0.98: with 9,682 such lines, 98 % took 29 scripts and 676 s of the coverage build —
# 200 CPU-seconds more in the sanitizer pass than the choice before it, which the suite's 25
# minutes have no room for; 97 % takes 26 and 602 s, what the earlier choice and the two scripts
# new since it cost, 603 s, for 97.4 % instead of 93.8 %.)
#
#   1. build BUILD=build-cov with gcc's --coverage,
#   2. run every unit test, and collect the lines they reach (gcov's JSON),
#   3. run every CLI script alone from zeroed counters, timing it, and collect its lines,
#   4. choose, and write tests/san-set.txt: one script per line with the lines it alone adds to the
#      choice and its seconds, and a header saying what the choice covers.
# The per-script lines are kept in build-cov/lines/ and their seconds in build-cov/seconds;
# SAN_SELECT_REUSE=1 chooses again from them without rerunning anything, SAN_SELECT_FROM=NAME reruns
# the scripts from test_NAME on (after one failed, say). The coverage flags are exported, so a
# script that runs make itself (make install) builds with them too. Run it after adding a CLI script or moving code between layers
# (about 15 minutes on 2 cores); the list is a plain text file, so a review sees what changed.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-cov
export CFLAGS=--coverage LDFLAGS=--coverage
# always repeated, never measured: test_python runs the Python extension (src/python, not in the
# library: only this script reaches it) under ASan, and under coverage it takes 15 minutes (every
# interpreter it starts writes the whole library's counters at exit)
# (the Python files themselves are not chosen here: a file whose extra lines under coverage, over
# the other files' and the chosen scripts', are next to none says "# plain build only" in its
# header — test_example.py 2 lines for 120 CPU-seconds, test_dataloader_resume.py none for 48)
ALWAYS="test_python"
PY=/usr/bin/python3

# lines NAME: the src/ lines the counters now hold as reached, appended to $B/lines/NAME
lines() {
    mkdir -p "$B/lines"
    (cd "$B/obj" && find . -name '*.gcda' -print0 | xargs -0 -r gcov --json-format --stdout 2>/dev/null) |
        $PY -c '
import json, sys
out = set()
for doc in sys.stdin:
    for f in json.loads(doc)["files"]:
        if not f["file"].startswith("src/"):
            continue
        name = f["file"]
        out.update("%s:%d" % (name, l["line_number"]) for l in f["lines"] if l["count"] > 0)
sys.stdout.write("\n".join(sorted(out)) + "\n")' >"$B/lines/$1"
}
zero() { find "$B/obj" -name '*.gcda' -delete; }

if [ "${SAN_SELECT_REUSE:-0}" != 1 ]; then
    mkdir -p "$B"
    make -s -j"$(nproc)" BUILD=$B all tests >/dev/null 2>"$B/build.log" ||
        { cat "$B/build.log"; exit 1; }
    from=${SAN_SELECT_FROM:-}
    [ -n "$from" ] || rm -rf "$B/lines" "$B/seconds"
    zero
    [ -n "$from" ] || for t in "$B"/tests/test_*; do
        case "$t" in *.d | *.gcno | *.gcda) continue ;; esac
        "$t" >/dev/null 2>&1 || echo "san-select: $t failed under coverage (its lines still count)" >&2
    done
    [ -n "$from" ] || lines unit
    touch "$B/seconds"
    for s in tests/cli/test_*.sh; do
        grep -q '^# plain build only' "$s" && continue
        name=$(basename "$s" .sh)
        case " $ALWAYS " in *" $name "*) continue ;; esac
        if [ -n "$from" ]; then
            [[ "$name" < "test_$from" ]] && continue
            sed -i "/^$name /d" "$B/seconds"
        fi
        zero
        t0=${EPOCHREALTIME/./}
        env BATON="$B/baton" BATON_BUILD="$B" bash "$s" >/dev/null 2>&1 ||
            echo "san-select: $name failed under coverage (its lines still count)" >&2
        t1=${EPOCHREALTIME/./}; secs=$(((t1 - t0) / 1000000)).$(printf %06d $(((t1 - t0) % 1000000)))
        lines "$name"
        echo "$name $secs" >>"$B/seconds"
        printf 'san-select: %-32s %6.1fs %6d lines\n' "$name" "$secs" "$(wc -l <"$B/lines/$name")" >&2
    done
    zero
fi

$PY - "$B" tests/san-set.txt "$ALWAYS" "${SAN_COVER:-0.97}" <<'PY'
import collections, os, sys
b, out, always, cover = sys.argv[1], sys.argv[2], sys.argv[3].split(), float(sys.argv[4])
read = lambda n: set(open(f"{b}/lines/{n}").read().split())
unit = read("unit")
secs = {l.split()[0]: max(float(l.split()[1]), 0.1) for l in open(f"{b}/seconds")
        if l.split()[0] not in always}
cli = {n: read(n) for n in secs}
reach = set().union(*cli.values())
need = reach - unit
left, chosen = set(need), []
while len(left) > (1 - cover) * len(need):
    best = max(cli, key=lambda n: (len(cli[n] & left) / secs[n], -secs[n]))
    gain = cli[best] & left
    if not gain:
        break
    chosen.append((best, len(gain), secs[best]))
    left -= gain
total = sum(secs.values())
took = sum(s for _, _, s in chosen)
with open(out, "w") as f:
    f.write("# tests/san-set.txt — the CLI scripts `make test` repeats under ASan+UBSan, chosen by\n")
    f.write("# scripts/san-select.sh from line coverage (do not edit by hand; rerun it). The unit tests\n")
    f.write(f"# reach {len(unit)} lines of src/, the CLI scripts {len(reach)}; {len(need)} only through\n")
    f.write(f"# CLI scripts, {len(need) - len(left)} ({100 * (len(need) - len(left)) / max(len(need), 1):.1f} %) reached by these {len(chosen)} of {len(cli)} scripts ({took:.0f} s of\n")
    f.write(f"# {total:.0f} s in the coverage build), and {' '.join(always)} always (the Python extension).\n")
    f.write("# `make test-full` repeats every script.\n")
    per = collections.Counter(l.rsplit(":", 1)[0] for l in left)
    if per:
        f.write(f"# the {len(left)} lines left to the plain pass, by file: " +
                ", ".join(f"{k} {v}" for k, v in per.most_common()) + "\n")
    f.write("# script  lines-it-adds  seconds (coverage build)\n")
    for n in always:
        f.write(f"{n} always -\n")
    for n, g, s in chosen:
        f.write(f"{n} {g} {s:.1f}\n")
    f.write("# left out (what they alone reach is the lines counted above); a script named nowhere here\n")
    f.write("# (new since the last choice) is repeated until the next choice:\n")
    for n in sorted(set(cli) - {c for c, _, _ in chosen}):
        f.write(f"-{n}\n")
print(f"san-select: {len(chosen)} of {len(cli)} scripts, {took:.0f} s of {total:.0f} s, "
      f"cover {len(need) - len(left)} of the {len(need)} lines only CLI scripts reach", file=sys.stderr)
PY
