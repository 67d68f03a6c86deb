"""test_pieces.py — baton.Loader delivers no sample from bytes that were not checked against
dataset.json. Fashion-MNIST (its test split) packed twice with different seeds (raw records of one size: shard N of
either pack has the same size and offsets); one shard of the second put in place of the first's.
In file, pipe, mount and cache mode, at world 1, 2 and 4 (every rank), and resumed from a
state_dict() in the middle of the epoch, every batch before the error holds exactly the samples
the untouched pack gives at those positions, and the error (baton.CorruptError) names the shard,
the piece's bytes and both CRC32Cs. A dataset packed before piece checksums still loads. Shards cut
short while a Loader reads them — mount mode's folder, file and cache mode's local copy: baton.Error
naming the shard, the process alive."""
import json
import os
import shutil

import baton
from harness import TMP, check, done, pack, raises

A = pack(os.path.join(TMP, "a"), "test", "--seed", "1")
B = pack(os.path.join(TMP, "b"), "test", "--seed", "2")
S = "test-00005"
BAD = os.path.join(TMP, "bad")
shutil.copytree(A, BAD)
shutil.copy(os.path.join(B, S + ".rec"), os.path.join(BAD, S + ".rec"))
check(open(os.path.join(A, S + ".idx")).read() == open(os.path.join(B, S + ".idx")).read(),
      "the two packs' shard has the same index")


def lines(uri, mode, rank=0, world=1, state=None, tag=""):
    """(positions → (label, crc)) of every sample delivered, and the error that ended it (or None)."""
    kw = {"local_dir": os.path.join(TMP, "copy-%s-%s-%d-%d%s" % (os.path.basename(uri), mode, rank, world, tag))} \
        if mode in ("file", "cache") else {}
    got, err = {}, None
    try:
        with baton.Loader(uri, mode=mode, batch=64, seed=5, epochs=1, rank=rank, world=world, block=512,
                          normalize=False, dtype="uint8", **kw) as l:
            if state:
                l.load_state_dict(state)
            for b in l:
                x = b.images.reshape(len(b.labels), -1)
                for i in range(len(b.labels)):
                    got[int(b.positions[i])] = (int(b.labels[i]), baton.crc32c(x[i].tobytes()))
    except baton.Error as e:
        err = e
    return got, err


def wrong(ref, got):
    return sum(ref.get(p) != v for p, v in got.items())


PIECE = S + ".rec: bytes "
for mode in ("file", "pipe", "mount", "cache"):
    for world in (1, 2, 4):
        for rank in range(world):
            ref, e0 = lines(A, mode, rank, world)
            got, e = lines(BAD, mode, rank, world)
            what = "%s mode, rank %d of %d" % (mode, rank, world)
            check(e0 is None and len(ref) > 0, "%s: the untouched pack (%s)" % (what, e0))
            check(isinstance(e, baton.CorruptError) and PIECE in str(e) and "(piece " in str(e) and
                  "dataset.json says" in str(e), "%s: the error names the shard and the piece: %r" % (what, e))
            check(wrong(ref, got) == 0, "%s: %d of %d samples delivered before the error are wrong" % (
                what, wrong(ref, got), len(got)))

# ---- resumed in the middle of the epoch (and of a shard): from a state taken on the untouched pack
for mode in ("pipe", "mount", "cache"):
    ref, _ = lines(A, mode)
    state = {"seed": 5, "epoch": 0, "position": 3840 + 5 * 64, "batch": 64, "samples": 10000}
    got, e = lines(BAD, mode, state=state, tag="-resumed")
    check(isinstance(e, baton.CorruptError) and PIECE in str(e), "%s mode, resumed: %r" % (mode, e))
    check(wrong(ref, got) == 0 and min(got, default=state["position"]) >= state["position"],
          "%s mode, resumed: %d of %d samples delivered are wrong" % (mode, wrong(ref, got), len(got)))

# ---- a dataset packed before piece checksums loads and delivers the same samples
OLD = os.path.join(TMP, "old")
shutil.copytree(A, OLD)
m = json.load(open(os.path.join(OLD, "dataset.json")))
for s in m["shards"]:
    s.pop("piece_bytes", None), s.pop("piece_crc32c", None)
json.dump(m, open(os.path.join(OLD, "dataset.json"), "w"))
for mode in ("mount", "pipe"):
    ref, _ = lines(A, mode)
    got, e = lines(OLD, mode)
    check(e is None and got == ref, "%s mode, a dataset without pieces: the same samples (%r)" % (mode, e))

# ---- shards cut short under a running reader: an error naming one, never SIGBUS. Mount mode cuts
# the dataset's own files; file and cache mode their local copy (another job sharing the folder, a
# cleaner of /tmp), once they read it (cache mode: after its streamed epoch 0)
for kind in ("no pieces", "pieces of 4 KiB"):
    CUT = pack(os.path.join(TMP, "cut-" + kind[:2]), "test", "--seed", "1",
               *(("--piece-kb", "4") if kind != "no pieces" else ()))
    if kind == "no pieces":
        m = json.load(open(os.path.join(CUT, "dataset.json")))
        for s in m["shards"]:
            s.pop("piece_bytes", None), s.pop("piece_crc32c", None)
        json.dump(m, open(os.path.join(CUT, "dataset.json"), "w"))
    for mode in ("file", "cache", "mount"):   # mount last: it cuts the pack itself
        where = CUT if mode == "mount" else os.path.join(TMP, "cut-copy-%s-%s" % (kind[:2], mode))
        kw = {} if mode == "mount" else {"local_dir": where}
        at = 640 + (10000 if mode == "cache" else 0)
        n, err = 0, None
        try:
            with baton.Loader(CUT, mode=mode, batch=64, seed=5, epochs=3, **kw) as l:
                for epoch in range(3):
                    for b in l:
                        n += len(b.labels)
                        if n == at:
                            for f in os.listdir(where):   # file mode's copy may be filling: .rec.part
                                if f.endswith(".rec") or f.endswith(".rec.part"):
                                    os.truncate(os.path.join(where, f), 1000)
        except baton.Error as e:
            err = e
        # (file mode's copy may still be filling: its download can write past the cut before a read
        # meets it, and the read finds the hole's zeros instead of the file's end; either names the file)
        cut = ("the file ends at offset" in str(err) or "cut short while being filled" in str(err)) and \
            "now 1000 bytes" in str(err)
        refilled = mode == "file" and isinstance(err, baton.CorruptError) and "the copy changed after it was written" in str(err)
        check(isinstance(err, baton.Error) and (cut or refilled) and where + "/test-" in str(err) and ".rec" in str(err),
              "%s mode, %s: shards cut short after %d samples: %r" % (mode, kind, n, err))
        print("%s mode, %s: cut short after %d samples: %s" % (mode, kind, n, err))
done()
