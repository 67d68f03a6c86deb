#!/usr/bin/env bash
# test_chaos_league.sh — the league's kill campaign. `make test` runs a short one
# (CHAOS_LEAGUE_SUBMISSIONS, default 24); `make chaos` the long one (200). `baton race serve` on a
# database in a size-limited tmpfs (as root; elsewhere in a plain folder, without the full-disk
# events) takes submissions over HTTP from 8 racers, each sending its next model as soon as its
# last is finished, while the server is SIGKILLed at pseudo-random moments (Python's random from
# CHAOS_SEED, so a campaign repeats): during an evaluation (held 300 ms by the test hook so the
# moment is one), during an upload, or with the disk full (a file fills the tmpfs first, and is
# removed a few seconds after the restart, so the restarted server also runs with no room). Each
# time it is started again on the same database. Once every submission has been accepted (202) the
# kills stop and the server finishes the queue. Then, with the server stopped:
#   - every submission is done or failed, and a failed one says why;
#   - each done submission has exactly one entry, no entry belongs to two submissions and none to
#     none (each entry stored once);
#   - no work folder is left: DB-work/unpack and DB-work/uploads are empty, no baton-upload-* in
#     $TMPDIR;
#   - the database passes PRAGMA integrity_check and foreign_key_check.
# Prints the figures (kills by kind, restarts, done, failed) as the last lines.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
unset BATON_LEAGUE_DB BATON_LEAGUE_TEST_HOLD_MS
N=${CHAOS_LEAGUE_SUBMISSIONS:-24}
MNT=
trap '[ -n "$MNT" ] && umount -l "$MNT" 2>/dev/null; rm -rf "$T"' EXIT
M="--metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json"
check '"$BATON" race train --track oval $M --ckpt-dir "$T/m" --episodes 200 --seed 2 --threads 1 --quiet >/dev/null' "train a model"
tar -C "$T/m" -cf "$T/m.tar" .
mkdir -p "$T/mnt"
FULL=0
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64m tmpfs "$T/mnt" 2>/dev/null; then
    MNT=$T/mnt FULL=1
else
    skip "cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN): no full-disk events"
fi
DB=$T/mnt/l.db
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"
for a in r0 r1 r2 r3 r4 r5 r6 r7; do "$BATON" race token add "$a" --db "$DB" >"$T/tok.$a" 2>/dev/null; done
check '[ "$(ls "$T"/tok.* | wc -l)" = 8 ] && [ -s "$T/tok.r7" ]' "eight racers' tokens"

python3 - "$BATON" "$DB" "$T" "$N" "$FULL" "${CHAOS_SEED:-7}" >"$T/campaign.out" 2>&1 <<'PY'
import json, os, random, signal, subprocess, sys, threading, time, urllib.request, urllib.error
baton, db, tdir, n_want, full, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1", int(sys.argv[6])
rnd = random.Random(seed)
tar = open(tdir + "/m.tar", "rb").read()
racers = {a: open(f"{tdir}/tok.{a}").read().strip() for a in ["r%d" % i for i in range(8)]}
mnt = os.path.dirname(db)
filler = mnt + "/filler"
stats = {"kills_eval": 0, "kills_upload": 0, "kills_full": 0, "kills_idle": 0, "restarts": 0, "accepted": 0, "refused_busy": 0,
         "start_failures": 0, "pages_failed_full": 0}
log = open(tdir + "/serve.err", "ab")
srv, url = None, None

def start():
    global srv, url
    for attempt in range(3):
        env = dict(os.environ, BATON_LEAGUE_TEST_HOLD_MS="300")
        srv = subprocess.Popen([baton, "race", "serve", "--listen", "127.0.0.1:0", "--db", db], stdout=subprocess.PIPE,
                               stderr=log, env=env)
        line = srv.stdout.readline().decode().strip()
        if line.startswith("http://"):
            url = line
            return
        srv.wait()
        stats["start_failures"] += 1   # a failure of the league: it must start on a full disk too
        print("the server did not start (attempt %d); room made" % (attempt + 1), flush=True)
        unfill()
    raise SystemExit("the server does not start")

def kill():
    srv.send_signal(signal.SIGKILL)
    srv.wait()

def req(path, body=None, token=None):
    r = urllib.request.Request(url + path, data=body, method="POST" if body is not None else "GET")
    if token: r.add_header("Authorization", "Bearer " + token)
    if body is not None: r.add_header("Content-Type", "application/x-tar")
    try:
        with urllib.request.urlopen(r, timeout=30) as a:
            return a.status, json.loads(a.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")
    except (OSError, ValueError):
        return None, None   # the server gone mid-request

def unfill():   # the filler goes once, whoever removes it first
    try:
        os.unlink(filler)
    except FileNotFoundError:
        pass

def fill():
    st = os.statvfs(mnt)
    with open(filler, "ab") as f:
        try:
            f.write(b"\0" * (st.f_bavail * st.f_frsize))
        except OSError:
            pass

try:
    start()
    full_until = 0
    t0 = time.time()
    while stats["accepted"] < n_want and time.time() - t0 < 1800:
        if full_until and time.time() > full_until:
            unfill(); full_until = 0
        for a, tok in racers.items():
            if stats["accepted"] >= n_want: break
            st, ans = req("/api/submit?alias=%s&track=oval" % a, tar, tok)
            if st == 202: stats["accepted"] += 1
            elif st == 409: stats["refused_busy"] += 1
        time.sleep(rnd.uniform(0, 0.6))
        r = rnd.random()
        if r < 0.25:       # a kill during an evaluation: wait until one runs
            for _ in range(40):
                _, s = req("/api/submissions/%d" % max(1, stats["accepted"]))
                if s and s.get("state") == "running": break
                time.sleep(0.05)
            time.sleep(rnd.uniform(0, 0.3)); kill(); stats["kills_eval"] += 1; start(); stats["restarts"] += 1
        elif r < 0.35:     # during an upload: the POST on its way
            th = threading.Thread(target=req, args=("/api/submit?alias=r%d&track=oval" % rnd.randrange(8), tar, None))
            th.start(); time.sleep(rnd.uniform(0, 0.01)); kill(); th.join(); stats["kills_upload"] += 1; start(); stats["restarts"] += 1
        elif r < 0.5 and full and not full_until:   # the disk full, then killed, and full a while after
            fill(); time.sleep(rnd.uniform(0.2, 1.0)); kill(); stats["kills_full"] += 1
            start(); stats["restarts"] += 1; full_until = time.time() + rnd.uniform(1, 4)
            if req("/api/server")[0] != 200: stats["pages_failed_full"] += 1   # pages served with no room
        elif r < 0.55:
            kill(); stats["kills_idle"] += 1; start(); stats["restarts"] += 1
    unfill()
    # no more kills: the queue finishes
    deadline = time.time() + 120 + 3 * n_want
    last = None
    while time.time() < deadline:
        out = subprocess.run(["python3", "-c", "import sqlite3,sys; c=sqlite3.connect('file:%s?mode=ro' % sys.argv[1], uri=True); "
                              "print(c.execute('select count(*) from submissions where state in (0,1)').fetchone()[0])", db],
                             capture_output=True, text=True).stdout.strip()
        last = out
        if out == "0": break
        time.sleep(0.5)
    srv.send_signal(signal.SIGTERM); srv.wait()
finally:   # every server this campaign started is stopped, on every path
    if srv is not None and srv.poll() is None:
        srv.kill(); srv.wait()
stats["waiting_at_end"] = int(last) if last and last.isdigit() else -1
stats["seconds"] = round(time.time() - t0, 1)
print(json.dumps(stats), flush=True)
PY
check '[ -n "$(tail -n1 "$T/campaign.out" | grep "^{")" ]' "the campaign ran: $(tail -n 5 "$T/campaign.out")"
S=$(tail -n1 "$T/campaign.out")
check '[ "$(echo "$S" | json /dev/stdin "d[\"accepted\"] >= $N and d[\"waiting_at_end\"] == 0")" = True ]' "every submission accepted and finished: $S"
check '[ "$(echo "$S" | json /dev/stdin "d[\"start_failures\"] + d[\"pages_failed_full\"]")" = 0 ]' "the server started every time and served its pages, on a full disk too: $S $(grep -v "^baton: info" "$T/serve.err" | tail -n 3)"
check 'python3 - "$DB" <<"PY"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
st = {s: n for s, n in c.execute("select state, count(*) from submissions group by state")}
assert set(st) <= {2, 3}, st                                     # done or failed only
assert c.execute("select count(*) from submissions where state = 3 and coalesce(reason, \"\") = \"\"").fetchone()[0] == 0
done = st.get(2, 0)
assert c.execute("select count(*) from submissions where state = 2 and entry is null").fetchone()[0] == 0
assert c.execute("select count(distinct entry) from submissions where state = 2").fetchone()[0] == done
assert c.execute("select count(*) from entries").fetchone()[0] == done, "an entry stored twice or for nothing"
assert c.execute("select count(*) from entries where id not in (select entry from submissions where entry is not null)").fetchone()[0] == 0
assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
assert c.execute("pragma foreign_key_check").fetchall() == []
print(st)
PY' "every submission done or failed with a reason, each entry stored once, the database intact"
check '[ -z "$(ls -A "$DB-work/unpack" "$DB-work/uploads" 2>/dev/null | grep -v ":$" | grep -v "^$")" ] && [ -z "$(ls -A "$TMPDIR")" ]' \
    "no work folder left: $(ls -R "$DB-work" "$TMPDIR" 2>/dev/null | head -c 300)"
python3 - "$DB" "$S" "$(grep -c "disk is full" "$T/serve.err")" <<'PY'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
d = json.loads(sys.argv[2])
done = c.execute("select count(*) from submissions where state = 2").fetchone()[0]
failed = c.execute("select count(*) from submissions where state = 3").fetchone()[0]
att = c.execute("select max(attempts) from submissions").fetchone()[0]
print("league chaos: %d submissions in %.0f s: %d done, %d failed (most attempts %s); kills: %d in an evaluation, "
      "%d in an upload, %d with the disk full, %d idle; %d restarts; %s \"disk is full\" in the server's log" % (done + failed,
      d["seconds"], done, failed, att, d["kills_eval"], d["kills_upload"], d["kills_full"], d["kills_idle"], d["restarts"], sys.argv[3]))
for r in c.execute("select reason, count(*) from submissions where state = 3 group by reason"):
    print("  failed: %s (%d)" % r)
PY
finish
