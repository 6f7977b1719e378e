#!/usr/bin/env bash
# What scripts/gpu_check.sh needs on a device machine that lacks Debian's -dev
# packages and the network, gathered on this (Debian) machine into one folder
# small enough to carry (~8 MB; data/ and tests/tokenizers/ travel with the tree):
#   scripts/gpu_prepare.sh [CARRY_DIR]   (default build/gpu-carry)
# deps/ (scripts/pack_deps.sh) and shape/ (SmolLM2-135M's config.json and
# tokenizer files, no weights).
set -euo pipefail
carry=${1:-build/gpu-carry}; model=${MODEL:-models/smollm2-135m}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$carry"; mkdir -p "$carry/shape"
bash "$here/pack_deps.sh" "$carry/deps" >/dev/null
cp "$model"/config.json "$model"/tokenizer.json "$model"/tokenizer_config.json "$carry/shape/"
du -sh "$carry"
