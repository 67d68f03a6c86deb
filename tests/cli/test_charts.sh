#!/usr/bin/env bash
# test_charts.sh — the SVG charts a person reads, rendered by librsvg (rsvg-convert) and measured
# (tests/tools/svg_labels.py): no label outside the canvas, no two labels overlapping. The fleet
# timeline with long row labels and a legend that must wrap; bench-io's chart over whole epochs
# (ticks at whole epochs only, the axis ending at the last epoch, not past it).
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
finish
