# the digest system's store path: what it chooses and what it costs, one thread
rm -rf /tmp/ba_store
$1 run --model models/smollm2-135m --task retrieval --system digest --retention 0.25 --pool 4 --prefix-tokens 2048 \
  --requests 24 --warmup 4 --gpu-cache 8M --cpu-cache 16M --store /tmp/ba_store --threads 1 --json $2 > /dev/null 2>&1
python3 - $2 <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); r=d['runs'][0]
rows=r['per_request']
print('acc',r['acc'],'kv_chunks/req',r['kv_chunks_per_request'],'disk_bytes',sum(x['disk_bytes'] for x in rows),'digest_bytes',sum(x['digest_bytes'] for x in rows))
print('logliks', [round(x,6) for x in sum((x['loglik'] for x in rows), [])][:6], 'sum', round(sum(sum(x['loglik']) for x in rows),6))
print("select_ms", r["select_ms"])
PY
