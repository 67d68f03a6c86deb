#!/usr/bin/env bash
# test_race_serve_abuse.sh — `baton race serve` against clients that do not play fair, each bounded
# in time (a few seconds a case) and in count:
#   - six uploads of 64 MiB without a token in flight at once (three by curl with "Expect:
#     100-continue", three streaming a real body) while 140 slow connections from another address
#     drip their request heads (each reopened when the server closes it): each upload refused with
#     401 within 2 s, no "100 Continue" sent, the server's resident memory (VmRSS) under 100 MB
#     throughout (the sanitizer build: under its own start plus 64 MB), and meanwhile a racer's
#     page and submission each served within 1 s;
#   - an accepted upload arriving slowly: its bytes in an unlinked 0600 file in the league's
#     folder, not in memory; a second upload of the same alias meanwhile refused (409);
#   - requests libmicrohttpd alone would leave unanswered for its 30 s timeout, answered at once:
#     a query of 490 and of 600 arguments (414), a chunk size of ffffffffffffffff on a GET (400)
#     and on an upload (411: an upload declares its size), a short body on a path that takes none;
#   - slowloris: 140 unfinished request heads from one address: the server keeps at most 16 of
#     them, and a racer at another address is served within 1 s meanwhile; heads dripped one line
#     every 0.4 s (each line restarts libmicrohttpd's own timeout) are cut at the server's deadline
#     for a whole head (--head-timeout 2 here), while a keep-alive connection idle 1.5 s between
#     two requests is still served;
#   - 8 addresses each dripping 16 heads (all 128 connections): at most 64 wait on a head across
#     addresses (a new connection closes the oldest), a racer at a ninth address is served within
#     1 s, and every dripping connection is closed by the deadline.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=1
unset BATON_LEAGUE_DB BATON_LEAGUE_TEST_HOLD_MS
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
DB=$T/league.db
M="--metadata docs/race-model/model_metadata.json --hyper docs/race-model/hyperparameters.json"

check '"$BATON" race train --track oval $M --ckpt-dir "$T/m" --episodes 200 --seed 2 --threads 1 --quiet >/dev/null' "train a model"
tar -C "$T/m" -cf "$T/m.tar" .
check '"$BATON" race token add ann --db "$DB" >"$T/ann" 2>/dev/null && "$BATON" race token add bob --db "$DB" >"$T/bob" 2>/dev/null' "tokens"
ANN=$(cat "$T/ann") BOB=$(cat "$T/bob")

"$BATON" race serve --listen 127.0.0.1:0 --db "$DB" --head-timeout 2 >"$T/url" 2>"$T/serve.err" &
pids+=($!)
PID=$!
U=
for _ in $(seq 200); do U=$(head -n1 "$T/url" 2>/dev/null); [ -n "$U" ] && break; sleep 0.05; done
check '[ -n "$U" ]' "the server prints its URL: $(cat "$T/serve.err")"
PORT=${U##*:}
quick() {  # quick "STATUS SECONDS ..." WANT LIMIT: the status is WANT and came within LIMIT seconds
    python3 -c "import sys; a = sys.argv[1].split(); sys.exit(not (len(a) > 1 and a[0] == sys.argv[2] and float(a[1]) < float(sys.argv[3])))" "$@"
}
rss() { awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$PID/status"; }   # MB
submit() {  # submit TOKEN ALIAS: POST the model; prints the status and the seconds it took
    curl -s -o "$T/sub.body" -w "%{http_code} %{time_total}" -H "Authorization: Bearer $1" -H "Content-Type: application/x-tar" \
        --data-binary @"$T/m.tar" "$U/api/submit?alias=$2&track=oval"
}
wait_done() {  # wait_done ID: until the submission is done (10 s)
    for _ in $(seq 200); do
        [ "$(curl -s "$U/api/submissions/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("state"))')" = done ] && return 0
        sleep 0.05
    done
    return 1
}
check '[ "$(submit "$ANN" ann | cut -d" " -f1)" = 202 ] && wait_done 1' "ann's first submission: $(cat "$T/sub.body" 2>/dev/null)"

# ---- six unauthenticated 64 MiB uploads in flight
truncate -s 64M "$T/big"
base=$(rss)
# ... while 140 slow connections from another address (127.0.0.2) drip their heads, each opened
# again as soon as the server closes it (at most 16 kept, each cut at the head deadline)
python3 - "$PORT" "$T/abuse.done" >"$T/press.out" 2>&1 <<'PY' &
import os, socket, sys, time
port, done = int(sys.argv[1]), sys.argv[2]
conns, opened, t0 = [], 0, time.time()
while not os.path.exists(done) and time.time() - t0 < 15:
    while len(conns) < 140:
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            break
        conns.append([s, 0]); opened += 1
    time.sleep(0.2)
    for c in list(conns):   # one more header line each; a closed one is replaced
        try:
            c[0].send(b"GET / HTTP/1.1\r\nHost: x\r\n" if c[1] == 0 else b"X-%d: y\r\n" % c[1]); c[1] += 1
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            c[0].close(); conns.remove(c)
print(opened, flush=True)
PY
press=$!
sleep 0.5
python3 - "$PID" "$T/abuse.done" >"$T/rss.max" <<'PY' &
import os, sys, time
peak, end = 0, time.time() + 10
while time.time() < end and not os.path.exists(sys.argv[2]):
    try:
        kb = int([l for l in open(f"/proc/{sys.argv[1]}/status") if l.startswith("VmRSS")][0].split()[1])
    except (OSError, IndexError):
        break
    peak = max(peak, kb // 1024)
    time.sleep(0.02)
print(peak)
PY
sampler=$!
abusers=()
for k in 1 2 3; do
    curl -s -o "$T/exp$k.body" -D "$T/exp$k.head" -w "%{http_code} %{time_total}" --max-time 10 -H "Expect: 100-continue" \
        -H "Content-Type: application/x-tar" --data-binary @"$T/big" "$U/api/submit?alias=ann&track=oval" >"$T/exp$k.out" &
    abusers+=($!)
done
for k in 1 2 3; do
    python3 - "$PORT" >"$T/slow$k.out" <<'PY' &
import select, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
n = 64 << 20
s.sendall(b"POST /api/submit?alias=ann&track=oval HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-tar\r\n"
          b"Content-Length: %d\r\n\r\n" % n)
t0, sent, got, piece = time.time(), 0, b"", b"\0" * (256 << 10)
while time.time() - t0 < 5 and b"\r\n\r\n" not in got:
    if select.select([s], [], [], 0.01)[0]:
        b = s.recv(65536)
        if not b:
            break
        got += b
    elif sent < n:
        try:
            sent += s.send(piece)
        except OSError:
            break
print(got.split(b" ")[1].decode() if got.startswith(b"HTTP/1.1 ") else "none", "%.2f" % (time.time() - t0), sent)
PY
    abusers+=($!)
done
sleep 0.3
page=$(curl -s -o /dev/null -w "%{http_code} %{time_total}" --max-time 5 "$U/track/oval")
own=$(submit "$ANN" ann)
wait "${abusers[@]}"
touch "$T/abuse.done"
wait "$sampler" "$press"
check '[ "$(cat "$T/press.out")" -ge 140 ]' "140 slow connections kept up meanwhile: $(cat "$T/press.out") opened"
check 'quick "$page" 200 1' \
    "the racer's page within 1 s meanwhile: $page"
check 'quick "$own" 202 1' \
    "the racer's submission within 1 s meanwhile: $own $(cat "$T/sub.body")"
for k in 1 2 3; do
    check 'quick "$(cat "$T/exp$k.out")" 401 2 && ! grep -q "100 Continue" "$T/exp$k.head" && grep -q "a token is required" "$T/exp$k.body"' \
        "Expect: 100-continue without a token: 401 at once, no 100 Continue: $(cat "$T/exp$k.out") $(head -c 300 "$T/exp$k.head")"
    check 'quick "$(cat "$T/slow$k.out")" 401 2' \
        "a body streamed without a token: 401 at once: $(cat "$T/slow$k.out")"
done
peak=$(cat "$T/rss.max")
if [ "${BATON_BUILD:-build}" = build-san ]; then limit=$((base + 64)); else limit=100; fi
check '[ -n "$peak" ] && [ "$peak" -lt "$limit" ]' "VmRSS at most $peak MB during the uploads (under $limit MB; $base MB before)"

# ---- an accepted upload arriving slowly: on disk in the league's folder, one at a time
python3 - "$PORT" "$T/m.tar" "$BOB" "$PID" "$T" >"$T/spool.out" 2>&1 <<'PY'
import os, socket, stat, subprocess, sys, time
port, tar, tok, pid, folder = int(sys.argv[1]), open(sys.argv[2], "rb").read(), sys.argv[3], sys.argv[4], sys.argv[5]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(5)
s.sendall(b"POST /api/submit?alias=bob&track=oval HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
          b"Content-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n" % (tok.encode(), len(tar)) + tar[:len(tar) // 2])
time.sleep(0.5)
files = []
for fd in os.listdir(f"/proc/{pid}/fd"):
    link = os.readlink(f"/proc/{pid}/fd/{fd}")
    if os.path.basename(link).startswith(".baton-upload-"):
        files.append((link, oct(stat.S_IMODE(os.stat(f"/proc/{pid}/fd/{fd}").st_mode)), os.stat(f"/proc/{pid}/fd/{fd}").st_size))
print("spool", files)
ok = len(files) == 1 and files[0][0].startswith(folder + "/.baton-upload-") and files[0][0].endswith(" (deleted)") and \
     files[0][1] == "0o600" and files[0][2] > 0
second = subprocess.run(["curl", "-s", "-w", " %{http_code}", "-H", "Authorization: Bearer " + tok, "-H", "Content-Type: application/x-tar",
                         "--data-binary", "@" + sys.argv[2],
                         f"http://127.0.0.1:{port}/api/submit?alias=bob&track=oval"], capture_output=True, text=True).stdout
print("second", second)
s.sendall(tar[len(tar) // 2:])
answer = s.recv(65536)
print("answer", answer[:12])
print(ok and second.endswith(" 409") and "arriving already" in second and answer.startswith(b"HTTP/1.1 202"))
PY
check '[ "$(tail -n1 "$T/spool.out")" = True ]' "a slow upload: in a 0600 unlinked file in the league's folder, a second one 409, then 202: $(cat "$T/spool.out")"

# ---- what libmicrohttpd alone leaves unanswered for 30 s, answered at once
python3 - "$PORT" "$ANN" >"$T/raw.out" 2>&1 <<'PY'
import socket, sys, time
port, tok = int(sys.argv[1]), sys.argv[2].encode()
def ask(name, data, want):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(3)
    t0, got = time.time(), b""
    s.sendall(data)
    try:
        while b"\r\n\r\n" not in got:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError:
        pass
    took = time.time() - t0
    status = got.split(b" ")[1].decode() if got.startswith(b"HTTP/1.1 ") else "none"
    print(("ok  " if status == want and took < 2 else "BAD ") + "%s: %s in %.2f s (want %s)" % (name, status, took, want))
args = lambda n, a: b"&".join(a % i for i in range(n))
ask("490 arguments", b"GET /api/leaderboard?" + args(490, b"k%d=v") + b" HTTP/1.1\r\nHost: x\r\n\r\n", "414")
ask("600 arguments", b"GET /?" + args(600, b"a%d") + b" HTTP/1.1\r\nHost: x\r\n\r\n", "414")
ask("17 arguments", b"GET /api/tracks?" + args(17, b"a%d") + b" HTTP/1.1\r\nHost: x\r\n\r\n", "414")
ask("3 arguments", b"GET /api/leaderboard?track=oval&format=total&x=1 HTTP/1.1\r\nHost: x\r\n\r\n", "200")
chunk = b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n"
ask("a GET with a chunk of ffffffffffffffff", b"GET / HTTP/1.1\r\nHost: x\r\n" + chunk, "400")
ask("an upload with a chunk of ffffffffffffffff", b"POST /api/submit?alias=ann&track=oval HTTP/1.1\r\nHost: x\r\n"
    b"Authorization: Bearer " + tok + b"\r\n" + chunk, "411")
ask("a chunked upload without a token", b"POST /api/submit?alias=ann&track=oval HTTP/1.1\r\nHost: x\r\n" + chunk, "401")
ask("a short body on a GET", b"GET /api/tracks HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", "400")
PY
check '! grep -q "^BAD" "$T/raw.out" && [ "$(grep -c "^ok" "$T/raw.out")" = 8 ]' "answered at once: $(cat "$T/raw.out")"
check 'kill -0 "$PID" && [ "$(curl -s -o /dev/null -w "%{http_code}" "$U/api/tracks")" = 200 ]' "the server still serves"

# ---- slowloris: 140 connections from one address (127.0.0.2), each holding an unfinished request
# head — more than the server's 128 in all; the server keeps at most 16 of them, and a racer at
# another address (127.0.0.3) is served within 1 s meanwhile
python3 - "$PORT" >"$T/loris.out" 2>&1 <<'PY' &
import socket, sys, time
held = []
for i in range(140):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    try:
        s.connect(("127.0.0.1", int(sys.argv[1])))
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-a: ")
        held.append(s)
    except OSError:
        pass
time.sleep(0.5)
alive = 0
for s in held:   # a connection the server closed reads as its end
    s.setblocking(False)
    try:
        alive += s.recv(1) != b""
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print(alive, flush=True)
time.sleep(4)
PY
LORIS=$!
sleep 1.5
check 'quick "$(curl -s --interface 127.0.0.3 -o /dev/null -w "%{http_code} %{time_total}" --max-time 5 "$U/api/tracks")" 200 1' \
    "a racer at another address served while one address holds unfinished requests"
wait "$LORIS"
check '[ "$(cat "$T/loris.out")" -le 16 ]' "the server kept at most 16 connections of the one address: $(cat "$T/loris.out")"
# ---- a whole head within the deadline, however it trickles: 8 connections from 127.0.0.4 each
# sending one header line every 0.4 s are closed 2 s (the deadline) after they began; a keep-alive
# connection that is idle 1.5 s between two whole requests is served both times
python3 - "$PORT" >"$T/drip.out" 2>&1 <<'PY'
import socket, sys, threading, time
port = int(sys.argv[1])
def drip(out, i):
    s = socket.create_connection(("127.0.0.1", port), source_address=("127.0.0.4", 0))
    t0 = time.time()
    s.sendall(b"GET /api/tracks HTTP/1.1\r\nHost: x\r\n")
    s.settimeout(0.4)
    n = 0
    while time.time() - t0 < 8:
        try:
            if s.recv(100) == b"":
                break
        except socket.timeout:
            try:
                s.sendall(b"X-%d: %d\r\n" % (n, n)); n += 1
            except OSError:
                break
        except OSError:
            break
    out[i] = time.time() - t0
out = [None] * 8
th = [threading.Thread(target=drip, args=(out, i)) for i in range(8)]
for t in th: t.start()
for t in th: t.join()
print("drip", " ".join("%.2f" % x for x in out))
s = socket.create_connection(("127.0.0.1", port), source_address=("127.0.0.4", 0))
req = b"GET /api/tracks HTTP/1.1\r\nHost: x\r\n\r\n"
def answer(s):
    s.settimeout(3)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    head, _, body = buf.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < n:
        body += s.recv(4096)
    return head.split(b"\r\n")[0].decode()
s.sendall(req); a = answer(s)
time.sleep(1.5)
s.sendall(req); b = answer(s)
print("keepalive", a, "|", b)
PY
check 'python3 -c "import sys; t = [float(x) for x in sys.argv[1:]]; sys.exit(not all(1.5 < x < 4 for x in t))" $(grep ^drip "$T/drip.out" | cut -d" " -f2-)' \
    "heads dripped a line every 0.4 s: closed at the 2 s deadline (seconds each lasted: $(cat "$T/drip.out"))"
check 'grep -q "^keepalive HTTP/1.1 200 OK | HTTP/1.1 200 OK" "$T/drip.out"' "a keep-alive connection idle 1.5 s between requests: both served"
# ---- 8 addresses (127.0.0.10..17) each holding 16 connections that drip a header line every 0.4 s
# (128: all the server takes): at most 64 connections wait on a head across addresses, a new one
# closing the oldest, so a racer at a ninth address (127.0.0.18) is served within 1 s; every
# dripping connection is closed by the 2 s deadline (those not closed for newer ones at it)
python3 - "$PORT" >"$T/drip8.out" 2>&1 <<'PY'
import socket, sys, threading, time
port, t0, lasted, lock = int(sys.argv[1]), time.time(), [], threading.Lock()
def address(k):
    conns = []
    for i in range(16):
        s = socket.socket()
        s.bind(("127.0.0.%d" % (10 + k), 0))
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            conns.append([s, time.time(), 0])
        except OSError:
            s.close()
            with lock: lasted.append(0.0)
    while conns and time.time() - t0 < 6:
        time.sleep(0.4)
        for c in list(conns):
            s, closed = c[0], False
            s.setblocking(False)
            try:
                closed = s.recv(100) == b""
            except BlockingIOError:
                pass
            except OSError:
                closed = True
            if not closed:
                try:
                    s.sendall(b"X-%d: y\r\n" % c[2]); c[2] += 1
                except OSError:
                    closed = True
            if closed:
                with lock: lasted.append(time.time() - c[1])
                s.close(); conns.remove(c)
    with lock: lasted.extend([99.0] * len(conns))   # never closed
th = [threading.Thread(target=address, args=(k,)) for k in range(8)]
for t in th: t.start()
time.sleep(0.5)
s = socket.socket()
s.bind(("127.0.0.18", 0))
s.settimeout(3)
r0, status = time.time(), "none"
try:
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    status = s.recv(100).split(b" ")[1].decode()
except (OSError, IndexError):
    pass
racer = time.time() - r0
for t in th: t.join()
early, at = sum(x < 1.5 for x in lasted), sum(1.5 <= x <= 3.5 for x in lasted)
print("racer %s in %.3f s; of %d dripping: %d closed for newer ones, %d at the deadline, longest %.2f s" %
      (status, racer, len(lasted), early, at, max(lasted)))
print(status == "200" and racer < 1 and len(lasted) == 128 and early + at == 128 and 60 <= early <= 66)
PY
check '[ "$(tail -n1 "$T/drip8.out")" = True ]' "8 addresses dripping heads: $(head -n1 "$T/drip8.out")"
kill -TERM "$PID"
check 'for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done; ! kill -0 "$PID" 2>/dev/null' "SIGTERM stops it"
finish
