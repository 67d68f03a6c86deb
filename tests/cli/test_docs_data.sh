#!/usr/bin/env bash
# test_docs_data.sh — docs/data.md's walk-through (dataset.json) run as written, its commands read
# from the document, in an empty folder with the baton under test first on PATH: `pack` and
# `inspect --verify` succeed, and dataset.json is the one the document shows, field by field
# (the class names it elides aside); packing again says it replaces the dataset, in the words the
# document quotes, and writes the same bytes.
# plain build only (what the document promises, not memory safety: test_pack_inspect.sh covers that)
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
DOC=docs/data.md
doc_setup
doc_walk "$DOC" pack
check 'doc_ran 1' "$(doc_why 1)"
check 'grep -q "^verify     ok: every record, index entry, size and checksum checked" "$D/01.out"' \
    "inspect --verify ends as the document says: $(tail -n1 "$D/01.out")"
check 'python3 - "$D/02.json" "$W/fmnist/dataset.json" <<'"'"'PY'"'"'
import json, sys
shown = json.loads(open(sys.argv[1]).read().replace("…", "\"…\""))
got = json.load(open(sys.argv[2]))
assert shown["class_names"] == ["T-shirt/top", "…"] and got["class_names"][0] == "T-shirt/top", got["class_names"]
del shown["class_names"], got["class_names"]
for a, b in zip(shown["shards"], got["shards"]):   # the piece CRCs elided: 8 hex digits a piece
    pieces = -(-b["bytes"] // b["piece_bytes"])
    assert a["piece_crc32c"] == "…" and len(b["piece_crc32c"]) == 8 * pieces, (a, pieces)
    int(b["piece_crc32c"], 16)
    del a["piece_crc32c"], b["piece_crc32c"]
assert shown == got, (shown, got)
PY' "fmnist/dataset.json is the one docs/data.md shows"
# "Packing": a second pack replaces the dataset and says so; the same inputs give the same bytes
cp "$W/fmnist/dataset.json" "$T/first.json"
sh1=$(sed -n 's/^baton pack --from fashion-mnist --out \(.*\)$/\1/p' "$D/01.sh")
check '[ "$sh1" = fmnist ]' "the walk-through packs into fmnist: $sh1"
(cd "$W" && baton pack --from fashion-mnist --out fmnist >/dev/null 2>"$T/again.err")
quoted=$(grep -o '(`replacing the dataset in DIR ([^`]*)`)' "$DOC" | sed 's/^(`//; s/`)$//; s/ DIR / fmnist /')
check '[ -n "$quoted" ] && grep -qF "$quoted" "$T/again.err"' "a second pack says '$quoted': $(cat "$T/again.err")"
check 'cmp -s "$T/first.json" "$W/fmnist/dataset.json"' "packing again gives the same dataset.json"
finish
