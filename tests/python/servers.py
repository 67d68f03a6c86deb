"""servers.py — the Python module against real servers (run by tests/servers/test_python.sh, which
starts nginx and the RADOS Gateway and sets NGINX_URL, NGINX_LOG, DATA (the packed folder nginx
serves), S3_URI (the same dataset pushed to the gateway) and the AWS_* variables):
  - parity: over HTTP and S3, in file, pipe and cache mode (and mount on the folder itself), the
    Loader yields exactly the samples, in exactly the order, that `baton train --sample-log` trains
    on for the same seed; with rank/world 0/2 and 1/2 the two parts of each global batch are the
    W = 1 batch;
  - bytes: nginx's access log says each epoch's shards were sent once (1.00x the dataset);
  - checkpoints copied to the gateway are listed and read back by boto3 (an independent client),
    every object's size and CRC32C as the MANIFEST says, the MANIFEST object written last; an
    empty folder restores the newest complete one;
  - a wrong secret is a baton.Error naming the bucket, never the secret."""
import json
import os
import subprocess
import sys

import numpy as np

import baton
from harness import TMP, baton as cli, check, done, sample_lines

DATA, HTTP, S3, LOG = os.environ["DATA"], os.environ["NGINX_URL"], os.environ["S3_URI"], os.environ["NGINX_LOG"]
N = 10000


def sample_log(uri, mode, steps=200, batch=64, seed=7):
    d = os.path.join(TMP, "tr-%s-%s" % (mode, abs(hash(uri))))
    log = d + ".samples"
    r = cli("train", "--data", uri, "--model", "mlp", "--epochs", "2", "--batch", str(batch), "--seed", str(seed),
            "--mode", mode, "--ckpt-dir", d, "--max-steps", str(steps), "--sample-log", log, "--quiet",
            "--threads", "1", "--no-notice")
    check(r.returncode == 0, "baton train %s --mode %s: %s" % (uri, mode, r.stderr[-400:]))
    return [l.split() for l in open(log)] if r.returncode == 0 else []


def lines(l, count):
    out = []
    while len(out) < count:
        n0 = len(out)
        for b in l:
            out += sample_lines(b, 0)
        if len(out) == n0:
            break
    return out[:count]


for uri in (HTTP, S3):
    for mode in ("file", "pipe", "cache"):
        ref = sample_log(uri, mode)
        kw = {"local_dir": os.path.join(TMP, "copy-%s-%d" % (mode, len(uri)))} if mode != "pipe" else {}
        with baton.Loader(uri, mode=mode, batch=64, seed=7, epochs=2, **kw) as l:
            got = lines(l, len(ref))
        check(len(ref) == 12752 and got == ref, "%s %s: the Loader yields what baton train trained on (%d samples, "
              "first difference at %s)" % (uri, mode, len(ref), next((i for i, (a, b) in enumerate(zip(got, ref))
                                                                     if a != b), "none")))
ref = sample_log(DATA, "mount")
with baton.Loader(DATA, mode="mount", batch=64, seed=7, epochs=2) as l:
    check(lines(l, len(ref)) == ref, "the served folder itself in mount mode")

for uri in (HTTP, S3):
    one = baton.Loader(uri, mode="pipe", batch=64, seed=9, epochs=1)
    parts = [baton.Loader(uri, mode="pipe", batch=64, seed=9, epochs=1, rank=r, world=2) for r in range(2)]
    ok, n = True, 0
    for a, b0, b1 in zip(one, *parts):
        m = np.empty_like(a.images)
        m[0::2], m[1::2] = b0.images, b1.images
        y = np.empty_like(a.labels)
        y[0::2], y[1::2] = b0.labels, b1.labels
        ok &= np.array_equal(m, a.images) and np.array_equal(y, a.labels)
        n += len(b0.labels) + len(b1.labels)
    check(ok and n == N, "%s: ranks 0 and 1 of 2 together are the W = 1 batches (%d samples)" % (uri, n))

# ---- bytes: what nginx sent for two epochs in pipe mode, against the shards' size
shards = sum(os.path.getsize(os.path.join(DATA, f)) for f in os.listdir(DATA) if f.endswith(".rec"))
def sent():
    tot = 0
    for line in open(LOG):
        parts = line.split('"')
        if len(parts) > 2 and ".rec" in parts[1]:
            tot += int(parts[2].split()[1])
    return tot
before = sent()
with baton.Loader(HTTP, mode="pipe", batch=100, seed=3, epochs=2) as l:
    for _ in range(2):
        for _b in l:
            pass
    st = l.stats()
nginx = sent() - before
check(nginx == 2 * shards, "nginx sent each epoch's shards once: %.4fx the dataset per epoch" % (nginx / 2 / shards))
check(st["epoch_fetched"] == [shards, shards] and st["dataset_bytes"] == shards,
      "the Loader counts what was fetched per epoch the same: %s" % st)

# ---- checkpoints on the gateway, read by boto3
import boto3   # Debian's python3-boto3: a client baton did not write

bucket, prefix = S3[len("s3://"):].split("/", 1)
prefix = prefix.rstrip("/")
CK = S3.rstrip("/") + "-ckpt/"
ck = baton.Checkpoints(os.path.join(TMP, "ck1"), keep=2, uri=CK)
rng = np.random.default_rng(1)
saved = {}
for step in (10, 20, 30):
    t = {"w": rng.standard_normal((64, 32)).astype(np.float32), "b": np.arange(step, dtype=np.int64)}
    saved[step] = t
    ck.save(step, t, {"step": step, "note": "s3"}, optim={"m": np.full(3, step, np.float32)})
ck.wait()
ck.close()
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name=os.environ.get("AWS_REGION", "us-east-1"))
objs = s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "-ckpt/")["Contents"]
keys = sorted(o["Key"] for o in objs)
steps = sorted({k.split("/")[-2] for k in keys})
# background uploads a newer commit supersedes are skipped: 1 or 2 (keep) complete ones, 30 among them
check(1 <= len(steps) <= 2 and steps[-1] == "ckpt-000000030", "retention on the store too: %s" % steps)


def crc32c(data):   # bitwise, independent of baton's (small files)
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


for s in steps:
    base = "%s-ckpt/%s/" % (prefix, s)
    mine = {o["Key"][len(base):]: o for o in objs if o["Key"].startswith(base)}
    check(set(mine) == {"model.safetensors", "optim.safetensors", "state.json", "MANIFEST"}, "%s: %s" % (s, sorted(mine)))
    man = s3.get_object(Bucket=bucket, Key=base + "MANIFEST")["Body"].read().decode().split("\n")
    good = man[0] == "baton-ckpt 1"
    for line in man[1:]:
        if not line:
            continue
        name, size, crc = line.split()
        body = s3.get_object(Bucket=bucket, Key=base + name)["Body"].read()
        good &= len(body) == int(size) and "%08x" % crc32c(body) == crc
    check(good, "%s: every object's size and CRC32C as its MANIFEST says (read by boto3)" % s)
    check(all(mine["MANIFEST"]["LastModified"] >= o["LastModified"] for o in mine.values()),
          "%s: the MANIFEST object is the last written" % s)

ck2 = baton.Checkpoints(os.path.join(TMP, "ck2"), uri=CK)   # an empty folder: restored from the store
c = ck2.load()
check(c is not None and c.step == 30 and np.array_equal(c.tensors["w"], saved[30]["w"]) and
      c.state == {"step": 30, "note": "s3"}, "an empty folder restores the newest complete checkpoint")
ck2.close()

# ---- a wrong secret: an error naming the bucket, never the secret
secret = os.environ["AWS_SECRET_ACCESS_KEY"]
os.environ["AWS_SECRET_ACCESS_KEY"] = "wrong-secret-0123456789"
try:
    baton.Loader(S3, mode="pipe")
    e = None
except baton.Error as x:
    e = x
check(e is not None and bucket in str(e) and "wrong-secret" not in str(e), "a wrong secret: %r" % (e,))
try:
    c3 = baton.Checkpoints(os.path.join(TMP, "ck3"), uri=CK)
    c3.load()
    e = None
except baton.Error as x:
    e = x
check(e is not None and "wrong-secret" not in str(e), "a wrong secret for the checkpoint store: %r" % (e,))
os.environ["AWS_SECRET_ACCESS_KEY"] = secret
done()
