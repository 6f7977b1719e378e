// Process-wide runtime settings for inference workloads.
#pragma once

namespace impress {

// Keeps large freed blocks in the heap instead of returning them to the
// kernel, so the activations a forward pass allocates and frees each layer are
// reused rather than page-faulted in again (about 5% of prefill time
// otherwise). Call once at startup, before heavy allocation.
void TuneHostAllocator();

}  // namespace impress
