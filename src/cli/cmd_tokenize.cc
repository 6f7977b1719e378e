// impress tokenize --model DIR --text TEXT: token ids as a JSON array.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "model/tokenizer.h"

namespace impress {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  bool no_special = false;
};

int RunTokenize(const TokenizeOptions& o) {
  auto tok = Tokenizer::FromFile(o.model + "/tokenizer.json");
  if (!tok.ok()) return Fail(tok.status());
  auto ids = (*tok)->Encode(o.text, !o.no_special);
  if (!ids.ok()) return Fail(ids.status().WithContext("--text"));
  std::cout << nlohmann::json(*ids).dump() << "\n";
  return 0;
}

}  // namespace

void AddTokenizeCommand(CLI::App& app, std::vector<Command>* commands) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text as a JSON array");
  cmd->add_option("--model", o->model, "model directory holding tokenizer.json")->required();
  cmd->add_option("--text", o->text, "text to tokenize")->required();
  cmd->add_flag("--no-special", o->no_special, "do not add the template's special tokens (BOS)");
  commands->push_back({cmd, [o] { return RunTokenize(*o); }});
}

}  // namespace impress
