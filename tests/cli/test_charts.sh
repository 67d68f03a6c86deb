#!/usr/bin/env bash
# test_charts.sh — the SVG charts a person reads, rendered by librsvg (rsvg-convert) and measured
# (tests/tools/svg_labels.py): no label outside the canvas, no two labels overlapping. The fleet
# timeline with long row labels and a legend that must wrap; bench-io's chart over whole epochs
# (ticks at whole epochs only, the axis ending at the last epoch, not past it); plan infer's Pareto
# chart from a measurement projected over the catalog, from the seed's latencies, and from a
# crowded front where every point is on it (labels only on the front, markers per source).
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export BATON_LOG=warn
FAKE="sh $PWD/tests/cli/fake_trainer.sh"
labels() { python3 tests/tools/svg_labels.py "$@" >&2; }   # its problems go to the log
ABS=$(cd "$(dirname "$BATON")" && pwd)/$(basename "$BATON")

# the fleet timeline: two long-named types in two zones, interruptions moving the task around
cat >"$T/tl.yaml" <<YAML
name: timeline
command: $FAKE 120 20
instance_types:
  - {name: an-instance-type-with-a-very-long-name.4xlarge, on_demand_price: 0.5, spot_price: 0.1}
  - {name: c5.xlarge}
zones: [us-east-1a, eu-central-1b-long-zone-name]
market:
  time_scale: 60
  launch_delay: 20s
  notice: 30s
  interruptions:
    - {after: 30s}
    - {after: 30s, notice: 0}
    - {after: 30s}
YAML
check '"$BATON" fleet run "$T/tl.yaml" --state "$T/st" --quiet --svg "$T/tl.svg" >/dev/null 2>"$T/tl.err"' "fleet run: $(tail -2 "$T/tl.err" 2>/dev/null)"
check '[ "$(grep -c "<rect x=\"[0-9.]*\" y=\"[0-9.]*\" width=\"[0-9.]*\" height=\"16" "$T/tl.svg")" -ge 4 ]' "the timeline has its rows"
check 'grep -q "i-[0-9a-f]* t0 an-instance-type-with-a-very-long-name.4xlarge" "$T/tl.svg"' "row labels carry the whole instance id"
check 'labels "$T/tl.svg"' "timeline labels inside the canvas, none overlapping"

# bench-io over two epochs, in its own folder (it leaves nothing behind there)
check '"$BATON" pack --from fashion-mnist --split test --out "$T/fm" --shard-mb 4 --quiet >/dev/null' "pack"
mkdir -p "$T/b"
check '(cd "$T/b" && "$ABS" bench-io --data "$T/fm" --mode all --epochs 2 --svg "$T/bio.svg" >/dev/null 2>"$T/bio.err")' \
    "bench-io: $(tail -2 "$T/bio.err" 2>/dev/null)"
check '[ -z "$(ls -A "$T/b")" ]' "bench-io removed its dataset copies: $(ls -A "$T/b")"
expect_fail 2 "^baton bench-io: --epochs must be 1..64$" "$BATON" bench-io --data "$T/fm" --epochs 0
check 'labels "$T/bio.svg"' "bench-io labels inside the canvas, none overlapping"
# the x ticks: whole epochs 0, 1, 2 and nothing past the data
check '[ "$(python3 - "$T/bio.svg" <<'"'"'PY'"'"'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
H = float(root.get("height"))
# x tick labels: centred text in the band below the plot (the axis title is below them)
ticks = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")
         if t.get("text-anchor") == "middle" and t.get("transform") is None and H - 60 < float(t.get("y")) < H - 20]
print(" ".join(ticks))
PY
)" = "0 1 2" ]' "bench-io x ticks at whole epochs, ending at the last"
# plan infer's Pareto chart: a measurement (two contexts) projected over the catalog
cat >"$T/m.json" <<'JSON'
{"model":"lenet","threads":1,"batch":1,"path":"fast","mean_ms":0.3853,"p50_ms":0.3307,"p90_ms":0.4746,"per_s":2595.0,"flops":23984896,"peak_gflops":161.2,"min_bytes":4802704}
{"model":"lenet","threads":1,"batch":8,"path":"fast","mean_ms":1.9096,"p50_ms":1.9327,"p90_ms":2.3101,"per_s":4189.1,"flops":23984896,"peak_gflops":159.7,"min_bytes":4824936}
JSON
check '"$BATON" plan infer --measured "$T/m.json" --here c5.large --slo-p90-ms 1 --svg "$T/pm.svg" >"$T/pm.txt"' "plan infer --measured --svg"
check 'labels "$T/pm.svg"' "plan infer chart (projected): labels inside the canvas, none overlapping"
check 'grep -q "<polygon" "$T/pm.svg" && grep -q "<circle" "$T/pm.svg" && grep -q "(pick)" "$T/pm.svg"' "measured and projected points drawn differently, the pick named"
# only the front is labelled: fewer labels than points
check '[ "$(grep -c "font-size=\"10\"" "$T/pm.svg")" -lt "$(grep -c "<polygon" "$T/pm.svg")" ]' "labels on the Pareto front only"
check '! grep -q "eia1" "$T/pm.svg"' "no retired configuration on the chart by default"
check '"$BATON" plan infer --latencies docs/seed-latencies.csv --slo-p90-ms 50 --include-retired --svg "$T/ps.svg" >/dev/null' "plan infer --latencies --svg"
check 'labels "$T/ps.svg" && grep -q "eia1" "$T/ps.svg"' "plan infer chart (the seed's, retired included on request): labels readable"
# a crowded front: 14 configurations, each 6 % dearer and 6 % faster than the last
python3 - "$T/crowd.csv" <<'PY'
import sys
types = ["c5.large", "c7i.large", "c5.xlarge", "c6i.xlarge", "c5a.xlarge", "m5.large", "c7g.xlarge", "c7i.xlarge",
         "m7i.xlarge", "m5.xlarge", "r5.xlarge", "c5.2xlarge", "g4dn.xlarge", "g6.xlarge"]
with open(sys.argv[1], "w") as f:
    f.write("configuration,mean_ms,price_per_h,label\n")
    for i, t in enumerate(types):
        f.write("%s,%.4f,%.5f,crowd\n" % (t, 40 * 0.94 ** i, 0.1 * 1.06 ** i / 0.94 ** i))
PY
check '"$BATON" plan infer --latencies "$T/crowd.csv" --svg "$T/pc.svg" >/dev/null' "plan infer: a crowded front"
check 'labels "$T/pc.svg"' "crowded Pareto front: labels inside the canvas, none overlapping"
finish
