"""test_photos.py — baton.Loader on photographs of any size (a photo-like folder from bench/photos,
packed with each file's bytes as they are):
  - the random-resized crop's boxes are torchvision's RandomResizedCrop.get_params, re-implemented
    here from torchvision's source, on the same uniform draws (baton.crop_box returns them), and
    the centre crop's boxes are Resize(size / 0.875) + CenterCrop(size) mapped back to the source;
  - a Loader resumed mid-epoch from state_dict() with random-resized crops continues with the same
    bytes; the bytes do not depend on the thread count, and the rank/world parts are the rows of
    the whole batch (the samples a step sees do not depend on the world size);
  - centre-crop evaluation is deterministic; dtype="uint8" is the same pixels un-normalised;
  - no crop on images of varying size is refused with the way out; bad crop arguments are usage
    errors;
  - the pack made with --jpeg-restart gives the plain pack's bytes for both crops, and its lying
    records fail as the plain pack's do."""
import math
import os

import numpy as np

import baton
from harness import BUILD_DIR, TMP, baton as cli, check, done, raises, run, skip, SAN

PHOTOS = os.path.join(BUILD_DIR, "bench", "photos")
SRC, DS = os.path.join(TMP, "photos"), os.path.join(TMP, "photos-ds")
r = run(PHOTOS, "--out", SRC, "--n", "150", "--classes", "5", "--min", "48", "--max", "260", "--specials")
check(r.returncode == 0, "photos: %s" % r.stderr)
r = cli("pack", "--from", "imagefolder:" + SRC, "--out", DS, "--shard-mb", "1", "--quiet")
check(r.returncode == 0, "pack: %s" % r.stderr)
N = 156


# ---- torchvision's rule (torchvision/transforms/transforms.py, RandomResizedCrop.get_params), on given draws
def torchvision_rrc(height, width, scale, ratio, u_area, u_ratio, top, left):
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for t in range(10):
        if t >= len(u_area):
            break
        target_area = area * (scale[0] + u_area[t] * (scale[1] - scale[0]))
        aspect_ratio = math.exp(log_ratio[0] + u_ratio[t] * (log_ratio[1] - log_ratio[0]))
        w = int(round(math.sqrt(target_area * aspect_ratio)))
        h = int(round(math.sqrt(target_area / aspect_ratio)))
        if 0 < w <= width and 0 < h <= height:
            if not (0 <= top <= height - h and 0 <= left <= width - w):
                return None   # the offsets drawn are out of torchvision's range
            return t + 1, (left, top, left + w, top + h)
    in_ratio = float(width) / float(height)
    if in_ratio < min(ratio):
        w = width
        h = int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        h = height
        w = int(round(h * max(ratio)))
    else:
        w = width
        h = height
    # torchvision returns an empty crop when the rounding takes a side to 0 (an image 1 px wide with a
    # ratio range above 2: round(1 / 2) = 0) and fails later; baton decided on one pixel there
    h, w = max(h, 1), max(w, 1)
    i = (height - h) // 2
    j = (width - w) // 2
    return 10, (j, i, j + w, i + h)


def torchvision_center(height, width, size):
    resize = int(size / 0.875)
    if height <= width:
        nh, nw = resize, int(resize * width / height)
    else:
        nh, nw = int(resize * height / width), resize
    nh, nw = max(nh, size), max(nw, size)
    top, left = int(round((nh - size) / 2.0)), int(round((nw - size) / 2.0))
    sy, sx = height / nh, width / nw
    return (left * sx, top * sy, (left + size) * sx, (top + size) * sy)


rng = np.random.default_rng(5)
bad = fallbacks = 0
cases = [(int(h), int(w)) for h, w in rng.integers(1, 2000, size=(300, 2))] + [(1, 1), (1, 6000), (6000, 1), (375, 500)]
for scale, ratio in [((0.08, 1.0), (3 / 4, 4 / 3)), ((0.5, 0.9), (0.2, 5.0)), ((0.9, 1.0), (2.0, 3.0))]:
    for k, (h, w) in enumerate(cases):
        d = baton.crop_box(h, w, 11, 2, k, scale=scale, ratio=ratio)
        want = torchvision_rrc(h, w, scale, ratio, d["u_area"], d["u_ratio"], d["top"], d["left"])
        ok = want is not None and want[1] == tuple(int(v) for v in d["box"]) and \
            (want[0] == len(d["u_area"]) or d["fallback"]) and all(v == int(v) for v in d["box"])
        fallbacks += d["fallback"]
        if not ok and bad < 5:
            print("  rrc %dx%d scale %s ratio %s: baton %s, torchvision %s" % (h, w, scale, ratio, d, want))
        bad += not ok
check(bad == 0, "random-resized boxes equal torchvision's rule on the same draws (%d of %d differ)" % (bad, 3 * len(cases)))
check(fallbacks > 0, "the centre fallback was exercised (%d times)" % fallbacks)
flips = [baton.crop_box(300, 400, 1, 0, k)["flip"] for k in range(400)]
check(150 < sum(flips) < 250, "flip drawn with p = 0.5: %d of 400" % sum(flips))
check(baton.crop_box(300, 400, 1, 0, 7) == baton.crop_box(300, 400, 1, 0, 7) and
      baton.crop_box(300, 400, 1, 0, 7) != baton.crop_box(300, 400, 1, 1, 7), "a box is a function of (seed, epoch, position)")
bad = 0
for h, w in cases:
    for size in (224, 32):
        got = baton.crop_box(h, w, 0, 0, 0, crop="center", size=size)["box"]
        want = torchvision_center(h, w, size)
        if max(abs(a - b) for a, b in zip(got, want)) > 1e-9:
            bad += 1
            if bad < 4:
                print("  center %dx%d size %d: baton %s, torchvision %s" % (h, w, size, got, want))
check(bad == 0, "centre boxes equal Resize(size/0.875) + CenterCrop(size) (%d differ)" % bad)


# ---- the Loader
def batches(l, count=None):
    out = []
    for b in l:
        out.append((b.epoch, b.index, np.array(b.positions), np.array(b.images).copy(), np.array(b.labels)))
        if count and len(out) == count:
            break
    return out


def same(a, b):
    return len(a) == len(b) and all(x[0] == y[0] and x[1] == y[1] and np.array_equal(x[2], y[2]) and
                                    np.array_equal(x[3], y[3]) and np.array_equal(x[4], y[4]) for x, y in zip(a, b))


e = raises(baton.Error, baton.Loader, DS)
check(e is not None and "crop=\"random-resized\"" in str(e), "no crop on varying images: %s" % e)
check(raises(baton.UsageError, baton.Loader, DS, crop="sideways") is not None, "an unknown crop is a usage error")
check(raises(baton.UsageError, baton.Loader, DS, crop="random-resized", scale=(0.5, 0.2)) is not None, "scale min > max")
check(raises(baton.UsageError, baton.Loader, DS, crop="random-resized", dtype="float16") is not None, "an unknown dtype")

kw = dict(batch=16, seed=9, epochs=2, crop="random-resized", size=48, flip=True)
with baton.Loader(DS, threads=2, **kw) as l:
    check(l.info["shape"] == (3, 48, 48), "info's shape is the crop's: %s" % (l.info["shape"],))
    whole = batches(l) + batches(l)   # an iteration is an epoch
check(len(whole) == 2 * math.ceil(N / 16) and whole[0][3].shape == (16, 3, 48, 48), "two epochs of 48x48 crops: %d batches" % len(whole))
check(not np.array_equal(whole[0][3], whole[len(whole) // 2][3]), "epochs crop differently")
with baton.Loader(DS, threads=1, **kw) as l:
    check(same(batches(l) + batches(l), whole), "the same bytes with 1 thread as with 2")
with baton.Loader(DS, threads=3, **kw) as l:
    first = batches(l, 7)        # 10 batches an epoch: mid-epoch
    state = l.state_dict()
with baton.Loader(DS, threads=2, **kw) as l:
    l.load_state_dict(state)
    rest = batches(l) + batches(l)
check(same(first + rest, whole), "resumed mid-epoch from state_dict(): the uninterrupted run's bytes")
parts = []
for rank in range(3):
    with baton.Loader(DS, rank=rank, world=3, **kw) as l:
        parts.append(batches(l, 4))
ok = True
for k in range(4):
    rows = {int(p): parts[r][k][3][i] for r in range(3) for i, p in enumerate(parts[r][k][2])}
    ok = ok and sorted(rows) == list(whole[k][2]) and all(np.array_equal(rows[int(p)], whole[k][3][i]) for i, p in enumerate(whole[k][2]))
check(ok, "the parts of 3 ranks are the rows of the whole batches (the same crops at any world size)")

ev = dict(batch=32, seed=1, crop="center", size=64, epochs=1)
with baton.Loader(DS, **ev) as a, baton.Loader(DS, threads=1, **ev) as b:
    check(same(batches(a), batches(b)), "centre-crop evaluation is deterministic")
with baton.Loader(DS, normalize=False, **ev) as a, baton.Loader(DS, dtype="uint8", **ev) as b:
    fa, ub = batches(a), batches(b)
    check(ub[0][3].dtype == np.uint8 and ub[0][3].shape == (32, 3, 64, 64), "uint8 batches: %s %s" % (ub[0][3].dtype, ub[0][3].shape))
    check(all(np.array_equal((u[3].astype(np.float32) / np.float32(255)), f[3]) for u, f in zip(ub, fa)),
          "uint8 is the same pixels as the float batches un-normalised")
with baton.Loader(DS, **ev) as a, baton.Loader(DS, dtype="uint8", **ev) as b:
    x8, xf = next(iter(b)).images, next(iter(a)).images
    m, sd = np.float32(b.info["mean"]).reshape(1, 3, 1, 1), np.float32(b.info["std"]).reshape(1, 3, 1, 1)
    check(b.info["dtype"] == "uint8" and np.allclose((x8 / np.float32(255) - m) / sd, xf, atol=1e-5),
          "uint8 normalised with info's mean and std (as a GPU would) is the float batch")
with baton.Loader(DS, layout="nhwc", dtype="uint8", **ev) as l:
    check(next(iter(l)).images.shape == (32, 64, 64, 3), "uint8 in NHWC")
# ---- --jpeg-restart: the same pack with every JPEG transcoded to a restart marker after every MCU;
# its crops are decoded from the box's MCUs alone, to the same bytes
DS_RST = os.path.join(TMP, "photos-rst")
r = cli("pack", "--from", "imagefolder:" + SRC, "--out", DS_RST, "--shard-mb", "1", "--quiet", "--jpeg-restart")
check(r.returncode == 0 and "JPEG(s) transcoded" in r.stderr, "pack --jpeg-restart: %s" % r.stderr)
with baton.Loader(DS_RST, threads=2, **kw) as l:
    check(same(batches(l) + batches(l), whole), "random-resized crops of the --jpeg-restart pack: the plain pack's bytes")
with baton.Loader(DS, **ev) as a, baton.Loader(DS_RST, **ev) as b:
    check(same(batches(a), batches(b)), "centre crops of the --jpeg-restart pack: the plain pack's bytes")


# ---- a record that lies: a header claiming 60000x60000 (a decompression bomb), a stream cut short
# (EOI after a third of it), garbage after the SOI: an error naming the shard and the record's
# offset, never a crash (the sanitizer build runs this too); dataset.json's checksums are made to
# agree, so only the image itself is wrong
import json, shutil, struct


def lie(kind, k=3, src=DS):
    d = os.path.join(TMP, "lie-" + kind + ("-rst" if src != DS else ""))
    shutil.copytree(src, d)
    man = json.load(open(os.path.join(d, "dataset.json")))
    sh = man["shards"][0]
    path = os.path.join(d, sh["file"])
    b = bytearray(open(path, "rb").read())
    off = [int(l.split("\t")[1]) for l in open(os.path.join(d, sh["index"])) if l.strip()][k]
    n = struct.unpack_from("<I", b, off + 4)[0] & ((1 << 29) - 1)
    flag = struct.unpack_from("<I", b, off + 8)[0]
    img = off + 8 + 24 + 4 * flag
    end = off + 8 + n
    if b[img:img + 2] != b"\xff\xd8":
        return None, None
    if kind == "bomb":   # the SOF's height and width
        i = img + 2
        while i < end and not (b[i] == 0xFF and b[i + 1] in (0xC0, 0xC1, 0xC2)):
            i += 2 + struct.unpack_from(">H", b, i + 2)[0]
        struct.pack_into(">HH", b, i + 5, 60000, 60000)
    elif kind == "cut":
        cut = img + (end - img) // 3
        b[cut:end] = b"\xff\xd9" + b"\x00" * (end - cut - 2)
    else:
        b[img + 2:end] = bytes((i * 37 + 11) & 0xFF for i in range(end - img - 2))
    open(path, "wb").write(b)
    sh["crc32c"] = "%08x" % baton.crc32c(bytes(b))
    if "piece_bytes" in sh:   # and its pieces': a pack whose records lie, not a damaged file
        p = sh["piece_bytes"]
        sh["piece_crc32c"] = "".join("%08x" % baton.crc32c(bytes(b[k:k + p])) for k in range(0, len(b), p))
    json.dump(man, open(os.path.join(d, "dataset.json"), "w"))
    return d, "%s: offset %d" % (sh["file"], off)


for kind, src in [("bomb", DS), ("cut", DS), ("garbage", DS), ("bomb", DS_RST), ("cut", DS_RST), ("garbage", DS_RST)]:
    d, where = lie(kind, src=src)
    if d is None:
        skip("record 3 of the first shard is not a JPEG")
        continue
    for crop in ("random-resized", "center"):
        with baton.Loader(d, batch=8, seed=9, crop=crop, size=32) as l:
            e = raises(baton.Error, lambda: [None for b in l])
        check(e is not None and where in str(e), "%s record%s, %s crop: an error naming %s: %s" %
              (kind, " (--jpeg-restart)" if src != DS else "", crop, where, e))

done()
