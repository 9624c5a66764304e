// The text of one reply as it is generated: finds the request's stop strings and says which part
// can be sent now. A stream must not send text that may turn out to be the start of a stop string,
// nor half of a UTF-8 sequence (a token can end inside one); both wait for the next piece.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvrt::serve {

class TextOutput {
 public:
  explicit TextOutput(std::vector<std::string> stop) : stop_(std::move(stop)) {}

  // Appends a generated piece; true when the text now holds a stop string (the reply ends before
  // it).
  bool add(std::string_view piece);
  // The text that can be sent now, from where the last call ended.
  std::string take_ready();
  // At the end of the reply: everything not sent yet, up to the first stop string.
  std::string take_rest();
  bool stopped() const { return stop_at_ != std::string::npos; }

 private:
  std::vector<std::string> stop_;
  std::string text_;                    // every piece so far
  size_t sent_ = 0;                     // bytes of text_ handed out
  size_t stop_at_ = std::string::npos;  // where the first stop string starts
};

// Bytes at the end of `text` that begin a UTF-8 sequence it does not complete (0 to 3).
size_t incomplete_utf8_tail(std::string_view text);

}  // namespace kvrt::serve
