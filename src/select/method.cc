#include "select/method.h"

#include "common/device_copy.h"
#include "select/importance.h"

namespace impress {

const std::vector<SelectionMethodInfo>& SelectionMethods() {
  static const std::vector<SelectionMethodInfo> methods = {
      {SelectorKind::kFull, "full", MakeFullMethod, false, false, false},
      {SelectorKind::kH2O, "h2o", MakeH2OMethod, true, false, false},
      {SelectorKind::kItf, "itf", MakeItfMethod, true, true, false},
      {SelectorKind::kRandom, "random", MakeRandomMethod, true, false, false},
      {SelectorKind::kStatic, "static", nullptr, true, false, false},
      {SelectorKind::kDigest, "digest", MakeDigestMethod, true, false, true},
  };
  return methods;
}

const SelectionMethodInfo& MethodInfo(SelectorKind kind) {
  for (const SelectionMethodInfo& m : SelectionMethods())
    if (m.kind == kind) return m;
  IMPRESS_CHECK(false);  // a SelectorKind added without its row in SelectionMethods
  return SelectionMethods().front();
}

const std::string& SelectorKindName(SelectorKind kind) { return MethodInfo(kind).name; }

std::unique_ptr<SelectionMethod> MakeSelectionMethod(const SelectorOptions& opt) {
  const SelectionMethodInfo& m = MethodInfo(opt.kind);
  IMPRESS_CHECK(m.make != nullptr);  // static: the caller selects (eval/scorer.cc)
  return m.make(opt);
}

ReadAhead RetainingMethod::Ahead(int64_t p) const {
  return RetainedTokens(opt_.retention, p) >= p ? ReadAhead::kAll : partial_;
}

StatusOr<SelectedPrefix> RetainingMethod::Select(const LayerQkv& qkv, PrefixSource& src,
                                                 SelectionObserver* observer) const {
  IMPRESS_CHECK(!qkv.attend_new.defined());  // importance reads the rows as one causal sequence
  const int64_t p = src.tokens();
  if (p == 0 || Ahead(p) == ReadAhead::kAll) return SelectAll(qkv, src);  // keeping everything is full reuse, exactly
  return SelectK(qkv, src, RetainedTokens(opt_.retention, p), observer);
}

at::Tensor ReadBack(const at::Tensor& t, int layer, SelectionObserver* observer) {
  if (observer != nullptr) observer->OnReadBack(layer);
  return ToHostNow(t);
}

StatusOr<SelectedPrefix> SelectAll(const LayerQkv& qkv, PrefixSource& src) {
  SelectedPrefix s;
  s.total = s.kept = src.tokens();
  if (s.total > 0) RETURN_IF_ERROR(src.All(qkv.layer, &s.kv.k, &s.kv.v));
  return s;
}

}  // namespace impress
