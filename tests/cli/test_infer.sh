#!/usr/bin/env bash
# test_infer.sh — `baton infer-bench` and `baton plan infer|train` end to end: checkpoints trained
# for a few steps on Fashion-MNIST; every context's JSON line and fields, the table (with the GPU
# row saying "no CUDA build"), the CSV file, plan infer from that measurement, from the seed's
# latencies and in-process, the Pareto SVG, plan train, and bad input (unknown or corrupted
# checkpoint, malformed catalog / latencies / measured files with their line numbers, usage).
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export OMP_NUM_THREADS=2
D=$T/fm

check '"$BATON" pack --from fashion-mnist --split test --out "$D" --shard-mb 1 --quiet >/dev/null' "pack"
check '"$BATON" train --data "$D" --model lenet --epochs 1 --batch 32 --max-steps 2 --quiet --ckpt-dir "$T/lenet" >/dev/null' "train lenet"
check '"$BATON" train --data "$D" --model resnet8 --epochs 1 --batch 32 --max-steps 2 --quiet --ckpt-dir "$T/r8" >/dev/null' "train resnet8"

# JSON: one line per context; the gpu context is skipped cleanly
check '"$BATON" infer-bench --ckpt "$T/lenet" --threads 1 --batch 1,2 --path reference,fast,gpu --runs 5 --json --peak >"$T/m.json"' "infer-bench --json"
check '[ "$(grep -c "^{" "$T/m.json")" -eq 6 ]' "6 JSON lines (2 reference, 2 fast, 2 gpu: one per batch size)"
for k in threads batch path cold_start_ms first_ms p50_ms p90_ms p99_ms mean_ms per_s peak_gflops; do
    check '[ "$(grep -c "\"$k\":" "$T/m.json")" -ge 4 ]' "JSON key $k"
done
check 'grep -q "\"path\":\"gpu\",\"skipped\":\"no CUDA build\"" "$T/m.json"' "gpu context skipped: no CUDA build"
check 'grep "\"path\":\"fast\"" "$T/m.json" | grep -q "\"batch\":2"' "fast path at batch 2"
check '! grep -q "\"queries\":[0-4]," "$T/m.json"' "at least --runs queries per context"
# cold start covers load + prepare, and is above their sum
check 'grep "\"path\":\"fast\"" "$T/m.json" | head -n1 | awk -F"[:,]" "{for(i=1;i<NF;i++){v[\$i]=\$(i+1)}} END{exit !(v[\"\\\"cold_start_ms\\\"\"]+0 > v[\"\\\"load_ms\\\"\"]+v[\"\\\"prepare_ms\\\"\"] && v[\"\\\"load_ms\\\"\"]+0 > 0)}"' "cold start >= load + prepare"

# the table and the CSV
check '"$BATON" infer-bench --ckpt "$T/r8" --threads 1 --path fast,gpu --runs 3 --csv "$T/r.csv" >"$T/table"' "infer-bench table + csv"
check 'grep -q "no CUDA build" "$T/table" && grep -q "^resnet8 *fast" "$T/table" && grep -q "^cold start = process spawn" "$T/table"' "table rows"
check 'head -n1 "$T/r.csv" | grep -q "^model,threads,batch,path,skipped,cold_start_ms" && [ "$(wc -l <"$T/r.csv")" -eq 3 ]' "CSV header + 2 rows"
check '"$BATON" infer-bench --ckpt "$T/r8/ckpt-000000002" --threads 1 --path fast --seconds 0.05 --json | grep -q "\"model\":\"resnet8\""' "one checkpoint folder, --seconds"

# --precision f32,bf16: the fast path both ways side by side (bf16 where oneDNN has it, else refused)
if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
    check '"$BATON" infer-bench --ckpt "$T/r8" --threads 1 --batch 4 --path fast --precision f32,bf16 --runs 3 --json >"$T/bf.json" &&
           grep -c "\"path\":\"fast\"" "$T/bf.json" | grep -qx 1 && grep -c "\"path\":\"fast-bf16\"" "$T/bf.json" | grep -qx 1' \
        "infer-bench --precision f32,bf16: $(cat "$T/bf.json" 2>/dev/null)"
    expect_fail 1 "fast path in bf16: .*ONEDNN_MAX_CPU_ISA" env ONEDNN_MAX_CPU_ISA=AVX512_CORE $BATON infer-bench --ckpt "$T/r8" --threads 1 --path fast --precision bf16 --runs 1
else
    expect_fail 1 "AVX512-BF16 or AMX" $BATON infer-bench --ckpt "$T/r8" --threads 1 --path fast --precision bf16 --runs 1
fi
expect_fail 2 "--precision 'fp8'" $BATON infer-bench --ckpt "$T/r8" --path fast --precision fp8

# plan infer from the measurement: priced as --here, projected elsewhere (labelled), a pick, the chart
check '"$BATON" plan infer --measured "$T/m.json" --slo-p90-ms 1000 --here c5.large --svg "$T/p.svg" >"$T/plan"' "plan infer --measured"
check 'grep -q "^c5.large .*measured" "$T/plan" && grep -q "projected" "$T/plan" && grep -q "^pick: " "$T/plan"' "plan rows and pick"
check '! grep -q "^c5.large .*projected" "$T/plan"' "the --here type is measured, not projected"
check 'grep -q "<svg" "$T/p.svg" && grep -q "Pareto front" "$T/p.svg"' "Pareto SVG"
check '"$BATON" plan infer --measured "$T/m.json" --slo-p90-ms 1000 --json | grep -q "\"source\":\"projected\""' "plan infer --json"
# readable: one row per configuration (--all: every context), the pick first, then by cost per 100k
check '[ "$(grep -c "^[a-z0-9.+]* *\(measured\|projected\) " "$T/plan")" -lt "$("$BATON" plan infer --measured "$T/m.json" --slo-p90-ms 1000 --here c5.large --all | grep -c "^[a-z0-9.+]* *\(measured\|projected\) ")" ]' \
    "--all shows every context, the default one row per configuration"
check '[ -z "$(awk "NR > 1 && /^[a-z]/ && !/^(not projected|projected|pick)/ {print \$1}" "$T/plan" | sort | uniq -d)" ]' "no configuration twice: $(awk 'NR > 1 {print $1}' "$T/plan" | sort | uniq -d | head -3)"
check 'sed -n 2p "$T/plan" | grep -q "<- pick"' "the pick is the first row"
check 'grep -Eq "^the pick rests on (a measurement on this machine|a projection: .*a lower bound)" "$T/plan"' "the output says what the pick rests on"
check 'grep -q "^not projected: c7g.xlarge .*Arm" "$T/plan" && grep -q "^not projected: .*inf2.xlarge .*Neuron" "$T/plan"' "Graviton and Inferentia: not projected, and why"
"$BATON" plan infer --measured "$T/m.json" --slo-p90-ms 1000 --here c5.large --json >"$T/plan.json"
check 'python3 - "$T/plan.json" <<"PY"
import json, sys
doc = json.load(open(sys.argv[1]))
rows, pick = doc["rows"], doc["pick"]
shown = [r for r in rows if r.get("source") in ("measured", "projected")]
assert pick["configuration"] == shown[0]["configuration"], (pick, shown[0])
costs = [r["cost_thr_100k"] for r in shown[1:] if r["cost_thr_100k"] >= 0]
assert costs == sorted(costs), costs
for r in shown:
    if r["source"] == "projected":
        assert r["p90_ms"] >= r["floor_ms"] and r["mean_ms"] >= r["floor_ms"] and r["basis"], r
        if r["configuration"].startswith(("p3.", "g4dn.", "g5.", "g6.", "p4d.", "p5.")):
            assert r["floor_ms"] > 0 and r["call_ms"] >= 0.02, r
            assert r["p90_ms"] >= r["floor_ms"] + r["call_ms"] and "a call" in r["basis"], r
assert doc["pick"]["rests_on"], doc["pick"]
assert not any(r["configuration"] == pick["configuration"] and r.get("at_floor") for r in shown), pick
assert any(r.get("source") == "not projected" and r["configuration"] == "inf2.xlarge" for r in rows)
PY' "plan infer --json: sorted, pick first, every projection at or above its memory floor"
check '"$BATON" plan infer --measured "$T/m.json" --slo-p90-ms 1000 --no-project | grep -q "^pick: none"' "unpriced measurement: no pick without --here"
# the seed's latencies: the seed's cost column, and the pick at 50 ms
check '"$BATON" plan infer --latencies docs/seed-latencies.csv --slo-p90-ms 50 >"$T/seed"' "plan infer --latencies"
check 'grep -q "^c5.4xlarge .*\$0.8426" "$T/seed" && grep -q "^c5.4xlarge+eia1.xlarge .*\$0.8306" "$T/seed" && grep -q "^c5.large+eia1.medium .*\$0.2340" "$T/seed"' "seed cost column"
# Elastic Inference is retired: never picked by default; --include-retired compares as the seed did
check 'grep -q "^pick: c5.4xlarge " "$T/seed" && grep -q "^c5.large+eia1.medium .*(retired)" "$T/seed"' "today's pick: $(grep pick "$T/seed")"
"$BATON" plan infer --latencies docs/seed-latencies.csv --slo-p90-ms 50 --include-retired >"$T/seed-all"
check 'grep -q "^pick: c5.large+eia1.medium" "$T/seed-all"' "seed pick"
check 'grep -q "^c5.4xlarge .*\$0.8426" "$T/seed-all" && grep -q "^c5.4xlarge+eia1.xlarge .*\$0.8306" "$T/seed-all" && grep -q "^c5.large+eia1.medium .*\$0.2340 .*<- pick" "$T/seed-all"' "the seed table, exactly, with --include-retired"
check '! "$BATON" plan infer --measured "$T/m.json" --here c5.large --slo-p90-ms 1000 | grep -q "eia1"' "no retired configuration projected onto by default"
# in-process measurement
check '"$BATON" plan infer --ckpt "$T/lenet" --threads 1 --runs 5 --seconds 0 --here c5.xlarge --slo-p90-ms 100 | grep -q "^pick: "' "plan infer --ckpt"
# plan train
check '"$BATON" plan train --samples-per-s 900 --dataset 60000 --epochs 5 --here c5.4xlarge >"$T/train"' "plan train"
check 'grep -q "^c5.4xlarge .*measured" "$T/train" && grep -q "^p3.2xlarge .*projected" "$T/train" && grep -q "Daly" "$T/train"' "plan train rows"
check '[ "$("$BATON" plan train --samples-per-s 900 --dataset 60000 --epochs 5 --here c5.4xlarge --json | grep -c "\"spot_cost\"")" -ge 4 ]' "plan train --json"
# costs with digits enough to compare (never all "$0.00"), an overhead above 100 % called not worth
# it, and a pick among the rest
check '! grep -Eq "[$]0[.]0[01]( |$)" "$T/train" && grep -q "^p5.48xlarge .*not worth it" "$T/train" && ! grep -q "^c5.4xlarge .*not worth it" "$T/train"' \
    "plan train: costs readable, overheads above 100 % not worth it: $(grep -E "^(p5.48|c5.4)" "$T/train")"
# the rate and the job's costs are told apart: spot $/h beside the checkpoint plan, each cost beside its time
check 'grep -Eq "^type +source +samples/s +spot [$]/h +ckpt every +overhead +od time +od cost +spot time +spot cost$" "$T/train"' \
    "plan train's header: $(sed -n 2p "$T/train")"
check 'grep -q "^pick: g4dn.xlarge on spot" "$T/train"' "plan train picks the cheapest type worth it: $(grep "^pick" "$T/train")"
# every --json is one JSON document
for cmd in "infer-bench --ckpt $T/lenet --threads 1 --path fast --runs 3 --seconds 0" \
           "plan infer --measured $T/m.json --slo-p90-ms 1000 --here c5.large" \
           "plan train --samples-per-s 900 --dataset 60000 --epochs 5 --here c5.4xlarge" \
           "fleet catalog" "fleet status --state $T/nojobs"; do
    mkdir -p "$T/nojobs"
    check '$BATON $cmd --json 2>/dev/null | python3 -m json.tool >/dev/null' "$cmd --json is one JSON document"
done
check '"$BATON" plan infer --measured "$T/m.json" --slo-p90-ms 1000 --here c5.large --json | python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"pick\"][\"configuration\"] and len(d[\"rows\"]) > 3, d"' \
    "plan infer --json: rows and pick"

# bad input
expect_fail 1 "no such folder" $BATON infer-bench --ckpt "$T/nope" --path fast --runs 1
mkdir -p "$T/empty"
expect_fail 1 "no verified ckpt" $BATON infer-bench --ckpt "$T/empty" --path fast --runs 1
cp -r "$T/lenet/ckpt-000000002" "$T/bad-ckpt-000000002" && mkdir -p "$T/bad" && mv "$T/bad-ckpt-000000002" "$T/bad/ckpt-000000002"
printf 'X' | dd of="$T/bad/ckpt-000000002/model.safetensors" bs=1 seek=5000 conv=notrunc 2>/dev/null
expect_fail 1 "model.safetensors" $BATON infer-bench --ckpt "$T/bad/ckpt-000000002" --path fast --runs 1
# a checkpoint of another model: resnet8's state.json over lenet's weights, the MANIFEST rewritten
# to match (so the folder verifies and the mismatch is the only fault)
mkdir -p "$T/mixed" && cp -r "$T/lenet/ckpt-000000002" "$T/mixed/" &&
    cp "$T/r8/ckpt-000000002/state.json" "$T/mixed/ckpt-000000002/state.json"
python3 - "$T/mixed/ckpt-000000002" <<'PY'
import os, sys
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
d = sys.argv[1]
lines = open(os.path.join(d, "MANIFEST")).read().splitlines()
st = open(os.path.join(d, "state.json"), "rb").read()
lines = [f"state.json {len(st)} {crc32c(st):08x}" if l.startswith("state.json ") else l for l in lines]
open(os.path.join(d, "MANIFEST"), "w").write("\n".join(lines) + "\n")
PY
check '"$BATON" ckpt verify "$T/mixed/ckpt-000000002" >/dev/null' "the mixed checkpoint verifies"
expect_fail 1 "another model" $BATON infer-bench --ckpt "$T/mixed/ckpt-000000002" --path fast --runs 1
expect_fail 1 "another model" $BATON plan infer --ckpt "$T/mixed" --threads 1 --runs 2 --seconds 0 --here c5.xlarge
expect_fail 2 "--threads '0'" $BATON infer-bench --ckpt "$T/lenet" --threads 0
expect_fail 2 "--path 'cuda'" $BATON infer-bench --ckpt "$T/lenet" --path cuda
expect_fail 2 "required" $BATON infer-bench --runs 3
printf 'name,kind,on_demand_per_h,spot_per_h,vcpus,memory_gib,fp32_tflops,notes\nx,cpu,1,,2,4,1,\ny,cpu,cheap,,2,4,1,\n' >"$T/cat.csv"
expect_fail 1 "cat.csv:3: on_demand_per_h: 'cheap'" $BATON plan infer --latencies docs/seed-latencies.csv --catalog "$T/cat.csv"
printf 'configuration,mean_ms\nc5.large,12\nc5.large,soon\n' >"$T/lat.csv"
expect_fail 1 "lat.csv:3: mean_ms: 'soon'" $BATON plan infer --latencies "$T/lat.csv"
printf 'configuration,mean_ms\nc5.large,12\nm9.giant,5\n' >"$T/lat2.csv"
expect_fail 1 "line 3: .*m9.giant" $BATON plan infer --latencies "$T/lat2.csv"
printf '{"threads":1,"batch":1,"path":"fast","mean_ms":1,"p50_ms":1,"p90_ms":1,"per_s":1}\n{"threads":1,"batch":1}\n' >"$T/bad.json"
expect_fail 1 "bad.json:2: \"path\"" $BATON plan infer --measured "$T/bad.json"
expect_fail 1 "--here.*c9" $BATON plan infer --measured "$T/m.json" --here c9.xlarge
expect_fail 2 "exactly one of" $BATON plan infer --measured "$T/m.json" --latencies docs/seed-latencies.csv
expect_fail 2 "required" $BATON plan train --dataset 10 --epochs 1
expect_fail 2 "infer\|train" $BATON plan deploy
finish
