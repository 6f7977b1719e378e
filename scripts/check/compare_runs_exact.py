import json, sys
# Every counter of every run and every per-request log-likelihood of two run JSONs, equal or not.
def rows(p):
    j = json.load(open(p))
    runs = [r for res in (j["sweep"] if "sweep" in j else [j]) for r in res["runs"]]
    keys = ["bytes_read", "hit_rate", "chunks_read", "remote_chunks_read", "chunk_loads", "kv_chunks_per_request",
            "kv_hit_gpu", "kept_share", "fallback_share", "acc", "recomputed_after_error", "layer_kv_load_ratio", "fill",
            "reorder", "remote", "healed_chunks"]
    return [(r["system"], {k: r.get(k) for k in keys}, [x["loglik"] for x in r["per_request"]]) for r in runs]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert len(a) == len(b), (len(a), len(b))
same = all(x == y for x, y in zip(a, b))
for (s, ka, la), (_, kb, lb) in zip(a, b):
    print(f"{s:16s} remote MB {ka['bytes_read']['remote']/1e6:8.2f} -> {kb['bytes_read']['remote']/1e6:8.2f}  disk MB {ka['bytes_read']['disk']/1e6:7.2f} -> {kb['bytes_read']['disk']/1e6:7.2f}  acc {ka['acc']:.3f} -> {kb['acc']:.3f}  {'same' if (ka, la) == (kb, lb) else 'DIFF'}")
print("identical" if same else "DIFFERENT", f"({len(a)} runs: every counter above and every per-request log-likelihood)")
