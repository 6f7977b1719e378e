#!/usr/bin/env python3
"""Download PIQA, RTE, COPA and OpenBookQA from the Hugging Face hub (the
datasets lm-evaluation-harness reads) and write the normalized JSONL splits
impress reads: OUT/<task>/<split>.jsonl, one JSON object per line with the
hub's field names, strings exactly as served. Needs internet and `datasets`.

  python3 scripts/setup/download_data.py --out data
"""
import argparse
import json
import os

SOURCES = [  # (task folder, hub path, config, {file name: hub split})
    ("piqa", "baber/piqa", None, {"train": "train", "validation": "validation"}),
    ("rte", "nyu-mll/glue", "rte", {"train": "train", "validation": "validation"}),
    ("rte", "aps/super_glue", "rte", {"sglue_validation": "validation"}),
    ("copa", "aps/super_glue", "copa", {"train": "train", "validation": "validation"}),
    ("openbookqa", "allenai/openbookqa", "main", {"train": "train", "validation": "validation", "test": "test"}),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="data")
    args = ap.parse_args()
    from datasets import load_dataset

    for task, path, config, splits in SOURCES:
        os.makedirs(os.path.join(args.out, task), exist_ok=True)
        for name, hub_split in splits.items():
            rows = load_dataset(path, config, split=hub_split)
            dest = os.path.join(args.out, task, f"{name}.jsonl")
            with open(dest, "w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(dict(row), ensure_ascii=False) + "\n")
            print(f"download_data: {dest}: {len(rows)} rows")


if __name__ == "__main__":
    main()
