#!/usr/bin/env python3
"""Test fixtures: tiny OPT/Llama checkpoints and Hugging Face reference outputs.

Writes under --out:
  models/tiny-opt-preln        OPT, pre-LN, fp32, GPT-2 BPE tokenizer (BOS prepended as OPT does)
  models/tiny-opt-postln-proj  OPT, post-LN, word_embed_proj_dim != hidden_size, fp16 on disk
  models/tiny-llama-gqa        Llama, GQA (8 query / 2 KV heads), untied head, fp32, Llama-2 tokenizer
  models/tiny-llama-linrope    Llama, MHA, linear RoPE scaling, tied embeddings, bf16 on disk
  fixtures.json                 where each model and tokenizer directory is
  reference/<model>.safetensors  transformers' token ids, logits (selected rows), argmax
                                 of every row and 20 greedy tokens, per prompt (fp32)
  tokenizer/<name>.jsonl        {"text", "ids"} from transformers' tokenizer for every text
                                 field of the four datasets plus hard strings
The outputs are produced by transformers itself on every fresh build, so the
C++ tests compare against the library, not against frozen numbers.
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import sys

STAMP_VERSION = "4"

HARD_STRINGS = [
    "", " ", "   ", "\n", "\n\n\n", "\t", "\t\tindented\tcode", "a  b   c    d",
    "Hello world", " leading space", "trailing space ", "line one\nline two\r\nline three",
    "café naïve résumé Ångström façade", "Über straße", "日本語のテキスト、中文文本。한국어",
    "emoji 😀🎉👍🏽 and ZWJ 👨‍👩‍👧‍👦", "digits 1234567890 3.14159 1,000,000 007",
    "x=12345678901234567890", "don't it's we've they're I'm you'll he'd",
    "MiXeD CaSe ALLCAPS", "punctuation!!! ??? ... --- ((()))", "tab\tseparated\tvalues",
    "non-breaking\u00a0space", "combining e\u0301 accents", "Ελληνικά Русский עברית العربية हिन्दी",
    "<|im_start|>user\nhi<|im_end|>", "<s> literal special </s>", "<|endoftext|>after",
    "    four spaces then text", "end with newline\n", "\u3000ideographic space",
]


def dataset_texts(data):
    texts = []
    skip = {"id", "idx", "label", "answerKey", "question"}
    for path in sorted(glob.glob(os.path.join(data, "*", "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                obj = json.loads(line)
                stack = [obj]
                while stack:
                    o = stack.pop()
                    if isinstance(o, dict):
                        for k, v in o.items():
                            if k in skip:
                                continue
                            if isinstance(v, str):
                                texts.append(v)
                            elif isinstance(v, dict) and k == "choices":
                                texts.extend(v.get("text", []))
    seen, out = set(), []
    for t in texts:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def gpt2_tokenizer(tokenizers, out_dir):
    """GPT-2's byte-level BPE (the algorithm and merges OPT uses), built with the
    tokenizers library itself; like OPT's tokenizer it prepends a BOS token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    bpe = models.BPE.from_file(os.path.join(tokenizers, "gpt2/vocab.json"),
                               os.path.join(tokenizers, "gpt2/merges.txt"))
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    bos = "<|endoftext|>"
    tok.add_special_tokens([bos])
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=bos, unk_token=bos)
    fast.save_pretrained(out_dir)
    return fast


def make_models(tokenizers, out):
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, OPTConfig, OPTForCausalLM

    torch.manual_seed(0)
    models = {}

    def save(name, model, dtype, tok_src):
        d = os.path.join(out, "models", name)
        os.makedirs(d, exist_ok=True)
        model.to(dtype).save_pretrained(d, safe_serialization=True)
        if tok_src == "gpt2":
            gpt2_tokenizer(tokenizers, d)
        else:
            for f in ("tokenizer.json", "tokenizer_config.json"):
                shutil.copy(os.path.join(tokenizers, "llama2", f), d)
        models[name] = d

    common = dict(initializer_range=0.2, max_position_embeddings=2048)
    opt = OPTConfig(vocab_size=50272, hidden_size=64, num_hidden_layers=2, ffn_dim=128, num_attention_heads=4,
                    word_embed_proj_dim=64, do_layer_norm_before=True, bos_token_id=50256, eos_token_id=50256,
                    pad_token_id=1, **common)
    save("tiny-opt-preln", OPTForCausalLM(opt).eval(), torch.float32, "gpt2")
    opt = OPTConfig(vocab_size=50272, hidden_size=64, num_hidden_layers=3, ffn_dim=96, num_attention_heads=4,
                    word_embed_proj_dim=32, do_layer_norm_before=False, bos_token_id=50256, eos_token_id=50256,
                    pad_token_id=1, **common)
    save("tiny-opt-postln-proj", OPTForCausalLM(opt).eval(), torch.float16, "gpt2")
    llama = LlamaConfig(vocab_size=32000, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                        num_attention_heads=8, num_key_value_heads=2, rope_theta=10000.0, tie_word_embeddings=False,
                        **common)
    save("tiny-llama-gqa", LlamaForCausalLM(llama).eval(), torch.float32, "llama2")
    llama = LlamaConfig(vocab_size=32000, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=4, rope_theta=500000.0, tie_word_embeddings=True,
                        rope_scaling={"type": "linear", "factor": 2.0}, **common)
    save("tiny-llama-linrope", LlamaForCausalLM(llama).eval(), torch.bfloat16, "llama2")
    return models


def reference_prompts(texts):
    long_text = "\n\n".join(t for t in texts[:4000] if len(t) > 80)[:5000]
    return ["Hello world", "Question: How do I ready a guinea pig cage for it's new occupants?\nAnswer:",
            "The capital of France is", long_text]


def write_reference(model_dir, prompts, path, greedy_tokens=20):
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").eval()
    limit = model.config.max_position_embeddings
    tensors = {}
    with torch.no_grad():
        for i, p in enumerate(prompts):
            ids = tok(p, return_tensors="pt").input_ids[:, : min(1024, limit - greedy_tokens)]
            logits = model(ids).logits[0].float()
            t = ids.shape[1]
            rows = sorted(set(list(range(0, t, max(1, t // 16))) + list(range(max(0, t - 4), t))))
            tensors[f"p{i}.ids"] = ids[0].to(torch.int64).contiguous()
            tensors[f"p{i}.rows"] = torch.tensor(rows, dtype=torch.int64)
            tensors[f"p{i}.logits"] = logits[rows].contiguous()
            tensors[f"p{i}.argmax"] = logits.argmax(-1).to(torch.int64).contiguous()
            if i < 3:  # greedy continuation with the KV cache, past EOS
                out = model(ids, use_cache=True)
                past, nxt, gen = out.past_key_values, out.logits[0, -1].argmax(), []
                for _ in range(greedy_tokens):
                    gen.append(int(nxt))
                    out = model(nxt.view(1, 1), past_key_values=past, use_cache=True)
                    past, nxt = out.past_key_values, out.logits[0, -1].argmax()
                tensors[f"p{i}.greedy"] = torch.tensor(gen, dtype=torch.int64)
    save_file(tensors, path)


def write_tokenizer_reference(tok_dir, texts, path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tok_dir)
    ids = tok(texts)["input_ids"]
    with open(path, "w", encoding="utf-8") as f:
        for t, i in zip(texts, ids):
            f.write(json.dumps({"text": t, "ids": i}, ensure_ascii=False) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", help="the default model directory (SmolLM2); required unless --tiny-only")
    ap.add_argument("--tiny-only", action="store_true",
                    help="only the tiny checkpoints and their logits (no SmolLM2, no tokenizer ids)")
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--data", default=os.path.join(here, "data"), help="the dataset splits (data/README.md)")
    ap.add_argument("--tokenizers", default=os.path.join(here, "tests", "tokenizers"),
                    help="the GPT-2 and Llama 2 tokenizer files (tests/tokenizers/README.md)")
    args = ap.parse_args()

    if not args.tiny_only and not (args.model and os.path.exists(os.path.join(args.model, "config.json"))):
        sys.exit(f"make_fixtures: {args.model}/config.json: missing; run 'make setup' (or 'make model') first")
    needs = [os.path.join(args.tokenizers, "gpt2/vocab.json"), os.path.join(args.tokenizers, "llama2/tokenizer.json")]
    if not args.tiny_only:
        needs.append(os.path.join(args.data, "piqa/train.jsonl"))
    for need in needs:
        if not os.path.exists(need):
            sys.exit(f"make_fixtures: {need}: missing")

    h = hashlib.sha256(open(__file__, "rb").read() + STAMP_VERSION.encode())
    h.update(b"tiny" if args.tiny_only else open(os.path.join(args.model, "config.json"), "rb").read())
    for sums in (os.path.join(args.tokenizers, "SHA256SUMS"), os.path.join(args.data, "SHA256SUMS")):
        if os.path.exists(sums):
            h.update(open(sums, "rb").read())
    stamp_path = os.path.join(args.out, ".stamp")
    if os.path.exists(stamp_path) and open(stamp_path).read() == h.hexdigest():
        print("make_fixtures: up to date")
        return
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(os.path.join(args.out, "reference"))
    os.makedirs(os.path.join(args.out, "tokenizer"))

    import torch
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    texts = [] if args.tiny_only else dataset_texts(args.data)
    models = make_models(args.tokenizers, args.out)
    if not args.tiny_only:
        models["smollm2"] = args.model
    prompts = reference_prompts(texts if texts else [HARD_STRINGS[-2] * 40] * 4)
    for name, d in models.items():
        write_reference(d, prompts, os.path.join(args.out, "reference", name + ".safetensors"))
        print(f"make_fixtures: reference logits for {name}")
    all_texts = HARD_STRINGS + texts
    tokenizers = {} if args.tiny_only else {"smollm2": args.model, "gpt2": models["tiny-opt-preln"],
                                            "llama2": os.path.join(args.tokenizers, "llama2")}
    for name, d in tokenizers.items():
        write_tokenizer_reference(d, all_texts, os.path.join(args.out, "tokenizer", name + ".jsonl"))
        print(f"make_fixtures: {len(all_texts)} tokenizer references for {name}")
    with open(os.path.join(args.out, "fixtures.json"), "w") as f:
        json.dump({"models": {k: os.path.abspath(v) for k, v in models.items()},
                   "tokenizers": {k: os.path.abspath(v) for k, v in tokenizers.items()}}, f, indent=1)
    with open(stamp_path, "w") as f:
        f.write(h.hexdigest())


if __name__ == "__main__":
    main()
