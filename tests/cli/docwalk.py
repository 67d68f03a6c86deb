#!/usr/bin/env python3
"""docwalk.py — a document's walk-through, read from the document itself (tests/cli/test_docs_*.sh).

    docwalk.py DOC NAME OUT [--inline PREFIX]

The walk-through NAME is the part of DOC from the line `<!-- walk-through NAME -->` to the line
`<!-- /walk-through -->`, or else to the next heading (a heading right after the marker belongs
to it). Its fenced blocks are written, in order, to OUT/01.LANG, OUT/02.LANG, … (LANG the fence's
language, "txt" for none), indented list items' blocks dedented. With --inline PREFIX, every
inline code span of the part's prose that starts with PREFIX is a one-line `sh` block too, in
its place in the text (a step such as "Race it: `build/baton race eval …`").

OUT/run.sh then runs every sh block in order, in one bash (what a block sets, the next sees, as in
a terminal), in the current folder: block N's stdout and stderr go to OUT/N.out and OUT/N.err,
and every command of it that fails (bash's ERR trap: what `set -e` would stop on) is one line
"STATUS COMMAND" of OUT/N.failed; OUT/N.done marks a block that came to its end. Before block N
it sources $DOC_BEFORE N when the test sets DOC_BEFORE (a step's own environment). Nothing of the
commands is changed: a test shortens a step with flags or environment of its own
(tests/cli/doc_baton.sh), never by editing them.
"""
import os, re, sys


def part(text, name):
    start = text.find("<!-- walk-through %s -->" % name)
    if start < 0:
        sys.exit("docwalk: no '<!-- walk-through %s -->' in the document" % name)
    lines = text[start:].split("\n")[1:]
    out, fence = [], None
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("```"):
            fence = None if fence else s
        if not fence:
            if s == "<!-- /walk-through -->":
                break
            if re.match(r"#{1,6} ", line) and any(l.strip() for l in out):
                break
        out.append(line)
    return out


def blocks(lines, inline):
    res, i = [], 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"(\s*)```(\w*)\s*$", line)
        if m:
            ind, lang = len(m.group(1)), m.group(2) or "txt"
            body = []
            i += 1
            while i < len(lines) and not re.match(r"\s*```\s*$", lines[i]):
                body.append(lines[i][ind:] if lines[i][:ind].strip() == "" else lines[i])
                i += 1
            res.append((lang, "\n".join(body) + "\n"))
        elif inline and not line.startswith("    "):
            for span in re.findall(r"`([^`]+)`", line):
                if span.startswith(inline):
                    res.append(("sh", span + "\n"))
        i += 1
    return res


def main():
    a = sys.argv[1:]
    inline = None
    if "--inline" in a:
        k = a.index("--inline")
        inline = a[k + 1]
        del a[k:k + 2]
    doc, name, out = a
    found = blocks(part(open(doc).read(), name), inline)
    if not found:
        sys.exit("docwalk: walk-through %s of %s has no blocks" % (name, doc))
    os.makedirs(out, exist_ok=True)
    run = ["#!/usr/bin/env bash", "# %s, walk-through %s: its sh blocks in order" % (os.path.basename(doc), name)]
    for n, (lang, body) in enumerate(found, 1):
        f = os.path.join(out, "%02d.%s" % (n, lang))
        open(f, "w").write(body)
        if lang == "sh":
            o = os.path.join(out, "%02d" % n)
            run += ['[ -z "${DOC_BEFORE:-}" ] || . "$DOC_BEFORE" %d' % n,
                    "trap 'echo \"$? $BASH_COMMAND\" >>%s.failed' ERR" % q(o),
                    "{", body.rstrip("\n"), "} >%s.out 2>%s.err" % (q(o), q(o)),
                    "trap - ERR", ": >%s.done" % q(o)]
    open(os.path.join(out, "run.sh"), "w").write("\n".join(run) + "\n")


def q(s):
    return "'" + s.replace("'", "'\\''") + "'"


if __name__ == "__main__":
    main()
