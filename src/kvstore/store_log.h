// The prefix store's commit records (docs/store.md, "On disk"): the metadata
// an insert or a reorder commits along with its chunks, and replaying it into
// a radix tree. Replaying the same records in the same order rebuilds the same
// tree: the same chunk ids and the same reordered copies.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cache/radix_tree.h"
#include "common/status.h"

namespace impress {

// An insert of `tokens` (whole chunks) whose first new chunk is `first_chunk`.
std::string InsertRecord(const std::vector<int32_t>& tokens, uint64_t first_chunk);
// The data of chunks the tree already names (adopted from the remote tier and
// now kept locally, or damaged locally and written again: PrefixStore::Heal):
// changes nothing in the tree.
std::string FillRecord();
// A reordered copy of the node at `path` (tokens from the root to the node's
// end) whose own chunks are `source`: chunks first_chunk.. and per layer the
// mapping stored slot -> token index in the node.
std::string ReorderRecord(const std::vector<int32_t>& path, const std::vector<uint64_t>& source,
                          uint64_t first_chunk, const std::vector<std::vector<int32_t>>& order);

// Applies one committed record to `tree` (a tree of `layers` layers): an
// insert, or a reordered copy, installed if it is still current. Errors: a
// record that is not JSON or lacks its fields.
Status ReplayRecord(const std::string& meta, int layers, RadixTree* tree);

// Makes `copy` the reordered copy of the node at `path` if that node's own
// chunks are still `source` and the copy maps, per layer, its slots to a
// permutation of the node's tokens; otherwise (a split made the copy stale, or
// a damaged record) changes nothing and returns false. The copy it replaces is retired (RadixTree::TakeRetired).
bool InstallCopy(const std::vector<int32_t>& path, const std::vector<uint64_t>& source,
                 std::shared_ptr<const ReorderedChunks> copy, int layers, RadixTree* tree);

// The chunk ids a request can read: every node's own chunks and the chunks of
// its installed copy. Any other stored chunk is garbage (a replaced or stale copy).
std::set<uint64_t> LiveChunks(const RadixTree& tree);

}  // namespace impress
