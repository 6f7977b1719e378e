// Chunk parts as one tensor for attention: the rows (tokens) a layer uses
// of a list of chunks, head-major, in the compute dtype.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

namespace impress {

// Parts [C, H_i, d] (token-major, d contiguous; views allowed), all on one
// device and of one dtype -> [heads, n, d] in `type` on that device: heads
// 0..heads-1 (0: all H_0 heads) of the rows `rows` (int64, any device) of their
// concatenation, in that order, or of every row (rows undefined, n = parts *
// C). Half or float parts on the host into float are copied row by row with
// one conversion each; everything else goes through ATen (one
// concatenation, one index, one cast). The values are the same either way.
// With `room` > 0 the result is the first n rows per head of a [heads, n +
// room, d] tensor (stride(0) = (n + room) * d): the `room` rows after each
// head's are left unset, for a caller to append rows without copying these.
// REQUIRES: parts non-empty, rows within parts * C, heads <= every H_i, room >= 0.
at::Tensor StackChunkRows(const std::vector<at::Tensor>& parts, const at::Tensor& rows, at::ScalarType type,
                          int64_t heads = 0, int64_t room = 0);

}  // namespace impress
