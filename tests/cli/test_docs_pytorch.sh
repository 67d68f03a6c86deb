#!/usr/bin/env bash
# test_docs_pytorch.sh — docs/pytorch.md's first run (Install) run as written, its commands read
# from the document, in a folder shaped like the built checkout it starts from (build/baton the
# baton under test, build/python the module built beside it, examples/ the tree's), with Debian's
# /usr/bin/python3 as `python3` and the example's training cut to 6 steps (`--max-steps 6` added
# after the document's flags): the version printed is the baton's, the example ends with the JSON
# line the document shows and a checkpoint that `baton ckpt ls` lists, and the same command, allowed
# two steps more, continues from that checkpoint. `train.py --help` as the document gives it.
# plain build only (what the document promises, not memory safety: test_python.sh covers that)
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
B=${BATON_BUILD:-build}
case "$B" in /*) ;; *) B=$PWD/$B ;; esac
DOC=docs/pytorch.md
if [ ! -x /usr/bin/python3 ] || [ ! -d "$B/python/baton" ] || ! /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
    skip "no /usr/bin/python3 with torch and numpy, or no module in $B/python (scripts/deps.sh installs them, make builds it)"
    finish
    exit $?
fi
doc_setup
mkdir -p "$W/build"
ln -s "$T/bin/baton" "$W/build/baton"
ln -s "$B/python" "$W/build/python"
ln -s "$PWD/examples" "$W/examples"
# python3: Debian's, with the flags the test adds to examples/pytorch/train.py (DOC_ARGS_TRAIN_PY)
cat >"$T/bin/python3" <<'EOF'
#!/usr/bin/env bash
case "${1:-}" in
*/train.py) exec /usr/bin/python3 "$@" ${DOC_ARGS_TRAIN_PY:-} ;;
*) exec /usr/bin/python3 "$@" ;;
esac
EOF
chmod +x "$T/bin/python3"
export OMP_NUM_THREADS=2 DOC_ARGS_TRAIN_PY="--max-steps 6"
doc_walk "$DOC" first-run
check 'doc_ran 1' "$(doc_why 1)"
check '[ "$(head -n1 "$D/01.out")" = "$("$BATON" --version | awk "{print \$2}")" ]' "the version printed is the baton's: $(head -n1 "$D/01.out")"
sed -n '/<!-- walk-through first-run -->/,/<!-- \/walk-through -->/p' "$DOC" >"$T/part.md"
shown=$(doc_quote "$T/part.md" '{"step": ')
grep '^{"step": ' "$D/01.out" | tail -n1 >"$T/got.json"
check 'python3 - "$shown" "$T/got.json" <<'"'"'PY'"'"'
import json, sys
keys = [k.split(":")[0].strip(" {\"") for k in sys.argv[1].split(", ")]   # the keys the document shows, in order
got = json.load(open(sys.argv[2]))
assert [k for k in got if k in keys] == keys, (keys, list(got))
assert got["step"] == 6 and got["status"] == "done" and got["checkpoint"] == "ckpt/ckpt-000000006", got
PY' "the example ends with the JSON line the document shows ($shown): $(cat "$T/got.json")"
check 'grep -Eq "^6 +.* ok$" "$D/01.out"' "baton ckpt ls lists the checkpoint: $(tail -n 3 "$D/01.out")"
# the same command, allowed two steps more, continues from the checkpoint
cmd=$(grep 'examples/pytorch/train.py' "$D/01.sh")
(cd "$W" && DOC_ARGS_TRAIN_PY="--max-steps 8" eval "$cmd" >"$T/cont.out" 2>"$T/cont.err")
check 'grep -q "^{\"step\": 8, .*\"resumed_from\": 6, " "$T/cont.out" && [ -d "$W/ckpt/ckpt-000000008" ] && grep -q "the same command continues at the next" "$T/part.md"' \
    "the same command continues: $(tail -n1 "$T/cont.out") $(tail -n 3 "$T/cont.err")"
help=$(doc_quote "$DOC" 'PYTHONPATH=build/python python3 examples/pytorch/train.py --help')
check '[ -n "$help" ] && (cd "$W" && eval "$help") | grep -q "^usage: train.py"' "'$help' as the document gives it"
finish
