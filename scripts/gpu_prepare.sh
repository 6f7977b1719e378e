#!/usr/bin/env bash
# What scripts/gpu_check.sh needs on a device machine that lacks Debian's -dev
# packages and the network, gathered on this (Debian) machine into one folder
# small enough to carry (~20 MB):
#   scripts/gpu_prepare.sh [CARRY_DIR]   (default build/gpu-carry)
# deps/ (scripts/pack_deps.sh), shape/ (SmolLM2-135M's config.json and
# tokenizer files, no weights) and tokenizers/ (the fixtures' gpt2/, llama2/).
set -euo pipefail
carry=${1:-build/gpu-carry}; model=${MODEL:-models/smollm2-135m}; shared=${SHARED:-../shared}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$carry"; mkdir -p "$carry/shape" "$carry/tokenizers"
bash "$here/pack_deps.sh" "$carry/deps" >/dev/null
cp "$model"/config.json "$model"/tokenizer.json "$model"/tokenizer_config.json "$carry/shape/"
cp -r "$shared/tokenizers/gpt2" "$shared/tokenizers/llama2" "$carry/tokenizers/"
du -sh "$carry"
