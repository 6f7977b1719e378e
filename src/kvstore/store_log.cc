#include "kvstore/store_log.h"

#include <nlohmann/json.hpp>

#include "common/json_get.h"

namespace impress {

std::string InsertRecord(const std::vector<int32_t>& tokens, uint64_t first_chunk) {
  return nlohmann::json{{"tokens", tokens}, {"first_chunk", first_chunk}}.dump();
}

std::string FillRecord() { return nlohmann::json{{"fill", true}}.dump(); }

std::string ReorderRecord(const std::vector<int32_t>& path, const std::vector<uint64_t>& source,
                          uint64_t first_chunk, const std::vector<std::vector<int32_t>>& order) {
  return nlohmann::json{{"reorder", {{"path", path}, {"source", source}, {"first_chunk", first_chunk},
                                     {"order", order}}}}
      .dump();
}

Status ReplayRecord(const std::string& meta, int layers, RadixTree* tree) {
  auto j = nlohmann::json::parse(meta, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::Corruption("a committed record is not JSON");
  try {
    if (j.contains("fill")) return Status::OK();
    if (j.contains("reorder")) {
      const auto& r = j.at("reorder");
      auto copy = std::make_shared<ReorderedChunks>();
      const uint64_t first = GetInteger<uint64_t>(r.at("first_chunk"));
      auto source = GetIntegers<uint64_t>(r.at("source"));
      for (size_t i = 0; i < source.size(); ++i) copy->chunks.push_back(first + i);
      if (!r.at("order").is_array()) throw std::invalid_argument("order is not an array");
      for (const auto& o : r.at("order")) copy->order.push_back(GetIntegers<int32_t>(o));
      tree->AdvanceChunkIds(first + source.size());
      InstallCopy(GetIntegers<int32_t>(r.at("path")), source, std::move(copy), layers, tree);
      return Status::OK();
    }
    auto tokens = GetIntegers<int32_t>(j.at("tokens"));
    if (j.contains("first_chunk")) tree->Insert(tokens, GetInteger<uint64_t>(j.at("first_chunk")));
    else tree->Insert(tokens);  // stores written before reordering: ids in insertion order
  } catch (const std::exception& e) {  // json's key and type errors, GetInteger's range errors
    return Status::Corruption(std::string("a committed record is malformed: ") + e.what());
  }
  return Status::OK();
}

bool InstallCopy(const std::vector<int32_t>& path, const std::vector<uint64_t>& source,
                 std::shared_ptr<const ReorderedChunks> copy, int layers, RadixTree* tree) {
  RadixTree::Node* node = tree->FindNode(path);
  if (node == nullptr || node->chunks != source) return false;
  if (copy->order.size() != static_cast<size_t>(layers)) return false;
  for (const auto& o : copy->order) {  // each layer's mapping: a permutation of the node's tokens
    if (o.size() != node->tokens.size()) return false;
    std::vector<bool> seen(o.size(), false);
    for (int32_t t : o) {
      if (t < 0 || static_cast<size_t>(t) >= o.size() || seen[t]) return false;
      seen[t] = true;
    }
  }
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
