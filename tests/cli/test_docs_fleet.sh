#!/usr/bin/env bash
# test_docs_fleet.sh — docs/fleet.md's walk-through run as written: its pack command and its job
# file, both read from the document (no copy of them here), run in an empty folder with the
# baton under test first on PATH: `fleet check` accepts the job, `fleet run` completes it with the
# five interruptions with notice the document shows and no step lost. docs/race-train.yaml
# (docs/race.md, step 6) must check too and schedule its interruptions (test_fleet_race.sh runs it).
# plain build only (what the document promises, not memory safety: test_fleet*.sh cover that)
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=2 BATON_LOG=warn
case "$BATON" in /*) ;; *) BATON=$PWD/$BATON ;; esac
DOC=$PWD/docs/fleet.md
export PATH="$(dirname "$BATON"):$PATH"
W=$T/walk
mkdir -p "$W"
# the first ```sh block and the first ```yaml block of "From job file to report"
python3 - "$DOC" "$W" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
part = text.split("## From job file to report", 1)[1].split("\n## ", 1)[0]
blocks = re.findall(r"```(\w+)\n(.*?)```", part, re.S)
sh = next(b for k, b in blocks if k == "sh")
yml = next(b for k, b in blocks if k == "yaml")
dedent = lambda b: "\n".join(l[3:] if l.startswith("   ") else l for l in b.split("\n"))
open(sys.argv[2] + "/steps.sh", "w").write(dedent(sh))
open(sys.argv[2] + "/fmnist.yaml", "w").write(dedent(yml))
PY
check '[ -s "$W/steps.sh" ] && grep -q "^name: fmnist-mlp" "$W/fmnist.yaml"' "the walk-through's commands and job file read from docs/fleet.md"
check '(cd "$W" && bash -e steps.sh >/dev/null 2>&1)' "step 1 as written: $(cat "$W/steps.sh")"
check '(cd "$W" && baton fleet check fmnist.yaml >"$W/check.out" 2>&1)' "baton fleet check fmnist.yaml: $(tail -3 "$W/check.out" 2>/dev/null)"
check '(cd "$W" && baton fleet run fmnist.yaml >"$W/run.out" 2>"$W/run.err")' "baton fleet run fmnist.yaml: $(tail -3 "$W/run.err" 2>/dev/null)"
(cd "$W" && baton fleet status fmnist-mlp --json >"$W/st.json" 2>/dev/null)
check 'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=d[\"totals\"]; assert d[\"job\"][\"state\"] == \"done\" and t[\"interruptions_with_notice\"] == 5 and t[\"interruptions_without_notice\"] == 0 and t[\"max_lost_steps_with_notice\"] == 0, t" "$W/st.json"' \
    "as the document shows: done, 5 interruptions with notice, 0 steps lost ($(grep -m1 "^interruptions" "$W/run.out" 2>/dev/null))"
check 'grep -q "^interruptions 5 (5 with notice, 0 without)" "$W/run.out" && grep -q "savings" "$W/run.out"' "the report's lines the document quotes"
check '"$BATON" fleet check docs/race-train.yaml | grep -q "2 scheduled interruption(s)"' "docs/race-train.yaml checks and schedules two interruptions"
finish
