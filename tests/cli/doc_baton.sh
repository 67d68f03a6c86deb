#!/usr/bin/env bash
# doc_baton.sh — the baton a walk-through's commands run (tests/cli/test_docs_*.sh put it first on
# PATH as `baton`, or as build/baton of a checkout-shaped folder): $DOC_BATON, the baton under
# test, with the command line as the document wrote it and, after it, the flags the test adds to
# shorten a step — DOC_ARGS_<command> or, for a subcommand, DOC_ARGS_<command>_<subcommand>
# (dashes as underscores: DOC_ARGS_race_train="--minutes 0.1") — and DOC_ARGS_<...>__<flag> only
# when the command line has --<flag> (DOC_ARGS_race_train__minutes: where the document gives
# --minutes, not where it gives --episodes instead). A later flag wins over an earlier one, so
# `--minutes 5` as written plus `--minutes 0.1` trains for six seconds.
# DOC_DETACH="race serve" runs that command in the background, as in a second terminal: its
# output goes to $DOC_DETACH_OUT, its pid to $DOC_DETACH_OUT.pid, and this returns after its first
# line (the server's URL) has come, printing it.
a=${1:-} b=${2:-} extra='' keys=()
case "$a" in '' | *[!a-z-]*) ;; *) keys=("DOC_ARGS_${a//-/_}") ;; esac
case "$b" in '' | *[!a-z-]*) ;; *) [ ${#keys[@]} = 1 ] && keys+=("${keys[0]}_${b//-/_}") ;; esac
for k in "${keys[@]}"; do [ -n "${!k:-}" ] && extra=${!k}; done   # the subcommand's, else the command's
for f in "$@"; do
    case "$f" in
    -- | --*[!a-z-]*) ;;
    --*) for k in "${keys[@]}"; do v=${k}__$(f=${f#--} && echo "${f//-/_}"); extra+=" ${!v:-}"; done ;;
    esac
done
# shellcheck disable=SC2086 # the added flags are words
if [ -n "${DOC_DETACH:-}" ] && [ "$a $b" = "$DOC_DETACH" ]; then
    "$DOC_BATON" "$@" $extra >"$DOC_DETACH_OUT" 2>&1 </dev/null &
    echo $! >"$DOC_DETACH_OUT.pid"
    for _ in $(seq 400); do
        [ -s "$DOC_DETACH_OUT" ] && break
        sleep 0.05
    done
    head -n1 "$DOC_DETACH_OUT"
    exit 0
fi
exec "$DOC_BATON" "$@" $extra
