#!/usr/bin/env bash
# test_channel.sh — `baton channel`: SageMaker-style named pipes <dir>/<channel>_<epoch>, read by a
# plain Python reader (the one in docs/channels.md): every epoch delivers each sample exactly once,
# RecordIO-framed; a reader that leaves early ends that epoch and the next pipe still follows; names
# that leave the folder, zero epochs, a missing folder and a regular file in a pipe's place are refused.
. "$(dirname "$0")/lib.sh"
$BATON pack --from fashion-mnist --split test --out "$T/ds" --shard-mb 1 >/dev/null 2>&1 || bad "pack"
cat >"$T/reader.py" <<'PY'
import os, struct, sys, time
MAGIC = 0xCED7230A
def records(path, limit=None):
    with open(path, "rb") as f:
        k = 0
        while limit is None or k < limit:
            head = f.read(8)
            if not head:
                return
            parts = []
            while True:
                magic, lrec = struct.unpack("<II", head)
                assert magic == MAGIC, "bad magic"
                cflag, n = lrec >> 29, lrec & ((1 << 29) - 1)
                parts.append(f.read(n))
                if cflag in (0, 3):
                    f.read((4 - n % 4) % 4)
                    break
                parts.append(struct.pack("<I", MAGIC))
                head = f.read(8)
            k += 1
            yield b"".join(parts)
fifo, name, epochs, first_limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for e in range(epochs):
    path = os.path.join(fifo, f"{name}_{e}")
    t0 = time.time()
    while not os.path.exists(path):
        if time.time() - t0 > 30: sys.exit(f"{path} never appeared")
        time.sleep(0.01)
    ids = [struct.unpack_from("<IfQQ", p)[2] for p in records(path, first_limit if e == 0 and first_limit else None)]
    print(e, len(ids), len(set(ids)), min(ids), max(ids))
PY
mkdir -p "$T/fifo" "$T/fifo2"   # the reader's folders
timeout 120 $BATON channel --data "$T/ds" --fifo-dir "$T/fifo" --channel train --epochs 2 --quiet 2>"$T/err" &
pid=$!
timeout 120 python3 "$T/reader.py" "$T/fifo" train 2 0 >"$T/out" || bad "reader failed: $(cat "$T/out")"
wait $pid || bad "channel failed: $(cat "$T/err")"
check 'grep -qx "0 10000 10000 0 9999" "$T/out" && grep -qx "1 10000 10000 0 9999" "$T/out"' "epochs: $(cat "$T/out")"
check '[ ! -e "$T/fifo/train_0" ] && [ ! -e "$T/fifo/train_1" ]' "pipes left behind"

# a reader that leaves after 100 records: epoch 0 ends, epoch 1 is whole
timeout 120 $BATON channel --data "$T/ds" --fifo-dir "$T/fifo2" --channel val --epochs 2 --quiet 2>"$T/err2" &
pid=$!
timeout 120 python3 "$T/reader.py" "$T/fifo2" val 2 100 >"$T/out2" || bad "reader 2 failed"
wait $pid || bad "channel 2 failed: $(cat "$T/err2")"
check 'grep -q "^0 100 100 " "$T/out2" && grep -qx "1 10000 10000 0 9999" "$T/out2"' "early leave: $(cat "$T/out2")"
check 'grep -q "went away" "$T/err2"' "no warning about the reader leaving: $(cat "$T/err2")"
expect_fail 2 'required' $BATON channel --data "$T/ds"
# what it refuses: a name that leaves the folder, zero epochs, a folder that does not exist (no
# reader can be waiting in it), and a regular file where a pipe goes (never deleted)
expect_fail 2 "--channel '../x'" $BATON channel --data "$T/ds" --fifo-dir "$T/fifo" --channel ../x --quiet
expect_fail 2 "--channel 'a/b'" $BATON channel --data "$T/ds" --fifo-dir "$T/fifo" --channel a/b --quiet
expect_fail 2 "--epochs must be >= 1" $BATON channel --data "$T/ds" --fifo-dir "$T/fifo" --channel t --epochs 0 --quiet
expect_fail 1 "nofolder/sub: no such folder" $BATON channel --data "$T/ds" --fifo-dir "$T/nofolder/sub" --quiet
check '[ ! -e "$T/nofolder" ]' "no folder created"
echo "precious" >"$T/fifo/keep_0"
expect_fail 1 "keep_0 exists and is not a named pipe" $BATON channel --data "$T/ds" --fifo-dir "$T/fifo" --channel keep --quiet
check '[ "$(cat "$T/fifo/keep_0")" = precious ]' "the regular file is untouched"
check '[ ! -e "$T/x_0" ]' "nothing written outside the folder"

# an epoch's end against a producer that died: docs/channels.md's own reader (taken from the
# document) reads two whole epochs, each confirmed by its .done file; then `baton channel` is
# interrupted (SIGINT, as Ctrl-C) mid-epoch: its pipe is removed and the reader says "cut off"
python3 - docs/channels.md "$T/docreader.py" <<'PY'
import re, sys
code = re.search(r"```python\n(.*?)```", open(sys.argv[1]).read(), re.S).group(1)
code = code.split("\nfor epoch, label, image in channel(")[0]   # the library part, not the demo loop
open(sys.argv[2], "w").write(code + """
import sys
slow = len(sys.argv) > 4
try:
    n = 0
    for epoch, label, image in channel(sys.argv[1], sys.argv[2], int(sys.argv[3])):
        n += 1
        if slow:
            if n == 1:
                open(sys.argv[1] + ".reading", "w").close()   # inside epoch 0: the test may interrupt
            time.sleep(0.002)
    print("complete", n)
except RuntimeError as e:
    print("error", e)
""")
PY
mkdir -p "$T/dfifo"
$BATON channel --data "$T/ds" --fifo-dir "$T/dfifo" --channel train --epochs 2 --quiet 2>/dev/null &
pid=$!
out=$(timeout 120 python3 "$T/docreader.py" "$T/dfifo" train 2)
wait $pid
check '[ "$out" = "complete 20000" ] && grep -q "\"records\":10000" "$T/dfifo/train_0.done" && grep -q "\"last\":true" "$T/dfifo/train_1.done"' \
    "the document's reader: two epochs, each confirmed by its .done ($out)"
rm -f "$T/dfifo"/*
$BATON channel --data "$T/ds" --fifo-dir "$T/dfifo" --channel train --epochs 2 --quiet 2>/dev/null &
pid=$!
timeout 120 python3 "$T/docreader.py" "$T/dfifo" train 2 slow >"$T/cut.out" &
rpid=$!
for _ in $(seq 600); do [ -e "$T/dfifo.reading" ] && break; sleep 0.05; done   # the reader is inside epoch 0
kill -INT $pid
wait $pid
rc=$?
wait $rpid
check '[ "$rc" -eq 130 ] && [ ! -e "$T/dfifo/train_0" ] && [ ! -e "$T/dfifo/train_0.done" ]' "Ctrl-C: the pipe is removed (exit $rc; left: $(ls "$T/dfifo"))"
check 'grep -q "^error .*train_0: cut off after [0-9]* records" "$T/cut.out"' "the reader tells the cut from an epoch's end: $(cat "$T/cut.out")"
finish
