#!/usr/bin/env bash
# check-code.sh — fails when the code outgrows the shape the developer guide asks for.
#
#   scripts/check-code.sh [ROOT]      ROOT: the repository (default: this script's parent)
#
# Rules (each offence is one line "file:line: what"; exit 1 when there is any, else 0):
#   1. JSON is parsed in one place: no cJSON_Parse* under src/ outside src/util/json_read.c (the
#      reader, baton_jr; PENDING below lists files another branch is still moving to it).
#   2. No file under src/ (*.c, *.h) over 900 lines.
#   3. No function under src/ over 120 lines. A function is a '{' at brace depth 0 whose statement
#      (the text since the last ';', '}' or preprocessor line at depth 0) ends in ')'; its length is
#      the lines from its first line of text after the previous statement (the name and parameters)
#      to its closing '}', both included. Comments, strings and character literals are blanked
#      before braces are counted; a '{' or '}' produced by a macro is not seen.
#   4. No public header (include/baton/*.h) with over 50 function declarations: a line at column 0
#      that is neither typedef, #define nor extern "C" and names baton_NAME( .
#   5. No public header including <curl/curl.h> or <microhttpd.h> (every program on the library
#      would need their headers): such plumbing lives in src/http/http.h, inside the library.
#   6. No JSON built by printf: a call of a printf-like function (…printf, …_put, verify_log) whose
#      format, on the call's first line, holds {\" or \": followed by a conversion. JSON goes
#      through cJSON and baton_json_print / baton_json_write_lines (numbers that read back bit for
#      bit, strings escaped). src/ckpt/safetensors.c writes its header's bytes itself (it says why).
# The same rules as README's "Layout" section; tests/run.sh runs this with check-layers (about 1 s).
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 1

MAX_FILE=900 MAX_FUNC=120 MAX_DECLS=50
PENDING=""   # files still moving to baton_jr (none)
bad=0

# 1. cJSON_Parse outside the reader
while IFS=: read -r f n _; do
    [ "$f" = src/util/json_read.c ] && continue
    [[ " $PENDING " == *" $f "* ]] && continue
    echo "$f:$n: cJSON_Parse outside src/util/json_read.c: read through baton_jr (baton_jr_parse, baton_jr_value)"
    bad=1
done < <(grep -rn --include='*.[ch]' 'cJSON_Parse' src)

# 6. printf-built JSON
while IFS=: read -r f n _; do
    echo "$f:$n: JSON built by printf: build a cJSON and print it with baton_json_print (or baton_json_write_lines)"
    bad=1
done < <(grep -rnE --include='*.c' '(printf|_put|verify_log)[[:space:]]*\([^;]*"([^"\\]|\\.)*(\{\\"|\\":[[:space:]]*%)' src |
         grep -v '^src/ckpt/safetensors\.c:')

# 2. and 3. files and functions, in one awk over every source file
files=$(find src -name '*.[ch]' | sort)
# shellcheck disable=SC2086
awk -v maxfile=$MAX_FILE -v maxfunc=$MAX_FUNC '
function flush_file() {
    if (fname != "" && fnr > maxfile) { printf "%s:%d: %d lines (at most %d): split it by concern\n", fname, fnr, fnr, maxfile; bad = 1 }
}
FNR == 1 { flush_file(); fname = FILENAME; depth = 0; incomment = 0; stmt = ""; start = 0; fstart = 0 }
{
    fnr = FNR
    line = $0
    # blank comments, strings and character literals
    out = ""
    i = 1; n = length(line)
    while (i <= n) {
        c = substr(line, i, 1); c2 = substr(line, i, 2)
        if (incomment) { if (c2 == "*/") { incomment = 0; i += 2 } else i++; continue }
        if (c2 == "/*") { incomment = 1; i += 2; continue }
        if (c2 == "//") break
        if (c == "\"" || c == "\047") {
            q = c; i++
            while (i <= n && substr(line, i, 1) != q) { if (substr(line, i, 1) == "\\") i++; i++ }
            i++; out = out " "; continue
        }
        out = out c; i++
    }
    if (depth == 0 && out ~ /^[ \t]*#/) { stmt = ""; start = 0; next }
    for (k = 1; k <= length(out); k++) {
        c = substr(out, k, 1)
        if (depth == 0 && start == 0 && c !~ /[ \t]/) start = FNR
        if (c == "{") {
            if (depth == 0) { s = stmt; gsub(/[ \t\n]+$/, "", s); fstart = (s ~ /\)$/) ? start : 0 }
            depth++
        } else if (c == "}") {
            depth--
            if (depth == 0) {
                if (fstart && FNR - fstart + 1 > maxfunc) {
                    printf "%s:%d: a function of %d lines (at most %d): split it into named steps\n", FILENAME, fstart, FNR - fstart + 1, maxfunc; bad = 1
                }
                fstart = 0; stmt = ""; start = 0
            }
            if (depth < 0) depth = 0
        } else if (depth == 0) {
            if (c == ";") { stmt = ""; start = 0 } else stmt = stmt c
        }
    }
    if (depth == 0) stmt = stmt "\n"
}
END { flush_file(); exit bad }
' $files || bad=1

# 4. and 5. the public headers
for h in include/baton/*.h; do
    m=$(grep -E '^[A-Za-z_][^(]*\<baton_[a-z0-9_]+[[:space:]]*\(' "$h" | grep -cvE '^(typedef|#|extern "C")')
    [ "$m" -gt $MAX_DECLS ] && { echo "$h:1: $m function declarations (at most $MAX_DECLS): split it by concern (baton/NAME_PART.h, included by baton/NAME.h)"; bad=1; }
    grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](curl/curl|microhttpd)\.h[>"]' "$h" | while IFS=: read -r l _; do
        echo "$h:$l: an installed header includes curl or microhttpd: move the declarations into the library (src/http/http.h)"
    done | grep . && bad=1
done
exit $bad
