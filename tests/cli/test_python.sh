#!/usr/bin/env bash
# alone: it runs its test files two at a time itself and installs the build (make install)
# test_python.sh — the baton Python module: every tests/python/test_*.py (loader, checkpoints,
# notices; each prints "N passed, N failed, N skipped", added up here) with Debian's
# /usr/bin/python3 against $BATON_BUILD/python — under the sanitizer build with ASan's and UBSan's
# runtimes preloaded, so the extension and the library run instrumented inside the interpreter (all
# but the files marked "# plain build only", whose lines the other files and scripts reach there) —
# then, in the plain build, the module as a user installs it: `make install PREFIX=…` and
# `pip install --no-build-isolation --no-index ./python` (offline, Debian's setuptools), imported
# from outside the tree; installed again against a second prefix (rebuilt, not python/build/'s
# first build), and imported without its library (the error names the folder).
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
B=${BATON_BUILD:-build}
PY=/usr/bin/python3
case "$BATON" in /*) ;; *) BATON=$PWD/$BATON ;; esac
case "$B" in /*) BD=$B ;; *) BD=$PWD/$B ;; esac
export BATON BATON_BUILD=$B
if [ ! -x $PY ] || [ ! -d "$BD/python/baton" ]; then
    skip "no $PY or no module in $BD/python (make builds it when Debian's python3 is installed)"
    finish
    exit $?
fi
san=0
case "$B" in *san*) san=1 ;; esac
# one_file NAME: tests/python/NAME with the module under test, its output in $T/NAME.out and its
# exit status in $T/NAME.rc; its TMPDIR is $T/tmp/NAME, which it must leave empty (what a test or a
# tool it starts — torchrun's torchelastic_* folders — leaves behind is caught below, not left in /tmp)
one_file() {
    local name=$1
    mkdir -p "$T/tmp/$name"
    # (ASan's quarantine of freed memory 32 MB, not 256: torch's tensors went through it, and every
    # allocation after came from fresh pages — test_example.py 74 → 63 s, when it still ran here)
    if [ $san = 1 ]; then
        env TMPDIR="$T/tmp/$name" PYTHONPATH="$BD/python" LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
            ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:quarantine_size_mb=32 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            bash -c "cd tests/python && exec $PY $name" >"$T/$name.out" 2>&1
    else
        env TMPDIR="$T/tmp/$name" PYTHONPATH="$BD/python" bash -c "cd tests/python && exec $PY $name" >"$T/$name.out" 2>&1
    fi
    echo $? >"$T/$name.rc"
}
# Two files at a time (they wait on processes, servers and the disk more than they compute; each
# has its own folders), the longest first (test_loader.py 48 s plain and 65 s under the sanitizers,
# test_example.py 72 s plain), so that the two end together. None runs by itself: test_example.py's
# spot-fleet check gives a notice 8 s of the clock, and notice to exit took 1.9-2.4 s at a load of 10.
names=(test_loader.py test_example.py)
for t in tests/python/test_*.py; do
    name=$(basename "$t")
    case " ${names[*]} " in *" $name "*) ;; *) names+=("$name") ;; esac
done
# A file whose header has a "# plain build only: WHY" line is not run under the sanitizers (what it
# reaches there, the sanitizer pass's other tests reach: scripts/san-select.sh's rule).
plain_only() { grep -q '^# plain build only' "tests/python/$1"; }
for name in "${names[@]}"; do
    [ $san = 1 ] && plain_only "$name" && continue
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
    one_file "$name" &
done
wait
for t in tests/python/test_*.py; do
    name=$(basename "$t")
    if [ $san = 1 ] && plain_only "$name"; then echo "$name: plain build only"; continue; fi
    rc=$(cat "$T/$name.rc" 2>/dev/null || echo 1)
    sum=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$T/$name.out" | tail -1)
    if [ -z "$sum" ]; then
        bad "$name ended without its summary (exit $rc): $(grep -v '^baton: ' "$T/$name.out" | tail -n 25)"
        continue
    fi
    read -r p _ f _ s _ <<<"$sum"
    npass=$((npass + p)); nskip=$((nskip + s))
    if [ "$f" -gt 0 ] || { [ "$rc" != 0 ] && [ "$rc" != 77 ]; }; then
        nfail=$((nfail + (f > 0 ? f : 1)))
        echo "FAIL: $name: $sum (exit $rc)" >&2
        grep -E '^(FAIL|skip)|Error|Traceback|ERROR' "$T/$name.out" | head -n 40 >&2
    fi
    echo "$name: $sum"
    left=$(ls -A "$T/tmp/$name" 2>/dev/null | head -n 5 | paste -sd ' ' -)
    [ -z "$left" ] || [ "${BATON_KEEP_TMP:-0}" = 1 ] || bad "$name left in its TMPDIR: $left"
done

# installed as a user does it (the plain build: the sanitizer runtime cannot be preloaded by pip)
if [ $san = 0 ]; then
    P=$T/prefix
    make -s install PREFIX="$P" BUILD="$B" >"$T/install.out" 2>&1
    check '[ $? -eq 0 ] && [ -f "$P/lib/pkgconfig/baton.pc" ]' "make install: $(tail -5 "$T/install.out")"
    rm -rf python/build python/baton.egg-info   # never an earlier build's objects
    PKG_CONFIG_PATH=$P/lib/pkgconfig $PY -m pip install --no-build-isolation --no-index --target "$T/site" ./python \
        >"$T/pip.out" 2>&1
    check '[ $? -eq 0 ]' "pip install --no-build-isolation ./python: $(tail -5 "$T/pip.out")"
    # again against another installed library, python/build/ left from the first: rebuilt against
    # the one pkg-config finds now, and said (pip -v); with that library gone, the import names
    # the folder it looked in
    P2=$T/prefix2
    make -s install PREFIX="$P2" BUILD="$B" >"$T/install2.out" 2>&1
    PKG_CONFIG_PATH=$P2/lib/pkgconfig $PY -m pip install -v --no-build-isolation --no-index --target "$T/site2" ./python \
        >"$T/pip2.out" 2>&1
    check '[ $? -eq 0 ]' "pip install against a second prefix: $(tail -5 "$T/pip2.out")"
    rm -rf python/build python/baton.egg-info
    so2=$(ls "$T"/site2/baton/_baton*.so 2>/dev/null | head -1)
    check '[ -n "$so2" ] && ldd "$so2" | grep -q "libbaton[^ ]* => $P2/lib/"' \
        "a second pip install reuses python/build/ linked to the first library: $(ldd "$so2" 2>&1 | grep baton)"
    check 'grep -q "baton: building against libbaton [^ ]* in $P2/lib (from pkg-config baton); rebuilt: the earlier build was against .* $P/lib" "$T/pip2.out"' \
        "pip -v says which library it builds against: $(grep 'baton: building' "$T/pip2.out")"
    mv "$P2/lib" "$P2/lib.away"
    err=$(cd / && PYTHONPATH="$T/site2" $PY -c 'import baton' 2>&1 | tail -1)
    check '[[ "$err" == "ImportError: baton: "*"cannot open shared object file"*"looks for libbaton in $P2/lib "* ]]' \
        "an import without its library names where it looked: $err"
    check '[ -f "$T/site/baton/_baton.pyi" ] && [ -f "$T/site/baton/py.typed" ]' "pip installs no .pyi stub: $(ls "$T/site/baton")"
    so=$(ls "$T"/site/baton/_baton*.so 2>/dev/null | head -1)
    soname=libbaton.so.$(sed -n 's/^#define BATON_ABI_VERSION \([0-9]*\).*/\1/p' include/baton/util.h)
    check '[ -n "$so" ] && ldd "$so" | grep -q "$soname => $P/lib/$soname"' \
        "the extension pip built runs on the installed library: $(ldd "$so" 2>&1 | grep baton)"
    $BATON pack --from fashion-mnist --split test --out "$T/fm" --shard-mb 2 --quiet >/dev/null
    out=$(cd / && PYTHONPATH="$T/site" $PY - "$T/fm" "$T/ck" <<'PYEOF' 2>&1
import sys, numpy as np, baton
assert baton.__file__.startswith(sys.path[0]) or "site" in baton.__file__, baton.__file__
n = sum(len(b.labels) for b in baton.Loader(sys.argv[1], batch=100, epochs=1))
with baton.Checkpoints(sys.argv[2]) as ck:
    ck.save(1, {"w": np.ones(3, np.float32)}, {"n": n}, sync=True)
    print(baton.__version__, n, ck.load().state["n"], baton.__file__)
PYEOF
)
    ver=$(sed -n 's/^#define BATON_VERSION "\(.*\)"/\1/p' include/baton/util.h)
    check '[ "${out%% *}" = "$ver" ] && echo "$out" | grep -q " 10000 10000 $T/site/baton/__init__.py"' \
        "the pip-installed module imported from outside the tree streams and checkpoints: $out"
    check '"$BATON" ckpt verify "$T/ck" >/dev/null' "baton ckpt verify reads its checkpoint"
fi
finish
