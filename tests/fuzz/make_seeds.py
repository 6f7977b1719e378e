#!/usr/bin/env python3
"""Writes the starting corpus of the fuzz targets (tests/fuzz/corpus/<target>/seed-*).

Seeds are small valid inputs the fuzzer mutates: model configs, safetensors files, one
document of each task's split, tokenizer.json files cut down from real ones,
and store logs and manifests. Crash inputs found later are added beside them
by hand (crash-*), never rewritten by this script.

usage: make_seeds.py --data data --tokenizers tests/tokenizers --smollm2 models/smollm2-135m
"""
import argparse
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from store_files import crc32c  # noqa: E402


def write(target, name, data: bytes):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def safetensors(tensors, metadata=None):
    header, blob = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + blob


def shrink_tokenizer(tok, vocab_size):
    """The same tokenizer.json with only the first `vocab_size` ids and the merges among them."""
    model = tok["model"]
    vocab = {t: i for t, i in model["vocab"].items() if i < vocab_size}
    merges = []
    for m in model.get("merges", []):
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    model["vocab"], model["merges"] = vocab, merges
    tok["added_tokens"] = [a for a in tok.get("added_tokens", []) if a["id"] < vocab_size]
    return tok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data")
    ap.add_argument("--tokenizers", default="tests/tokenizers")
    ap.add_argument("--smollm2", default="models/smollm2-135m")
    a = ap.parse_args()

    with open(os.path.join(a.smollm2, "config.json"), "rb") as f:
        write("config", "seed-smollm2", f.read())
    write("config", "seed-opt", json.dumps({
        "model_type": "opt", "vocab_size": 50272, "hidden_size": 768, "num_hidden_layers": 12,
        "num_attention_heads": 12, "ffn_dim": 3072, "max_position_embeddings": 2048, "word_embed_proj_dim": 768,
        "do_layer_norm_before": True, "activation_function": "relu", "torch_dtype": "float16"}).encode())
    write("config", "seed-llama-linear-rope", json.dumps({
        "model_type": "llama", "vocab_size": 32000, "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "max_position_embeddings": 512,
        "rope_scaling": {"type": "linear", "factor": 2.0}, "head_dim": 16, "torch_dtype": "bfloat16"}).encode())

    write("safetensors", "seed-f32", safetensors({"w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4))}))
    write("safetensors", "seed-mixed", safetensors(
        {"a": ("F16", [3], b"\x00\x3c" * 3), "b": ("BF16", [1, 2], b"\x80\x3f" * 2), "c": ("I64", [], b"\x07" + b"\x00" * 7)},
        {"format": "pt"}))
    write("safetensors", "seed-empty", safetensors({"e": ("F32", [0, 4], b"")}))

    for i, task in enumerate(["piqa", "rte", "copa", "openbookqa"]):  # data/task.cc's order
        split = {"piqa": "validation", "rte": "validation", "copa": "validation", "openbookqa": "test"}[task]
        with open(os.path.join(a.data, task, split + ".jsonl"), "rb") as f:
            lines = [f.readline() for _ in range(2)]
        write("task", f"seed-{task}", bytes([i]) + b"".join(lines))

    with open(os.path.join(a.tokenizers, "llama2", "tokenizer.json")) as f:
        write("tokenizer", "seed-llama2", json.dumps(shrink_tokenizer(json.load(f), 400)).encode())
    with open(os.path.join(a.smollm2, "tokenizer.json")) as f:
        write("tokenizer", "seed-smollm2", json.dumps(shrink_tokenizer(json.load(f), 400)).encode())

    # Store logs for the fuzz target's manifest: 2-token chunks, 2 layers.
    def commit(meta, ids):
        chunks = [{"id": c, "layer": l, "off": 12288 * (2 * k + l), "crc": [0, 0, 0]} for k, c in enumerate(ids) for l in (0, 1)]
        return json.dumps({"meta": json.dumps(meta), "chunks": chunks})
    insert = commit({"tokens": [5, 6, 7, 8], "first_chunk": 0}, [0, 1])
    reorder = commit({"reorder": {"path": [5, 6, 7, 8], "source": [0, 1], "first_chunk": 2,
                                  "order": [[3, 1, 0, 2], [0, 1, 2, 3]]}}, [2, 3])
    free = json.dumps({"free": [0]})
    lines = [insert, commit({"tokens": [5, 6, 9, 9], "first_chunk": 4}, [4]), reorder, free]
    write("store", "seed-framed", b"\x01" + "\n".join(lines).encode())
    raw = b""
    for p in lines:
        p = p.encode()
        raw += struct.pack("<III", 0x4B564C47, len(p), crc32c(p)) + p
    write("store", "seed-raw", b"\x00" + raw)
    write("store", "seed-manifest", b"\x02" + json.dumps(
        {"format": 1, "fingerprint": "fuzz", "geometry": {"chunk_tokens": 2, "layers": 2, "kv_heads": 1, "head_dim": 4,
                                                          "probe_kv_heads": 1, "elem_bytes": 2}}).encode())


if __name__ == "__main__":
    main()
