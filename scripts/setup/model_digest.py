#!/usr/bin/env python3
"""One sha256 over a Hugging Face model directory's weights: every tensor of
its *.safetensors, by name in sorted order, with its dtype, shape and bytes.
Unlike a file checksum it does not depend on how the files were written, so
a model converted on another machine with other library versions digests the
same when its weights are the same.

Usage: scripts/setup/model_digest.py MODEL_DIR
"""
import glob
import hashlib
import json
import os
import struct
import sys


def main():
    d = sys.argv[1]
    tensors = {}
    for path in sorted(glob.glob(os.path.join(d, "*.safetensors"))):
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
            base = 8 + n
            for name, t in header.items():
                if name == "__metadata__":
                    continue
                tensors[name] = (path, base, t)
    if not tensors:
        sys.exit(f"model_digest: {d}: no *.safetensors")
    h = hashlib.sha256()
    for name in sorted(tensors):
        path, base, t = tensors[name]
        begin, end = t["data_offsets"]
        with open(path, "rb") as f:
            f.seek(base + begin)
            data = f.read(end - begin)
        h.update(f"{name}|{t['dtype']}|{t['shape']}|".encode())
        h.update(data)
    print(h.hexdigest())


if __name__ == "__main__":
    main()
