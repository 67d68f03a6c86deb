#!/usr/bin/env bash
# alone: it installs the build (make install), which another test may be installing too
# test_install.sh — `make install` into a scratch prefix, then the installed copy used as a user
# would: the files and the symlink, the soname and the exported names (baton_* only), baton.pc,
# examples/c/stream.c compiled and linked against the installed headers and library alone (shared,
# with no flag beyond `pkg-config --cflags --libs baton`, which carries the rpath,
# and static through baton.pc's private requirements), its digests per input mode, its errors, the
# run-time version check, and the installed command.
# $BATON_BUILD is the build under test (build or build-san, or any folder made with BUILD=DIR).
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
B=${BATON_BUILD:-build}
P=$T/prefix
ROOT=$PWD
VER=$(sed -n 's/^#define BATON_VERSION "\(.*\)"/\1/p' include/baton/util.h)
ABI=$(sed -n 's/^#define BATON_ABI_VERSION \([0-9]*\).*/\1/p' include/baton/util.h)
SONAME=libbaton.so.$ABI   # libbaton.so.6

# the sanitizer build's library needs ASan's runtime first in the process: programs linked against
# it are compiled with the same -fsanitize flags (and `make install` is told SAN=1, so that a stale
# object would be rebuilt as it was built)
SAN=0 SANFLAGS=
if readelf -d "$B/$SONAME" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
    SAN=1 SANFLAGS="-fsanitize=address,undefined"
fi

# --- the files ---
# (nothing from a calling make or the environment: its flags, DESTDIR, LIBDIR, PREFIX)
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u DESTDIR -u LIBDIR -u PREFIX make -s BUILD="$B" SAN=$SAN "$@"; }
mk install PREFIX="$P" >"$T/out" 2>&1 || bad "make install: $(tail -5 "$T/out")"
for f in bin/baton "lib/$SONAME" lib/libbaton.a lib/pkgconfig/baton.pc; do
    check '[ -f "$P/$f" ] && [ ! -L "$P/$f" ]' "not installed: $f"
done
check '[ -x "$P/bin/baton" ]' "bin/baton is not executable"
check '[ -L "$P/lib/libbaton.so" ] && [ "$(readlink "$P/lib/libbaton.so")" = "$SONAME" ]' \
    "lib/libbaton.so is not a symlink to $SONAME: $(ls -l "$P/lib")"
for h in include/baton/*.h; do
    check 'cmp -s "$h" "$P/$h"' "header not installed (or different): $h"
done
check '[ "$(ls "$P/include/baton" | wc -l)" = "$(ls include/baton/*.h | wc -l)" ]' "extra files in include/baton"
# each public header stands alone under strict C11 (no _GNU_SOURCE, nothing included before it)
for h in "$P"/include/baton/*.h; do
    if echo "#include <baton/${h##*/}>" | cc -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -I"$P/include" -x c - 2>"$T/e"
    then ok; else bad "installed ${h##*/} does not compile on its own: $(head -3 "$T/e")"; fi
done

# a staged install (DESTDIR) into another LIBDIR: the files under the stage, baton.pc naming the real paths
mk install DESTDIR="$T/stage" PREFIX=/opt/baton LIBDIR=/opt/baton/lib64 >"$T/out" 2>&1 || bad "make install DESTDIR: $(tail -5 "$T/out")"
check '[ -f "$T/stage/opt/baton/lib64/$SONAME" ] && [ -L "$T/stage/opt/baton/lib64/libbaton.so" ] && [ -f "$T/stage/opt/baton/include/baton/util.h" ] && [ -x "$T/stage/opt/baton/bin/baton" ]' \
    "DESTDIR install: $(cd "$T/stage" 2>/dev/null && find . -maxdepth 3 | sort | paste -sd ' ')"
check 'grep -qx "prefix=/opt/baton" "$T/stage/opt/baton/lib64/pkgconfig/baton.pc" && grep -qx "libdir=/opt/baton/lib64" "$T/stage/opt/baton/lib64/pkgconfig/baton.pc"' \
    "staged baton.pc: $(head -4 "$T/stage/opt/baton/lib64/pkgconfig/baton.pc" 2>&1 | paste -sd ' ')"

# --- the shared library: soname, exports, dependencies ---
so=$P/lib/$SONAME
check 'readelf -d "$so" | grep -q "(SONAME) *Library soname: \[$SONAME\]"' "soname: $(readelf -d "$so" | grep SONAME)"
nm -D --defined-only "$so" | awk '{print $NF}' | sed 's/@.*//' | grep -vxE 'BATON_[0-9]+' >"$T/syms"   # not the version node
check '! grep -v "^baton_" "$T/syms"' "exported names outside baton_*: $(grep -v '^baton_' "$T/syms" | head -5 | paste -sd ' ')"
check '[ "$(wc -l <"$T/syms")" -ge 100 ]' "only $(wc -l <"$T/syms") exported names"
check 'grep -qx baton_version_check "$T/syms" && grep -qx baton_loader_open "$T/syms"' "API names missing from the exports"
check '! readelf -d "$so" | grep -q "NEEDED.*libpython"' "libbaton.so links libpython"

# --- baton.pc ---
export PKG_CONFIG_PATH=$P/lib/pkgconfig
check '[ "$(pkg-config --modversion baton)" = "$VER" ]' "pkg-config --modversion: '$(pkg-config --modversion baton 2>&1)' (util.h: $VER)"
PC=$(pkg-config --cflags --libs baton)
check '[[ " $PC " == *" -I$P/include "* && " $PC " == *" -L$P/lib "* && " $PC " == *" -lbaton "* ]]' "pkg-config --cflags --libs baton: $PC"
# the rpath of libdir, so that what pkg-config builds runs without LD_LIBRARY_PATH (stream.c below,
# built exactly as its comment says); none when libdir is the dynamic linker's own (/usr/lib)
check '[[ " $PC " == *" -Wl,-rpath,$P/lib "* ]]' "baton.pc's Libs carry no rpath of $P/lib: $PC"
mk install DESTDIR="$T/stage2" PREFIX=/usr >"$T/out" 2>&1 || bad "make install PREFIX=/usr: $(tail -5 "$T/out")"
check 'grep -qx "Libs: -L\${libdir} -lbaton" "$T/stage2/usr/lib/pkgconfig/baton.pc" && grep -q "^Libs: .*-rpath,\${libdir}" "$T/stage/opt/baton/lib64/pkgconfig/baton.pc"' \
    "rpath in baton.pc: $(grep -h ^Libs: "$T/stage2/usr/lib/pkgconfig/baton.pc" "$T/stage/opt/baton/lib64/pkgconfig/baton.pc" | paste -sd '|')"

# --- examples/c/stream.c against the installed copy only (no -Iinclude; $T is outside the tree) ---
S=$T/stream
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror $SANFLAGS "$ROOT/examples/c/stream.c" $PC -MD -MF "$T/stream.d" \
    -o "$S" 2>"$T/e" || bad "stream.c does not build against the installed copy: $(head -5 "$T/e")"
check 'grep -q "$P/include/baton/img.h" "$T/stream.d" && ! grep -q "$ROOT/include" "$T/stream.d"' \
    "stream.c's headers do not come from the prefix alone: $(grep -o '[^ ]*baton/[a-z_]*\.h' "$T/stream.d" | head -3 | paste -sd ' ')"
check 'ldd "$S" | grep -q "$SONAME => $P/lib/$SONAME "' "ldd: $(ldd "$S" 2>&1 | grep baton)"
check 'env -u LD_LIBRARY_PATH "$S" >/dev/null 2>&1; [ $? -eq 2 ]' "stream (built with pkg-config alone) does not start: $(env -u LD_LIBRARY_PATH "$S" 2>&1 | head -2)"

$BATON pack --from fashion-mnist --split test --out "$T/fm" --shard-mb 1 --quiet >/dev/null 2>"$T/e" || bad "pack: $(cat "$T/e")"
# the dataset's label total, from inspect's histogram (sum of k * count[k])
LABELS=$($BATON inspect "$T/fm" --json | python3 -c 'import json,sys; print(sum(k * c for k, c in enumerate(json.load(sys.stdin)["label_histogram"])))')
check '[ "$LABELS" -gt 0 ]' "label total from inspect: '$LABELS'"

mkdir -p "$T/o"
stream_run() {  # stream_run NAME ARGS...: the example's output in $T/o/NAME, its exit status in NAME.rc, epoch lines in NAME.ep
    local name=$1; shift
    "$S" "$@" >"$T/o/$name" 2>"$T/o/$name.err"
    echo $? >"$T/o/$name.rc"
    grep '^epoch ' "$T/o/$name" >"$T/o/$name.ep"
}
epochs_ok() {  # epochs_ok NAME: exit 0, two epochs of the whole test split, the labels all there
    local name=$1 e
    check '[ "$(cat "$T/o/$name.rc")" = 0 ]' "$name: exit $(cat "$T/o/$name.rc"): $(head -3 "$T/o/$name.err")"
    for e in 0 1; do
        check 'grep -Eqx "epoch $e: 10000 samples, 100 batches, label sum $LABELS, crc [0-9a-f]{8}" "$T/o/$name.ep"' \
            "$name: epoch $e: $(sed -n "$((e + 1))p" "$T/o/$name.ep") (want 10000 samples, 100 batches, label sum $LABELS)"
    done
    check '[ "$(wc -l <"$T/o/$name.ep")" = 2 ]' "$name: $(wc -l <"$T/o/$name.ep") epoch lines"
    check 'grep -Eqx "20000 samples in [0-9.]+ s: [0-9]+ samples/s, [1-9][0-9]* bytes fetched" "$T/o/$name"' \
        "$name: last line: $(tail -1 "$T/o/$name")"
}
crc() { sed -n "$(($2 + 1))s/.*crc //p" "$T/o/$1.ep"; }

stream_run mount "$T/fm" --batch 100 --epochs 2 --seed 3
epochs_ok mount
check '[ -n "$(crc mount 0)" ] && [ "$(crc mount 0)" != "$(crc mount 1)" ]' "epochs 0 and 1 have the same CRC: the order does not change per epoch"
stream_run mount2 "$T/fm" --batch 100 --epochs 2 --seed 3
check 'cmp -s "$T/o/mount.ep" "$T/o/mount2.ep"' "two runs differ: $(diff "$T/o/mount.ep" "$T/o/mount2.ep" | head -4)"
stream_run seed4 "$T/fm" --batch 100 --epochs 2 --seed 4
check '[ "$(crc seed4 0)" != "$(crc mount 0)" ]' "--seed does not change the order"
stream_run uri "file://$T/fm" --batch 100 --epochs 2 --seed 3
check 'cmp -s "$T/o/mount.ep" "$T/o/uri.ep"' "file:// URI differs from the path (both mount mode)"
# file mode reads its local copy in the same (indexed) order as mount mode
stream_run file "$T/fm" --mode file --local-dir "$T/copy" --batch 100 --epochs 2 --seed 3
epochs_ok file
check 'cmp -s "$T/o/mount.ep" "$T/o/file.ep"' "file and mount mode differ: $(diff "$T/o/mount.ep" "$T/o/file.ep" | head -4)"
check '[ -f "$T/copy/dataset.json" ]' "file mode left no local copy in --local-dir"
# pipe mode streams (another order); cache mode streams epoch 0 as pipe does, then reads its copy as mount does
stream_run pipe "$T/fm" --mode pipe --batch 100 --epochs 2 --seed 3
epochs_ok pipe
stream_run cache "$T/fm" --mode cache --local-dir "$T/cache" --batch 100 --epochs 2 --seed 3
epochs_ok cache
check '[ "$(crc cache 0)" = "$(crc pipe 0)" ] && [ "$(crc cache 1)" = "$(crc mount 1)" ]' \
    "cache mode: epoch 0 $(crc cache 0) (pipe's $(crc pipe 0)), epoch 1 $(crc cache 1) (mount's $(crc mount 1))"

# --- bad input ---
expect_fail 1 "^stream: .*$T/missing" "$S" "$T/missing" --epochs 1
check '[ "$(wc -l <"$T/err")" = 1 ]' "missing folder: not one line: $(cat "$T/err")"
expect_fail 2 '^stream: .*--batch' "$S" "$T/fm" --batch 0
expect_fail 2 '^stream: unknown argument --frob' "$S" "$T/fm" --frob 1
expect_fail 2 '^stream: .*--local-dir' "$S" "$T/fm" --mode file
expect_fail 2 '^usage: stream DATASET' "$S"

# --- the static library: the same program through baton.pc's private requirements; and a race
# function, which pulls in the embedded Python of the reward functions when the build has it ---
REQ=$(pkg-config --print-requires-private baton | awk '{print $1}' | paste -sd ' ')
LPRIV=$(sed -n 's/^Libs.private: //p' "$P/lib/pkgconfig/baton.pc")
static_link() {  # static_link SRC OUT
    # shellcheck disable=SC2086,SC2046
    cc -std=c11 -Wall -Wextra -Werror $SANFLAGS "$1" $(pkg-config --cflags baton) "$P/lib/libbaton.a" \
        $(pkg-config --libs $REQ) $LPRIV -o "$2" 2>"$T/e"
}
static_link "$ROOT/examples/c/stream.c" "$T/stream-static" || bad "stream.c does not link against libbaton.a: $(grep -m3 . "$T/e")"
check '! ldd "$T/stream-static" | grep -q libbaton' "the static build loads libbaton.so"
"$T/stream-static" "$T/fm" --batch 100 --epochs 2 --seed 3 2>"$T/e" | grep '^epoch ' >"$T/o/static.ep"
check 'cmp -s "$T/o/mount.ep" "$T/o/static.ep"' "static and shared builds differ: $(head -2 "$T/o/static.ep") $(head -2 "$T/e")"
cat >"$T/race.c" <<'EOF'
#include <baton/race.h>
#include <stdio.h>
int main(void) { printf("%d\n", baton_race_python_available()); return 0; }
EOF
if static_link "$T/race.c" "$T/race"; then
    check '"$T/race" >/dev/null' "the static race program failed"
else
    bad "a race program does not link against libbaton.a with baton.pc's libraries: $(grep -m3 . "$T/e")"
fi

# --- the run-time version check, against the installed library ---
cat >"$T/ver.c" <<'EOF'
#include <baton/util.h>
#include <stdio.h>
int main(void)
{
    baton_err e1 = {0}, e2 = {0}, e3 = {0};
    int a = baton_version_check(BATON_ABI_VERSION + 1, BATON_VERSION_MAJOR, BATON_VERSION_MINOR, &e1);
    int b = baton_version_check(BATON_ABI_VERSION, BATON_VERSION_MAJOR, BATON_VERSION_MINOR + 1, &e2);
    int c = BATON_VERSION_CHECK(&e3);
    printf("%d|%s\n%d|%s\n%d|%s|%d\n", a, e1.msg, b, e2.msg, c, baton_version(), baton_abi_version());
    return 0;
}
EOF
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror $SANFLAGS "$T/ver.c" $PC -o "$T/ver" 2>"$T/e" || bad "ver.c: $(head -3 "$T/e")"
"$T/ver" >"$T/ver.out" 2>&1
l1=$(sed -n 1p "$T/ver.out") l2=$(sed -n 2p "$T/ver.out") l3=$(sed -n 3p "$T/ver.out")
check '[ "${l1%%|*}" -lt 0 ] && [[ "$l1" == *"ABI $ABI"* ]] && [[ "$l1" == *"ABI $((ABI + 1))"* ]]' "ABI mismatch: $l1"
check '[ "${l2%%|*}" -lt 0 ] && [[ "$l2" == *older* ]] && [[ "$l2" == *"$VER"* ]]' "newer headers than the library: $l2"
check '[ "$l3" = "0|$VER|$ABI" ]' "matching versions: $l3"

# --- the installed command ---
v=$("$P/bin/baton" --version 2>&1)
check '[ "$v" = "baton $VER" ]' "installed baton --version: $v"

# the shared library exports exactly what include/baton declares (scripts/exports.sh), so an
# internal function (img_augment_apply, in img_internal.h) is not reachable from outside, and every
# function of the library named baton_* is declared there
nm -D --defined-only "$B/libbaton.so" | awk '$2 ~ /^[TtWiDdBbRr]$/ {print $3}' | sed 's/@.*//' | grep -v '^BATON_' | sort -u >"$T/exported"
scripts/exports.sh --names >"$T/declared"
check 'cmp -s "$T/exported" "$T/declared"' \
    "libbaton.so exports exactly the declared API: $(diff "$T/declared" "$T/exported" | head -5 | tr '\n' ' ')"
check '! grep -qx img_augment_apply "$T/exported" && grep -qx baton_loader_open "$T/exported"' "an internal function is not exported, a public one is"
nm --defined-only "$B/libbaton.a" 2>/dev/null | awk '$2 == "T" {print $3}' | grep '^baton_' | sort -u >"$T/named"
check '[ -z "$(comm -23 "$T/named" "$T/declared")" ]' \
    "every baton_* function of the library is public API: not declared in include/baton: $(comm -23 "$T/named" "$T/declared" | head -8 | tr '\n' ' ')"
finish
