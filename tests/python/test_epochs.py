"""test_epochs.py — a Loader's passes as PyTorch users write them (the defects issue, item 10): with
no epochs= each `for` over it is the next epoch (len() batches each, the order of a Loader told
the epochs); a peek with next(iter(loader)) or a break skips nothing (the next iter() starts that
pass again where it started); next(loader) goes on from the cursor; set_epoch(e) as a
DistributedSampler's, keeping a resumed cursor; an iterator of an earlier pass is refused; and
state_dict()/load_state_dict() stay exact through all of it."""
import os

import numpy as np

import baton
from harness import TMP, check, done, pack, raises

FM = pack(os.path.join(TMP, "fm"))
B = 1000   # 10 batches an epoch of 10,000


def key(b):
    return (b.epoch, b.index, b.positions.tobytes(), b.labels.tobytes())


def keys(it):
    return [key(b) for b in it]


with baton.Loader(FM, batch=B, seed=4, epochs=3) as told:
    REF = [keys(told) for _ in range(3)]   # the three epochs of a Loader told the epochs
check([len(e) for e in REF] == [10, 10, 10] and [e[0][0] for e in REF] == [0, 1, 2], "the reference: 3 epochs of 10")

# ---- no epochs=: every pass is the next epoch
l = baton.Loader(FM, batch=B, seed=4)
got = [keys(l) for _ in range(3)]
check([len(e) for e in got] == [len(l)] * 3, "for epoch in range(3): for b in loader: %s batches, len() %d"
      % ([len(e) for e in got], len(l)))
check(got == REF, "the passes are epochs 0, 1, 2 in the order of a Loader told epochs=3")
check(l.epoch == 3 and l.info["epochs"] == 0, "after them the cursor is at epoch 3 (%d); no end" % l.epoch)
l.close()

# ---- a peek does not skip: the pass that follows starts where the peeked one started
l = baton.Loader(FM, batch=B, seed=4)
peek = key(next(iter(l)))
first = keys(l)
check(peek == REF[0][0] and first == REF[0], "next(iter(loader)), then a for: all %d batches of epoch 0 (%d)"
      % (len(REF[0]), len(first)))
for i, b in enumerate(l):   # a break after 3 batches of epoch 1 ...
    if i == 2:
        break
check(keys(l) == REF[1], "... and the for after the break starts epoch 1 again, whole")
peek = key(next(iter(l)))
check(keys(l) == REF[2], "a peek at epoch 2, then epoch 2 whole")
l.close()

# ---- next(loader) without iter() goes on from the cursor; an earlier pass's iterator is refused
l = baton.Loader(FM, batch=B, seed=4)
a, b = key(next(l)), key(next(l))
check([a, b] == REF[0][:2], "next(loader) twice: batches 0 and 1")
it = iter(l)
check(key(next(it)) == REF[0][0], "iter() after them: a new pass from the epoch's start")
it2 = iter(l)
check(raises(baton.UsageError, next, it, match="earlier pass") is not None,
      "the first iterator after a newer iter(): UsageError")
check(keys(it2) == REF[0], "the newer one has the whole epoch")
l.close()

# ---- set_epoch as a DistributedSampler's
l = baton.Loader(FM, batch=B, seed=4)
l.set_epoch(2)
check(keys(l) == REF[2], "set_epoch(2) on a fresh Loader: epoch 2 whole")
l.set_epoch(1)
check(keys(l) == REF[1], "set_epoch(1) after it: epoch 1 whole")
check(raises(baton.UsageError, l.set_epoch, -1, match="set_epoch") is not None, "set_epoch(-1): UsageError")
l.close()

# ---- exact resume: a state taken mid-epoch in a pass after a peek, loaded, then the usual loop
l = baton.Loader(FM, batch=B, seed=4)
next(iter(l))   # a peek
for i, b in enumerate(l):
    if i == 3:
        break
st = l.state_dict()
check(st["epoch"] == 0 and st["position"] == 4 * B, "the state after the peek and 4 batches: position 4000 (%s)" % st)
l.close()
r = baton.Loader(FM, batch=B, seed=4)
r.load_state_dict(st)
rest = []
for e in range(r.epoch, 3):
    r.set_epoch(e)   # keeps the loaded cursor in its own epoch
    rest += keys(r)
check(rest == REF[0][4:] + REF[1] + REF[2], "loaded, then for e in range(epoch, 3): set_epoch(e); for ...: "
      "the rest of epoch 0 and epochs 1, 2 (%d batches)" % len(rest))
r.load_state_dict(st)
next(iter(r))   # a peek after load_state_dict: the next pass starts at the loaded cursor again
check(keys(r) == REF[0][4:], "a peek right after load_state_dict(): the pass starts at the loaded cursor again")
r.close()

# ---- epochs=N still ends there
with baton.Loader(FM, batch=B, seed=4, epochs=2) as l:
    n = [len(keys(l)) for _ in range(3)]
check(n == [10, 10, 0], "epochs=2: passes of %s" % n)
done()
