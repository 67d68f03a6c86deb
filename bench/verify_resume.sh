#!/usr/bin/env bash
# verify_resume.sh — `baton verify-resume` on the shipped cases: the two correct ones (the PyTorch
# example examples/pytorch/train.py with dropout on, also through torch's DataLoader(loader,
# batch_size=None) with --dataloader, and `baton train`; `baton race train` too)
# each interrupted 5 times by every kind (SIGTERM, SIGKILL, a spot notice through the local metadata
# emulator, SIGINT: 20 interruptions at seeded random steps) must be "identical"; the example with
# one classic bug each (bench/verify_resume/variants.py: the optimizer's state not saved, the
# loader's state read one batch late, the random generators not saved; and a hidden fourth, the
# learning-rate scheduler's state not saved), interrupted once by every kind, must be caught at the
# first differing step with the right cause (variants.py --expect). Each case's time against the
# budget: the check at most 2.5× the uninterrupted run plus the restarts (each stop's way out, each
# rerun's start-up). A table, or one JSON object with --json. Not part of `make test` (minutes).
#   bench/verify_resume.sh [--json]    (BATON=path/to/baton; N=5 per kind; SEED=1; STEPS=100 for the
#                                       example, TRAIN_STEPS=200 for baton train, EPISODES=1600 for race
#                                       train (80 iterations); CASES="example dataloader train race
#                                       optimizer loader rng scheduler")
# Steps enough that the interruptions rarely pile up at the end: a notice is seen up to 0.1 s late
# (the watcher's poll), a few of baton train's 33 ms steps, and an interruption drawn at a step an
# earlier one's lateness already passed is delivered after the rerun's first step — at the last
# step that run has finished ("finished first"), which this bench counts as a miss.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BATON=$(realpath "${BATON:-build/baton}")
BUILD=$(dirname "$BATON")
JSON=0
[ "${1:-}" = --json ] && JSON=1
N=${N:-5} STEPS=${STEPS:-100} TRAIN_STEPS=${TRAIN_STEPS:-200} EPISODES=${EPISODES:-1600} SEED=${SEED:-1}
CASES=${CASES:-example dataloader train race optimizer loader rng scheduler}
W=$(mktemp -d /tmp/baton-bench-verify-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
export BATON_NO_PROGRESS=1 BATON_LOG=warn BATON_DMI_DIR=/nonexistent/dmi
unset AWS_EC2_METADATA_SERVICE_ENDPOINT BATON_GCE_METADATA_ENDPOINT GCE_METADATA_HOST
export PYTHONPATH=$BUILD/python OMP_NUM_THREADS=1
say() { [ $JSON = 1 ] || echo "$@" >&2; }

torch_ok=1
if ! /usr/bin/python3 -c "import torch, baton" 2>/dev/null; then
    say "no PyTorch (or no baton module in $BUILD/python) for /usr/bin/python3: the example's cases are left out"
    torch_ok=0
fi
"$BATON" pack --from fashion-mnist --split test --out "$W/fm" --quiet >/dev/null
python3 bench/verify_resume/variants.py "$W/var" >/dev/null || exit 1

# the example: one thread for torch and one for the loader (steadier on a shared machine), dropout on,
# a checkpoint every 5 steps
EVERY=5
example() {   # example SCRIPT CKPT
    echo /usr/bin/python3 "$1" --data "$W/fm" --ckpt "$2" --epochs 1 --batch 64 --deterministic --threads 1 \
        --loader-threads 1 --max-steps "$STEPS" --every $EVERY --dropout 0.2 --log-s 0
}

# case NAME INTERRUPTIONS COMMAND...: verify-resume's report in $W/NAME.json
run_case() {
    local name=$1 n=$2
    shift 2
    say "$name: $n interruptions ..."
    "$BATON" verify-resume --quiet --json --interruptions "$n" --kinds term,kill,notice,int --seed "$SEED" \
        --ckpt-dir "$W/$name.ck" --work "$W/$name.work" -- "$@" >"$W/$name.json" 2>"$W/$name.err"
    echo $? >"$W/$name.rc"
}

for c in $CASES; do
    case $c in
    example) [ $torch_ok = 1 ] && run_case example $((4 * N)) $(example examples/pytorch/train.py "$W/example.ck") ;;
    dataloader) [ $torch_ok = 1 ] && run_case dataloader $((4 * N)) $(example examples/pytorch/train.py "$W/dataloader.ck") \
                    --dataloader ;;
    train) run_case train $((4 * N)) "$BATON" train --data "$W/fm" --model resnet8 --threads 1 --batch 64 --epochs 2 --max-steps "$TRAIN_STEPS" \
               --ckpt-every-steps $EVERY --ckpt-dir "$W/train.ck" --quiet ;;
    race) run_case race $((4 * N)) "$BATON" race train --track oval --obs sensor --episodes "$EPISODES" --seed 4 --threads 1 \
              --ckpt-every-steps 1 --ckpt-dir "$W/race.ck" --quiet ;;
    optimizer|loader|rng|scheduler)
        [ $torch_ok = 1 ] && run_case "$c" 4 $(example "$W/var/train_$c.py" "$W/$c.ck") ;;
    *) echo "verify_resume.sh: unknown case $c" >&2; exit 2 ;;
    esac
done

python3 - "$W" "$JSON" "$EVERY" "$CASES" <<'EOF'
import json, os, sys
sys.path.insert(0, "bench/verify_resume")
import variants
w, as_json, every, cases = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), sys.argv[4].split()
rows, ok_all = [], True
for c in cases:
    p = os.path.join(w, c + ".json")
    if not os.path.exists(p):
        continue
    rc = int(open(os.path.join(w, c + ".rc")).read())
    try:
        d = json.load(open(p))
    except ValueError:
        err = open(os.path.join(w, c + ".err")).read()[-400:]
        rows.append({"case": c, "ok": False, "error": "exit %d: %s" % (rc, err)})
        ok_all = False
        continue
    got = "%s@%d" % (d["cause"], d.get("step", 0))
    buggy = c in variants.VARIANTS
    want = variants.expect(c, d, every) if buggy else "identical@0"
    stopped = {}
    for i in d["interruptions"]:
        if i["outcome"] == "stopped":
            stopped[i["kind"]] = stopped.get(i["kind"], 0) + 1
    kinds = ",".join("%s:%d" % (k, stopped.get(k, 0)) for k in ("term", "kill", "notice", "int"))
    s = d["seconds"]
    # ok: the verdict expected; for a correct case also every interruption stopped it
    ok = got == want and want != "identical@0" if buggy else got == want and sum(stopped.values()) == len(d["interruptions"])
    ok_all &= ok
    rows.append({"case": c, "bug": variants.VARIANTS[c][0] if buggy else None,
                 "hidden": variants.VARIANTS[c][1] if buggy else False, "steps": d["steps"],
                 "interruptions": len(d["interruptions"]), "stopped": stopped, "verdict": got, "expected": want,
                 "what": d.get("what"), "ok": ok, "processes": len(d["runs"]) - 1,
                 "seconds": {k: round(s[k], 2) for k in ("uninterrupted", "interrupted", "total", "restarts", "budget")},
                 "of_budget": round(s["total"] / s["budget"], 3) if s["budget"] else None,
                 "less_restarts_x": round((s["total"] - s["restarts"]) / s["uninterrupted"], 2) if s["uninterrupted"] else None,
                 "within_budget": s["within_budget"], "kinds": kinds})
within = sum(1 for r in rows if r.get("within_budget"))
if as_json:
    print(json.dumps({"cases": rows, "ok": ok_all, "within_budget": within, "budget": 2.5}))
else:
    print("%-13s %-6s %-28s %-15s %-15s %-3s %5s %6s %6s %6s %6s %6s %5s" % (
        "case", "steps", "stopped by kind", "verdict", "expected", "ok", "procs", "ref s", "check", "restart",
        "budget", "(c-r)/u", "of b."))
    for r in rows:
        if "error" in r:
            print("%-13s error: %s" % (r["case"], r["error"]))
            continue
        s = r["seconds"]
        print("%-13s %-6d %-28s %-15s %-15s %-3s %5d %6.2f %6.2f %6.2f %6.2f %6.2f %4.0f%%" % (
            r["case"] + (" (h)" if r["hidden"] else ""), r["steps"], r["kinds"], r["verdict"], r["expected"],
            "yes" if r["ok"] else "NO", r["processes"], s["uninterrupted"], s["total"], s["restarts"], s["budget"],
            r["less_restarts_x"], 100 * r["of_budget"]))
    print("(c-r)/u: the check's time less the restarts over the uninterrupted run's (at most 2.5); of b.: "
          "the check's time over its budget, 2.5 × uninterrupted + restarts")
    print("as expected: %s; within the budget: %d of %d cases" % ("all" if ok_all else "NOT all", within, len(rows)))
    for r in rows:
        if r.get("bug"):
            print("%s: %s%s -> %s" % (r["case"], r["bug"], " (hidden)" if r["hidden"] else "", r["what"]))
sys.exit(0 if ok_all else 1)
EOF
