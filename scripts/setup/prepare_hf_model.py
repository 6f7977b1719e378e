#!/usr/bin/env python3
"""Re-save a Hugging Face checkpoint in the form impress reads.

impress reads config.json, model.safetensors (or a sharded index) and
tokenizer.json. Some hub checkpoints (older OPT releases among them) ship
pytorch_model*.bin and vocab.json/merges.txt only. This script loads such a
checkpoint with transformers (a local directory, or a hub id when the machine
has internet) and writes it back with safetensors and a fast-tokenizer file.

  python3 scripts/setup/prepare_hf_model.py facebook/opt-6.7b models/opt-6.7b --dtype float16
"""
import argparse


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", help="local directory or hub id")
    ap.add_argument("out", help="output directory")
    ap.add_argument("--dtype", default="float16", choices=["float32", "float16", "bfloat16"],
                    help="dtype of the saved weights")
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.source, use_fast=True)
    model = AutoModelForCausalLM.from_pretrained(args.source, dtype=getattr(torch, args.dtype))
    model.save_pretrained(args.out, safe_serialization=True, max_shard_size="5GB")
    tok.save_pretrained(args.out)
    print(f"prepare_hf_model: wrote {args.out}")


if __name__ == "__main__":
    main()
