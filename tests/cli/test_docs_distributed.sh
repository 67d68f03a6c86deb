#!/usr/bin/env bash
# test_docs_distributed.sh — docs/distributed.md's first run (two ranks to step 40, three to the
# end of the epoch) run as written, its commands read from the document, in an empty folder with
# the baton under test first on PATH: the two summaries are the ones the document quotes (steps,
# epochs, ranks, the allreduce's size; rates and times as numbers), the second resumes from the
# first's checkpoint, and every one of the 10,000 images was trained once (`--sample-log`, added
# by the test after the document's flags).
# plain build only (what the document promises, not memory safety: test_dist*.sh cover that)
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
DOC=docs/distributed.md
mpi_setup || { finish; exit $?; }
doc_setup
export DOC_ARGS_train="--sample-log $T/samples"
doc_walk "$DOC" first-run
check 'doc_ran 1' "$(doc_why 1)"
sed -n '/<!-- walk-through first-run -->/,/<!-- \/walk-through -->/p' "$DOC" >"$T/part.md"
s1=$(doc_quote "$T/part.md" 'step 40, ')
s2=$(doc_quote "$T/part.md" 'step 79, ')
r=$(doc_quote "$T/part.md" 'resuming from ')
check '[ -n "$s1" ] && grep -Eq "^$(doc_pat "$s1")\$" "$D/01.out" && grep -qF "step 40, epochs done 0 of 1, " "$D/01.out" &&
       grep -qF ", 2 ranks, allreduce 4.80 MB/step in " "$D/01.out" && grep -qF "checkpoint ckpt/ckpt-000000040" "$D/01.out"' \
    "the first run's summary is the one the document quotes ($s1): $(grep '^step' "$D/01.out")"
check '[ -n "$r" ] && grep -qF "$r" "$D/01.err"' "the second run logs '$r': $(grep resum "$D/01.err")"
check '[ -n "$s2" ] && grep -Eq "^$(doc_pat "$s2")\$" "$D/01.out" && grep -qF "step 79, epochs done 1 of 1, " "$D/01.out" &&
       grep -qF ", 3 ranks, allreduce 4.80 MB/step in " "$D/01.out" && grep -qF "checkpoint ckpt/ckpt-000000079" "$D/01.out"' \
    "the second run's summary is the one the document quotes ($s2): $(grep '^step' "$D/01.out")"
# "every one of the 10,000 images was trained exactly once": positions 0..9999 of epoch 0, each once
check '[ "$(awk '"'"'$1 == 0 {print $2}'"'"' "$T/samples" | sort -n | uniq | wc -l)" = 10000 ] && [ "$(wc -l <"$T/samples")" = 10000 ] &&
       [ "$(awk '"'"'{print $3}'"'"' "$T/samples" | sort -u | tr "\n" " ")" = "0 1 2 " ]' \
    "every image trained once, by ranks 0 1 2: $(wc -l <"$T/samples") lines, ranks $(awk '{print $3}' "$T/samples" | sort -u | tr '\n' ' ')"
check 'grep -q "every one of the 10,000 images was trained exactly once" "$T/part.md"' "the document says so"
finish
