#!/usr/bin/env python3
"""Drop the `context` field from `impress eval --samples` files, in place: a
long-context task's contexts are written again from its seed (the retrieval
task) or its task file, and would make each file megabytes.

  strip_contexts.py SAMPLES.jsonl [...]
"""
import json
import sys

for path in sys.argv[1:]:
    rows = [json.loads(l) for l in open(path, encoding="utf-8")]
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            r.pop("context", None)
            f.write(json.dumps(r) + "\n")
