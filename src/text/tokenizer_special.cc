// Special tokens: which tokens llama.cpp treats as control tokens whatever the file says, which
// ones end generation (end of sequence, end of turn: <|eot_id|>, <|im_end|>, <end_of_turn>,
// <|end|>, ...), and cutting special tokens out of raw text before the merges
// (llama.cpp's tokenizer_st_partition).
#include <algorithm>
#include <cctype>

#include "text/tokenizer_impl.h"

namespace kvrt::model::detail {
namespace {

// Token texts that llama.cpp makes control tokens even when the file marks them user-defined,
// and whether each one ends generation (its EOG list plus fill-in-the-middle pad, repo and
// file-separator tokens). Control tokens are cut out of raw text only when special tokens are
// parsed.
struct SpecialText {
  std::string_view text;
  bool ends_generation;
};
constexpr SpecialText kSpecialTexts[] = {
    {"<|eot_id|>", true},
    {"<|im_end|>", true},
    {"<|end|>", true},
    {"<end_of_turn>", true},
    {"<|endoftext|>", true},
    {"<|end_of_text|>", true},
    {"<EOT>", true},
    {"_<EOT>", true},
    {"<|eom_id|>", true},
    {"<end_of_utterance>", true},
    {"<|return|>", true},
    {"<|call|>", true},
    {"<eos>", true},
    {"<turn|>", true},
    {"<|tool_response>", true},  // Gemma 4
    {"<|fim_pad|>", true},
    {"<fim-pad>", true},
    {"<fim_pad>", true},
    {"<PAD>", true},
    {"<|fim_repo|>", true},
    {"<|repo_name|>", true},
    {"<fim-repo>", true},
    {"<REPO>", true},
    {"<reponame>", true},
    {"<|file_sep|>", true},
    {"<｜end▁of▁sentence｜>", false},
    {"<|fim_prefix|>", false},
    {"<fim-prefix>", false},
    {"<fim_prefix>", false},
    {"<｜fim▁begin｜>", false},
    {"<PRE>", false},
    {"<|fim_suffix|>", false},
    {"<fim-suffix>", false},
    {"<fim_suffix>", false},
    {"<｜fim▁hole｜>", false},
    {"<SUF>", false},
    {"<|fim_middle|>", false},
    {"<fim-middle>", false},
    {"<fim_middle>", false},
    {"<｜fim▁end｜>", false},
    {"<MID>", false},
};

// Texts llama.cpp takes as the end-of-turn token when the file names none, in its order of
// preference.
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",      "<|im_end|>", "<|end|>", "<end_of_turn>",         "<|endoftext|>",
    "<|end_of_text|>", "<EOT>",      "_<EOT>",  "<｜end▁of▁sentence｜>", "<end_of_utterance>",
};

bool is_special_kind(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
}

bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Whether [begin, end) overlaps one of the sorted `plain` spans.
bool overlaps(std::span<const TextSpan> plain, size_t begin, size_t end) {
  auto after =
      std::upper_bound(plain.begin(), plain.end(), begin,
                       [](size_t at, const TextSpan& s) { return at < s.offset + s.length; });
  return after != plain.end() && after->offset < end;
}

// Cuts every occurrence of token `id` out of the raw fragment `fr`, except where one overlaps a
// span of `plain`.
void cut_token(const Vocab& v, std::string_view text, Fragment fr, int32_t id,
               std::span<const TextSpan> plain, std::vector<Fragment>& out) {
  const TokenData& tok = v.tokens[id];
  const size_t end = fr.offset + fr.length;
  for (size_t from = fr.offset; fr.length > 0;) {
    const size_t found = text.substr(from, end - from).find(tok.text);  // within the fragment
    if (found == text.npos) break;
    const size_t m = from + found;
    if (overlaps(plain, m, m + tok.text.size())) {
      from = m + 1;
      continue;
    }
    if (m > fr.offset) out.push_back({fr.offset, m - fr.offset, -1});
    out.push_back({m, tok.text.size(), id});
    fr.offset = m + tok.text.size();
    while (tok.rstrip && fr.offset < end && is_ascii_space(text[fr.offset])) ++fr.offset;
    fr.length = end - fr.offset;
    from = fr.offset;
  }
  if (fr.length > 0) out.push_back(fr);
}

}  // namespace

void apply_token_quirks(Vocab& v, std::string model_name) {
  for (const SpecialText& s : kSpecialTexts) {
    const int32_t id = v.find(s.text);
    if (id >= 0 && v.tokens[id].type == TokenType::kUserDefined)
      v.tokens[id].type = TokenType::kControl;
  }
  // Phi-3's special tokens swallow the whitespace after them, except these three.
  std::transform(model_name.begin(), model_name.end(), model_name.begin(),
                 [](char c) { return char(std::tolower(uint8_t(c))); });
  const bool phi3 =
      model_name.find("phi-3") != model_name.npos || model_name.find("phi3") != model_name.npos;
  for (TokenData& t : v.tokens)
    t.rstrip = phi3 && (is_special_kind(t.type) || t.text == "</s>") && t.text != "<unk>" &&
               t.text != "<s>" && t.text != "<|endoftext|>";
}

void index_special_tokens(Vocab& v) {
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (is_special_kind(v.tokens[i].type)) v.special_ids.push_back(int32_t(i));
  std::stable_sort(v.special_ids.begin(), v.special_ids.end(), [&](int32_t a, int32_t b) {
    return v.tokens[a].text.size() > v.tokens[b].text.size();
  });
}

void index_end_of_generation(Vocab& v) {
  for (size_t i = 0; v.eot_id < 0 && i < std::size(kEotTexts); ++i) v.eot_id = v.find(kEotTexts[i]);
  for (const SpecialText& s : kSpecialTexts) {
    const int32_t id = v.find(s.text);
    if (id >= 0 && s.ends_generation) v.eog_ids.push_back(id);
  }
  for (int32_t id : {v.eos_id, v.eot_id, v.eom_id})
    if (id >= 0) v.eog_ids.push_back(id);
  std::sort(v.eog_ids.begin(), v.eog_ids.end());
  v.eog_ids.erase(std::unique(v.eog_ids.begin(), v.eog_ids.end()), v.eog_ids.end());
}

std::vector<Fragment> partition(const Vocab& v, std::string_view text, bool parse_special,
                                std::span<const TextSpan> plain) {
  std::vector<Fragment> frags;
  if (!text.empty()) frags.push_back({0, text.size(), -1});
  std::vector<Fragment> next;
  for (int32_t id : v.special_ids) {
    const bool user_defined = v.tokens[id].type == TokenType::kUserDefined;
    if (!parse_special && !user_defined) continue;
    next.clear();
    for (const Fragment& fr : frags) {
      if (fr.token >= 0) {
        next.push_back(fr);
      } else {
        cut_token(v, text, fr, id, user_defined ? std::span<const TextSpan>() : plain, next);
      }
    }
    frags.swap(next);
  }
  return frags;
}

}  // namespace kvrt::model::detail
