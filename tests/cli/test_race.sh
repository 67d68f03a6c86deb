#!/usr/bin/env bash
# test_race.sh — `baton race track|drive|limit` end to end: every DeepRacer track file in
# ../shared/tracks against the lengths and widths its README lists, the built-in tracks, SVG
# pictures, one driven lap with camera frames and each reward kind, the racing-line limit, and
# every kind of bad input: exit 1 with a one-line message naming the file (and row, line or step),
# exit 2 for usage errors, never a crash.
. "$(dirname "$0")/lib.sh"
TR=../shared/tracks
jcheck() {  # jcheck FILE EXPR MESSAGE: the expression over the JSON in FILE must be true
    if [ "$(json "$1" "$2")" = True ]; then ok; else bad "$3: $(head -c 400 "$1")"; fi
}

# --- tracks: lengths within 1 %, mean widths within 2 % of the README's table ---
while read -r file rows len width loop; do
    $BATON race track "$TR/$file" --json >"$T/j" 2>"$T/e" || { bad "track $file: $(cat "$T/e")"; continue; }
    jcheck "$T/j" "abs(d['length_m'] / $len - 1) < 0.01 and abs(d['width_m'] / $width - 1) < 0.02 and d['rows'] == $rows and d['loop'] == ($loop == 1)" "$file"
done <<'EOF'
reinvent_base.npy 119 17.71 0.762 1
reInvent2019_track.npy 155 23.12 1.067 1
reInvent2019_wide.npy 112 16.64 1.067 1
2022_reinvent_champ_ccw.npy 113 33.28 0.950 1
Oval_track.npy 102 19.55 0.710 1
Bowtie_track.npy 163 17.43 0.789 1
Canada_Training.npy 203 21.74 0.757 1
Vegas_track.npy 151 22.55 1.067 1
Spain_track.npy 259 60.00 0.913 1
Straight_track.npy 22 5.71 0.610 0
EOF
for name in oval technical; do
    $BATON race track $name --json --svg "$T/$name.svg" >"$T/j" 2>"$T/e" || bad "track $name: $(cat "$T/e")"
    jcheck "$T/j" "d['loop'] and d['waypoints'] > 100 and d['min_width_m'] > 0.7 and set(d) >= {'length_m','width_m','min_width_m','waypoints','loop'}" "$name"
    check 'grep -q "<svg" "$T/$name.svg" && grep -q "start" "$T/$name.svg"' "$name: no SVG"
done
$BATON race track reinvent_base 2>"$T/e" >/dev/null
check '[ $? -eq 1 ] && grep -q "no such built-in track" "$T/e"' "unknown built-in"
$BATON race track "$TR/reinvent_base.npy" >"$T/o" 2>&1
check 'grep -q "length *17.7" "$T/o" && grep -q "turns" "$T/o"' "text report: $(cat "$T/o")"

# --- drive: a lap of the oval, frames, the path as SVG, every kind of reward ---
$BATON race drive oval --svg "$T/drive.svg" --json >"$T/j" 2>"$T/e" || bad "drive: $(cat "$T/e")"
jcheck "$T/j" "d['status'] == 'lap_complete' and 5 < d['lap_s'] < 20 and d['frames'] == 0" "drive"
$BATON race drive oval --frames "$T/frames" --max-steps 20 --json >"$T/j" 2>"$T/e" || bad "drive --frames: $(cat "$T/e")"
jcheck "$T/j" "d['status'] == 'time_up' and d['steps'] == 20 and d['frames'] == 21" "drive --frames"
check '[ "$(ls "$T/frames" | wc -l)" = 21 ] && [ "$(head -c 4 "$T/frames/frame-00020.png" | tail -c 3)" = PNG ]' "frames"
check 'grep -q "<svg" "$T/drive.svg" && grep -q "path driven" "$T/drive.svg"' "drive SVG"
cat >"$T/mine.c" <<'EOF'
#include "baton/race_reward.h"
double reward_function(const struct baton_race_params *p)
{
    return p->all_wheels_on_track ? 2.0 : 0.0;
}
EOF
$BATON race drive oval --reward "$T/mine.c" --json >"$T/j" 2>"$T/e" || bad "C reward: $(cat "$T/e")"
jcheck "$T/j" "d['reward'] == 2 * d['steps']" "C reward sum"
$BATON race drive oval --reward prevent_zigzag --json >"$T/j" 2>"$T/e" || bad "built-in reward: $(cat "$T/e")"
if $BATON race drive oval --reward tests/race/follow_center_line.py --json >"$T/jp" 2>"$T/e"; then
    $BATON race drive oval --reward follow_center_line --json >"$T/jc" 2>&1
    check '[ "$(json "$T/jp" "d['"'"'reward'"'"']")" = "$(json "$T/jc" "d['"'"'reward'"'"']")" ]' "Python reward differs from the built-in"
else
    check 'grep -q "built without Python" "$T/e"' "Python reward: $(cat "$T/e")"
fi

# --- limit: the racing line beats the centre line; the fields the issue names ---
$BATON race limit "$TR/reinvent_base.npy" --json --svg "$T/limit.svg" >"$T/j" 2>"$T/e" || bad "limit: $(cat "$T/e")"
jcheck "$T/j" "d['lap_s'] < d['centerline_lap_s'] and d['max_speed_mps'] == 4 and d['lat_accel_mps2'] > 0" "limit"
check 'grep -q "racing line" "$T/limit.svg"' "limit SVG"
$BATON race limit oval --lat-accel 2 --json >"$T/j2" 2>&1
jcheck "$T/j2" "d['lat_accel_mps2'] == 2 and d['lap_s'] > 0" "limit --lat-accel"

# --- bad input: exit 1 naming the file; usage errors exit 2 ---
printf 'not numpy at all' >"$T/magic.npy"
expect_fail 1 'magic\.npy.*bad magic' $BATON race track "$T/magic.npy"
python3 - "$T" <<'EOF'
import struct, sys
t = sys.argv[1]
def npy(name, header, data, major=1):
    h = header.encode()
    pre = b'\x93NUMPY' + bytes([major, 0]) + (struct.pack('<H', len(h)) if major == 1 else struct.pack('<I', len(h)))
    open(f'{t}/{name}', 'wb').write(pre + h + data)
rows = []
for i in range(5):
    rows += [float(i), 0.0, float(i), 0.5, float(i), -0.5]
good = struct.pack('<30d', *rows)
npy('f4.npy', "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 6), }\n", good[:120])
npy('fortran.npy', "{'descr': '<f8', 'fortran_order': True, 'shape': (5, 6), }\n", good)
npy('cols4.npy', "{'descr': '<f8', 'fortran_order': False, 'shape': (5, 4), }\n", good[:160])
npy('two.npy', "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 6), }\n", good[:96])
npy('short.npy', "{'descr': '<f8', 'fortran_order': False, 'shape': (5, 6), }\n", good[:200])
npy('version.npy', "{'descr': '<f8', 'fortran_order': False, 'shape': (5, 6), }\n", good, major=7)
nan = rows[:]
nan[3 * 6 + 1] = float('nan')
npy('nan.npy', "{'descr': '<f8', 'fortran_order': False, 'shape': (5, 6), }\n", struct.pack('<30d', *nan))
cross = rows[:]
cross[2 * 6 + 3] = -0.9   # row 2's inner border point pulled past the outer border
npy('cross.npy', "{'descr': '<f8', 'fortran_order': False, 'shape': (5, 6), }\n", struct.pack('<30d', *cross))
pre = b'\x93NUMPY\x01\x00' + struct.pack('<H', 60000)
open(f'{t}/hlen.npy', 'wb').write(pre + b'{}')
EOF
expect_fail 1 "f4\.npy.*dtype '<f4'" $BATON race track "$T/f4.npy"
expect_fail 1 'fortran\.npy.*Fortran order' $BATON race track "$T/fortran.npy"
expect_fail 1 'cols4\.npy.*6 columns' $BATON race track "$T/cols4.npy"
expect_fail 1 'two\.npy.*at least 3' $BATON race track "$T/two.npy"
expect_fail 1 'short\.npy.*row 4 is incomplete' $BATON race track "$T/short.npy"
expect_fail 1 'version\.npy.*version 7\.0' $BATON race track "$T/version.npy"
expect_fail 1 'nan\.npy.*row 3: centre y is nan' $BATON race track "$T/nan.npy"
expect_fail 1 'cross\.npy.*inner border.*crosses the outer border' $BATON race track "$T/cross.npy"
expect_fail 1 'hlen\.npy.*past the end' $BATON race track "$T/hlen.npy"
expect_fail 1 'nonexistent\.npy' $BATON race limit "$T/nonexistent.npy"
expect_fail 1 'nonexistent\.npy' $BATON race drive "$T/nonexistent.npy"
printf 'double reward_function(const struct baton_race_params *p) { return p->sped; }\n#include "baton/race_reward.h"\n' >"$T/broken.c"
expect_fail 1 'broken\.c.*does not compile' $BATON race drive oval --reward "$T/broken.c"
check 'grep -q "broken.c:1" "$T/err"' "the compiler's message with the line: $(head -c 400 "$T/err")"
printf '#include "baton/race_reward.h"\ndouble reward(const struct baton_race_params *p) { return p->x; }\n' >"$T/nofn.c"
expect_fail 1 'nofn\.c.*no reward_function' $BATON race drive oval --reward "$T/nofn.c"
printf '#include "baton/race_reward.h"\ndouble reward_function(const struct baton_race_params *p) { return p->steps > 5 ? 1e6 : 1; }\n' >"$T/big.c"
expect_fail 1 'big\.c: reward at step 6 is 1000000' $BATON race drive oval --reward "$T/big.c"
if [ "$($BATON race drive oval --reward tests/race/follow_center_line.py --max-steps 1 >/dev/null 2>&1; echo $?)" = 0 ]; then
    printf 'def reward_function(params):\n    if params["steps"] > 3:\n        raise RuntimeError("boom")\n    return 1.0\n' >"$T/raise.py"
    expect_fail 1 'raise\.py line 3: RuntimeError: boom \(step 4\)' $BATON race drive oval --reward "$T/raise.py"
    printf 'def reward_function(params):\n    return "fast"\n' >"$T/str.py"
    expect_fail 1 'str\.py: reward_function returned str, not a number' $BATON race drive oval --reward "$T/str.py"
    printf 'def reward_function(params)\n    return 1.0\n' >"$T/syntax.py"
    expect_fail 1 'syntax\.py line 1: SyntaxError' $BATON race drive oval --reward "$T/syntax.py"
fi
expect_fail 1 'policy .*no checkpoint that verifies.*race train' $BATON race drive oval --policy "$T/ckpt"
expect_fail 1 "reward 'nope'" $BATON race drive oval --reward nope
expect_fail 2 'usage: baton race' $BATON race
expect_fail 2 "unknown action 'fly'" $BATON race fly
expect_fail 2 'expected a track' $BATON race track
expect_fail 2 "unknown option '--bogus'" $BATON race limit oval --bogus
expect_fail 2 'not a valid number' $BATON race limit oval --lat-accel fast
expect_fail 2 'must be positive' $BATON race limit oval --lat-accel -1
finish
