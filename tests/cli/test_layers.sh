#!/usr/bin/env bash
# test_layers.sh — `make check-layers` (scripts/check-layers.sh): the tree as it is passes; a copy
# with an include that runs up README's component table fails, naming the file, the line and the
# arrow; so does a private header of another component, and a folder the table does not list.
# plain build only (it runs scripts/check-layers.sh on copies of the tree: no program of either build)
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
check "bash '$top/scripts/check-layers.sh' '$top' >'$T/out' 2>&1" "the tree passes: $(head -c 600 "$T/out" 2>/dev/null)"
check "make -s -C '$top' check-layers >/dev/null 2>&1" "make check-layers passes"

copy() { rm -rf "$T/r"; mkdir -p "$T/r"; cp -r "$top/src" "$top/include" "$top/README.md" "$T/r/"; }

copy   # util (the lowest layer) including train's header
printf '#include "baton/train.h"\n' >>"$T/r/src/util/log.c"
n=$(wc -l <"$T/r/src/util/log.c")
bash "$top/scripts/check-layers.sh" "$T/r" >"$T/out" 2>&1
check "[ $? -eq 1 ]" "an upward include fails"
check "grep -q 'src/util/log.c:$n: util includes baton/train.h (train)' '$T/out'" "the message names file, line and arrow: $(head -c 600 "$T/out")"

copy   # a public header including one above it
sed -i 's|#include "baton/util.h"|#include "baton/fleet.h"|' "$T/r/include/baton/notice.h"
bash "$top/scripts/check-layers.sh" "$T/r" >"$T/out" 2>&1
check "[ $? -eq 1 ] && grep -q 'include/baton/notice.h:.*notice includes baton/fleet.h' '$T/out'" "a header's upward include fails: $(head -c 600 "$T/out")"

copy   # train reaching into fleet's private header
printf '#include "../fleet/fleet_internal.h"\n' >>"$T/r/src/train/state.c"
bash "$top/scripts/check-layers.sh" "$T/r" >"$T/out" 2>&1
check "[ $? -eq 1 ] && grep -q 'src/train/state.c:.*private header of fleet' '$T/out'" "a private header of another component fails: $(head -c 600 "$T/out")"

copy   # the table decides: allowing the arrow in README makes the same include pass
printf '#include "baton/train.h"\n' >>"$T/r/src/util/log.c"
sed -i 's/^| `util` | \(.*\) | — |$/| `util` | \1 | `train` |/' "$T/r/README.md"
check "bash '$top/scripts/check-layers.sh' '$T/r' >'$T/out' 2>&1" "an arrow the table allows passes: $(head -c 600 "$T/out")"

copy   # a component folder missing from the table
mkdir -p "$T/r/src/extra" && printf 'int x;\n' >"$T/r/src/extra/x.c"
bash "$top/scripts/check-layers.sh" "$T/r" >"$T/out" 2>&1
check "[ $? -eq 1 ] && grep -q 'src/extra/: a component that README' '$T/out'" "an unlisted component fails: $(head -c 600 "$T/out")"
finish
