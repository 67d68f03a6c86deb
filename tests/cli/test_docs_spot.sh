#!/usr/bin/env bash
# test_docs_spot.sh — docs/spot.md's rehearsal of an interruption run as written, its commands
# read from the document, in an empty folder with the baton under test first on PATH (the
# emulator's notice after 3 s instead of 60: `--interrupt-after 3` added after the document's
# flags): the trainer logs the notice line and prints the summary line the document quotes, the
# shell prints "exit 75", the checkpoint it names verifies, and the same command resumes from it.
# Then `baton notice wait` and `--json` print what the document's transcript shows (its shape:
# times and seconds differ), against the emulator.
# plain build only (what the document promises, not memory safety: test_notice*.sh cover that)
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=2
DOC=docs/spot.md
doc_setup
# the notice after 3 s; a bound on the trainer should the notice never come (it then ends with
# exit 0, not the 75 checked below)
export DOC_ARGS_imds="--interrupt-after 3" DOC_ARGS_train="--max-steps 400"
doc_walk "$DOC" rehearsal
check 'doc_ran 1 75' "$(doc_why 1)"
# what the document says it shows, its numbers as patterns
said() { doc_quote "$D/02.txt" "$1"; }
python3 - "$DOC" "$D/02.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read().split("<!-- walk-through rehearsal -->", 1)[1].split("<!-- /walk-through -->", 1)[0]
open(sys.argv[2], "w").write(t.split("```", 2)[2])   # the prose after the block
PY
warn=$(said 'baton: warning: notice: terminate')
summ=$(said 'stopped on a terminate notice')
check '[ -n "$warn" ] && grep -Eq "^$(doc_pat "$warn")\$" "$D/01.err"' "stderr has the line the document quotes ($warn): $(grep notice "$D/01.err")"
check '[ -n "$summ" ] && grep -Eq "^$(doc_pat "$summ")\$" "$D/01.out"' "stdout has the summary line the document quotes ($summ): $(tail -n 3 "$D/01.out")"
check '[ "$(tail -n1 "$D/01.out")" = "exit 75" ] && grep -q "exit 75" "$D/02.txt"' "the shell prints exit 75: $(tail -n1 "$D/01.out")"
ck=$(grep -o 'checkpoint ckpt-[0-9]* committed' "$D/01.err" | awk '{print $2}')
check '[ -n "$ck" ] && baton ckpt verify "$W/ckpt/$ck" >/dev/null 2>&1' "the checkpoint the notice line names ($ck) verifies"
check 'grep -q "The same \`baton train\` command (without the emulator) resumes from" "$D/02.txt"' "the document says the same command resumes"
# the same command resumes (a few steps of it)
cmd=$(grep '^AWS_EC2_METADATA_SERVICE_ENDPOINT=' "$D/01.sh" | sed 's/^AWS_EC2_METADATA_SERVICE_ENDPOINT=\$url //; s/;.*//')
step=$((10#${ck#ckpt-}))
(cd "$W" && DOC_ARGS_train="--max-steps $((step + 2))" eval "$cmd" >"$T/resume.out" 2>"$T/resume.err")
check 'grep -q "resum.*$ck\|resum.* $step" "$T/resume.err" "$T/resume.out" && [ -d "$W/ckpt/ckpt-$(printf %09d $((step + 2)))" ]' \
    "'$cmd' resumes from $ck: $(tail -n 3 "$T/resume.err")"

# `baton notice wait` against the emulator: the document's transcript, numbers and times aside
"$BATON" imds --interrupt-after 0 >"$T/imds.url" 2>/dev/null &
imds=$!
for _ in $(seq 100); do [ -s "$T/imds.url" ] && break; sleep 0.05; done
url=$(head -n1 "$T/imds.url")
AWS_EC2_METADATA_SERVICE_ENDPOINT=$url timeout 20 baton notice wait >"$T/wait.out" 2>"$T/wait.err"
rc1=$?
AWS_EC2_METADATA_SERVICE_ENDPOINT=$url timeout 20 baton notice wait --json >"$T/wait.json" 2>>"$T/wait.err"
rc2=$?
kill "$imds"; wait "$imds" 2>/dev/null
shown=$(grep -A1 '^\$ baton notice wait$' "$DOC" | tail -n1)
check '[ $rc1 = 0 ] && [ -n "$shown" ] && grep -Eq "^$(doc_pat "$shown")\$" "$T/wait.out"' "notice wait prints what the document shows ($shown): $(cat "$T/wait.out" "$T/wait.err")"
grep -A1 '^\$ baton notice wait --json$' "$DOC" | tail -n1 >"$T/shown.json"
check '[ $rc2 = 0 ] && python3 - "$T/shown.json" "$T/wait.json" <<'"'"'PY'"'"'
import json, sys
shown, got = (json.load(open(f)) for f in sys.argv[1:])
assert list(shown) == list(got), (list(shown), list(got))
kind = lambda v: "number" if type(v) in (int, float) else type(v).__name__   # JSON has one number type
assert all(kind(shown[k]) == kind(got[k]) for k in shown), got
assert got["action"] == shown["action"] and got["source"] == shown["source"], got
PY' "notice wait --json prints the document's fields: $(cat "$T/wait.json")"
finish
