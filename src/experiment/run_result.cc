#include "experiment/run_result.h"

namespace impress {

RemoteTally RemoteTally::operator-(const RemoteTally& b) const {
  RemoteTally d;
  d.lookups = lookups - b.lookups;
  d.chunks_found = chunks_found - b.chunks_found;
  d.codec_mismatches = codec_mismatches - b.codec_mismatches;
  d.parts_read = parts_read - b.parts_read;
  d.parts_missing = parts_missing - b.parts_missing;
  d.parts_corrupt = parts_corrupt - b.parts_corrupt;
  d.read_errors = read_errors - b.read_errors;
  d.bytes_read = bytes_read - b.bytes_read;
  d.chunks_written = chunks_written - b.chunks_written;
  d.write_errors = write_errors - b.write_errors;
  d.bytes_written = bytes_written - b.bytes_written;
  d.moved = moved - b.moved;
  d.ask = ask - b.ask;
  d.slot_reloads = slot_reloads - b.slot_reloads;
  d.reconnects = reconnects - b.reconnects;
  d.timeouts = timeouts - b.timeouts;
  return d;
}

nlohmann::ordered_json RemoteTally::ToJson() const {
  return {{"lookups", lookups}, {"chunks_found", chunks_found}, {"codec_mismatches", codec_mismatches},
          {"parts_read", parts_read},
          {"parts_missing", parts_missing}, {"parts_corrupt", parts_corrupt}, {"read_errors", read_errors},
          {"bytes_read", bytes_read}, {"chunks_written", chunks_written}, {"write_errors", write_errors},
          {"bytes_written", bytes_written}, {"moved", moved}, {"ask", ask}, {"slot_reloads", slot_reloads},
          {"reconnects", reconnects}, {"timeouts", timeouts}};
}

namespace {

// The per-request rows, keys in sorted order, as the run JSON has always had them.
nlohmann::json RequestRowsJson(const std::vector<RequestRow>& per_request) {
  nlohmann::json rows = nlohmann::json::array();
  for (const RequestRow& x : per_request)
    rows.push_back({{"prefix", x.prefix}, {"doc", x.doc}, {"ttft_ms", x.ttft_ms}, {"io_ms", x.io_ms},
                    {"select_ms", x.select_ms}, {"reused_tokens", x.reused_tokens}, {"kv_chunks", x.kv_chunks},
                    {"recomputed_after_error", x.recomputed_after_error}, {"healed_chunks", x.healed_chunks}, {"pred", x.pred}, {"loglik", x.loglik}});
  for (size_t i = 0; i < per_request.size(); ++i) {  // only where they apply: other runs' JSON stays as it was
    const RequestRow& x = per_request[i];
    for (Tier t : kTiers)  // "disk_bytes", "remote_bytes": what came from below the caches
      if (!IsCacheTier(t)) rows[i][std::string(TierName(t)) + "_bytes"] = x.bytes[t];
    if (x.digest_bytes > 0) rows[i]["digest_bytes"] = x.digest_bytes;  // digests were scored
    if (x.line > 0) rows[i]["line"] = x.line;                          // a task file's question
    if (x.output) rows[i]["output"] = *x.output, rows[i]["answers_found"] = x.answers_found;  // it generated
  }
  return rows;
}

}  // namespace

nlohmann::ordered_json RunResult::ToJson() const {
  nlohmann::ordered_json by_tier, hits;
  for (Tier t : kTiers) by_tier[TierName(t)] = bytes_read[t];
  for (Tier t : kTiers)
    if (IsCacheTier(t)) hits[TierName(t)] = hit_rate[t];
  nlohmann::ordered_json j = {
      {"system", system}, {"requests", requests},
      {"ttft_ms", {{"mean", ttft_ms.mean}, {"p50", ttft_ms.p50}, {"p99", ttft_ms.p99}}},
      {"io_ms", {{"mean", io_ms_mean}}}, {"io_share", io_share}, {"select_ms", {{"mean", select_ms_mean}, {"importance", select_parts.importance_ms},
                     {"decision", select_parts.decision_ms}, {"gather", select_parts.gather_ms}}},
      {"placement_ms", {{"mean", placement_ms_mean}}},
      {"host_syncs_per_layer", {{"mean", host_syncs_per_layer.mean}, {"max", host_syncs_per_layer.max},
                                {"fallback_layers", host_syncs_per_layer.fallback_layers},
                                {"other_layers", host_syncs_per_layer.other_layers}}},
      {"bytes_read", by_tier},
      {"hit_rate", hits}, {"chunks_read", chunks_read[kHomeTier]}};
  for (Tier t : kTiers)  // "remote_chunks_read"
    if (IsBelowHome(t)) j[std::string(TierName(t)) + "_chunks_read"] = chunks_read[t];
  j.update(nlohmann::ordered_json{
      {"kv_chunks_per_request", kv_chunks_per_request},
      {std::string("kv_hit_") + TierName(kTiers[0]), kv_hit_rate[kTiers[0]]}, {"chunk_loads", chunk_loads},
      {"reused_tokens", reused_tokens}, {"computed_tokens", computed_tokens},
      {"recomputed_after_error", recomputed_after_error}, {"healed_chunks", healed_chunks}, {"acc", acc}, {"policy", policy},
      {"kept_share", kept_share}, {"fallback_share", fallback_share},
      {"important_share_of_chunks_read", important_share_of_chunks_read},
      {"layer_kept_share", layer_kept_share}, {"layer_kv_load_ratio", layer_kv_load_ratio},
      {"layer_fallback_share", layer_fallback_share},
      {"speculated_chunks_per_request", speculated_chunks_per_request},
      {"speculated_used_share", speculated_used_share}, {"per_request", RequestRowsJson(per_request)}});
  if (device_timeline) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const DeviceTimelineSection::Layer& l : device_timeline->per_layer_mean)
      layers.push_back({{"load_ms", l.load_ms}, {"compute_ms", l.compute_ms}, {"wait_ms", l.wait_ms}});
    j["device_timeline"] = {{"copy_hidden_share", device_timeline->copy_hidden_share}, {"per_layer_mean", layers}};
  }
  if (repeated) j["repeated"] = true;  // only on a repeated row
  if (fill)
    j["fill"] = {{"computed_prefixes", fill->computed_prefixes}, {"computed_tokens", fill->computed_tokens},
                 {"adopted_chunks", fill->adopted_chunks}, {"remote_codec_mismatches", fill->remote_codec_mismatches}};
  if (remote) j["remote"] = remote->ToJson();
  if (reorder) {
    const ReorderSection& r = *reorder;
    j["reorder"] = {{"every_requests", r.every_requests}, {"passes", r.passes},
                    {"nodes_reordered", r.nodes_reordered}, {"chunks_written", r.chunks_written},
                    {"bytes_freed", r.bytes_freed}, {"log_bytes_dropped", r.log_bytes_dropped},
                    {"housekeeping_failures", r.housekeeping_failures},
                    {"mapping_bytes", r.mapping_bytes}, {"score_bytes", r.score_bytes},
                    {"history_bytes", r.history_bytes}, {"chunk_bytes", r.chunk_bytes}};
  }
  return j;
}

StatusOr<const RunResult*> RunResults::Find(const std::string& system) const {
  for (const RunResult& r : runs)
    if (r.system == system) return &r;
  std::string had;
  for (const RunResult& r : runs) had += (had.empty() ? "" : ", ") + r.system;
  return Status::InvalidArgument("the run has no system '" + system + "' (it ran " + had + ")");
}

nlohmann::ordered_json RunResults::ToJson() const {
  nlohmann::ordered_json j;
  j["config"] = config.ToJson();
  j["config"]["device"] = device;
  j["config"]["kv_bytes_per_token"] = kv_bytes_per_token;
  if (!model.empty()) j["config"]["model"] = model;
  j["runs"] = nlohmann::ordered_json::array();
  for (const RunResult& r : runs) j["runs"].push_back(r.ToJson());
  return j;
}

}  // namespace impress
