// The KV codecs (codec/kv_codec.h) against a plain PyTorch reference of the
// same formulas: the same encoded size, the same decoded fp16 values bit for
// bit, and the error bounds the formulas promise: int8 |x - x'| <= s/2, int4
// |x - x'| <= scale/2, each plus the fp16 rounding of x' (and, for int4, of
// the zero point), where s and scale are the group's stored fp16 scales.
#include "codec/kv_codec.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "codec/kv_codec_tensor.h"
#include "common/named.h"

namespace impress {
namespace {

// [tokens, heads, dim] fp16 with heavy-tailed values, a zero token and a constant channel.
at::Tensor Sample(int tokens, int heads, int dim, int seed) {
  at::manual_seed(seed);
  at::Tensor x = at::randn({tokens, heads, dim}) * at::exp(at::randn({1, heads, dim}));
  x.select(0, 1).zero_();
  x.select(2, 3).fill_(0.75);
  return x.to(at::kHalf);
}

std::vector<uint8_t> Encode(KvCodec c, KvRole r, const at::Tensor& x) {
  std::vector<uint8_t> out(EncodedBytes(c, r, x.size(0), x.size(1), x.size(2)));
  EncodeKv(c, r, static_cast<const uint16_t*>(x.data_ptr()), x.size(0), x.size(1), x.size(2), out.data());
  return out;
}

at::Tensor Decode(KvCodec c, KvRole r, const std::vector<uint8_t>& bytes, const at::Tensor& like) {
  at::Tensor out = at::empty_like(like);
  DecodeKv(c, r, bytes.data(), like.size(0), like.size(1), like.size(2), static_cast<uint16_t*>(out.data_ptr()));
  return out;
}

// The reference: scale and zero per group, the fp16-stored parameters, q and x'.
struct Reference {
  at::Tensor decoded, bound;
};

Reference Int8Reference(const at::Tensor& x16) {
  at::Tensor x = x16.to(at::kFloat);
  at::Tensor s = (x.abs().amax(-1, true) / 127).to(at::kHalf).to(at::kFloat);
  at::Tensor q = at::where(s > 0, at::round(x / s).clamp(-127, 127), at::zeros_like(x));
  at::Tensor dec = (q * s).to(at::kHalf);
  return {dec, s / 2 + dec.to(at::kFloat).abs() * std::ldexp(1.0, -11)};
}

// Groups along `dims` of x viewed as `shape`.
Reference Int4Reference(const at::Tensor& x16, KvRole role) {
  const int64_t t = x16.size(0), h = x16.size(1), d = x16.size(2);
  at::Tensor x = x16.to(at::kFloat);
  at::Tensor mn, mx;
  if (role == KvRole::kKeys) {  // per channel over the tokens
    mn = x.amin(0, true), mx = x.amax(0, true);
  } else {  // per token, `group` dims at a time
    const int64_t g = Int4Group(static_cast<int>(d));
    at::Tensor v = x.view({t, h, d / g, g});
    mn = v.amin(-1, true).expand({t, h, d / g, g}).reshape({t, h, d});
    mx = v.amax(-1, true).expand({t, h, d / g, g}).reshape({t, h, d});
  }
  at::Tensor scale = ((mx - mn) / 15).to(at::kHalf).to(at::kFloat);
  at::Tensor zero = mn.to(at::kHalf).to(at::kFloat);
  at::Tensor q = at::where(scale > 0, at::round((x - zero) / scale).clamp(0, 15), at::zeros_like(x));
  at::Tensor dec = (q * scale + zero).to(at::kHalf);
  return {dec, scale / 2 + (zero - mn).abs() + dec.to(at::kFloat).abs() * std::ldexp(1.0, -11)};
}

void ExpectMatchesReference(KvCodec c, KvRole r, int tokens, int heads, int dim) {
  SCOPED_TRACE(std::string(KvCodecName(c)) + (r == KvRole::kKeys ? " keys " : " values ") +
               std::to_string(tokens) + "x" + std::to_string(heads) + "x" + std::to_string(dim));
  const at::Tensor x = Sample(tokens, heads, dim, tokens + heads + dim);
  const std::vector<uint8_t> bytes = Encode(c, r, x);
  const at::Tensor got = Decode(c, r, bytes, x);
  // A mix (k8v4) encodes each role with one of int8 and int4: the same references.
  const bool int8 = PartCodec(c, r) == KvCodec::kInt8;
  const Reference ref = int8 ? Int8Reference(x) : Int4Reference(x, r);
  EXPECT_TRUE(got.equal(ref.decoded))  // as values: a rounded -0 and a 0 are one
      << "max diff " << (got.to(at::kFloat) - ref.decoded.to(at::kFloat)).abs().max().item<float>();
  const at::Tensor err = (got.to(at::kFloat) - x.to(at::kFloat)).abs();
  EXPECT_TRUE((err <= ref.bound).all().item<bool>()) << "worst excess " << (err - ref.bound).max().item<float>();
  // A constant key channel (int4: a zero scale) and a zero row (int8) decode exactly.
  if (!int8 && r == KvRole::kKeys) EXPECT_TRUE(got.select(2, 3).equal(x.select(2, 3))) << "constant channel";
  if (int8) EXPECT_TRUE(got.select(0, 1).equal(x.select(0, 1))) << "zero row";
}

// Every codec the name list has, fp16 first: a codec added to the list is
// tested below without naming it here.
std::vector<KvCodec> AllCodecs() {
  std::vector<KvCodec> all;
  for (const std::string& name : KvCodecNames()) all.push_back(*ParseKvCodec(name));
  return all;
}

TEST(KvCodec, MatchesThePytorchReference) {
  for (KvCodec c : AllCodecs()) {
    if (c == KvCodec::kNone) continue;
    for (KvRole r : {KvRole::kKeys, KvRole::kValues}) {
      ExpectMatchesReference(c, r, 64, 3, 64);  // SmolLM2's chunk part
      ExpectMatchesReference(c, r, 16, 2, 8);   // a tiny fixture's: int4 values group the whole head
      ExpectMatchesReference(c, r, 64, 1, 64);  // a probe-key copy
    }
  }
}

// The tensor-op decoder a GPU runs after copying the encoded bytes up
// (DecodePartOn) is the scalar decoder bit for bit; here on the CPU, where
// the same operations run.
TEST(KvCodec, TensorDecoderIsTheScalarDecoder) {
  for (KvCodec c : AllCodecs())
    for (KvRole r : {KvRole::kKeys, KvRole::kValues})
      for (auto [t, h, d] : {std::array<int, 3>{64, 3, 64}, {16, 2, 8}, {64, 1, 64}, {3, 1, 6}}) {  // the last: parameters at an odd byte offset
        SCOPED_TRACE(std::string(KvCodecName(c)) + (r == KvRole::kKeys ? " keys " : " values ") + std::to_string(t) +
                     "x" + std::to_string(h) + "x" + std::to_string(d));
        const at::Tensor x = Sample(t, h, d, t * h + d);
        const std::vector<uint8_t> bytes = Encode(c, r, x);
        const at::Tensor b = at::from_blob(const_cast<uint8_t*>(bytes.data()), {static_cast<int64_t>(bytes.size())},
                                           at::kByte).clone();
        const at::Tensor want = Decode(c, r, bytes, x), got = DecodePartOn(c, r, b, t, h, d);
        ASSERT_EQ(got.scalar_type(), at::kHalf);
        ASSERT_EQ(got.sizes(), want.sizes());
        // Bit for bit, a -0 included.
        EXPECT_TRUE(got.contiguous().view(at::kShort).equal(want.view(at::kShort)));
      }
}

TEST(KvCodec, EncodedSizes) {
  // SmolLM2's 64-token chunk part (3 KV heads x 64): fp16 24576 bytes.
  EXPECT_EQ(EncodedBytes(KvCodec::kNone, KvRole::kKeys, 64, 3, 64), 24576u);
  EXPECT_EQ(EncodedBytes(KvCodec::kInt8, KvRole::kKeys, 64, 3, 64), 12288u + 384u);  // 1.94x
  EXPECT_EQ(EncodedBytes(KvCodec::kInt4, KvRole::kKeys, 64, 3, 64), 6144u + 768u);   // 3.56x
  EXPECT_EQ(EncodedBytes(KvCodec::kInt4, KvRole::kValues, 64, 3, 64), 6144u + 1536u);  // 3.2x
  EXPECT_EQ(EncodedBytes(KvCodec::kK8V4, KvRole::kKeys, 64, 3, 64), 12288u + 384u);   // int8 keys
  EXPECT_EQ(EncodedBytes(KvCodec::kK8V4, KvRole::kValues, 64, 3, 64), 6144u + 1536u);  // int4 values
  for (KvCodec c : {KvCodec::kInt4, KvCodec::kK8V4}) EXPECT_EQ(ChunkCodec(c, 0), KvCodec::kInt8);  // attention sinks
  EXPECT_EQ(ChunkCodec(KvCodec::kK8V4, 1), KvCodec::kK8V4);
}

TEST(KvCodec, HalfConversionsMatchTorch) {
  at::Tensor all = at::arange(0, 65536, at::kInt).to(at::kShort).view(at::kHalf);
  at::Tensor f = all.to(at::kFloat);
  const auto* h = static_cast<const uint16_t*>(all.data_ptr());
  const float* want = f.data_ptr<float>();
  for (int i = 0; i < 65536; ++i) {
    const float got = HalfToFloat(h[i]);
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got)) << i;
    else ASSERT_EQ(std::memcmp(&got, &want[i], 4), 0) << "half " << i;
  }
  at::manual_seed(3);
  at::Tensor x = at::cat({at::randn({100000}) * 1000, at::randn({100000}) * 1e-6f, at::randn({1000}) * 1e5f});
  at::Tensor ref = x.to(at::kHalf);
  const float* xs = x.data_ptr<float>();
  const auto* rs = static_cast<const uint16_t*>(ref.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(FloatToHalf(xs[i]), rs[i]) << xs[i];
}

TEST(KvCodec, NamesAndErrors) {
  EXPECT_EQ(*ParseKvCodec("int4"), KvCodec::kInt4);
  EXPECT_EQ(*ParseKvCodec("fp16"), KvCodec::kNone);
  auto bad = ParseKvCodec("int3");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--kv-codec: unknown 'int3' (" + JoinNames(KvCodecNames()) + ")");
  for (const std::string& name : KvCodecNames()) EXPECT_EQ(KvCodecName(*ParseKvCodec(name)), name);
  // Stores name their codec in the MANIFEST and the remote tier's markers
  // carry its enum value: a codec is added after these, never renamed or moved.
  const std::vector<std::string> recorded = {"fp16", "int8", "int4", "k8v4"};
  ASSERT_GE(KvCodecNames().size(), recorded.size());
  for (size_t i = 0; i < recorded.size(); ++i) EXPECT_EQ(KvCodecNames()[i], recorded[i]);
}

}  // namespace
}  // namespace impress
