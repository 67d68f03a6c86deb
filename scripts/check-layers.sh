#!/usr/bin/env bash
# check-layers.sh — fails when a component includes a header of a component it may not use.
#
#   scripts/check-layers.sh [ROOT]      ROOT: the repository (default: this script's parent)
#
# The allowed arrows are README.md's component table (section "Layout"), its one copy: every row
# `| \`NAME\` | what it owns | may include |` names a component and, in its last cell, the components
# whose headers it may include (comma-separated names in backticks; "—" for none; "every
# component" for cli). A file belongs to the component of its folder (src/NAME/...) or, for public
# headers, to the component its name starts with (include/baton/NAME.h, include/baton/NAME_*.h).
# Checked: every `#include "baton/X.h"` under src/ and include/ (X names the component the same
# way), and every relative include of another component's private header (`#include "../X/..."`):
# refused, except src/X/X.h, a component's interface inside the library that is never installed
# (src/http/http.h: it pulls in curl and microhttpd), which is checked as include/baton/X.h is.
# Exit 0 when every include is allowed; else 1, one line per offending include (file:line: what).
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
readme=$root/README.md
[ -f "$readme" ] || { echo "check-layers: $readme: no such file" >&2; exit 1; }

# component -> allowed list, from the table rows that start with a backticked name
declare -A allow=()
order=()
while IFS= read -r line; do
    name=$(sed -n 's/^| `\([a-z]*\)` |.*/\1/p' <<<"$line")
    [ -n "$name" ] || continue
    last=$(awk -F'|' '{print $(NF-1)}' <<<"$line")
    if grep -q "every component" <<<"$last"; then
        allow[$name]="*"
    else
        allow[$name]=" $(grep -o '`[a-z]*`' <<<"$last" | tr -d '`' | tr '\n' ' ')"
    fi
    order+=("$name")
done < <(sed -n '/^## Layout/,/^## /p' "$readme")
[ ${#order[@]} -gt 0 ] || { echo "check-layers: $readme: no component table under '## Layout'" >&2; exit 1; }

header_comp=""
component_of_header() {   # baton/X.h -> header_comp: the component X names, or "" when none
    local h=$1 c
    header_comp=""
    for c in "${order[@]}"; do
        if [ "$h" = "$c" ] || [[ "$h" == "$c"_* ]]; then header_comp=$c; return; fi
    done
}

# every file's component: src/NAME/... by its folder, include/baton/NAME*.h by its name
declare -A comp_of=()
bad=0
for d in "$root"/src/*/; do
    comp=$(basename "$d")
    if [ -z "${allow[$comp]+x}" ]; then
        echo "src/$comp/: a component that README's table does not list"
        bad=1; continue
    fi
    while IFS= read -r f; do comp_of[$f]=$comp; done < <(find "$d" -name '*.[ch]' | sort)
done
for f in "$root"/include/baton/*.h; do
    [ -e "$f" ] || continue
    component_of_header "$(basename "$f" .h)"
    if [ -z "$header_comp" ]; then
        echo "include/baton/$(basename "$f"): a header of no component in README's table"
        bad=1; continue
    fi
    comp_of[$f]=$header_comp
done

# one pass over every include line of every file (one grep, no process per include)
re_pub='^[[:space:]]*#[[:space:]]*include[[:space:]]*"baton/([a-z_0-9]*)\.h"'
re_priv='^[[:space:]]*#[[:space:]]*include[[:space:]]*"\.\./([a-z]*)/'
re_lib='^[[:space:]]*#[[:space:]]*include[[:space:]]*"\.\./([a-z]*)/([a-z]*)\.h"'
files=()
for f in "${!comp_of[@]}"; do files+=("$f"); done
[ ${#files[@]} -gt 0 ] || exit $bad
while IFS= read -r hit; do
    f=${hit%%:*}; rest=${hit#*:}; n=${rest%%:*}; text=${rest#*:}
    comp=${comp_of[$f]}
    lib=""
    [[ $text =~ $re_lib ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && lib=${BASH_REMATCH[1]}
    if [ -n "$lib" ] || [[ $text =~ $re_pub ]]; then
        inc=${lib:-${BASH_REMATCH[1]}}
        component_of_header "$inc"
        target=$header_comp
        if [ -z "$target" ]; then
            echo "${f#"$root"/}:$n: includes baton/$inc.h, which belongs to no component in README's table"
            bad=1; continue
        fi
        [ "$target" = "$comp" ] && continue
        [ "${allow[$comp]}" = "*" ] && continue
        if [[ "${allow[$comp]}" != *" $target "* ]]; then
            echo "${f#"$root"/}:$n: $comp includes baton/$inc.h ($target), which README's table does not allow ($comp may include:${allow[$comp]:- nothing})"
            bad=1
        fi
    elif [[ $text =~ $re_priv ]]; then
        target=${BASH_REMATCH[1]}
        [ "$target" = "$comp" ] && continue
        echo "${f#"$root"/}:$n: $comp includes a private header of $target (../$target/...): use include/baton/$target.h"
        bad=1
    fi
done < <(printf '%s\0' "${files[@]}" | sort -z | xargs -0 grep -nH '^[[:space:]]*#[[:space:]]*include[[:space:]]*"\(baton/\|\.\./\)')
exit $bad
