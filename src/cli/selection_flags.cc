// The selection knobs of run, eval and reproduce, registered and parsed here
// once into one SelectorOptions (select/selector.h): a new knob is one line
// here, its field and the code that reads it.
#include <algorithm>

#include "cli/commands.h"
#include "common/named.h"
#include "experiment/sweep.h"
#include "select/selector.h"

namespace impress {
namespace {

// An option naming one of `names`, stored as its index (an enum of that order).
template <typename Enum>
void AddNamedOption(CLI::App* cmd, const char* flag, const std::vector<std::string>& names, Enum* out,
                    const std::string& help) {
  cmd->add_option_function<std::string>(
         flag, [&names, out, flag](const std::string& v) { *out = *ParseNamed<Enum>(names, v, flag, "name"); }, help)
      ->check(CLI::IsMember(names))
      ->default_str(NameOf(names, *out));
}

// A comma-separated list of `names`, stored as their indices.
template <typename Enum>
void AddNamedList(CLI::App* cmd, const char* flag, const std::vector<std::string>& names, std::vector<Enum>* out,
                  const std::string& help) {
  std::string shown;
  for (Enum e : *out) shown += (shown.empty() ? "" : ",") + NameOf(names, e);
  cmd->add_option_function<std::vector<std::string>>(
         flag,
         [&names, out, flag](const std::vector<std::string>& v) {
           out->clear();
           for (const std::string& name : v) out->push_back(*ParseNamed<Enum>(names, name, flag, "name"));
         },
         help)
      ->delimiter(',')
      ->check(CLI::IsMember(names))
      ->default_str(shown);
}

CLI::Validator OddPool() {
  return CLI::Validator(
      [](std::string& in) {
        char* end = nullptr;
        const long long v = std::strtoll(in.c_str(), &end, 10);
        if (in.empty() || *end != '\0') return "must be an odd number >= 1, not '" + in + "'";
        StatusOr<ImportanceShape> s = ParseImportanceShape(0, v);
        return s.ok() ? std::string() : "must be an odd number >= 1, not '" + in + "'";
      },
      "ODD");
}

void AddDigestFlags(CLI::App* cmd, DigestOptions* d) {
  cmd->add_option("--sink-tokens", d->sink_tokens, "digest: always keep the chunks of the prefix's first N tokens")
      ->check(NonNegativeNumber());
  cmd->add_option("--recent-tokens", d->recent_tokens, "digest: always keep the chunks of the prefix's last N tokens")
      ->check(NonNegativeNumber());
  cmd->add_option("--dense-layers", d->dense_layers, "digest: the first N layers keep every prefix token")
      ->check(NonNegativeNumber());
  cmd->add_option("--digest-window", d->window, "digest: chunks scored by the last N query rows (0: every row)")
      ->check(NonNegativeNumber());
  cmd->add_option("--digest-pool", d->pool,
                  "digest: each token's score becomes the max over N neighbouring positions before chunks sum them")
      ->check(OddPool());
  AddNamedOption(cmd, "--digest-score", DigestScoreNames(), &d->score,
                 "digest: chunks scored by importance over the digest's keys (keys), by each chunk's best query row's "
                 "attention (rowmax) or by Quest's bound from their min and max (bound)");
  AddNamedOption(cmd, "--digest-groups", DigestGroupsNames(), &d->groups,
                 "digest: the layer's chunk order from the KV groups' scores: rank (each group's best first) or sum");
  AddNamedOption(cmd, "--digest-codec", DigestCodecNames(), &d->codec,
                 "digest: bits a chunk digest keeps per key value: int8 (ranks as the keys do) or int4 (half the "
                 "bytes); a store keeps one codec's digests");
}

}  // namespace

void AddSelectionFlags(CLI::App* cmd, SelectorOptions* select, SweepAxes* axes) {
  const std::string unit_help =
      "IMPRESS agreed set: token (the k tokens the probe heads agree on, the paper) or chunk (k tokens packed into "
      "the chunks the probe heads rank best)";
  if (axes != nullptr) {
    AddNamedList(cmd, "--itf-unit", ItfUnitNames(), &axes->itf_unit, unit_help + "; a list sweeps");
    cmd->add_option("--retention", axes->retention, "share of prefix tokens kept (h2o, impress); a list sweeps")
        ->delimiter(',')->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--alpha", axes->alpha, "IMPRESS threshold exponent: t = ((k/n)/(2-k/n))^alpha; a list sweeps")
        ->delimiter(',')->check(NonNegativeNumber());
  } else {
    AddNamedOption(cmd, "--itf-unit", ItfUnitNames(), &select->unit, unit_help + ", in every IMPRESS run and eval");
  }
  AddNamedOption(cmd, "--probe-layout", ProbeLayoutNames(), &select->probe_layout,
                 "IMPRESS probe heads: first (query heads 0-2, the paper) or spread (one per KV head; a store "
                 "copies those KV heads' keys, so it needs its own --store)");
  cmd->add_option("--importance-window", select->importance.window,
                  "H2O's and the probe heads' importance from the last W question rows only (0: every row, the papers')")
      ->check(NonNegativeNumber());
  cmd->add_option("--importance-pool", select->importance.pool,
                  "max-pool importance over P neighbouring prefix positions (odd; 1: none), as SnapKV does")
      ->check(OddPool());
  if (axes != nullptr) AddDigestFlags(cmd, &select->digest);
}

}  // namespace impress
