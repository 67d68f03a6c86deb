#!/usr/bin/env bash
# test_docs_race.sh — docs/race.md's two walk-throughs run as written, their commands read from
# the document, in a folder shaped like the built checkout they start from (build/baton the baton
# under test, docs/ and tests/ the tree's), training shortened by flags the test adds after the
# document's (`--minutes 0.05` where it says --minutes; the camera model's episodes 3 steps long):
#   "Train your first model": the track and its picture, a model trained, stopped with Ctrl-C
#   (exit 75) and continued by the same command, its three timed laps against the limit, its
#   camera frames, the camera model, and the oval on a spot fleet (interrupted, resumed, done);
#   "Run your own league": two models submitted and ranked, the 400 episodes' lap the document
#   gives, the league's page on 127.0.0.1:8080 (in a network namespace of its own, so the port is
#   free), and a third racer over HTTP with a token.
# plain build only (what the document promises, not memory safety: test_race*.sh cover that)
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
DOC=docs/race.md
doc_setup
mkdir -p "$W/build"
ln -s "$T/bin/baton" "$W/build/baton"
ln -s "$PWD/docs" "$W/docs"
ln -s "$PWD/tests" "$W/tests"

# ---- Train your first model
export DOC_ARGS_race_train__minutes="--minutes 0.05"
cat >"$T/before.sh" <<'EOF'
# step 5, DeepRacer's camera model: episodes three steps long for 0.6 s (one iteration, or two on
# a fast machine: a checkpoint either way)
if [ "$1" = 5 ]; then export DOC_ARGS_race_train__minutes="--minutes 0.01 --max-steps 3"; fi
# step 6, the fleet's trainer: six seconds of training, room for the job's two scheduled notices
if [ "$1" = 6 ]; then export DOC_ARGS_race_train__minutes="--minutes 0.1"; fi
EOF
DOC_BEFORE=$T/before.sh doc_walk "$DOC" first-model --inline 'build/baton '
check '[ "$(cat "$D/01.sh")" = "build/baton race track oval --svg oval.svg" ] && [ -e "$D/06.sh" ]' "the walk-through's steps read from the document: $(cat "$D"/0*.sh | tr '\n' ';')"
check 'doc_ran 1 && grep -q "^  length     18.050 m" "$D/01.out" && [ -s "$W/oval.svg" ] && grep -q "18.05 m, 124 waypoints" "$DOC"' \
    "step 1: the oval as the document describes it (18.05 m, 124 waypoints) and its picture: $(doc_why 1)"
check 'doc_ran 2 && [ -d "$W/runs/oval" ] && [ "$(head -c 9 "$W/runs/oval.csv")" = iteration ] && grep -q "^  checkpoint runs/oval/ckpt-" "$D/02.out"' \
    "step 2 trains, logs and checkpoints: $(doc_why 2)"
# "Ctrl-C stops it after a checkpoint (exit 75); the same command continues where it stopped"
# (a process group of its own, signalled as a terminal signals its foreground job, with SIGINT's
# default disposition restored: a background job of a script starts with it ignored)
(cd "$W" && DOC_ARGS_race_train__minutes="--minutes 0.1" exec setsid --wait python3 -c \
    'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    bash "$D/02.sh" >"$T/int.out" 2>"$T/int.err") &
tp=$!
sleep 1.5
kill -INT -- -"$tp" 2>/dev/null
wait "$tp"
rc=$?
check '[ $rc = 75 ] && grep -q "^stopped on a sigint notice" "$T/int.out"' "Ctrl-C: exit 75 after a checkpoint (exit $rc): $(tail -n 2 "$T/int.out" "$T/int.err")"
(cd "$W" && DOC_ARGS_race_train__minutes="--minutes 0.1" bash "$D/02.sh" >"$T/cont.out" 2>"$T/cont.err")
rc=$?
check '[ $rc = 0 ] && grep -q "resuming from runs/oval/ckpt-" "$T/cont.err"' "the same command continues (exit $rc): $(grep resum "$T/cont.err")"
check 'doc_ran 3 && grep -Eq "^  lap 3 +[0-9.]+ s" "$D/03.out" && grep -Eq "^  best lap [0-9.]+ s, total [0-9.]+ s" "$D/03.out" &&
       grep -Eq "best lap / limit = [0-9.]+$" "$D/03.out" && grep -q "<svg" "$W/runs/oval.svg"' \
    "step 3 prints each lap, the best and the best over the limit, and draws the drive: $(doc_why 3) $(cat "$D/03.out")"
check 'doc_ran 4 && [ -s "$W/runs/frames/frame-00000.png" ]' "step 3's camera frames: $(doc_why 4)"
check 'doc_ran 5 && compgen -G "$W/runs/camera/ckpt-0*" >/dev/null && [ "$(json "$W/runs/camera/model_metadata.json" "d[\"sensor\"][0]")" = FRONT_FACING_CAMERA ]' \
    "step 5 trains DeepRacer's camera model: $(doc_why 5)"
check 'doc_ran 6 && grep -q "^interruptions 2 (2 with notice, 0 without)" "$D/06.out"' "step 6: the oval on the fleet, two interruptions with notice: $(doc_why 6) $(grep -m1 ^interruptions "$D/06.out")"
(cd "$W" && build/baton fleet status race-oval --json >"$T/st.json" 2>/dev/null)
check '[ "$(json "$T/st.json" "d[\"job\"][\"state\"], d[\"totals\"][\"max_lost_steps_with_notice\"]")" = "done 0" ]' \
    "step 6: each replacement resumed from the volume, nothing lost: $(json "$T/st.json" 'd["job"]["state"], d["totals"]')"

# ---- Run your own league: in a network namespace of its own when there is one to make (root),
# so that 127.0.0.1:8080 is free; else here if nothing listens on it
net=()
if unshare -n true 2>/dev/null; then
    net=(unshare -n)
elif ! python3 -c 'import socket; socket.socket().bind(("127.0.0.1", 8080))' 2>/dev/null; then
    skip "the league's walk-through: 127.0.0.1:8080 is taken and no network namespace can be made"
    finish
    exit $?
fi
export DOC_DETACH="race serve" DOC_DETACH_OUT=$T/serve.out DOC_ARGS_race_train__minutes="--minutes 0.05"
D=$T/league
python3 tests/cli/docwalk.py "$DOC" league "$D"
cat >"$T/ns.sh" <<'EOF'
# the walk-through, then what its reader opens in a browser, then the server stopped
[ -z "$1" ] || ip link set lo up
bash "$D/run.sh"
curl -s -o "$T/page.html" -w "%{http_code}" http://127.0.0.1:8080/track/oval >"$T/page.code"
curl -s "http://127.0.0.1:8080/api/leaderboard?track=oval" >"$T/board.json"
[ -s "$DOC_DETACH_OUT.pid" ] && kill "$(cat "$DOC_DETACH_OUT.pid")" && tail --pid="$(cat "$DOC_DETACH_OUT.pid")" -f /dev/null
EOF
(cd "$W" && export D T && "${net[@]}" bash "$T/ns.sh" "${net[*]}")
check 'doc_ran 1' "$(doc_why 1)"
sed -n '/<!-- walk-through league -->/,/^### The page/p' "$DOC" >"$T/part.md"
shown=$(grep -m1 '^entry 1: alice on oval' "$DOC" | sed 's/alice/ALIAS/')
for a in "one minute" "400 episodes"; do
    check 'grep -Eq "^$(doc_pat "$shown" | sed "s/ALIAS/$a/")\$" "$D/01.out"' "submit prints what the document shows ($shown) for '$a': $(grep "^entry" "$D/01.out")"
done
q=$(tr '\n' ' ' <"$T/part.md" | grep -o 'the 400 episodes in about [0-9.]* s' | awk '{print $6}')
lap=$(sed -n 's/^entry [0-9]*: 400 episodes on oval .*best lap \([0-9.]*\) s.*/\1/p' "$D/01.out")
check '[ -n "$q" ] && [ -n "$lap" ] && python3 -c "import sys; sys.exit(abs($lap - $q) > 0.1)"' "the 400 episodes lap the oval in about $q s, as the document says: $lap"
# the leaderboard: the columns of the document's example, one row per alias
hdr=$(grep -A2 '^\$ baton race leaderboard$' "$DOC" | tail -n1)
check '[ -n "$hdr" ] && [ "$(echo $hdr)" = "$(echo $(grep -A1 "^oval (time-trial)$" "$D/01.out" | tail -n1))" ] && grep -Eq "^ +2 .* (one minute|400 episodes)$" "$D/01.out"' \
    "the leaderboard's columns are the document's ($hdr): $(grep -A3 "^oval (time-trial)" "$D/01.out")"
check '[ "$(cat "$T/page.code")" = 200 ] && grep -q "one minute" "$T/page.html" && [ "$(tail -n1 "$D/01.out")" = http://127.0.0.1:8080 ]' \
    "the page the document says to open: $(cat "$T/page.code") ($(tail -n1 "$D/01.out"); $(tail -n 3 "$T/serve.out"))"
check 'doc_ran 2' "the third racer over HTTP: $(doc_why 2)"
grep -A3 '^\$ baton race submit --server' "$DOC" | tail -n3 | sed 's|http://league.example:8080|http://127.0.0.1:8080|; s/alice/carol/' >"$T/shown"
check '[ -s "$T/shown" ] && python3 - "$T/shown" "$D/02.out" <<'"'"'PY'"'"'
import re, sys
shown = open(sys.argv[1]).read().splitlines()
got = open(sys.argv[2]).read().splitlines()
pat = lambda l: "^" + re.sub(r"[0-9]+", "[0-9]+", re.escape(l).replace("\\ ", " ")) + "$"
i = next(i for i, l in enumerate(got) if l.startswith("submission "))
assert all(re.match(pat(s), g) for s, g in zip(shown, got[i:i + 3])) and len(got) >= i + 3, (shown, got[i:])
PY' "submit --server prints what the document shows ($(cat "$T/shown")): $(cat "$D/02.out")"
check '[ "$(json "$T/board.json" "sorted(e[\"alias\"] for e in d[\"entries\"])")" = "['"'"'400 episodes'"'"', '"'"'carol'"'"', '"'"'one minute'"'"']" ]' \
    "three racers on the board: $(head -c 300 "$T/board.json")"
finish
