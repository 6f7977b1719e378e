// Full reuse (the AS system): every layer attends to the whole prefix.
#include "select/method.h"

namespace impress {
namespace {

class FullMethod final : public SelectionMethod {
 public:
  ReadAhead Ahead(int64_t) const override { return ReadAhead::kAll; }
  StatusOr<SelectedPrefix> Select(const LayerQkv& qkv, PrefixSource& src, SelectionObserver*) const override {
    return SelectAll(qkv, src);
  }
};

}  // namespace

std::unique_ptr<SelectionMethod> MakeFullMethod(const SelectorOptions&) { return std::make_unique<FullMethod>(); }

}  // namespace impress
