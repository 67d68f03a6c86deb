#!/usr/bin/env bash
# test_race_serve_pages.sh — the cost of a track page on `baton race serve`: the racing-line limit
# is computed once per track, by the worker ahead of the first load, and kept: the first load of
# /track/oval and the median of 20 more are well under a load that computes it; a
# track file replaced under the server is computed afresh (its page shows the new file's limit),
# and one restored shows the old limit again.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
unset BATON_LEAGUE_DB BATON_LEAGUE_TEST_HOLD_MS
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
M="--metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json"
DB=$T/l.db
mkdir -p "$T/tracks"
cp ../shared/tracks/Oval_track.npy "$T/tracks/Oval_track.npy"
check '"$BATON" race train --track oval $M --ckpt-dir "$T/m" --episodes 200 --seed 2 --threads 1 --quiet >/dev/null' "train a model"
check '"$BATON" race submit --ckpt "$T/m" --alias ann --track oval --db "$DB" >/dev/null && "$BATON" race submit --ckpt "$T/m" --alias ann --track "$T/tracks/Oval_track.npy" --db "$DB" >/dev/null' \
    "entries on the built-in oval and on a track file"
BATON_LOG=debug "$BATON" race serve --listen 127.0.0.1:0 --db "$DB" >"$T/url" 2>"$T/serve.err" &
pids+=($!)
for _ in $(seq 200); do U=$(head -n1 "$T/url" 2>/dev/null); [ -n "$U" ] && break; sleep 0.05; done
check '[ -n "$U" ]' "the server prints its URL: $(cat "$T/serve.err")"

t() { curl -s -o "$T/page" -w "%{http_code} %{time_total}\n" "$U$1"; }
limit() { grep -o 'the racing-line limit: [0-9.]* s' "$T/page"; }
# the worker draws the league's two tracks' pages ahead of their first load (a fixed second was
# not always enough under the sanitizers beside another test)
for _ in $(seq 600); do [ "$(grep -c 'drawn ahead' "$T/serve.err")" -ge 2 ] && break; sleep 0.05; done
check '[ "$(grep -c "drawn ahead" "$T/serve.err")" -ge 2 ]' "the worker draws both tracks' pages ahead: $(tail -3 "$T/serve.err")"
first=$(t /track/oval)
for _ in $(seq 20); do t /track/oval; done >"$T/times"
check '[ "${first%% *}" = 200 ] && [ "$(awk "\$1 != 200" "$T/times" | wc -l)" = 0 ]' "the page loads: $first"
med=$(awk '{print $2}' "$T/times" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
t /track/Oval_track >/dev/null
before=$(limit)
# a track file replaced under the server: its next load computes the limit on the answering thread
cp ../shared/tracks/Bowtie_track.npy "$T/tracks/Oval_track.npy.new" && mv "$T/tracks/Oval_track.npy.new" "$T/tracks/Oval_track.npy"
cold=$(t /track/Oval_track)
after=$(limit)
check '[ -n "$before" ] && [ -n "$after" ] && [ "$before" != "$after" ]' "a track file replaced: its page computed afresh ($before, then $after)"
check 'awk -v f="${first#* }" -v m="$med" -v c="${cold#* }" "BEGIN { exit !(m < c / 2 && f < c / 2) }"' \
    "/track/oval: first load ${first#* } s (computed ahead by the worker), median of 20 ${med} s, both well under a load that computes the limit (${cold#* } s)"
cp ../shared/tracks/Oval_track.npy "$T/tracks/Oval_track.npy.new" && mv "$T/tracks/Oval_track.npy.new" "$T/tracks/Oval_track.npy"
t /track/Oval_track >/dev/null
check '[ "$(limit)" = "$before" ]' "and restored: the first limit again"
finish
