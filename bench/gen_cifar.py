#!/usr/bin/env python3
"""gen_cifar.py DIR [N_PER_BATCH] — writes a synthetic CIFAR-10 binary data set (data_batch_1..5.bin,
test_batch.bin, batches.meta.txt) with smooth random images, for benchmarks and tests that need
more bytes than Fashion-MNIST. Deterministic (fixed seed). Needs only the Python standard library."""
import os
import random
import sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
os.makedirs(out, exist_ok=True)
rng = random.Random(1234)
names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
with open(os.path.join(out, "batches.meta.txt"), "w") as f:
    f.write("\n".join(names) + "\n")
# a few hundred base images, recombined: enough variety, fast to generate
bases = []
for _ in range(64):
    a, b, c = rng.randrange(256), rng.randrange(256), rng.randrange(256)
    plane = bytes((a + (i % 32) * 3 + (i // 32) * b // 32) % 256 for i in range(1024))
    bases.append(plane)
for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
    buf = bytearray()
    for _ in range(n):
        buf.append(rng.randrange(10))
        for _ in range(3):
            buf += bases[rng.randrange(len(bases))]
    with open(os.path.join(out, name), "wb") as f:
        f.write(buf)
