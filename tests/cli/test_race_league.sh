#!/usr/bin/env bash
# test_race_league.sh — `baton race submit` and `baton race leaderboard` end to end: two sensor
# models trained briefly, submitted under SQL- and HTML-special aliases (stored and shown
# literally), the league's own evaluation (equal to `race eval` under its rules), standings in
# rank order as a table and --json, one standing per alias with the history kept, the total
# format; and bad input refused with a clear message and nothing stored: a `baton train`
# checkpoint (another kind of model), a missing checkpoint, bad aliases (not UTF-8: a surrogate, an
# overlong form, above U+10FFFF; a C1 control; bidi, zero-width and BOM characters; odd spaces;
# Cyrillic and Latin letters mixed — while one script's letters are taken) and formats, a database
# of another schema version and a damaged one (the file left byte for byte as it was); versions 1
# and 2 upgraded, their entries time trials; object avoidance and head-to-bot under the official
# settings whatever the model trained with, each on its own board; an unknown race refused;
# head-to-model: three models entered in turn, their matches (every pairing from both starts), the
# board by rating as a table, --json and the server's /api/ratings, /api/matches and a match's
# trace; the page in headless Chromium (the board, a match replayed with both cars on their
# traces); a fourth entered over HTTP with a token; an alias entered again; version 3 upgraded to 4.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
unset BATON_LEAGUE_DB
rows() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM entries').fetchone()[0])" "$1"; }
DB=$T/league.db
M="--metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json"
A1="'; DROP TABLE entries;--"
A2='<script>alert("x")</script> & co'

check '"$BATON" race train --track oval $M --ckpt-dir "$T/m1" --episodes 600 --seed 1 --threads 1 --quiet >/dev/null' "train model 1"
check '"$BATON" race train --track oval $M --ckpt-dir "$T/m2" --episodes 200 --seed 2 --threads 1 --quiet >/dev/null' "train model 2"

check '"$BATON" race submit --ckpt "$T/m1" --alias "$A1" --track oval --db "$DB" --json >"$T/s1.json" 2>"$T/s1.err"' \
    "submit model 1: $(cat "$T/s1.err" 2>/dev/null)"
check '"$BATON" race submit --ckpt "$T/m2" --alias "$A2" --track oval --db "$DB" --json >"$T/s2.json" 2>"$T/s2.err"' \
    "submit model 2: $(cat "$T/s2.err" 2>/dev/null)"
check '[ "$(json "$T/s1.json" "d[\"alias\"]")" = "$A1" ] && [ "$(json "$T/s2.json" "d[\"alias\"]")" = "$A2" ]' "aliases stored literally"
check '[ "$(json "$T/s1.json" "len(d[\"model_hash\"]) == 64 and d[\"id\"] == 1 and d[\"standing\"]")" = True ]' "entry 1: a SHA-256 and a standing"
# the league's time is its own evaluation: race eval under the same rules gives the same laps
"$BATON" race eval --ckpt "$T/m1" --track oval --json >"$T/e1.json"
check '[ "$(json "$T/s1.json" "d[\"best_lap_s\"]")" = "$(json "$T/e1.json" "d[\"best_lap_s\"]")" ] && [ "$(json "$T/s1.json" "d[\"total_s\"]")" = "$(json "$T/e1.json" "d[\"total_s\"]")" ]' \
    "the stored laps are race eval's"
check '"$BATON" race leaderboard --db "$DB" --track oval --json >"$T/lb.json"' "leaderboard --json"
check '[ "$(json "$T/lb.json" "[e[\"rank\"] for e in d[\"entries\"]]")" = "[1, 2]" ]' "two ranked entries"
# rank order by the rule: completed first, more laps first, then the faster lap
check '[ "$(json "$T/lb.json" "(lambda e: all((not a[\"completed\"], -a[\"laps\"], a[\"best_lap_s\"] if a[\"laps\"] else 0) <= (not b[\"completed\"], -b[\"laps\"], b[\"best_lap_s\"] if b[\"laps\"] else 0) for a, b in zip(e, e[1:])))(d[\"entries\"])")" = True ]' \
    "rank order: $(cat "$T/lb.json")"
check '"$BATON" race leaderboard --db "$DB" >"$T/lb.txt" && grep -qF -- "$A1" "$T/lb.txt" && grep -qF -- "$A2" "$T/lb.txt" && grep -q "^oval (time-trial)" "$T/lb.txt"' \
    "leaderboard table: $(cat "$T/lb.txt" 2>/dev/null)"
# the same alias again with the other model: history kept, one standing (its best)
check '"$BATON" race submit --ckpt "$T/m2" --alias "$A1" --track oval --db "$DB" >"$T/s3.out"' "a second submission under one alias"
"$BATON" race leaderboard --db "$DB" --json >"$T/lb2.json"
check '[ "$(rows "$DB")" = 3 ] && [ "$(json "$T/lb2.json" "len(d[\"entries\"])")" = 2 ]' "three entries kept, two standings"
check '[ "$(json "$T/lb2.json" "[e[\"id\"] for e in d[\"entries\"] if e[\"alias\"] == \"$A1\"][0] in (1, 3)")" = True ]' "the alias's best stands"
# the league evaluates every model under one set of rules, so every entry has a best lap and a
# total: each view ranks every entry of the track, whatever format it was submitted under
check '"$BATON" race submit --ckpt "$T/m1" --alias solo --track oval --format total --db "$DB" --json >"$T/s4.json"' "submit to the total format"
check '[ "$(json "$T/s4.json" "d[\"format\"] == \"total\" and d[\"standing\"] and d[\"entries\"] == 3")" = True ]' "ranked among all in total: $(cat "$T/s4.json")"
check '"$BATON" race leaderboard --db "$DB" --format total --json >"$T/tot.json" && [ "$(json "$T/tot.json" "len(d[\"entries\"]) == 3 and [e[\"total_s\"] for e in d[\"entries\"] if e[\"completed\"]] == sorted(e[\"total_s\"] for e in d[\"entries\"] if e[\"completed\"])")" = True ]' \
    "the total view shows every entry, by total: $(cat "$T/tot.json" 2>/dev/null)"
check '"$BATON" race leaderboard --db "$DB" --json | grep -q "\"alias\":\"solo\""' "the time-trial view shows the entry submitted under total"
# a track spelled as its .npy path: stored by its name, found by either spelling; a long alias
# does not push the table's columns
LONG="$(printf 'ä%.0s' $(seq 32))"
check '"$BATON" race submit --ckpt "$T/m2" --alias "$LONG" --track ../shared/tracks/Oval_track.npy --db "$DB" >/dev/null 2>"$T/s5.err"' \
    "submit on a .npy track: $(cat "$T/s5.err" 2>/dev/null)"
check '"$BATON" race leaderboard --db "$DB" --track ../shared/tracks/Oval_track.npy --json | grep -q "\"track\":\"Oval_track\"" &&
       "$BATON" race leaderboard --db "$DB" --track Oval_track --json | grep -q "\"track\":\"Oval_track\""' "leaderboard --track PATH and --track NAME agree"
check '"$BATON" race leaderboard --db "$DB" >"$T/lb3.txt" && [ "$(grep -E "^ +[0-9]+ " "$T/lb3.txt" | awk "{print index(\$0, \"s \")}" | sort -u | wc -l)" -eq 1 ]' \
    "table columns line up whatever the alias: $(cat "$T/lb3.txt" 2>/dev/null)"

# ---- bad input: clear errors, nothing stored
check '"$BATON" pack --from fashion-mnist --split test --out "$T/fm" --shard-mb 1 --quiet >/dev/null && "$BATON" train --data "$T/fm" --model mlp --epochs 1 --max-steps 5 --batch 64 --threads 1 --quiet --ckpt-dir "$T/mlp" >/dev/null' \
    "a baton train checkpoint"
before=$(rows "$DB")
expect_fail 1 "race submit: evaluating .*mlp" "$BATON" race submit --ckpt "$T/mlp" --alias x --track oval --db "$DB"
expect_fail 1 "race submit: evaluating .*nowhere" "$BATON" race submit --ckpt "$T/nowhere" --alias x --track oval --db "$DB"
expect_fail 2 "alias is 65 bytes; at most 64" "$BATON" race submit --ckpt "$T/m1" --alias "$(printf 'x%.0s' $(seq 65))" --track oval --db "$DB"
expect_fail 2 "control character" "$BATON" race submit --ckpt "$T/m1" --alias "$(printf 'a\tb')" --track oval --db "$DB"
expect_fail 2 "an alias is required" "$BATON" race submit --ckpt "$T/m1" --alias "" --track oval --db "$DB"
expect_fail 2 "format 'sprint': time-trial or total" "$BATON" race submit --ckpt "$T/m1" --alias x --track oval --format sprint --db "$DB"
expect_fail 2 "required" "$BATON" race submit --alias x --track oval --db "$DB"
# aliases that are not what they look like: not UTF-8, invisible, reordering, look-alike (issue 33)
expect_fail 2 "alias: not UTF-8 at byte 0" "$BATON" race submit --ckpt "$T/m1" --alias $'\xed\xa0\x80x' --track oval --db "$DB"   # a surrogate
for bad in $'\xe0\x80\xaf' $'x\xf4\x90\x80\x80' $'\xc0\xaf'; do   # overlong, above U+10FFFF
    expect_fail 2 "alias: not UTF-8 at byte" "$BATON" race token add "$bad" --db "$DB"
done
expect_fail 2 "alias: a control character \(U\+0085\) at byte 1" "$BATON" race token add $'a\xc2\x85b' --db "$DB"
expect_fail 2 "alias: an invisible or text-direction character \(U\+202E\) at byte 5" "$BATON" race token add $'alice\xe2\x80\xaecod' --db "$DB"
expect_fail 2 "U\+2066" "$BATON" race token add $'a\xe2\x81\xa6b' --db "$DB"
expect_fail 2 "U\+200B" "$BATON" race token add $'al\xe2\x80\x8bice' --db "$DB"
expect_fail 2 "U\+FEFF" "$BATON" race token add $'\xef\xbb\xbfalice' --db "$DB"
expect_fail 2 "a space last" "$BATON" race token add "alice " --db "$DB"
expect_fail 2 "a space other than ' ' \(U\+00A0\)" "$BATON" race token add $'alice\xc2\xa0b' --db "$DB"
expect_fail 2 "alias: mixes Cyrillic and Latin letters \(U\+0430 at byte 0, U\+006C at byte 2\)" "$BATON" race submit --ckpt "$T/m1" --alias $'\xd0\xb0lice' --track oval --db "$DB"
check '"$BATON" race token add "$(printf "\xd0\xb0\xd0\xbb\xd0\xb8\xd1\x81\xd0\xb0")" --db "$DB" >/dev/null 2>&1 && "$BATON" race token add "Tarō 山田" --db "$DB" >/dev/null 2>&1' \
    "one script's letters (Cyrillic; Latin with Han) are taken"
check '[ "$(rows "$DB")" = "$before" ]' "nothing stored by refused submissions"
check '"$BATON" race leaderboard --db "$DB" --json | python3 -c "import json,sys; json.loads(sys.stdin.buffer.read().decode(\"utf-8\"))"' \
    "the leaderboard is valid UTF-8"
# a database of another schema version, and a damaged one: refused, the files unchanged
cp "$DB" "$T/v5.db"
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=DELETE'); c.execute('PRAGMA user_version=5'); c.commit()" "$T/v5.db"
sum=$(md5sum <"$T/v5.db")
expect_fail 1 "v5.db: league schema version 5; this baton reads versions 1 to 4" "$BATON" race leaderboard --db "$T/v5.db"
expect_fail 1 "v5.db: league schema version 5" "$BATON" race submit --ckpt "$T/m1" --alias x --track oval --db "$T/v5.db"
check '[ "$(md5sum <"$T/v5.db")" = "$sum" ]' "the other version's file unchanged"
# older files, made from this one as those versions wrote them: version 3 (no head-to-model),
# version 2 (no race types) and version 1 (entries only) are upgraded on open, their entries kept
# (as time trials from versions 1 and 2)
older() {  # older VERSION OUT: $DB as that version's schema held it
    cp "$DB" "$2"
    python3 - "$2" "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript("DROP TABLE h2m_cars; DROP TABLE h2m_matches; DROP TABLE h2m_racers;")
if sys.argv[2] != "3":
    c.executescript("""DROP INDEX entries_track; ALTER TABLE entries DROP COLUMN race_settings; ALTER TABLE entries DROP COLUMN race;
CREATE INDEX entries_track ON entries(track, format); ALTER TABLE submissions DROP COLUMN race; DROP TABLE trace_objects;""")
if sys.argv[2] == "1":
    c.executescript("DROP TABLE submissions; DROP TABLE tokens;")
c.execute("PRAGMA user_version=%d" % int(sys.argv[2]))
c.commit()
PY
}
"$BATON" race leaderboard --db "$DB" --json >"$T/lb4.json"
for v in 1 2 3; do
    older $v "$T/v$v.db"
    check '"$BATON" race leaderboard --db "$T/v$v.db" --json >"$T/v$v.json" 2>"$T/v$v.err" && { [ $v = 3 ] || grep -q "schema version $v: adding race types" "$T/v$v.err"; } && grep -q "schema version $v: adding head-to-model" "$T/v$v.err"' \
        "a version-$v database upgraded: $(cat "$T/v$v.err")"
    check '[ "$(json "$T/v$v.json" "[(e[\"id\"], e[\"race\"], e[\"settings\"][\"laps\"]) for e in d[\"entries\"]]")" = "$(json "$T/lb4.json" "[(e[\"id\"], e[\"race\"], e[\"settings\"][\"laps\"]) for e in d[\"entries\"]]")" ]' \
        "version $v: its entries kept, time trials under the league's settings"
    check '[ "$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"PRAGMA user_version\").fetchone()[0])" "$T/v$v.db")" = 4 ]' \
        "version $v: now version 4"
    check '"$BATON" race token add z --db "$T/v$v.db" >/dev/null 2>&1 && "$BATON" race leaderboard --db "$T/v$v.db" --race head-to-bot | grep -q "^no entries" && "$BATON" race leaderboard --db "$T/v$v.db" --race head-to-model | grep -q "^no racers"' \
        "version $v: its new tables usable"
done
# the other race types: each evaluated under the league's official settings (whatever the model
# was trained with: m3 trained among 6 boxes, m1 in a time trial), each ranked on its own board by
# total time, its settings and its drive's objects stored with the entry
check '"$BATON" race train --track oval $M --race object-avoidance --objects 6 --ckpt-dir "$T/m3" --episodes 60 --seed 3 --threads 1 --quiet >/dev/null' \
    "train model 3 among 6 boxes"
objects() { python3 -c "import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute('SELECT objects FROM trace_objects WHERE entry=?', (int(sys.argv[2]),)).fetchone(); print(r[0] if r else 0)" "$DB" "$1"; }
check '"$BATON" race submit --ckpt "$T/m3" --alias oa1 --track oval --race object-avoidance --db "$DB" --json >"$T/oa.json" 2>"$T/oa.err"' \
    "submit to object avoidance: $(cat "$T/oa.err")"
check '[ "$(json "$T/oa.json" "d[\"race\"] == \"object-avoidance\" and d[\"format\"] == \"total\" and d[\"entries\"] == 1 and d[\"rank\"] == 1 and [(b[\"progress\"], b[\"lane\"]) for b in d[\"settings\"][\"boxes\"]] == [(0.25, 1), (0.5, -1), (0.75, 1)] and d[\"settings\"][\"collision_penalty_s\"] == 5 and not d[\"settings\"][\"randomize\"]")" = True ]' \
    "object avoidance: the official 3 boxes, not the 6 it trained among: $(cat "$T/oa.json")"
check '[ "$(objects "$(json "$T/oa.json" "d[\"id\"]")")" = 3 ]' "object avoidance: the drive's 3 boxes stored"
check '"$BATON" race submit --ckpt "$T/m1" --alias h2b1 --track oval --race head-to-bot --db "$DB" --json >"$T/h2b.json" 2>"$T/h2b.err"' \
    "submit a time-trial model to head-to-bot: $(cat "$T/h2b.err")"
check '[ "$(json "$T/h2b.json" "d[\"race\"] == \"head-to-bot\" and d[\"entries\"] == 1 and d[\"settings\"][\"bots\"] == 2 and d[\"settings\"][\"bot_speed_mps\"] == 1 and d[\"settings\"][\"lane_change\"]")" = True ]' \
    "head-to-bot: the official 2 bots at 1 m/s changing lanes: $(cat "$T/h2b.json")"
check '[ "$(objects "$(json "$T/h2b.json" "d[\"id\"]")")" = 2 ]' "head-to-bot: the drive's 2 bots stored"
check '"$BATON" race leaderboard --db "$DB" --race object-avoidance --json >"$T/lboa.json" && [ "$(json "$T/lboa.json" "d[\"race\"] == \"object-avoidance\" and d[\"format\"] == \"total\" and [e[\"alias\"] for e in d[\"entries\"]] == [\"oa1\"]")" = True ]' \
    "object avoidance's own board, by total time"
check '"$BATON" race leaderboard --db "$DB" --json >"$T/lbtt.json" && [ "$(json "$T/lbtt.json" "[e[\"alias\"] for e in d[\"entries\"] if e[\"alias\"] in (\"oa1\", \"h2b1\")]")" = "[]" ]' \
    "the time trial's board holds none of them"
check '"$BATON" race leaderboard --db "$DB" --race head-to-bot | grep -q "^oval (head-to-bot)"' "the table names the race"
check '"$BATON" race leaderboard --db "$DB" --race head-to-bot --format time-trial | grep -q "^oval (head-to-bot, time-trial)"' \
    "and the format when it is not the race's own"
expect_fail 2 "race 'drag': time-trial, object-avoidance, head-to-bot or head-to-model" "$BATON" race submit --ckpt "$T/m1" --alias x --track oval --race drag --db "$DB"
expect_fail 2 "race 'drag': time-trial, object-avoidance, head-to-bot or head-to-model" "$BATON" race leaderboard --race drag --db "$DB"
expect_fail 2 "--objects: the league evaluates every model under its race's official settings" "$BATON" race submit --ckpt "$T/m1" --alias x --track oval --race object-avoidance --objects 6 --db "$DB"
expect_fail 2 "--bot-speed: the league evaluates" "$BATON" race submit --ckpt "$T/m1" --alias x --track oval --race head-to-bot --bot-speed=2 --db "$DB"
head -c 8192 /dev/urandom >"$T/bad.db"
sum=$(md5sum <"$T/bad.db")
expect_fail 1 "bad.db: not a league database SQLite can read" "$BATON" race leaderboard --db "$T/bad.db"
check '[ "$(md5sum <"$T/bad.db")" = "$sum" ]' "the damaged file unchanged"
check 'BATON_LEAGUE_DB="$T/env.db" "$BATON" race leaderboard | grep -q "^no entries"' "an empty league from \$BATON_LEAGUE_DB"

# ---- head-to-model: three one-action models (straight on at 0.5, 1.5 and 4 m/s) entered in turn
# race the racers before them, each pairing from both starts; the board by rating (fast, mid, slow),
# its wins adding up to the matches; the server's /api/ratings agrees with it, /api/matches holds
# every match with both starting orders, /api/matches/ID/trace every car's drive; an alias entered
# again races the others but not its own earlier model, which leaves the board
H=$T/h2m.db
for v in slow:0.5 mid:1.5 fast:4; do
    printf '{"action_space": [{"steering_angle": 0, "speed": %s, "index": 0}], "sensor": ["BATON_SENSOR_VECTOR"], "neural_network": "BATON_SENSOR_MLP", "training_algorithm": "clipped_ppo", "action_space_type": "discrete", "version": "5"}' \
        "${v#*:}" >"$T/${v%%:*}.json"
    "$BATON" race train --track oval --metadata "$T/${v%%:*}.json" --hyper docs/race-model/hyperparameters.json --ckpt-dir "$T/h-${v%%:*}" \
        --episodes 1 --seed 1 --threads 1 --quiet >/dev/null 2>&1
done
raced=""
for a in slow fast mid; do
    "$BATON" race submit --race head-to-model --ckpt "$T/h-$a" --alias "$a" --track oval --db "$H" --json >"$T/h-$a.out" 2>"$T/h.err"
    raced="$raced $(json "$T/h-$a.out" "d['matches_raced']")"
done
check '[ "$raced" = " 0 2 4" ]' "each new racer raced those before it from both starts: $raced $(cat "$T/h.err")"
check '"$BATON" race leaderboard --race head-to-model --db "$H" --json >"$T/hb.json" 2>"$T/h.err"' "the head-to-model board: $(cat "$T/h.err")"
jcheck() { if [ "$(json "$1" "$2")" = True ]; then ok; else bad "$3: $(head -c 600 "$1")"; fi; }
jcheck "$T/hb.json" "[r['alias'] for r in d['racers']] == ['fast', 'mid', 'slow'] and [r['rank'] for r in d['racers']] == [1, 2, 3] and d['racers'][0]['rating'] > d['racers'][1]['rating'] > d['racers'][2]['rating'] and [r['wins'] for r in d['racers']] == [4, 2, 0] and all(r['matches'] == 4 and r['losses'] == 4 - r['wins'] for r in d['racers'])" \
    "the board by rating, wins and losses adding up"
check '"$BATON" race leaderboard --race head-to-model --db "$H" | grep -q "^oval (head-to-model)"' "the board as a table"
"$BATON" race serve --listen 127.0.0.1:0 --db "$H" >"$T/hurl" 2>"$T/hserve.err" &
HPID=$!
U=
for _ in $(seq 200); do U=$(head -n1 "$T/hurl" 2>/dev/null); [ -n "$U" ] && break; sleep 0.05; done
curl -s "$U/api/ratings?track=oval" >"$T/hr.json"
curl -s "$U/api/matches?track=oval" >"$T/hm.json"
curl -s "$U/api/matches/1/trace" >"$T/ht.json"
check '[ "$(json "$T/hr.json" "[(r[\"id\"], r[\"rating\"]) for r in d[\"racers\"]]")" = "$(json "$T/hb.json" "[(r[\"id\"], r[\"rating\"]) for r in d[\"racers\"]]")" ]' \
    "/api/ratings agrees with the board: $(head -c 300 "$T/hr.json")"
jcheck "$T/hm.json" "len(d['matches']) == 6 and all(len(m['cars']) == 2 and sorted(c['position'] for c in m['cars']) == [1, 2] and [c['start'] for c in m['cars']] == [1, 2] for m in d['matches']) and sorted(tuple(c['alias'] for c in m['cars']) for m in d['matches']) == sorted([('fast', 'slow'), ('slow', 'fast'), ('mid', 'slow'), ('slow', 'mid'), ('mid', 'fast'), ('fast', 'mid')])" \
    "/api/matches: every pairing from both starts"
jcheck "$T/ht.json" "len(d['cars']) == 2 and all(c['steps'] > 0 and len(c['x']) == len(c['y']) == len(c['v']) == c['steps'] for c in d['cars'])" \
    "/api/matches/1/trace: both cars' drives"
check 'curl -s "$U/" | grep -qF "<a href=\"/track/oval?race=head-to-model\">oval</a></td><td>3</td><td class=\"alias\">fast ("' \
    "the front page lists the track's head-to-model board and its leader"
check '[ "$(curl -s -o /dev/null -w "%{http_code}" "$U/api/matches/99/trace")" = 404 ] && [ "$(curl -s -o /dev/null -w "%{http_code}" "$U/api/matches/1/x")" = 404 ]' \
    "a match that is not there: 404"
# the page in headless Chromium: the board in /api/ratings' order, the newest match replayed with
# both cars, each dot where its trace puts it at the step the status line shows
h2m_page_ok() {
    timeout 60 "$(command -v chromium || command -v chromium-browser)" --headless=new --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$T/chrome" --enable-logging=stderr --v=0 --window-size=1100,1000 --virtual-time-budget=3000 \
        --dump-dom "$U/track/oval?race=head-to-model" >"$T/hdom.html" 2>"$T/hchrome.err" || return 1
    curl -s "$U/api/matches/$(json "$T/hm.json" "d['matches'][0]['id']")/trace" >"$T/ht0.json"
python3 - "$T/hdom.html" "$T/hr.json" "$T/ht0.json" >"$T/hdom.check" <<'PY'
import json, re, sys
dom, ratings, tr = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
rows = re.findall(r'<tr data-racer="(\d+)" data-rank="(\d+)"', dom)
ok = [int(r[0]) for r in rows] == [r["id"] for r in ratings["racers"]]
svg = re.search(r'<div id="track"><svg[^>]*>', dom).group(0)
m = {k: float(re.search(r'data-%s="([-0-9.e]+)"' % k, svg).group(1)) for k in ("x0", "y1", "scale", "left", "top")}
st = re.search(r'<p id="status">match (\d+): step (\d+) of (\d+), (\d+) cars', dom)
dots = re.findall(r'<circle r="6" fill="[^"]+" stroke="white" cx="([-0-9.]+)" cy="([-0-9.]+)"', dom)
ok = ok and st and int(st.group(1)) == tr["id"] and int(st.group(4)) == len(tr["cars"]) == len(dots) == 2
k = int(st.group(2)) - 1 if st else 0
for (x, y), c in zip(dots, tr["cars"]):
    j = min(k, c["steps"] - 1)
    ok = ok and abs(float(x) - (m["left"] + (c["x"][j] - m["x0"]) * m["scale"])) < 0.5
    ok = ok and abs(float(y) - (m["top"] + (m["y1"] - c["y"][j]) * m["scale"])) < 0.5
print(bool(ok))
PY
    [ "$(cat "$T/hdom.check")" = True ] && ! grep -q "CONSOLE" "$T/hchrome.err"
}
h2m_page_ok || { echo "the head-to-model page's first load in Chromium did not check out; loading it again" >&2; h2m_page_ok; }
check '[ "$(cat "$T/hdom.check")" = True ] && ! grep -q "CONSOLE" "$T/hchrome.err"' \
    "the page in Chromium: the board as /api/ratings has it, the newest match replayed with both cars on their traces: $(grep CONSOLE "$T/hchrome.err" | head -n 2)"
check '[ "$(curl -s -o /dev/null -w "%{http_code}" "$U/track/technical?race=head-to-model")" = 404 ]' "a track without racers: 404"
# entered over HTTP with a token: queued, raced against the three (both starts), rated
"$BATON" race token add carol --db "$H" >"$T/carol.tok" 2>/dev/null
check '"$BATON" race submit --server "$U" --token-file "$T/carol.tok" --race head-to-model --ckpt "$T/h-mid" --alias carol --track oval --wait 60 --json >"$T/hc.json" 2>"$T/h.err"' \
    "head-to-model over HTTP: $(cat "$T/h.err")"
curl -s "$U/api/submissions/$(json "$T/hc.json" "d['id']")" >"$T/hcs.json"
curl -s "$U/api/matches?track=oval" >"$T/hm2.json"
jcheck "$T/hc.json" "d['state'] == 'done' and d['racer'] == 4" "the submission done, naming its racer"
jcheck "$T/hcs.json" "d['race'] == 'head-to-model' and 'format' not in d and d['result']['alias'] == 'carol' and d['result']['matches'] == 6" \
    "/api/submissions/ID: the racer, rated"
jcheck "$T/hm2.json" "len(d['matches']) == 12 and sum(1 for m in d['matches'] if 'carol' in [c['alias'] for c in m['cars']]) == 6" \
    "carol raced each of the three from both starts"
check '[ "$(curl -s -o /dev/null -w "%{http_code}" -X POST -H "Authorization: Bearer $(cat "$T/carol.tok")" -H "Content-Type: application/x-tar" --data-binary x "$U/api/submit?alias=carol&track=oval&race=head-to-model&format=total")" = 400 ]' \
    "head-to-model with a format: 400"
kill "$HPID" 2>/dev/null; wait "$HPID" 2>/dev/null
check '"$BATON" race submit --race head-to-model --ckpt "$T/h-fast" --alias slow --track oval --db "$H" --json >"$T/h-again.json" 2>"$T/h.err"' \
    "an alias entered again: $(cat "$T/h.err")"
"$BATON" race leaderboard --race head-to-model --db "$H" --json >"$T/hb2.json"
jcheck "$T/h-again.json" "d['id'] == 5 and d['matches_raced'] == 6" "it raced the three others, both starts"
jcheck "$T/hb2.json" "sorted(r['id'] for r in d['racers']) == [2, 3, 4, 5]" "its earlier model left the board"
check '[ "$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT count(*) FROM h2m_cars a JOIN h2m_cars b ON a.match = b.match WHERE a.racer = 1 AND b.racer = 5\").fetchone()[0])" "$H")" = 0 ]' \
    "it did not race its own earlier model"
expect_fail 2 "--race head-to-model has no --format" "$BATON" race submit --race head-to-model --format total --ckpt "$T/h-fast" --alias x --track oval --db "$H"
expect_fail 1 "head-to-model: track Straight_track is open" "$BATON" race submit --race head-to-model --ckpt "$T/h-fast" --alias x --track ../shared/tracks/Straight_track.npy --db "$H"
finish
