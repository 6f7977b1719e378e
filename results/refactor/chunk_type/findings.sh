#!/usr/bin/env bash
# Counts, in the tree of REV (default: the working tree), what issue 49's findings name.
# Usage (from the repository root): results/refactor/chunk_type/findings.sh [REV]
set -uo pipefail
rev=${1:-}
g() { if [ -n "$rev" ]; then git grep -nE "$1" "$rev" -- "${@:2}"; else git grep -nE "$1" -- "${@:2}"; fi; }
n() { g "$@" | wc -l; }
lines() { if [ -n "$rev" ]; then git show "$rev:$1" 2>/dev/null | wc -l; else wc -l < "$1" 2>/dev/null || echo 0; fi; }
echo "tree: ${rev:-working tree}"
echo "raw part pointers in a store write (const void* in store/chunk_store.h): $(n 'const void\*' src/store/chunk_store.h)"
echo "parallel hold/keep vectors beside writes (engine/reorderer.*, prefix_store*): $(n 'std::vector<at::Tensor>(\*)? (keep|hold)\b|hold->|keep->' 'src/engine/reorderer.*' 'src/engine/prefix_store*')"
echo "EncodeChunk calls outside its own file: $(n 'EncodeChunk\(' src ':!src/codec/encoded_chunk.cc' ':!src/engine/chunk_codec.cc' ':!src/codec/encoded_chunk.h' ':!src/engine/chunk_codec.h')"
echo "carriers of a chunk's data on the way down (ChunkWrite, ChunkWrites, EncodedChunk, ChunkPut, PrefixPut, CopyPut):"
for t in ChunkWrite ChunkWrites EncodedChunk ChunkPut PrefixPut CopyPut; do echo "  struct $t: $(n "struct $t\b" src)"; done
echo "flat part vectors indexed [3 * l + part] in puts (put.kv / put.encoded): $(n 'put\.(kv|encoded)\b|\(\*put\.kv\)' src)"
echo "chunk/layer key packed or unpacked by hand (chunk << 12, key >> 12): $(n '(chunk << 12|key >> 12)' src)"
echo "reorderer re-placing into two tiers (i < gpu ? ...): $(n 'i < gpu \?' src/engine)"
echo "per-tier read counts as separate fields (disk_chunks, remote_chunks): $(n '\b(disk_chunks|remote_chunks)\b' src)"
echo "PrefixStore accessors (reader(), index(), cache(), disk()) in prefix_store.h: $(n '(ChunkReader|PrefixIndex|TieredCache|ChunkStore)& (reader|index|cache|disk)\(\)' src/engine/prefix_store.h)"
echo "callers of those accessors outside tests: $(n '(\.|->)(reader|index|cache|disk)\(\)\.' src ':!src/engine/prefix_store*')"
echo "codec names spelled as a list in messages and help (not read from KvCodecNames): $(n 'int8, int4(,| or) k8v4' src)"
echo "eval results read back from JSON by key in experiment/figures*: $(n '\["results"\]' 'src/experiment/figures*')"
echo "head analysis converted to JSON and read back (HeadAnalysisJson): $(n 'HeadAnalysisJson' src)"
echo "raw part pointers and an owner in a remote publish (RemoteStore::Chunk): $(n 'std::vector<const void\*>|shared_ptr<const void> owner' src/remote/remote_store.h)"
echo "cache levels refused unless GPU or CPU (TieredCache::Create): $(n 'must be the GPU or CPU tier' src)"
echo "tier names spelled beside the list in cache/tier.h (\"gpu\", \"cpu\", \"disk\", \"remote\" keyed by Tier): $(n '\{"(gpu|disk)", b\[Tier' src)"
echo "per-codec conditions outside the codec table (== / != KvCodec::kK8V4 or kInt4 in src/codec): $(n '[=!]= KvCodec::k(K8V4|Int4)\b' src/codec)"
echo "KV dtype choices spelled as a list (not read from KvDtypeNames): $(n '"float16", "bfloat16", "float32"' src)"
echo "lines: prefix_store.cc $(lines src/engine/prefix_store.cc), prefix_store_write.cc $(lines src/engine/prefix_store_write.cc), store_identity.cc $(lines src/engine/store_identity.cc)"
