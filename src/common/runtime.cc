#include "common/runtime.h"

#include <malloc.h>

namespace impress {

void TuneHostAllocator() {
  // Blocks up to 1 GiB come from the heap, and the heap is not trimmed below that.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace impress
