// GBNF grammars (grammar/grammar.h) and the token matcher (grammar/matcher.h): the dialect,
// the refusals with their messages, and token masks on a small vocabulary with multi-byte pieces.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/vocabulary.h"

namespace kvrt::grammar {
namespace {

std::shared_ptr<const Vocabulary> byte_vocab() {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, char(b)));
  return std::make_shared<Vocabulary>(pieces, std::vector<int32_t>{});
}

// Whether the grammar matches `text` whole.
bool matches(const std::string& gbnf, std::string_view text) {
  static const std::shared_ptr<const Vocabulary> vocab = byte_vocab();
  Matcher m(parse_gbnf(gbnf), vocab);
  return m.accept_text(text) && m.can_end();
}

std::string error_of(const std::string& gbnf, const Limits& limits = {}) {
  try {
    parse_gbnf(gbnf, limits);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kInput);
    return e.what();
  }
  return "(no error)";
}

TEST_CASE("GBNF: rules, alternatives, groups, literals and classes") {
  const std::string arith =
      "# arithmetic, as in llama.cpp's README\n"
      "root  ::= expr\n"
      "expr  ::= term ([-+*/] term)*   # trailing comment\n"
      "term  ::= num | \"(\" space expr \")\" space\n"
      "num   ::= [0-9]+ space\n"
      "space ::= [ \\t\\n]*\n";
  CHECK(matches(arith, "1+2*3"));
  CHECK(matches(arith, "( 1 +2 ) *30 "));
  CHECK_FALSE(matches(arith, "1+ 2"));  // num takes the space after it, not before
  CHECK(matches(arith, "((7))"));
  CHECK_FALSE(matches(arith, "1+"));
  CHECK_FALSE(matches(arith, "(1"));
  CHECK_FALSE(matches(arith, "a"));
  CHECK_FALSE(matches(arith, ""));
  // A newline inside parentheses, and after '|' and '::=', continues the rule.
  CHECK(matches("root ::=\n  ( \"a\"\n  | \"b\" ) \"c\"", "bc"));
  // Outside parentheses a new line ends the rule.
  CHECK(error_of("root ::= \"a\"\n  | \"b\"") == "grammar: line 2, column 3: expected a rule name");
  CHECK(matches("root ::= \"x\" |\n \"y\"", "y"));
  CHECK(matches("root ::= \"\"", ""));
  CHECK(matches("root ::= [^a-c] [a-cx]", "dx"));
  CHECK_FALSE(matches("root ::= [^a-c] [a-cx]", "ax"));
  CHECK(matches("root ::= [-a] [a-]", "-a"));  // '-' first or last is itself
  CHECK(matches("root ::= . . .", "é日x"));    // '.' is any one character
  CHECK_FALSE(matches("root ::= . .", "é"));
}

TEST_CASE("GBNF: escapes in literals and classes") {
  CHECK(matches(R"(root ::= "\n\t\r\"\\\[\]")", "\n\t\r\"\\[]"));
  CHECK(matches(R"(root ::= "\x41\u00e9\U0001F600")", "A\xC3\xA9\xF0\x9F\x98\x80"));
  CHECK(matches(R"(root ::= [\x00-\x1F\]]+)", "\x01]\x1F"));
  CHECK(matches(R"(root ::= [\u0400-\u04FF]+)", "\xD0\x96\xD0\xB4"));
  CHECK_FALSE(matches(R"(root ::= [\u0400-\u04FF]+)", "\xD5\x80"));
  // Literal UTF-8 in the grammar text.
  CHECK(matches("root ::= \"日本\" [α-ω]", "日本β"));
}

TEST_CASE("GBNF: repetitions") {
  const std::string g = "root ::= \"ab\"{2} [0-9]{1,3} \"x\"{2,} \"y\"? \"z\"*";
  CHECK(matches(g, "abab1xx"));
  CHECK(matches(g, "abab123xxxxyzzz"));
  CHECK_FALSE(matches(g, "ab1xx"));       // {2} of the whole literal
  CHECK_FALSE(matches(g, "abab1234xx"));  // at most 3 digits
  CHECK_FALSE(matches(g, "abab1x"));      // at least 2 x
  CHECK_FALSE(matches(g, "abab1xxyy"));   // at most one y
  CHECK(matches("root ::= (\"a\" | \"bc\")+", "abca"));
  CHECK(matches("root ::= [a]{0}", ""));
  CHECK(matches("root ::= [a]{ 1 , 2 }", "aa"));
}

TEST_CASE("GBNF: refusals name the line and column") {
  CHECK(error_of("") == "grammar: the grammar is empty (it defines no rule)");
  CHECK(error_of("# only a comment\n\n") == "grammar: the grammar is empty (it defines no rule)");
  CHECK(error_of("start ::= \"a\"") == "grammar: there is no rule 'root' (the start rule)");
  CHECK(error_of("root ::= a\n\nb ::= c \"x\"") ==
        "grammar: line 1, column 10: rule 'a' is used but not defined");
  CHECK(error_of("root ::= \"a\"\nb ::= c") ==
        "grammar: line 2, column 7: rule 'c' is used but not defined");
  CHECK(error_of("root ::= \"abc") == "grammar: line 1, column 14: unterminated string literal");
  CHECK(error_of("root ::= \"\\q\"") == "grammar: line 1, column 11: unknown escape '\\q'");
  CHECK(error_of("root ::= [a-") == "grammar: line 1, column 13: unterminated character class");
  CHECK(error_of("root ::= [z-a]") == "grammar: line 1, column 13: range end is below its start");
  CHECK(error_of("root ::= * \"a\"") ==
        "grammar: line 1, column 10: '*' has nothing before it to repeat");
  CHECK(error_of("root ::= \"a\"{3,1}") ==
        "grammar: line 1, column 13: repetition {m,n} with n below m");
  CHECK(error_of("root ::= \"a\" )") ==
        "grammar: line 1, column 14: unexpected ')' (expected a new line or the end of a rule)");
  CHECK(error_of("root ::= (\"a\"") == "grammar: line 1, column 14: expected ')'");
  CHECK(error_of("root ::= \"a\"\nroot ::= \"b\"") ==
        "grammar: line 2, column 1: rule 'root' is defined twice (first at line 1)");
  CHECK(error_of("root = \"a\"") ==
        "grammar: line 1, column 6: expected '::=' after rule name 'root'");
  CHECK(error_of("root ::= <[1000]>") ==
        "grammar: line 1, column 10: token references (<...>) are not supported");
  CHECK(error_of("root ::= [^\\x00-\\U0010FFFF]") == "grammar: rule 'root' matches no text");
  CHECK(error_of("root ::= \"a\" root") == "grammar: rule 'root' matches no text");
}

TEST_CASE("GBNF: left recursion is refused") {
  CHECK(error_of("root ::= root \"a\" | \"a\"")
            .starts_with("grammar: left recursion, which a pushdown matcher cannot run: rule "
                         "'root' -> rule 'root'"));
  CHECK(error_of("root ::= a\na ::= b \"x\" | \"y\"\nb ::= c? a\nc ::= \"c\"")
            .starts_with("grammar: left recursion, which a pushdown matcher cannot run: rule 'a' "
                         "-> rule 'b' -> rule 'a'"));
  // A repetition of something that can be empty expands forever too.
  CHECK(error_of("root ::= (\"a\"?)*")
            .starts_with("grammar: left recursion, which a pushdown matcher cannot run: the "
                         "repetition at line 1, "
                         "column 16 in rule 'root'"));
  // Right recursion is fine.
  CHECK(matches("root ::= \"a\" root | \"b\"", "aaab"));
}

TEST_CASE("GBNF: limits") {
  Limits small;
  small.max_text_bytes = 16;
  CHECK(error_of("root ::= \"abcdefghij\"", small) ==
        "grammar: the text has 21 bytes, more than the limit of 16");
  CHECK(error_of("root ::= \"ab\"{1000}{2}") ==
        "grammar: line 1, column 20: '{' has nothing before it to repeat");
  // Groups repeat by reference; literals are written out.
  CHECK_NOTHROW(parse_gbnf("root ::= ((\"a\"{1000}){1000}){1000}"));
  CHECK(error_of("root ::= \"abcdefghij\"{200000}") ==
        "grammar: line 1, column 22: the grammar grows beyond 1048576 symbols once its "
        "repetitions are written out");
  std::string deep = "root ::= ";
  for (int i = 0; i < 300; ++i) deep += "(";
  CHECK(error_of(deep) == "grammar: line 1, column 266: groups nested deeper than 256");
}

// A vocabulary with multi-byte pieces: é is C3 A9, 日 is E6 97 A5.
struct SmallVocab {
  std::vector<std::string> pieces = {
      "",          // 0: a control token (BOS)
      "",          // 1: EOS
      "a",         // 2
      "b",         // 3
      "ab",        // 4: spans two grammar items
      "é",         // 5
      "\xC3",      // 6: the first byte of é alone
      "\xA9",      // 7: its second byte
      "日",        // 8
      "\xE6\x97",  // 9: two bytes of 日
      "\xA5",      // 10: the last byte of 日
      "aé",        // 11
      "é\xC3",     // 12: é then half of another
      " ",         // 13
      "ba",        // 14
  };
  std::shared_ptr<const Vocabulary> vocab =
      std::make_shared<Vocabulary>(pieces, std::vector<int32_t>{1});
};

std::vector<int32_t> allowed(Matcher& m, const Vocabulary& v) {
  std::vector<uint64_t> mask(v.mask_words());
  m.fill_mask(mask);
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < v.n_vocab(); ++id)
    if ((mask[size_t(id) >> 6] >> (id & 63)) & 1) ids.push_back(id);
  // The mask and the one-token check agree.
  for (int32_t id = 0; id < v.n_vocab(); ++id)
    CHECK(m.allows(id) == std::binary_search(ids.begin(), ids.end(), id));
  return ids;
}

using Ids = std::vector<int32_t>;

TEST_CASE("matcher: masks over multi-byte pieces, end only where the grammar may end") {
  SmallVocab sv;
  Matcher m(parse_gbnf("root ::= \"a\" \"é\"+ | \"日\" \"b\"?"), sv.vocab);
  CHECK(allowed(m, *sv.vocab) == Ids{2, 8, 9, 11});
  CHECK_FALSE(m.can_end());
  m.accept(2);  // a
  CHECK(allowed(m, *sv.vocab) == Ids{5, 6, 12});
  m.accept(6);  // half of é: only its second byte may follow, and the end may not
  CHECK_FALSE(m.can_end());
  CHECK(allowed(m, *sv.vocab) == Ids{7});
  m.accept(7);
  CHECK(m.can_end());
  CHECK_FALSE(m.must_end());
  CHECK(allowed(m, *sv.vocab) == Ids{1, 5, 6, 12});
  m.accept(12);  // é and half of the next
  CHECK(allowed(m, *sv.vocab) == Ids{7});
  m.accept(7);
  m.accept(1);  // EOS
  CHECK(m.ended());
  CHECK(allowed(m, *sv.vocab).empty());
  CHECK_THROWS_AS(m.accept(5), Error);

  m.reset();
  m.accept(9);  // two bytes of 日
  CHECK(allowed(m, *sv.vocab) == Ids{10});
  m.accept(10);
  CHECK(allowed(m, *sv.vocab) == Ids{1, 3});
  m.accept(3);
  CHECK(m.must_end());
  CHECK(allowed(m, *sv.vocab) == Ids{1});
}

TEST_CASE("matcher: tokens span grammar boundaries; a token that leads nowhere is masked") {
  SmallVocab sv;
  Matcher m(parse_gbnf("root ::= x \"b\" y\nx ::= \"a\"\ny ::= \" \"? \"a\" | \"ab\""), sv.vocab);
  CHECK(allowed(m, *sv.vocab) == Ids{2, 4});  // "ab" crosses from x into root
  m.accept(4);
  CHECK(allowed(m, *sv.vocab) == Ids{2, 4, 13});  // not "aé": nothing may follow y's "a"
  m.accept(13);
  CHECK(allowed(m, *sv.vocab) == Ids{2});
  m.accept(2);
  CHECK(m.must_end());
  CHECK(allowed(m, *sv.vocab) == Ids{1});
}

// Every token's bit equals matching the whole text so far plus its piece on a fresh matcher,
// along random paths of a recursive grammar with a UTF-8 character and pieces that split it.
TEST_CASE("matcher: the trie walk agrees with matching each token's text") {
  const std::vector<std::string> units = {"[",        "]",    ",",    "1", "2",
                                          "\xC3\xA9", "\xC3", "\xA9", " ", "x"};
  std::vector<std::string> pieces = {""};  // 0: EOS
  for (const std::string& a : units) {
    pieces.push_back(a);
    for (const std::string& b : units) {
      pieces.push_back(a + b);
      for (const std::string& c : units) pieces.push_back(a + b + c);
    }
  }
  auto vocab = std::make_shared<Vocabulary>(pieces, std::vector<int32_t>{0});
  auto g = parse_gbnf(
      "root ::= list\n"
      "list ::= \"[\" (item (\",\" \" \"? item)*)? \"]\"\n"
      "item ::= list | [0-9]+ | \"é\"+\n");
  std::mt19937 rng(7);
  std::vector<uint64_t> mask(vocab->mask_words());
  for (int path = 0; path < 4; ++path) {
    Matcher m(g, vocab);
    std::string text;
    for (int step = 0; step < 24 && !m.ended(); ++step) {
      m.fill_mask(mask);
      std::vector<int32_t> ok;
      for (int32_t id = 0; id < vocab->n_vocab(); ++id) {
        const bool bit = (mask[size_t(id) >> 6] >> (id & 63)) & 1;
        Matcher fresh(g, vocab);
        const bool expect = id == 0 ? fresh.accept_text(text) && fresh.can_end()
                                    : fresh.accept_text(text + pieces[size_t(id)]);
        if (bit != expect)
          FAIL_CHECK("token '" << pieces[size_t(id)] << "' after '" << text << "'");
        if (bit) ok.push_back(id);
      }
      REQUIRE_FALSE(ok.empty());
      const int32_t id = ok[std::uniform_int_distribution<size_t>(0, ok.size() - 1)(rng)];
      m.accept(id);
      text += pieces[size_t(id)];
    }
  }
}

}  // namespace
}  // namespace kvrt::grammar
