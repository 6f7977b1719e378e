#include "engine/store_log.h"

#include <nlohmann/json.hpp>

namespace impress {

std::string InsertRecord(const std::vector<int32_t>& tokens, uint64_t first_chunk) {
  return nlohmann::json{{"tokens", tokens}, {"first_chunk", first_chunk}}.dump();
}

std::string ReorderRecord(const std::vector<int32_t>& path, const std::vector<uint64_t>& source,
                          uint64_t first_chunk, const std::vector<std::vector<int32_t>>& order) {
  return nlohmann::json{{"reorder", {{"path", path}, {"source", source}, {"first_chunk", first_chunk},
                                     {"order", order}}}}
      .dump();
}

Status ReplayRecord(const std::string& meta, int layers, RadixTree* tree) {
  auto j = nlohmann::json::parse(meta, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::Error("a committed record is not JSON");
  try {
    if (j.contains("reorder")) {
      const auto& r = j["reorder"];
      auto copy = std::make_shared<ReorderedChunks>();
      const uint64_t first = r["first_chunk"].get<uint64_t>();
      auto source = r["source"].get<std::vector<uint64_t>>();
      for (size_t i = 0; i < source.size(); ++i) copy->chunks.push_back(first + i);
      copy->order = r["order"].get<std::vector<std::vector<int32_t>>>();
      tree->AdvanceChunkIds(first + source.size());
      InstallCopy(r["path"].get<std::vector<int32_t>>(), source, std::move(copy), layers, tree);
      return Status::OK();
    }
    auto tokens = j["tokens"].get<std::vector<int32_t>>();
    if (j.contains("first_chunk")) tree->Insert(tokens, j["first_chunk"].get<uint64_t>());
    else tree->Insert(tokens);  // stores written before reordering: ids in insertion order
  } catch (const nlohmann::json::exception& e) {
    return Status::Error(std::string("a committed record is malformed: ") + e.what());
  }
  return Status::OK();
}

bool InstallCopy(const std::vector<int32_t>& path, const std::vector<uint64_t>& source,
                 std::shared_ptr<const ReorderedChunks> copy, int layers, RadixTree* tree) {
  RadixTree::Node* node = tree->FindNode(path);
  if (node == nullptr || node->chunks != source) return false;
  if (copy->order.size() != static_cast<size_t>(layers)) return false;
  for (const auto& o : copy->order)
    if (o.size() != node->tokens.size()) return false;
  tree->SetReordered(node, std::move(copy));
  return true;
}

std::set<uint64_t> LiveChunks(const RadixTree& tree) {
  std::set<uint64_t> live;
  for (const RadixTree::Node* n : tree.Nodes()) {
    live.insert(n->chunks.begin(), n->chunks.end());
    if (n->reordered) live.insert(n->reordered->chunks.begin(), n->reordered->chunks.end());
  }
  return live;
}

}  // namespace impress
