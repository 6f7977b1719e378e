#!/usr/bin/env python3
"""`impress run` with recomp and as on the same small request stream: both
must answer with the same accuracy (full reuse changes no prediction) and as
must reuse stored prefix KV. Exit 1 otherwise."""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--impress", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", default="data")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(args.impress))) as tmp:
        out = os.path.join(tmp, "run.json")
        subprocess.run([args.impress, "run", "--model", args.model, "--task", "copa", "--data", args.data,
                        "--system", "recomp,as", "--pool", "2", "--prefix-tokens", "192", "--requests", "10",
                        "--warmup", "0", "--gpu-cache", "2M", "--cpu-cache", "4M", "--store",
                        os.path.join(tmp, "store"), "--json", out], check=True, stdout=subprocess.DEVNULL)
        runs = {r["system"]: r for r in json.load(open(out))["runs"]}
    ok = runs["recomp"]["acc"] == runs["as"]["acc"] and runs["as"]["reused_tokens"] > 0
    print(f"check_reuse_accuracy: recomp acc {runs['recomp']['acc']:.3f}, as acc {runs['as']['acc']:.3f}, "
          f"as reused {runs['as']['reused_tokens']} tokens; {1 if ok else 0} passed, {0 if ok else 1} failed")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
