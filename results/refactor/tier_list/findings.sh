#!/bin/bash
# usage: results/refactor/tier_list/findings.sh REV (from the repository root): the findings this
# change removes, counted in the tree of REV (git grep and git show; nothing is built).
# (It reads the trees of the revisions it names: scripts/ paths as they were there, before scripts/ went into folders.)
rev=${1:?usage: findings.sh REV}
count() { git grep -h -c -E "$1" "$rev" -- "${@:2}" 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
lines() { local n=0; for f in "$@"; do n=$((n + $(git show "$rev:$f" 2>/dev/null | wc -l))); done; echo $n; }
echo "tree: $(git rev-parse --short "$rev")"
echo "cache levels and backends as two option lists (tiers.levels, backends.push_back, opt.backends in src/ tests/ bench/): $(count '\.tiers\.levels|\.backends\.push_back|opt\.backends' src tests bench)"
echo "per-backend loops in PrefixStore (for ... below_ / all = {home_): $(count 'for \(const auto& b : below_\)|for \(ChunkBackend\* b : all\)' src/engine/prefix_store.cc src/engine/prefix_store_write.cc)"
echo "read-side chunk carriers with their own keys and values (ChunkParts beside ChunkKv): $(git show "$rev:src/engine/chunk_reader.h" | grep -A3 '^struct ChunkParts' | grep -c 'at::Tensor k, v')"
echo "encoded-chunk types beside EncodedChunk (struct EncodedKv): $(count '^struct EncodedKv' src)"
echo "figure names listed in scripts/plot.py: $(git show "$rev:scripts/plot.py" | grep -c -E '^    "(io-share|head-jaccard|similarity-ratio|chunk-importance|spi|fig[0-9]+|tail|codec)":')"
echo "figure names listed in scripts/paper_vs_project.py (if name == ...): $(git show "$rev:scripts/paper_vs_project.py" | grep -c 'if name == "')"
echo "PrefixStore's .cc lines (prefix_store.cc + prefix_store_write.cc): $(lines src/engine/prefix_store.cc src/engine/prefix_store_write.cc)"
