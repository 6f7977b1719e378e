#!/usr/bin/env bash
# A store damaged as disks and people damage them, one damage at a time: what
# `impress run`, `store verify` and `store repair` do, and that after repair
# `store verify` passes, a second repair changes nothing and keeps the same
# chunks, and a rerun's accuracy equals a clean store's. Before repair,
# `store verify --json` counts the chunks whose checksums all hold; repair
# keeps exactly those, less the ones behind a lost chunk in their prefix
# (which it reports), and where the damage is at a prefix's end, all of them.
# The damages are made from docs/store.md's file format (tests/store_files.py).
# Usage: store_damage.sh IMPRESS_BINARY MODEL_DIR DATA_DIR
set -euo pipefail
bin=$1; model=$2; data=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1

run() {  # run STORE JSON: 8 COPA requests over 3 prefixes of 192 stored tokens
  "$bin" run --model "$model" --data "$data" --task copa --system as --pool 3 --prefix-tokens 256 --chunk 64 \
    --requests 8 --warmup 0 --spread 1 --gpu-cache 1M --cpu-cache 2M --store "$1" --json "$2" >/dev/null
}
field() { python3 -c "import json,sys;print(json.load(open(sys.argv[1]))$2)" "$1"; }
acc() { field "$1" "['runs'][0]['acc']"; }
preds() { python3 -c "import json,sys;print([r['pred'] for r in json.load(open(sys.argv[1]))['runs'][0]['per_request']])" "$1"; }
fail() { echo "FAIL ($case): $*"; exit 1; }
# expect_fail WHAT TEXT CMD...: CMD exits 1 with one line on stderr holding TEXT.
expect_fail() {
  local what=$1 text=$2 rc=0; shift 2
  "$@" >/dev/null 2>"$tmp/err" || rc=$?
  [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF -- "$text" "$tmp/err" ||
    { echo "stderr:"; cat "$tmp/err"; fail "$what: rc=$rc, wanted 1 and '$text'"; }
}

# The damages: the log's records name each (chunk, layer)'s offset.
damage() {  # damage KIND STORE
  python3 - "$1" "$2" "$0" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from store_files import chunk_offset as chunk, flip, records
kind, st = sys.argv[1], sys.argv[2]
recs = records(st)
first, last = recs[0][1], recs[-1][1]
ids = sorted({c["id"] for c in first["chunks"]})
middle_off = sorted(c["off"] for c in last["chunks"])[len(last["chunks"]) // 2]
if kind == "manifest-removed":
    os.remove(f"{st}/MANIFEST")
elif kind == "manifest-other-geometry":  # the MANIFEST of a store written with --chunk 32
    m = json.load(open(f"{st}/MANIFEST"))
    m["geometry"]["chunk_tokens"] = 32
    m["fingerprint"] = m["fingerprint"].replace("/c64", "/c32")
    open(f"{st}/MANIFEST", "w").write(json.dumps(m) + "\n")
elif kind == "chunks-cut-at-boundary":
    os.truncate(f"{st}/chunks.dat", middle_off)
elif kind == "chunks-cut-inside":
    os.truncate(f"{st}/chunks.dat", middle_off + 5000)
elif kind == "log-middle-flip":
    flip(f"{st}/log", recs[1][0] + 12 + 40)
elif kind == "chunk-part-flip-last":  # a prefix's last chunk: nothing behind it
    flip(f"{st}/chunks.dat", chunk(first, ids[-1], 7) + 100)
elif kind == "chunk-part-flip-middle":  # a prefix's first chunk: its other chunks are behind it
    flip(f"{st}/chunks.dat", chunk(first, ids[0], 0) + 100)
elif kind == "log-deleted":
    os.remove(f"{st}/log")
elif kind == "chunks-deleted":
    os.remove(f"{st}/chunks.dat")
PY
}

clean=$tmp/clean
run "$clean" "$tmp/first.json"
run "$(cp -r "$clean" "$tmp/again" && echo "$tmp/again")" "$tmp/ref.json"
ref=$(acc "$tmp/ref.json")
[ "$(field "$tmp/ref.json" "['runs'][0]['reused_tokens']")" -gt 0 ] || { case=clean; fail "the clean rerun reused nothing"; }
repair_model=(--model "$model" --chunk 64)

for case in manifest-removed manifest-other-geometry chunks-cut-at-boundary chunks-cut-inside log-middle-flip \
            chunk-part-flip-last chunk-part-flip-middle log-deleted chunks-deleted; do
  st=$tmp/$case; cp -r "$clean" "$st"; damage "$case" "$st"
  cp -r "$st" "$st.run"
  before=$(cd "$st" && sha256sum * | sha256sum)
  extra=()
  intact=""
  refused=1
  # What run and verify do on the damaged store.
  case $case in
    manifest-removed)
      expect_fail run "but no MANIFEST" run "$st.run" "$tmp/x.json"
      expect_fail verify "no store here (MANIFEST missing)" "$bin" store verify --store "$st"
      expect_fail repair "repair needs to know how the store was written" "$bin" store repair --store "$st"
      extra=("${repair_model[@]}") ;;
    manifest-other-geometry)
      expect_fail run "store was written for" run "$st.run" "$tmp/x.json"
      expect_fail verify "fails its checksum" "$bin" store verify --store "$st"
      expect_fail repair "holds its checksums under geometry" "$bin" store repair --store "$st"
      extra=("${repair_model[@]}") ;;
    log-middle-flip)
      expect_fail run "whole records follow it" run "$st.run" "$tmp/x.json"
      expect_fail verify "whole records follow it" "$bin" store verify --store "$st" ;;
    log-deleted)
      expect_fail run "but the log is missing" run "$st.run" "$tmp/x.json"
      expect_fail verify "but the log is missing" "$bin" store verify --store "$st" ;;
    chunks-deleted)  # the run goes on, recomputing; verify refuses and creates nothing
      run "$st.run" "$tmp/x.json"
      [ "$(field "$tmp/x.json" "['runs'][0]['recomputed_after_error']")" -gt 0 ] || fail "run: no recompute counted"
      expect_fail verify "chunks.dat is missing while the log lists chunks in it" "$bin" store verify --store "$st"
      [ "$before" = "$(cd "$st" && sha256sum * | sha256sum)" ] || fail "verify changed the store" ;;
    *)  # damaged chunks: the run goes on, recomputing what it cannot read (counted)
      refused=0
      run "$st.run" "$tmp/x.json"
      [ "$(field "$tmp/x.json" "['runs'][0]['recomputed_after_error']")" -gt 0 ] || fail "run: no recompute counted"
      "$bin" store verify --store "$st" --json >"$tmp/verify.json" 2>"$tmp/err" && fail "verify passed"
      grep -qF "chunk layers are damaged" "$tmp/err" || fail "verify: $(cat "$tmp/err")"
      intact=$(field "$tmp/verify.json" "['chunks_intact']") ;;
  esac
  [ "$refused" = 0 ] || [ "$before" = "$(cd "$st" && sha256sum * | sha256sum)" ] || fail "a refusal changed the store"
  "$bin" store repair --store "$st" --json "${extra[@]}" >"$tmp/repair.json" || fail "repair failed"
  r() { field "$tmp/repair.json" "['$1']"; }
  [ "$(r changed)" = True ] || fail "repair found nothing"
  kept=$(r chunks_kept); behind=$(r chunks_behind_damage)
  if [ -n "$intact" ]; then
    [ "$((kept + behind))" -eq "$intact" ] || fail "kept $kept + behind damage $behind != intact $intact"
    case $case in chunk-part-flip-middle) [ "$behind" -gt 0 ] || fail "nothing behind damage";;
                  *) [ "$behind" -eq 0 ] || fail "$behind chunks behind damage";; esac
  fi
  "$bin" store verify --store "$st" >/dev/null 2>"$tmp/err" || fail "verify after repair: $(cat "$tmp/err")"
  "$bin" store repair --store "$st" --json >"$tmp/again.json"
  [ "$(field "$tmp/again.json" "['changed']")" = False ] || fail "a second repair changed the store"
  [ "$(field "$tmp/again.json" "['kept_chunk_ids']")" = "$(r kept_chunk_ids)" ] || fail "a second repair kept other chunks"
  run "$st" "$tmp/rerun.json"
  [ "$(acc "$tmp/rerun.json")" = "$ref" ] || fail "accuracy $(acc "$tmp/rerun.json") after repair, $ref on a clean store"
  [ "$(preds "$tmp/rerun.json")" = "$(preds "$tmp/ref.json")" ] || fail "other predictions after repair"
  "$bin" store verify --store "$st" >/dev/null
  echo "store_damage: $case ok (kept $kept of $(r chunks_intact) intact chunks, $behind behind damage; accuracy $ref)"
done
# A store with nothing damaged: repair changes nothing, byte for byte.
before=$(cd "$clean" && sha256sum * | sha256sum)
"$bin" store repair --store "$clean" --json >"$tmp/repair.json"
case=undamaged
[ "$(field "$tmp/repair.json" "['changed']")" = False ] && [ "$before" = "$(cd "$clean" && sha256sum * | sha256sum)" ] ||
  fail "repair changed an undamaged store"
echo "store_damage: undamaged store left as it was"
