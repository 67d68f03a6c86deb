#!/usr/bin/env python3
"""svg_labels.py — checks that a chart's text a person must read is readable: every <text> of an SVG
lies inside the canvas and no two overlap, measured on what rsvg-convert (librsvg) actually draws.

    svg_labels.py FILE.svg [FILE.svg ...]      exit 0 when every file passes; 1 with one line per problem

Each <text> element is rendered alone (same canvas, font attributes inherited from the <svg> root
and its own, its transform) to PNG with rsvg-convert; the box of its inked pixels is its extent.
Boxes may touch; an overlap of more than 1 px in both directions is a problem. The canvas is the
root's width x height. The PNG is decoded here (RGBA, 8 bits, no interlace: what rsvg-convert
writes), so nothing outside Debian's python3 and librsvg2-bin is needed."""
import os
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

SVG = "{http://www.w3.org/2000/svg}"
INHERITED = ("font-family", "font-size", "font-weight")


def png_ink_box(path):
    """(x0, y0, x1, y1) of the pixels with alpha > 0 in an RGBA PNG, or None when empty."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype == 6 and interlace == 0, "expected 8-bit RGBA, not interlaced"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, bpp = zlib.decompress(idat), w * 4, 4
    prev, box, prev_zero = bytearray(stride), None, True
    zero = bytes(stride)
    for y in range(h):
        f, filt = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        if prev_zero and filt == zero:   # every predictor of an empty line under an empty one is 0
            continue
        line = bytearray(filt)
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        xs = [x for x in range(w) if line[x * 4 + 3]]
        if xs:
            x0, x1 = xs[0], xs[-1] + 1
            box = (x0, y, x1, y + 1) if box is None else (min(box[0], x0), box[1], max(box[2], x1), y + 1)
        prev, prev_zero = line, line == zero
    return box


def text_boxes(svg_path, tmp):
    root = ET.parse(svg_path).getroot()
    W, H = float(root.get("width")), float(root.get("height"))
    attrs = " ".join('%s="%s"' % (k, root.get(k)) for k in INHERITED if root.get(k))
    out = []
    for k, t in enumerate(root.iter(SVG + "text")):
        t.tail = None
        one = ET.tostring(t, encoding="unicode").replace("ns0:", "").replace(' xmlns:ns0="http://www.w3.org/2000/svg"', "")
        doc = '<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" %s>%s</svg>' % (W, H, attrs, one)
        src, png = os.path.join(tmp, "t%d.svg" % k), os.path.join(tmp, "t%d.png" % k)
        open(src, "w").write(doc)
        subprocess.run(["rsvg-convert", "-o", png, src], check=True)
        box = png_ink_box(png)
        if box:
            out.append(("".join(t.itertext()).strip(), box))
    return W, H, out


def check(svg_path, tmp):
    W, H, boxes = text_boxes(svg_path, tmp)
    bad = []
    for label, (x0, y0, x1, y1) in boxes:
        if x0 < 0.5 or y0 < 0.5 or x1 > W - 0.5 or y1 > H - 0.5:
            bad.append("%s: '%s' reaches the canvas's edge (box %d,%d-%d,%d on %gx%g)" % (svg_path, label, x0, y0, x1, y1, W, H))
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            (a, (ax0, ay0, ax1, ay1)), (b, (bx0, by0, bx1, by1)) = boxes[i], boxes[j]
            if min(ax1, bx1) - max(ax0, bx0) > 1 and min(ay1, by1) - max(ay0, by0) > 1:
                bad.append("%s: '%s' and '%s' overlap" % (svg_path, a, b))
    return bad, len(boxes)


def main():
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in sys.argv[1:]:
            bad, n = check(f, tmp)
            problems += bad
            print("%s: %d labels, %d problem(s)" % (f, n, len(bad)))
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems or len(sys.argv) < 2 else 0


if __name__ == "__main__":
    sys.exit(main())
