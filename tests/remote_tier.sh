#!/usr/bin/env bash
# The remote tier against a real Redis Cluster on loopback (three masters,
# three replicas; scripts/setup/redis_cluster.sh), started here and stopped on exit:
#  1. two processes, each with its own empty local store: the second serves
#     the first's prefixes from the cluster without computing them, with the
#     same log-likelihoods and accuracy, reordering included;
#  1c. under a KV codec (int4): the cluster holds the encoded parts, a second
#     process serves them with the same answers, a store of another codec
#     names its chunks apart, and a marker that names another codec is
#     refused (counted, one line) and the chunk recomputed;
#  2. bytes flipped in a stored value (SETRANGE) are detected, recomputed and
#     kept on the local disk, and so is a part that was evicted (DEL): every
#     answer bitwise the undamaged run's, and a second run on that local store
#     recomputes nothing;
#  2c. a live reshard under a reader: same answers, the MOVED and ASK
#     redirects counted;
#  3. a master killed (SIGKILL) mid-run: same answers, failed reads counted,
#     remote hits after the replica takes over;
#  4. a cluster whose maxmemory is below the pool: evictions are misses,
#     memory stays under the limit, same answers;
#  5. an unreachable cluster and a malformed address are one-line errors.
# Usage: remote_tier.sh IMPRESS MODEL DATA [BASE_PORT]
set -euo pipefail
bin=$1; model=$2; data=$3; base=${4:-7300}
here=$(cd "$(dirname "$0")/.." && pwd)
cluster="$here/scripts/setup/redis_cluster.sh"
tmp=$(mktemp -d)
export TMPDIR=$tmp  # the clusters' data too
cleanup() {
  bash "$cluster" stop "$base" >/dev/null 2>&1 || true
  bash "$cluster" stop $((base + 10)) >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

url=$(bash "$cluster" start "$base")
run() {  # STORE JSON [args...]: a short PIQA stream on the real model
  local store=$1 json=$2; shift 2
  "$bin" run --model "$model" --data "$data" --task piqa --pool 2 --prefix-tokens 512 --chunk 64 \
    --warmup "${WARMUP:-0}" --gpu-cache 2M --cpu-cache 4M --store "$store" --json "$json" "$@" >"$json.log" 2>&1 ||
    { echo "remote_tier: run failed:"; tail -5 "$json.log"; exit 1; }
}
check() { python3 - "$@"; }

# 1. Share: A computes and publishes; B, with an empty store, adopts and reads.
run "$tmp/a" "$tmp/a.json" --requests 8 --system as,h2o-lfu,impress-itf --remote "$url"
run "$tmp/b" "$tmp/b.json" --requests 8 --system as,h2o-lfu,impress-itf --remote "$url"
check "$tmp/a.json" "$tmp/b.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["runs"][0]["remote"]["chunks_written"] > 0, "A published nothing"
assert a["runs"][0]["fill"]["computed_prefixes"] == 2
for ra, rb in zip(a["runs"], b["runs"]):
    s = ra["system"]
    assert rb["fill"]["computed_prefixes"] == 0 and rb["fill"]["computed_tokens"] == 0, (s, rb["fill"])
    assert rb["bytes_read"]["remote"] > 0 and rb["bytes_read"]["disk"] == 0, (s, rb["bytes_read"])
    assert ra["bytes_read"]["remote"] == 0, (s, ra["bytes_read"])
    assert rb["recomputed_after_error"] == 0 and rb["remote"]["read_errors"] == 0, s
    assert all(x["reused_tokens"] > 0 for x in rb["per_request"]), s
    assert [x["loglik"] for x in ra["per_request"]] == [x["loglik"] for x in rb["per_request"]], s
    assert ra["acc"] == rb["acc"], s
    # the same bytes from another tier: selection reads the same parts
    assert sum(ra["bytes_read"].values()) == sum(rb["bytes_read"].values()), s
assert b["runs"][0]["fill"]["adopted_chunks"] > 0
print("remote_tier: shared pool served from the cluster, answers identical")
PY
# 1b. Reordering on the machine that reads from the cluster: its copies go to
# the cluster too, its local disk stays empty, its answers equal A's.
WARMUP=2 run "$tmp/a2" "$tmp/a2.json" --requests 6 --system impress --remote "$url"
WARMUP=2 run "$tmp/b2" "$tmp/b2.json" --requests 6 --system impress --remote "$url"
check "$tmp/a2.json" "$tmp/b2.json" "$tmp/b2/chunks.dat" <<'PY'
import json, os, sys
ra, rb = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
assert ra["reorder"]["nodes_reordered"] > 0 and rb["reorder"]["nodes_reordered"] > 0
assert os.path.getsize(sys.argv[3]) == 0, "B wrote KV to its local disk"
assert rb["bytes_read"]["remote"] > 0 and rb["bytes_read"]["disk"] == 0, rb["bytes_read"]
assert rb["remote"]["chunks_written"] > 0, "B's copies were not published"
assert [x["loglik"] for x in ra["per_request"]] == [x["loglik"] for x in rb["per_request"]]
print("remote_tier: B's reordered copies live in the cluster, its disk holds nothing, answers identical")
PY
# 1c. A KV codec: QA (int4) publishes encoded parts; QB (int4, empty store)
# serves them with QA's answers, reading about 3x fewer bytes from the
# cluster than B's float16 run of the same stream.
run "$tmp/qa" "$tmp/qa.json" --requests 8 --system as,impress-itf --remote "$url" --kv-codec int4
run "$tmp/qb" "$tmp/qb.json" --requests 8 --system as,impress-itf --remote "$url" --kv-codec int4
check "$tmp/b.json" "$tmp/qa.json" "$tmp/qb.json" <<'PY'
import json, sys
b, qa, qb = (json.load(open(p)) for p in sys.argv[1:4])
assert qa["runs"][0]["fill"]["computed_prefixes"] == 2, "int4 found the float16 chunks"
for ra, rb in zip(qa["runs"], qb["runs"]):
    s = ra["system"]
    assert rb["fill"]["computed_prefixes"] == 0, (s, rb["fill"])
    assert rb["bytes_read"]["disk"] == 0 and rb["recomputed_after_error"] == 0, (s, rb["bytes_read"])
    assert rb["bytes_read"]["remote"] > 0, (s, rb["bytes_read"])
    assert [x["loglik"] for x in ra["per_request"]] == [x["loglik"] for x in rb["per_request"]], s
# Bytes per chunk-layer `as` read from the cluster (keys and values): float16
# exactly 2 x 64 x 3 x 64 x 2; int4 a mix of int4 chunks and first chunks at
# int8 (docs/store.md's part sizes for SmolLM2), so the count of each is whole.
tkd = 64 * 3 * 64
fp16_pair, int8_pair, int4_pair = 2 * 2 * tkd, 2 * (tkd + 2 * 64 * 3), (tkd // 2 + 4 * 3 * 64) + (tkd // 2 + 4 * tkd // 32)
rb, rq = b["runs"][0], qb["runs"][0]
assert rb["bytes_read"]["remote"] == rb["remote_chunks_read"] * fp16_pair, rb
n, got = rq["remote_chunks_read"], rq["bytes_read"]["remote"]
n8, rest = divmod(got - n * int4_pair, int8_pair - int4_pair)
assert rest == 0 and 0 <= n8 <= n, (got, n)
ratio = fp16_pair * n / got
print("remote_tier: int4 chunks served from the cluster, answers identical; %.2fx fewer bytes read than float16 "
      "(%d chunk layers, %d of them first chunks at int8)" % (ratio, n, n8))
PY
# A marker naming another codec (the first chunks', int8 under int4, made to
# say int4 with a valid frame): refused with one line, counted, recomputed.
n=$(python3 "$here/tests/remote_markers.py" 1 2 "$base" $((base + 1)) $((base + 2)))
[ "$n" -eq 2 ] || { echo "remote_tier: expected the 2 first-chunk markers of int4, rewrote $n"; exit 1; }
run "$tmp/qd" "$tmp/qd.json" --requests 8 --system as --remote "$url" --kv-codec int4
check "$tmp/qa.json" "$tmp/qd.json" "$tmp/qd.json.log" <<'PY'
import json, sys
ra, rd = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
lines = [l for l in open(sys.argv[3]) if "written with KV codec" in l]
assert len(lines) == 1 and "written with KV codec int4, read as int8" in lines[0], lines
assert rd["fill"]["remote_codec_mismatches"] == 2 and rd["fill"]["computed_prefixes"] == 2, rd["fill"]
assert [x["pred"] for x in ra["per_request"]] == [x["pred"] for x in rd["per_request"]]
print("remote_tier: markers of another codec refused (%d), prefixes recomputed, answers identical"
      % rd["fill"]["remote_codec_mismatches"])
PY
"$bin" store verify --store "$tmp/a" --remote "$url" | tee "$tmp/verify.log"
grep -qE "verify --remote: ([0-9]+) of \1 chunks in the cluster, [0-9]+ chunk layers match their checksums, 0 missing" "$tmp/verify.log"

# original_part LAYER PART: "PORT KEY" of a part of a float16 chunk of the pool
# (its marker holds 64 tokens and codec 0: 4 + 16 + 256 + 1 bytes, the last 0),
# not of a reordered copy, nor of 1c's int4 chunks.
original_part() {
  local p m
  for p in $base $((base + 1)) $((base + 2)); do
    for m in $(redis-cli -p "$p" --scan --pattern 'imp:*:m'); do
      [ "$(redis-cli -p "$p" strlen "$m")" -eq 277 ] || continue
      [ "$(redis-cli -p "$p" --raw getrange "$m" 276 276 | head -c1 | od -An -tu1 | tr -d ' \n')" = 0 ] || continue
      echo "$p ${m%:m}:L$1:$2"; return
    done
  done
  echo "remote_tier: no chunk of the pool in the cluster" >&2; exit 1
}

# 2. A damaged value: flip bytes of one stored value part, on its master.
read -r vport victim < <(original_part 3 v)
redis-cli -p "$vport" setrange "$victim" 100 "flipped!" >/dev/null
run "$tmp/c" "$tmp/c.json" --requests 8 --system as --remote "$url"
check "$tmp/a.json" "$tmp/c.json" <<'PY'
import json, sys
a, c = (json.load(open(p)) for p in sys.argv[1:3])
ra, rc = a["runs"][0], c["runs"][0]
assert rc["remote"]["parts_corrupt"] >= 1, rc["remote"]
assert rc["recomputed_after_error"] >= 1 and rc["healed_chunks"] >= 1, "the damaged chunk was served"
# A recomputed chunk is the chunk the fill computed: every answer is A's, bit for bit.
assert [x["loglik"] for x in ra["per_request"]] == [x["loglik"] for x in rc["per_request"]]
print("remote_tier: damaged value detected (%d parts), %d requests recomputed, %d chunks kept locally, "
      "answers bitwise identical" % (rc["remote"]["parts_corrupt"], rc["recomputed_after_error"], rc["healed_chunks"]))
PY
run "$tmp/c" "$tmp/c2.json" --requests 8 --system as --remote "$url"
check "$tmp/a.json" "$tmp/c2.json" <<'PY'
import json, sys
ra, rc = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
assert rc["recomputed_after_error"] == 0 and rc["healed_chunks"] == 0, rc["recomputed_after_error"]
assert rc["bytes_read"]["disk"] > 0, "the kept chunk was not read from the local disk"
assert [x["loglik"] for x in ra["per_request"]] == [x["loglik"] for x in rc["per_request"]]
print("remote_tier: the next run reads the kept chunk locally, recomputes nothing, answers bitwise identical")
PY
# Every other system that reuses KV over the same damaged cluster, each from
# its own empty local store: what it reads of the damaged chunk is recomputed
# and kept; every answer is bitwise the same system's on a copy of A's
# undamaged local store, and a second run recomputes nothing.
cp -r "$tmp/a" "$tmp/a-ref" && rm -f "$tmp/a-ref/LOCK"
for sys in h2o-lru h2o-lfu impress-itf impress-itf-ro impress; do
  run "$tmp/a-ref" "$tmp/ref-$sys.json" --requests 8 --system "$sys" --remote "$url"
  run "$tmp/c-$sys" "$tmp/c-$sys.json" --requests 8 --system "$sys" --remote "$url"
  run "$tmp/c-$sys" "$tmp/c2-$sys.json" --requests 8 --system "$sys" --remote "$url"
  check "$tmp/ref-$sys.json" "$tmp/c-$sys.json" "$tmp/c2-$sys.json" "$sys" <<'PY'
import json, sys
name = sys.argv[4]
ra, met, after = (json.load(open(p))["runs"][0] for p in sys.argv[1:4])
assert ra["recomputed_after_error"] == 0 and ra["bytes_read"]["remote"] == 0, (name, "the reference read the cluster")
ll = lambda r: [x["loglik"] for x in r["per_request"]]
assert ll(met) == ll(ra) and ll(after) == ll(ra), name
assert (met["recomputed_after_error"] > 0) == (met["healed_chunks"] > 0), (name, met["recomputed_after_error"])
assert after["recomputed_after_error"] == 0, name
print("remote_tier: %s over the damaged cluster: %d requests recomputed, %d chunks kept locally; both runs' "
      "answers bitwise A's" % (name, met["recomputed_after_error"], met["healed_chunks"]))
PY
done
if "$bin" store verify --store "$tmp/a" --remote "$url" >/dev/null 2>"$tmp/err"; then
  echo "remote_tier: verify --remote missed the damaged value"; exit 1
fi
grep -q "checksum mismatch" "$tmp/err" && [ "$(wc -l <"$tmp/err")" -eq 1 ]

# 2b. An evicted part (what maxmemory does to a key, done here by hand so that
# the chunk's marker stays): a miss, recomputed, counted.
read -r gport gone < <(original_part 5 k)
[ "$(redis-cli -p "$gport" del "$gone")" -eq 1 ] || { echo "remote_tier: $gone was not there"; exit 1; }
run "$tmp/d" "$tmp/d.json" --requests 8 --system as --remote "$url"
check "$tmp/a.json" "$tmp/d.json" <<'PY'
import json, sys
ra, rd = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
assert rd["remote"]["parts_missing"] >= 1 and rd["recomputed_after_error"] >= 1, rd["remote"]
assert rd["healed_chunks"] >= 1, rd["healed_chunks"]
assert [x["loglik"] for x in ra["per_request"]] == [x["loglik"] for x in rd["per_request"]]
print("remote_tier: evicted part missed (%d parts), %d requests recomputed, answers identical"
      % (rd["remote"]["parts_missing"], rd["recomputed_after_error"]))
PY

# The reference for 2c and 3: the same stream without faults.
run "$tmp/a" "$tmp/ref.json" --requests 60 --system as --remote "$url"
# 2c. A live reshard under a reader: 1000 slots of the first master move to
# the second while B reads. The moved keys answer MOVED (and ASK while their
# slot migrates); the client follows, counts the redirects, and answers the
# same as the reference.
hits0() { redis-cli -p "$base" info stats | sed -n 's/^keyspace_hits:\([0-9]*\).*/\1/p'; }
before=$(hits0)
run "$tmp/r" "$tmp/r.json" --requests 60 --system as --remote "$url" &
runner=$!
for _ in $(seq 1200); do [ "$(hits0)" -gt $((before + 1000)) ] && break; sleep 0.05; done
kill -0 "$runner" 2>/dev/null || { echo "remote_tier: B finished before the reshard"; exit 1; }
redis-cli --cluster reshard "127.0.0.1:$base" --cluster-from "$(redis-cli -p "$base" cluster myid)" \
  --cluster-to "$(redis-cli -p $((base + 1)) cluster myid)" --cluster-slots 1000 --cluster-yes >"$tmp/reshard.log" 2>&1 ||
  { echo "remote_tier: reshard failed:"; tail -5 "$tmp/reshard.log"; exit 1; }
resharded_while_running=0
kill -0 "$runner" 2>/dev/null && resharded_while_running=1
wait "$runner"
check "$tmp/ref.json" "$tmp/r.json" "$resharded_while_running" <<'PY'
import json, sys
ref, r = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
rr = r["remote"]
assert rr["moved"] + rr["ask"] > 0, ("no redirect counted under a live reshard", rr)
assert rr["read_errors"] == 0, rr
# 2 and 2b left a damaged and a missing part in the cluster: the requests that
# meet them recompute and keep the chunks locally; every request has the
# reference's very log-likelihoods.
assert [x["loglik"] for x in ref["per_request"]] == [x["loglik"] for x in r["per_request"]]
print("remote_tier: live reshard of 1000 slots (%s): %d MOVED, %d ASK, %d slot-map reloads, no read error, answers identical"
      % ("done while B read" if sys.argv[3] == "1" else "B finished first", rr["moved"], rr["ask"], rr["slot_reloads"]))
PY

# 3. A master killed mid-run, against the same reference.
# The master is killed once B is reading from it (its GET hits grow), however
# long B took to start on a loaded machine.
hits() { redis-cli -p $((base + 1)) info stats | sed -n 's/^keyspace_hits:\([0-9]*\).*/\1/p'; }
before=$(hits)
run "$tmp/k" "$tmp/k.json" --requests 60 --system as --remote "$url" &
runner=$!
for _ in $(seq 1200); do [ "$(hits)" -gt $((before + 2000)) ] && break; sleep 0.05; done
kill -0 "$runner" 2>/dev/null || { echo "remote_tier: B finished before the kill"; exit 1; }
kill -9 "$(bash "$cluster" pid $((base + 1)))"
wait "$runner"
check "$tmp/ref.json" "$tmp/k.json" <<'PY'
import json, sys
ref, k = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
assert k["remote"]["read_errors"] > 0, ("the kill was not seen", k["remote"])
assert [x["loglik"] for x in ref["per_request"]] == [x["loglik"] for x in k["per_request"]]
failed = [i for i, x in enumerate(k["per_request"]) if x["recomputed_after_error"]]
assert failed, "no request saw the failure"
after = [x for x in k["per_request"][failed[-1] + 1:] if x["remote_bytes"] > 0]
assert after, "no remote hits after the replica took over"
# The client saw the node go and read the slot map again until a replica served its slots.
assert k["remote"]["slot_reloads"] > 0, ("no slot-map reload counted", k["remote"])
print("remote_tier: master killed: %d read errors, %d requests recomputed, %d later requests read %.1f MB remotely, answers identical; %d slot-map reloads, %d timeouts, %d reconnects, %d MOVED"
      % (k["remote"]["read_errors"], len(failed), len(after), sum(x["remote_bytes"] for x in after) / 1e6,
         k["remote"]["slot_reloads"], k["remote"]["timeouts"], k["remote"]["reconnects"], k["remote"]["moved"]))
PY
redis-cli -p "$base" cluster nodes | grep -q "127.0.0.1:$((base + 1))@[0-9]* master,fail"  # and a replica serves its slots

# 4. maxmemory below the pool: each server holds 4 MB, the pool ~13 MB of values.
mm_url=$(MAXMEMORY=4mb MAXMEMORY_POLICY=allkeys-lru bash "$cluster" start $((base + 10)))
run "$tmp/m1" "$tmp/m1.json" --requests 8 --system as --remote "$mm_url"
run "$tmp/m2" "$tmp/m2.json" --requests 8 --system as --remote "$mm_url"
"$bin" store stats --store "$tmp/m1" --remote "$mm_url" --json >"$tmp/mstats.json"
for p in $((base + 10)) $((base + 11)) $((base + 12)); do redis-cli -p "$p" info memory; done >"$tmp/meminfo"
check "$tmp/m1.json" "$tmp/m2.json" "$tmp/mstats.json" "$tmp/meminfo" <<'PY'
import json, sys
m1, m2 = (json.load(open(p))["runs"][0] for p in sys.argv[1:3])
stats = json.load(open(sys.argv[3]))["remote"]
evicted = sum(m["evicted_keys"] for m in stats["masters"])
assert evicted > 0, "nothing was evicted: the pool fits"
assert stats["chunks_in_cluster"] < stats["chunks"] or m2["remote"]["parts_missing"] > 0
assert m2["fill"]["computed_prefixes"] > 0 or m2["remote"]["parts_missing"] > 0, "evictions unseen"
# Redis evicts before it runs each command until used_memory, less what it
# does not count (replication buffers), is within maxmemory; the last write
# may leave it above by that write: one part, 12 KiB here, and its key.
for block in open(sys.argv[4]).read().split("# Memory"):
    f = dict(l.strip().split(":", 1) for l in block.splitlines() if ":" in l)
    if "maxmemory" in f:
        used = int(f["used_memory"]) - int(f.get("mem_not_counted_for_evict", 0))
        assert used <= int(f["maxmemory"]) + 16384, (used, f["maxmemory"])
assert [x["loglik"] for x in m1["per_request"]] == [x["loglik"] for x in m2["per_request"]]
print("remote_tier: maxmemory: %d keys evicted, %d of %d chunks left whole, B computed %d prefixes and missed %d parts, answers identical"
      % (evicted, stats["chunks_in_cluster"], stats["chunks"], m2["fill"]["computed_prefixes"], m2["remote"]["parts_missing"]))
PY

# 5. Errors at start: one line naming the address, exit 1.
for bad in "redis://127.0.0.1:1" "redis://nohost"; do
  if "$bin" run --model "$model" --data "$data" --task piqa --pool 1 --prefix-tokens 128 --requests 1 --warmup 0 \
       --system as --store "$tmp/e" --remote "$bad" >/dev/null 2>"$tmp/err"; then
    echo "remote_tier: --remote $bad accepted"; exit 1
  fi
  [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "${bad#redis://}" "$tmp/err" || { cat "$tmp/err"; exit 1; }
done
echo "remote_tier: ok"
