#!/usr/bin/env bash
# Bad input through the real executable: each case must exit 1 with exactly one
# line on stderr that names the file and the problem (no crash, no backtrace).
# Usage: cli_errors.sh IMPRESS_BINARY FIXTURES_DIR
set -u
bin=$1; fixtures=$2
src=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['models']['tiny-llama-gqa'])" "$fixtures/fixtures.json")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0; passed=0

# expect NAME SUBSTRING -- ARGS...
expect() {
  local name=$1 want=$2; shift 3
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne 1 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$want" "$tmp/err"; then
    echo "FAIL $name: rc=$rc lines=$lines want '$want', stderr:"; sed 's/^/    /' "$tmp/err"
    failures=$((failures + 1))
  else
    passed=$((passed + 1))
  fi
}

# mkmodel NAME: a copy of the tiny Llama to corrupt.
mkmodel() { mkdir -p "$tmp/$1"; cp "$src"/* "$tmp/$1/"; echo "$tmp/$1"; }

expect "missing model dir" "/nonexistent/config.json: cannot open" -- info --model /nonexistent
m=$(mkmodel truncated); truncate -s 100000 "$m/model.safetensors"
expect "truncated safetensors" "$m/model.safetensors: tensor" -- generate --model "$m" --prompt hi -n 1
m=$(mkmodel tiny8); truncate -s 4 "$m/model.safetensors"
expect "4-byte safetensors" "$m/model.safetensors: truncated" -- info --model "$m"
m=$(mkmodel hugeheader); printf '\xff\xff\xff\xff\xff\xff\x00\x00' | dd of="$m/model.safetensors" conv=notrunc 2>/dev/null
expect "huge header length" "$m/model.safetensors: header length" -- info --model "$m"
m=$(mkmodel lying); python3 - "$m/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]; b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
k = sorted(k for k in h if k != '__metadata__')[0]; h[k]['data_offsets'][1] += 10**12
s = json.dumps(h).encode(); s += b' ' * (n - len(s)) if len(s) <= n else b''
open(p, 'wb').write(struct.pack('<Q', len(s)) + s + b[8 + n:])
PY
expect "offsets past end" "past the end of the data" -- info --model "$m"
m=$(mkmodel overlap); python3 - "$m/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]; b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
ks = sorted((v['data_offsets'][0], k) for k, v in h.items() if k != '__metadata__')
a, c = h[ks[0][1]], h[ks[1][1]]; c['data_offsets'] = [a['data_offsets'][0], a['data_offsets'][0] + c['data_offsets'][1] - c['data_offsets'][0]]
s = json.dumps(h).encode(); open(p, 'wb').write(struct.pack('<Q', len(s)) + s + b[8 + n:])
PY
expect "overlapping offsets" "overlapping data_offsets" -- info --model "$m"
m=$(mkmodel baddtype); python3 - "$m/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]; b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
k = sorted(k for k in h if k != '__metadata__')[0]; h[k]['dtype'] = 'F4'
s = json.dumps(h).encode(); open(p, 'wb').write(struct.pack('<Q', len(s)) + s + b[8 + n:])
PY
expect "unknown dtype" "unknown dtype 'F4'" -- info --model "$m"
m=$(mkmodel shapes); sed -i 's/"hidden_size": 64/"hidden_size": 72/' "$m/config.json"
expect "shapes disagree" "but config.json implies" -- generate --model "$m" --prompt hi -n 1
m=$(mkmodel arch); sed -i 's/"model_type": "llama"/"model_type": "bert"/' "$m/config.json"
expect "unknown architecture" "$m/config.json: unknown architecture model_type 'bert'" -- info --model "$m"
m=$(mkmodel badjson); echo '{"model_type": ' >"$m/config.json"
expect "malformed config" "$m/config.json: not valid JSON" -- info --model "$m"
m=$(mkmodel badtok); echo '{"model": {"type": "BPE", "vocab": {}, "merges": [["a", "b"]]}}' >"$m/tokenizer.json"
expect "malformed tokenizer" "$m/tokenizer.json: model.merges[0]" -- tokenize --model "$m" --text hi
m=$(mkmodel notok); rm "$m/tokenizer.json"
expect "missing tokenizer" "$m/tokenizer.json: cannot open" -- generate --model "$m" --prompt hi -n 1
expect "too-long prompt" "longer than the model's context of 2048" -- generate --model "$src" --prompt hi -n 5000
expect "invalid UTF-8" "--text: input text is not valid UTF-8" -- tokenize --model "$src" --text $'\xc3\x28'
expect "unknown figure" "unknown figure 'fig99'" -- reproduce fig99 --model "$src"
expect "missing expected numbers" "$tmp/none.json: cannot read" -- regress --model "$src" --expected "$tmp/none.json"
echo '{"config": ' >"$tmp/bad.json"
expect "malformed expected numbers" "$tmp/bad.json: not JSON" -- regress --model "$src" --expected "$tmp/bad.json"
# A wrongly shaped expected file is refused before anything is evaluated.
python3 -c 'import json, sys
spec = json.load(open(sys.argv[1])); spec["results"][1]["acc"] = "high"; json.dump(spec, open(sys.argv[2], "w"))' \
  "$(dirname "$0")/expected/accuracy_smollm2.json" "$tmp/shape.json"
expect "expected row of the wrong type" "$tmp/shape.json: results rte/recomp acc is not a number" -- regress --model "$src" --expected "$tmp/shape.json"
echo '{"config": {"tasks": ["piqa"], "systems": ["recomp"], "shots": 5, "limit": 2.5, "seed": 1, "retention": 1, "alpha": 0.6}, "tolerance": {}, "results": []}' >"$tmp/shape.json"
expect "expected config of the wrong type" "$tmp/shape.json: config.limit is not a non-negative integer" -- regress --model "$src" --expected "$tmp/shape.json"
echo '{"config": {"tasks": ["piqa"], "systems": ["recomp"], "shots": 5, "limit": 2, "seed": 1, "retention": 1, "alpha": 0.6, "retrieval": {"systems": ["recomp"], "prefix_tokens": 1024, "limit": 0}}, "tolerance": {}, "results": []}' >"$tmp/shape.json"
expect "retrieval row of no questions" "$tmp/shape.json: config.retrieval.limit is not a positive integer" -- regress --model "$src" --expected "$tmp/shape.json"
expect "substitute without a system" "--substitute impress: not SPEC_SYSTEM=SYSTEM" -- regress --model "$src" --expected "$(dirname "$0")/expected/accuracy_smollm2.json" --substitute impress

expect "no store" "$tmp/nostore: no store here (MANIFEST missing)" -- store compact --store "$tmp/nostore"
st=$tmp/store; mkdir -p "$st"; : >"$st/LOCK"
echo '{"format":1,"fingerprint":"f","geometry":{"chunk_tokens":16,"layers":2,"kv_heads":1,"head_dim":8,"probe_kv_heads":1,"elem_bytes":2}}' >"$st/MANIFEST"
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1]); fcntl.flock(f, fcntl.LOCK_EX); open(sys.argv[2], "w").close(); time.sleep(60)' \
  "$st/LOCK" "$tmp/locked" >/dev/null 2>&1 & holder=$!
for _ in $(seq 100); do [ -e "$tmp/locked" ] && break; sleep 0.1; done  # until the holder has the lock
expect "store in use" "$st: in use by another process" -- store compact --store "$st"
kill "$holder"; wait "$holder" 2>/dev/null

# The digest system needs a store that keeps digests; a store made without them is refused, and
# so is the shared tier (adopted chunks carry none).
nd=$tmp/nodigests data=$(dirname "$0")/../data
if ! "$bin" run --model "$src" --data "$data" --task piqa --system as --pool 1 --prefix-tokens 64 --requests 1 \
  --warmup 0 --chunk 16 --store "$nd" >/dev/null 2>"$tmp/err"; then
  echo "FAIL making a store without digests:"; sed 's/^/    /' "$tmp/err"; failures=$((failures + 1))
fi
expect "digest on a store without digests" "$nd: the store keeps no chunk digests" -- run --model "$src" \
  --data "$data" --task piqa --system digest --pool 1 --prefix-tokens 64 --requests 1 --warmup 0 --chunk 16 --store "$nd"
expect "digest with the shared tier" "--system digest does not run with --remote yet" -- run --model "$src" \
  --system digest --remote redis://127.0.0.1:1 --store "$tmp/digest_remote"
expect "unknown digest score" "--digest-score: bogus not in {keys,bound,rowmax}" -- eval --model "$src" --digest-score bogus
expect "unknown ITF unit" "--itf-unit: bogus not in {token,chunk} (--help lists the options)" -- eval --model "$src" --itf-unit bogus
# Task files: one line naming file:line and the problem, and nothing written.
tf=$tmp/tasks.jsonl ok='{"context": "A b c.", "question": " q", "choices": ["x", "y"], "gold": 0}'
task_file() {  # NAME SUBSTRING LINE2: a good line, then LINE2
  printf '%s\n%s\n' "$ok" "$3" >"$tf"
  expect "task file: $1" "$tf:2: $2" -- eval --model "$src" --task-file "$tf" --json "$tmp/tf.json" --samples "$tmp/tf.samples"
  expect "run task file: $1" "$tf:2: $2" -- run --model "$src" --task-file "$tf" --system recomp,as \
    --store "$tmp/tf_store" --json "$tmp/tf.json"
  if [ -e "$tmp/tf.json" ] || [ -e "$tmp/tf.samples" ] || [ -e "$tmp/tf_store" ]; then
    echo "FAIL task file: $1 wrote a file"; failures=$((failures + 1))
  fi
}
task_file "malformed JSON" "not valid JSON" '{"context": "A",'
task_file "missing field" 'no "question" field' '{"context": "A", "answers": ["1"]}'
task_file "mistyped field" '"choices" is not a list of strings' '{"context": "A", "question": "q", "choices": "xy", "gold": 0}'
task_file "gold out of range" '"gold" 2 is out of range for 2 choices' '{"context": "A", "question": "q", "choices": ["x", "y"], "gold": 2}'
task_file "empty context" '"context" is empty' '{"context": "", "question": "q", "answers": ["1"]}'
long=$(python3 -c "print(' '.join(['word'] * 3000))")
task_file "too long for the model" "the shared prefix: sequence of" "{\"context\": \"$long\", \"question\": \" q\", \"answers\": [\"1\"]}"
expect "task file beside --task" "--task excludes --task-file" -- eval --model "$src" --task piqa --task-file "$tf"
expect "task file from a few-shot task" "--write-task-file writes --task retrieval only" -- eval --model "$src" --task piqa --write-task-file "$tmp/w.jsonl"
expect "run: task file beside --task" "--task excludes --task-file" -- run --model "$src" --task piqa --task-file "$tf"
expect "run: task file beside --pool" "--task-file excludes --pool" -- run --model "$src" --task-file "$tf" --pool 2
expect "even importance pool" "--importance-pool: must be an odd number >= 1, not '4'" -- run --model "$src" --importance-pool 4
expect "unknown probe layout" "--probe-layout: middle not in {first,spread}" -- reproduce fig15 --model "$src" --probe-layout middle
expect "ITF unit list with a bogus one" "--itf-unit: bogus not in {token,chunk}" -- run --model "$src" --itf-unit token,bogus
expect "chunk of 0 tokens" "--chunk: must be a positive number, not '0' (--help lists the options)" -- run --model "$src" --chunk 16,0
expect "unknown option" "The following argument was not expected: --bogus" -- run --model "$src" --bogus
expect "speculation without read-ahead" "--no-prefetch excludes --speculate" -- run --model "$src" --speculate --no-prefetch
expect "read-ahead without prefetch" "--no-prefetch excludes --read-ahead" -- run --model "$src" --read-ahead 2 --no-prefetch
expect "read-ahead of no layer" "--read-ahead: Value 0 not in range" -- run --model "$src" --read-ahead 0
expect "run without a model" "--model is required" -- run --task piqa
expect "reproduce without a figure" "name a figure, or all (\`impress list figures\` prints them)" -- reproduce --model "$src"
expect "list of nothing known" "what: bogus not in {systems,figures,tasks,codecs}" -- list bogus
expect "reproduce without a model" "--model is required" -- reproduce fig16

# The registries the scripts read (`impress list`): the paper's seven systems
# in its ablation's order, all with the controls, the figures, the tasks and
# the codecs, one per line; and with --json each entry's properties as the
# paper defines the systems (DESIGN.md: IMPRESS = probe heads + reordering +
# the score cache; static is eval-only so far).
systems=$("$bin" list systems --paper | paste -sd,)
every=$("$bin" list systems | paste -sd,)
figures=$("$bin" list figures | wc -l)
tasks=$("$bin" list tasks | paste -sd,)
codecs=$("$bin" list codecs | paste -sd,)
if [ "$systems" = "recomp,as,h2o-lru,h2o-lfu,impress-itf,impress-itf-ro,impress" ] &&
   [ "$every" = "$systems,random,static,digest" ] && [ "$figures" -eq 18 ] &&
   [ "$tasks" = "piqa,rte,copa,openbookqa,retrieval" ] && [[ "$codecs" == fp16,int8,int4,k8v4* ]]; then  # stores record these; new codecs come after
  passed=$((passed + 1))
else
  echo "FAIL name lists: systems '$systems', all '$every', $figures figures, tasks '$tasks', codecs '$codecs'"
  failures=$((failures + 1))
fi
if "$bin" list systems --json | python3 -c '
import json, sys
s = {e["name"]: e for e in json.load(sys.stdin)["systems"]}
assert s["impress"]["selection"] == "itf" and s["impress"]["policy"] == "score" and s["impress"]["reorder"]
assert s["impress-itf"]["uses_probe_heads"] and not s["impress-itf"]["reorder"] and s["impress-itf"]["policy"] == "lfu"
assert s["h2o-lru"]["depends_on_retention"] and not s["h2o-lru"]["uses_probe_heads"]
assert not s["recomp"]["reuse"] and not s["as"]["depends_on_retention"]
assert not s["static"]["served_from_store"] and not s["static"]["paper"] and s["random"]["served_from_store"]
' && "$bin" list codecs --json | python3 -c '
import json, sys
c = {e["name"]: e for e in json.load(sys.stdin)["codecs"]}
assert c["fp16"]["key_bytes_per_value"] == 2 and 1 < c["int8"]["key_bytes_per_value"] < 1.1
assert 0.5 < c["int4"]["value_bytes_per_value"] < 0.65 and c["k8v4"]["key_bytes_per_value"] == c["int8"]["key_bytes_per_value"]
'; then
  passed=$((passed + 1))
else
  echo "FAIL list --json: a property differs from the paper's definition of the system or the codec"
  failures=$((failures + 1))
fi

echo "cli_errors: $passed passed, $failures failed"
[ "$failures" -eq 0 ]
