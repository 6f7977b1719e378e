#include "select/method.h"

namespace impress {

std::unique_ptr<SelectionMethod> MakeSelectionMethod(const SelectorOptions& opt) {
  switch (opt.kind) {
    case SelectorKind::kFull: return MakeFullMethod();
    case SelectorKind::kH2O: return MakeH2OMethod(opt);
    case SelectorKind::kItf: return MakeItfMethod(opt);
  }
  IMPRESS_CHECK(false);
  return nullptr;
}

StatusOr<SelectedPrefix> SelectAll(const LayerQkv& qkv, PrefixSource& src) {
  SelectedPrefix s;
  s.total = s.kept = src.tokens();
  if (s.total > 0) RETURN_IF_ERROR(src.All(qkv.layer, &s.kv.k, &s.kv.v));
  return s;
}

}  // namespace impress
