#!/usr/bin/python3
"""variants.py — examples/pytorch/train.py with one classic resume bug each, for `baton verify-resume`
to catch (bench/verify_resume.sh, tests/cli/test_verify_resume.sh). Each variant is the example
itself changed by a few exact text replacements; a replacement that no longer finds its text the
expected number of times fails loudly (exit 1, naming the variant and the text), so the variants
follow the example as it changes and never silently test something else.

  optimizer   the optimizer's state not saved: the checkpoint holds the weights (and the generators)
              and the model alone is loaded; momentum starts from zero after a resume
  loader      the loader's state read one batch late: a loop that fetches its next batch before the
              step it is on (a prefetching iterator) saves a cursor already past that batch
  rng         the random generators not saved, with dropout on: the checkpoint is written by hand
              from baton.torch.flatten(..., rng=False)
  scheduler   (the hidden one) the learning rate from torch's CosineAnnealingLR, whose state is not
              saved: its step count starts again at 0 after a resume

What each is caught as, for a process that resumed from step R > 0 (`expect`): the loader's at R + 1
by its samples; the generators' at R + 1 by the loss (the same samples, another dropout mask); the
optimizer's changes the update of step R + 1, so the weights differ at a checkpoint at R + 1 (when
the uninterrupted run committed one there), or else the loss at R + 2; the scheduler's one step
later (the optimizer's saved param groups hold step R's learning rate; the scheduler's first step
after the resume sets another).

  variants.py OUTDIR [--example PATH]   writes OUTDIR/train_NAME.py for each; prints one JSON object
                                        {NAME: {"path", "bug", "hidden"}}
  variants.py REPORT.json --expect NAME [--every N]   "cause@step": where the report must say it is
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "pytorch", "train.py")

SAVE = 'baton.torch.save(ckpt, step, model, opt, {"loader": loader.state_dict()})'
LOOP = "        for batch in data:   #"
MAIN = "\ndef main(argv=None):\n"

# name: (what, hidden, [(old, new, times)])
VARIANTS = {
    "optimizer": ("the optimizer's state not saved", False, [
        (SAVE, SAVE.replace("model, opt,", "model, None,"), 2),
        ("baton.torch.load(ckpt, model, opt) if ckpt", "baton.torch.load(ckpt, model) if ckpt", 1),
    ]),
    "loader": ("the loader's state read one batch late (after the next batch was fetched)", False, [
        (LOOP, "        for batch in prefetch(data):   #", 1),
        (MAIN, '''
def prefetch(batches):
    """The next batch fetched while this one trains."""
    it = iter(batches)
    nxt = next(it, None)
    while nxt is not None:
        cur, nxt = nxt, next(it, None)
        yield cur

''' + MAIN, 1),
    ]),
    "rng": ("the random generators not saved (dropout on)", False, [
        (SAVE, SAVE.replace("baton.torch.save(", "save_by_hand("), 2),
        (MAIN, '''
def save_by_hand(ckpt, step, model, opt, state):
    """The weights and the optimizer's state; not the random generators."""
    tensors, optim, meta = baton.torch.flatten(model, opt, rng=False)
    ckpt.save(step, tensors, dict(state, optimizer=meta), optim=optim)

''' + MAIN, 1),
    ]),
    "scheduler": ("the learning-rate scheduler's state not saved", True, [
        ("nesterov=True, weight_decay=5e-4)\n",
         "nesterov=True, weight_decay=5e-4)\n"
         "    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, a.epochs * len(loader))\n", 1),
        ('            for g in opt.param_groups:   # cosine schedule: a function of the step alone\n'
         '                g["lr"] = 0.5 * a.lr * (1 + math.cos(math.pi * step / total))\n', "", 1),
        ("loss.backward(), opt.step()\n", "loss.backward(), opt.step(), sched.step()\n", 1),
    ]),
}


def derive(text, name):
    """The example's text with variant name's replacements; ValueError naming the one that failed."""
    for old, new, times in VARIANTS[name][2]:
        n = text.count(old)
        if n != times:
            raise ValueError("variant %r: %r found %d times in the example, expected %d: the example changed, "
                             "update bench/verify_resume/variants.py" % (name, old.strip()[:80], n, times))
        text = text.replace(old, new)
    return text


def expect(name, report, every):
    """"cause@step": where verify-resume must find variant name's bug, from its --json report (the
    steps each process resumed from) and the example's --every N (the uninterrupted run commits at
    every N-th step and at its last); "identical@0" when no process resumed from a step > 0."""
    steps, best = report["steps"], None
    order = ["samples", "loss", "weights", "optimizer"]   # verify-resume's order at one step
    for run in report["runs"][1:]:
        r = run["resumed_from"]
        if r <= 0 or r >= steps:
            continue
        if name == "loader":
            c = (r + 1, "samples")
        elif name == "rng":
            c = (r + 1, "loss")
        else:   # the first update that differs: R + 1's (momentum), R + 2's (the learning rate: the
            u = r + (1 if name == "optimizer" else 2)   # optimizer's param groups keep step R's)
            c = (u, "weights") if u % every == 0 or u == steps else (u + 1, "loss")
        if best is None or (c[0], order.index(c[1])) < (best[0], order.index(best[1])):
            best = c
    return "identical@0" if best is None else "%s@%d" % (best[1], best[0])


def main():
    ap = argparse.ArgumentParser(description="examples/pytorch/train.py with one resume bug each")
    ap.add_argument("out", help="the folder for the variants (with --expect: verify-resume's --json report)")
    ap.add_argument("--example", default=EXAMPLE)
    ap.add_argument("--expect", metavar="NAME", help="print where the report must find variant NAME's bug")
    ap.add_argument("--every", type=int, default=5, help="with --expect: the run's checkpoint interval")
    a = ap.parse_args()
    if a.expect:
        print(expect(a.expect, json.load(open(a.out)), a.every))
        return 0
    text = open(a.example).read()
    os.makedirs(a.out, exist_ok=True)
    made = {}
    for name, (what, hidden, _) in VARIANTS.items():
        try:
            derived = derive(text, name)
        except ValueError as e:
            print("variants.py: %s" % e, file=sys.stderr)
            return 1
        path = os.path.join(a.out, "train_%s.py" % name)
        with open(path, "w") as f:
            f.write(derived)
        made[name] = {"path": path, "bug": what, "hidden": hidden}
    print(json.dumps(made))
    return 0


if __name__ == "__main__":
    sys.exit(main())
