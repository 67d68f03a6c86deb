#!/usr/bin/env bash
# test_usage.sh — what a newcomer types wrong gets exit 2 and one line naming the option and what
# it accepts (never exit 1, never a silent default, never "x: x:"); the help lists what a user may
# type, aligned; and a few arguments that used to be misread are read as meant.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
P="--samples-per-s 100 --dataset 1000 --epochs 1 --here-gflops 100"
expect_fail 2 "^baton imds: action 'explode': expected terminate, stop or hibernate$" $BATON imds --action explode
expect_fail 2 "^baton imds: listen address 'foo': expected HOST:PORT$" $BATON imds --listen foo
expect_fail 2 "^baton imds: notice lead time -1 s: expected 0..86400$" $BATON imds --notice -1
expect_fail 2 "^baton imds: --interrupt-after must be 0\.\." $BATON imds --interrupt-after -5
expect_fail 2 "^baton imds: give --interrupt-after or --interrupt-at, not both$" \
    $BATON imds --interrupt-after 5 --interrupt-at 2030-01-01T00:00:00Z
expect_fail 2 "^baton plan train: --spot-discount must be in \[0, 1\)" $BATON plan train $P --spot-discount 1.5
expect_fail 2 "^baton plan train: --interrupt-rate must be a percentage from 0 up to \(not including\) 100$" \
    $BATON plan train $P --interrupt-rate 100
expect_fail 2 "^baton plan train: --precision must be f32 or bf16$" $BATON plan train $P --precision fp8
expect_fail 2 "^baton plan train: a bf16 rate is projected by the catalog's bf16 figures .*\(c5.xlarge has none\)$" \
    $BATON plan train $P --precision bf16 --here c5.xlarge
expect_fail 2 "^baton notice: EC2 metadata endpoint 'notaurl': expected an http:// or https:// URL, or HOST:PORT$" \
    $BATON notice wait --endpoint notaurl --timeout 1
expect_fail 2 "^baton notice: .*--timeout a number of seconds >= 0" $BATON notice wait --timeout -1
expect_fail 2 "^baton run: --epochs is an option of the built-in demo" $BATON run /dev/null --epochs 3
expect_fail 2 "^baton fleet catalog: unknown option '--bogus'" $BATON fleet catalog --bogus
check '$BATON fleet catalog --json | python3 -c "import json,sys; r=json.load(sys.stdin); assert len(r) >= 10 and all(x[\"spot_per_h\"] < x[\"on_demand_per_h\"] for x in r), r"' \
    "fleet catalog --json: one array, an object per type"
# fleet run/status/cancel: one parse for every backend, and an option that does not apply says so
expect_fail 2 "^baton fleet cancel: --wait does not apply to the local backend's cancel" $BATON fleet cancel j --wait
expect_fail 2 "^baton fleet run: --account does not apply to the local backend's run" $BATON fleet run /dev/null --account 123456789012
expect_fail 2 "^baton fleet status: --events does not apply to the aws backend's status" $BATON fleet status j --backend aws --events 3
expect_fail 2 "^baton fleet run: --backend: expected local, slurm or aws, got 'gcp'" $BATON fleet run /dev/null --backend gcp
expect_fail 2 "^baton fleet cancel: --grace must be a number of seconds >= 0" $BATON fleet cancel j --grace -1
# a catalog with a spot price above on demand loads, with a warning naming the line
printf 'name,kind,on_demand_per_h,spot_per_h,fp32_tflops\nx1,cpu,0.1,0.3,1\n' >"$T/cat.csv"
check '$BATON plan train $P --here x1 --catalog "$T/cat.csv" 2>&1 >/dev/null | grep -q "cat.csv:2: x1: spot price \$0.3/h is above its on-demand price \$0.1/h"' \
    "catalog warning for a spot price above on-demand"
# no doubled prefix anywhere in these
check '! grep -Eq "^baton [a-z -]+: ([a-z -]+): \1:" "$T/err"' "no doubled prefix"

# --help lists what a user may type, aligned
$BATON help >"$T/help"
# the column where each description starts: the same for every line
col() { awk '{ if (match($0, /^  [^ ]+ +/)) print RLENGTH }' "$1" | sort -u | wc -l; }
check '[ "$(grep -E "^  [a-z-]+ " "$T/help" >"$T/h1"; col "$T/h1")" -eq 1 ]' \
    "the command list is one column: $(grep -E "^  [a-z-]+ " "$T/help" | head -3)"
$BATON infer-bench --help >"$T/ib"
check '! grep -q -- "--child\|--t0\|(internal)" "$T/ib" && grep -q -- "--ckpt" "$T/ib"' "infer-bench --help shows no internal options"
$BATON train --help | grep -E "^  --" >"$T/th"
check '[ "$(col "$T/th")" -eq 1 ]' "train --help is aligned"

# arguments read as meant
check '"$BATON" pack --from fashion-mnist --split test --out "$T/fm" --shard-mb 4 --quiet >/dev/null' "pack"
expect_fail 1 "test-00000.rec: a file, not a folder: a dataset URI names the folder that holds dataset.json .*here: .*fm\)" \
    $BATON train --data "$T/fm/test-00000.rec" --model mlp --ckpt-dir "$T/c0" --quiet
check '"$BATON" train --data "$T/fm" --model mlp --max-steps 2 --quiet --ckpt-dir "$T/c1" --ckpt-uri "file://$T/up" >/dev/null 2>&1 &&
       [ -f "$T/up/ckpt-000000002/MANIFEST" ]' "--ckpt-uri file:///path: created and uploaded to, like a plain path"
# a plain HTTP server that ignores ranges (python3 -m http.server answers every request with the
# whole file): pipe, cache and file modes read it with plain GETs and train on the same samples,
# in the same order, as from the folder; a run resumed inside a shard too
(cd "$T" && exec python3 -u -m http.server 0 --bind 127.0.0.1 >"$T/http.out" 2>&1) &
hp=$!
for _ in $(seq 100); do port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$T/http.out" | head -1); [ -n "$port" ] && break; sleep 0.05; done
PT="$BATON train --model mlp --max-steps 30 --batch 64 --seed 3 --threads 1 --quiet"
for m in pipe cache file; do
    $PT --data "$T/fm" --mode $m --ckpt-dir "$T/pl0-$m" --sample-log "$T/pl0-$m.log" >/dev/null 2>&1
    check 'timeout 120 $PT --data "http://127.0.0.1:$port/fm/" --mode $m --ckpt-dir "$T/pl-$m" \
            --sample-log "$T/pl-$m.log" >/dev/null 2>"$T/pl-$m.err" && cmp -s "$T/pl0-$m.log" "$T/pl-$m.log"' \
        "$m mode over a server that ignores ranges: the folder's samples in the folder's order"
done
check 'timeout 60 $BATON train --model mlp --max-steps 12 --batch 64 --seed 3 --threads 1 --quiet --ckpt-every-steps 12 \
        --data "http://127.0.0.1:$port/fm/" --ckpt-dir "$T/plr" --sample-log "$T/plr.log" >/dev/null 2>&1 &&
       timeout 60 $PT --data "http://127.0.0.1:$port/fm/" --ckpt-dir "$T/plr" --sample-log "$T/plr.log" >/dev/null 2>"$T/plr.err" &&
       cmp -s "$T/pl0-pipe.log" "$T/plr.log"' "a run resumed inside a shard over that server: the same samples"
kill $hp 2>/dev/null; wait $hp 2>/dev/null
# the top-level help names every race subcommand; a refused --listen names the flag that allows it
check '"$BATON" --help | grep "^  race " | grep -q "train | eval | submit | leaderboard | serve"' "baton --help lists race's subcommands"
expect_fail 1 "not a loopback address \(add --allow-remote" $BATON race serve --listen 0.0.0.0:0 --db "$T/l.db"
expect_fail 1 "not a loopback address \(add --allow-remote" $BATON imds --listen 0.0.0.0:0
# a mistyped command says the nearest; `baton help CMD` is CMD --help
expect_fail 2 "unknown command 'trian' \(did you mean 'train'\?" $BATON trian
expect_fail 2 "unknown command 'xyzzy'$" $BATON xyzzy
check '"$BATON" help train | head -1 | grep -q "^usage: baton train --data URI"' "baton help train: train's usage"
# a missing required option is named alone — never one that was given — and every usage error
# exits 2, whichever layer finds it (pack's source is parsed by the library)
mkdir -p "$T/nodataset"
expect_fail 2 "baton train: --model and --ckpt-dir are required$" $BATON train --data "$T/nodataset"
expect_fail 2 "baton train: --ckpt-dir is required$" $BATON train --data "$T/nodataset" --model mlp
expect_fail 2 "baton eval: --data is required" $BATON eval --ckpt "$T/c0"
expect_fail 2 "baton race submit: --alias and --track are required" $BATON race submit --ckpt "$T/c0"
expect_fail 2 "unknown source 'mnist'" $BATON pack --from mnist --out "$T/p"
expect_fail 2 "unknown model 'nosuch'" $BATON train --data "$T/fm" --model nosuch --ckpt-dir "$T/cm"
# race submit says what a checkpoint that is not a race model's is, from what it holds (never a guess)
expect_fail 1 "not a race model's checkpoint: a checkpoint of baton train: evaluate it with baton eval" \
    $BATON race submit --ckpt "$T/c1" --alias a --track oval --db "$T/league.db"
case "$BATON_BUILD" in /*) PYB=$BATON_BUILD/python ;; *) PYB=$PWD/${BATON_BUILD:-build}/python ;; esac
if [ -d "$PYB/baton" ] && [ -x /usr/bin/python3 ] && [ "${BATON_BUILD:-build}" = "${BATON_BUILD%san*}" ]; then
    PYTHONPATH=$PYB /usr/bin/python3 -c "import baton, numpy as np, sys
with baton.Checkpoints(sys.argv[1]) as c: c.save(1, {'w': np.ones(3, np.float32)}, {}, sync=True)" "$T/pyck"
    expect_fail 1 "not a race model's checkpoint: a checkpoint of the Python module \(baton.Checkpoints\)" \
        $BATON race submit --ckpt "$T/pyck" --alias a --track oval --db "$T/league.db"
fi
finish
