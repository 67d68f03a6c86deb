#!/usr/bin/env bash
# test_race_league_storage.sh — where `baton race serve` keeps what racers upload, and what it does
# when its disk fails:
#   - a large upload (a checkpoint and 24 MB beside it) is kept out of the database: once it is
#     evaluated the database and its WAL are near what the entry needs, no byte of the upload is
#     in them, the database's files are mode 0600, the work folder DB-work/ 0700, its upload gone;
#   - a server killed during an evaluation leaves the unpacked model only under DB-work/unpack
#     (nothing in $TMPDIR); a restart removes it and finishes the submission;
#   - the disk full while an evaluation is stored (a size-limited tmpfs; needs root, else skipped):
#     the submission is never failed nor counted, goes back to the queue with the reason, and is
#     done without a restart once there is room again.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
unset BATON_LEAGUE_DB BATON_LEAGUE_TEST_HOLD_MS
pids=()
MNT=
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; [ -n "$MNT" ] && umount -l "$MNT" 2>/dev/null; rm -rf "$T"' EXIT
M="--metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json"
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"

check '"$BATON" race train --track oval $M --ckpt-dir "$T/m" --episodes 200 --seed 2 --threads 1 --quiet >/dev/null' "train a model"
tar -C "$T/m" -cf "$T/m.tar" .
# the same run folder with 24 MB of a recognisable pattern beside its checkpoints
cp -r "$T/m" "$T/big"
python3 -c "import sys; open(sys.argv[1], 'wb').write(b'UPLOADED-MODEL-BYTES-0123456789\n' * (24 << 15))" "$T/big/padding.bin"
tar -C "$T/big" -cf "$T/big.tar" .

start() {  # start DB [ENV=VALUE...]: the server in the background; U its URL, PID its process
    local db=$1; shift
    rm -f "$T/url"
    env "$@" "$BATON" race serve --listen 127.0.0.1:0 --db "$db" >"$T/url" 2>>"$T/serve.err" &
    PID=$!
    pids+=($PID)
    U=
    for _ in $(seq 200); do U=$(head -n1 "$T/url" 2>/dev/null); [ -n "$U" ] && break; sleep 0.05; done
}
post() {  # post TOKEN ALIAS FILE: the answer's status; its body in $T/body, its id in SID
    curl -s -o "$T/body" -w "%{http_code}" -H "Authorization: Bearer $1" -H "Content-Type: application/x-tar" \
        --data-binary @"$3" "$U/api/submit?alias=$2&track=oval"
}
wait_state() {  # wait_state ID STATE [SECONDS]: poll until the submission is in STATE
    for _ in $(seq $((${3:-20} * 20))); do
        curl -s "$U/api/submissions/$1" >"$T/sub.json" 2>/dev/null
        [ "$(json "$T/sub.json" 'd.get("state")')" = "$2" ] && return 0
        sleep 0.05
    done
    return 1
}
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
mode() { stat -c %a "$1" 2>/dev/null; }

# ---- a large upload: out of the database
DB=$T/l.db
check '"$BATON" race token add ann --db "$DB" >"$T/tok" 2>"$T/tok.err"' "token: $(cat "$T/tok.err")"
start "$DB"
check '[ -n "$U" ]' "the server prints its URL: $(cat "$T/serve.err")"
check '[ "$(post "$(cat "$T/tok")" ann "$T/big.tar")" = 202 ]' "a $(size "$T/big.tar")-byte upload queued: $(cat "$T/body")"
SID=$(json "$T/body" 'd["id"]')
check 'wait_state "$SID" done 60' "evaluated: $(cat "$T/sub.json")"
sleep 0.3   # the checkpoint after the evaluation
total=$(( $(size "$DB") + $(size "$DB-wal") ))
check '[ "$total" -lt 1500000 ]' "the database and its WAL hold the entry, not the upload: $(size "$DB") + $(size "$DB-wal") bytes"
check '! grep -qa "UPLOADED-MODEL-BYTES" "$DB" "$DB-wal" 2>/dev/null' "no byte of the upload in the database or its WAL"
check '[ "$(mode "$DB")" = 600 ] && { [ ! -e "$DB-wal" ] || [ "$(mode "$DB-wal")" = 600 ]; } && { [ ! -e "$DB-shm" ] || [ "$(mode "$DB-shm")" = 600 ]; }' \
    "the database's files are 0600: $(stat -c '%n %a' "$DB"* 2>&1 | tr '\n' ' ')"
check '[ "$(mode "$DB-work")" = 700 ] && [ -z "$(ls -A "$DB-work/uploads")" ] && [ -z "$(ls -A "$DB-work/unpack")" ]' \
    "the work folder is 0700, its upload and unpacked folder removed: $(ls -lR "$DB-work" 2>&1 | head -20)"

# ---- killed during an evaluation: its folder under the league's, removed on restart
kill -9 "$PID"; wait "$PID" 2>/dev/null
start "$DB" BATON_LEAGUE_TEST_HOLD_MS=20000
check '[ "$(post "$(cat "$T/tok")" ann "$T/m.tar")" = 202 ]' "a submission to be killed in: $(cat "$T/body")"
SID=$(json "$T/body" 'd["id"]')
check 'wait_state "$SID" running && for _ in $(seq 100); do compgen -G "$DB-work/unpack/*/up" >/dev/null && break; sleep 0.05; done; compgen -G "$DB-work/unpack/*/up" >/dev/null' \
    "running, unpacked under the league's work folder: $(ls -R "$DB-work" 2>&1 | head)"
check '[ "$(mode "$DB-work/uploads/$SID.tar")" = 600 ]' "its upload waits in the work folder, 0600"
kill -9 "$PID"; wait "$PID" 2>/dev/null
check '[ -z "$(ls -A "$TMPDIR")" ]' "nothing in \$TMPDIR: $(ls -A "$TMPDIR")"
start "$DB" BATON_LEAGUE_TEST_HOLD_MS=3000
check 'sleep 0.5; [ "$(ls "$DB-work/unpack" | wc -l)" -le 1 ]' "the restart removed the killed evaluation's folder: $(ls "$DB-work/unpack")"
check 'wait_state "$SID" done 30 && [ -z "$(ls -A "$DB-work/uploads")" ] && [ -z "$(ls -A "$DB-work/unpack")" ]' \
    "then finished it and removed its upload: $(cat "$T/sub.json") $(ls -R "$DB-work")"
kill -9 "$PID"; wait "$PID" 2>/dev/null

# ---- the disk full while an evaluation is stored
MD=$T/mnt
mkdir -p "$MD"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=16m tmpfs "$MD" 2>/dev/null; then
    skip "cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN): the disk-full part"
    finish; exit
fi
MNT=$MD
avail() { df -B1 --output=avail "$MD" | tail -n 1 | tr -d ' '; }
DB=$MD/l.db
check '"$BATON" race token add bob --db "$DB" >"$T/tok2" 2>"$T/tok.err"' "token on the tmpfs: $(cat "$T/tok.err")"
start "$DB" BATON_LEAGUE_TEST_HOLD_MS=2000
check '[ "$(post "$(cat "$T/tok2")" bob "$T/m.tar")" = 202 ]' "queued: $(cat "$T/body")"
SID=$(json "$T/body" 'd["id"]')
check 'wait_state "$SID" running' "running: $(cat "$T/sub.json")"
head -c "$(avail)" /dev/zero >"$MD/filler" 2>/dev/null   # the disk full while it is evaluated
check 'for _ in $(seq 200); do grep -q "database or disk is full" "$T/serve.err" && break; sleep 0.05; done; grep -q "database or disk is full" "$T/serve.err"' \
    "the entry could not be stored: $(tail -n 3 "$T/serve.err")"
head -c "$(avail)" /dev/zero >"$MD/filler2" 2>/dev/null   # and what its removed folder gave back
sleep 3
curl -s "$U/api/submissions/$SID" >"$T/sub.json"
check 'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"state\"] in (\"queued\", \"running\") and d[\"attempts\"] <= 1 and \"disk is full\" in d.get(\"reason\", \"\") and \"/\" not in d[\"reason\"]))" "$T/sub.json"' \
    "while the disk is full: waiting again with its reason, neither failed nor counted: $(cat "$T/sub.json")"
rm -f "$MD/filler" "$MD/filler2"   # room again
check 'wait_state "$SID" done 60 && [ "$(json "$T/sub.json" "d[\"attempts\"]")" = 1 ]' \
    "done without a restart, the failed attempts not counted: $(cat "$T/sub.json")"
kill -TERM "$PID"; wait "$PID" 2>/dev/null
finish
