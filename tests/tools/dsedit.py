#!/usr/bin/env python3
"""dsedit.py — make a packed RecordIO dataset internally inconsistent, on purpose, for tests: the
file stays well-formed (RecordIO framing intact, dataset.json's sizes and CRC32Cs recomputed), only
the content contradicts the manifest.

  dsedit.py DIR label K VALUE   record K of the first shard gets label VALUE (a float: 10, -1,
                                nan, inf, 2.5)
  dsedit.py DIR swap-index I J  lines I and J of the first shard's .idx swapped (offsets out of
                                order)
  dsedit.py DIR classes N       dataset.json says N classes (class_names cut or padded)
"""
import json
import math
import os
import struct
import sys

MAGIC = 0xCED7230A


def crc32c(data, table=[]):
    if not table:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)
    c = 0xFFFFFFFF
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def record_offsets(buf):
    off, out = 0, []
    while off + 8 <= len(buf):
        magic, lrec = struct.unpack_from("<II", buf, off)
        if magic != MAGIC:
            sys.exit(f"not RecordIO at offset {off}")
        n = lrec & ((1 << 29) - 1)
        out.append((off, n))
        off += 8 + n + (-n % 4)
    return out


def main():
    d, what = sys.argv[1], sys.argv[2]
    mpath = os.path.join(d, "dataset.json")
    m = json.load(open(mpath))
    sh = m["shards"][0]
    if what == "label":
        k, value = int(sys.argv[3]), float(sys.argv[4])
        path = os.path.join(d, sh["file"])
        buf = bytearray(open(path, "rb").read())
        off, _ = record_offsets(buf)[k]
        struct.pack_into("<f", buf, off + 8 + 4, value)   # IRHeader: u32 flag, f32 label, ...
        open(path, "wb").write(buf)
        sh["crc32c"] = "%08x" % crc32c(buf)
        if sh.get("piece_bytes"):   # the checksum of every piece too (dataset.json's piece_crc32c)
            pb = sh["piece_bytes"]
            sh["piece_crc32c"] = "".join("%08x" % crc32c(buf[i:i + pb]) for i in range(0, len(buf), pb))
    elif what == "swap-index":
        i, j = int(sys.argv[3]), int(sys.argv[4])
        path = os.path.join(d, sh["index"])
        lines = open(path).read().splitlines(True)
        a, b = lines[i].split("\t"), lines[j].split("\t")
        lines[i], lines[j] = a[0] + "\t" + b[1], b[0] + "\t" + a[1]   # keys stay, offsets swap
        data = "".join(lines).encode()
        open(path, "wb").write(data)
        sh["index_bytes"], sh["index_crc32c"] = len(data), "%08x" % crc32c(data)
    elif what == "classes":
        n = int(sys.argv[3])
        names = m.get("class_names", [])
        m["class_names"] = (names + [f"c{i}" for i in range(len(names), n)])[:n]
        m["classes"] = n
    else:
        sys.exit(__doc__)
    json.dump(m, open(mpath, "w"), indent=1)


if __name__ == "__main__":
    main()
