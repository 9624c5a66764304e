#include "serve/text_output.h"

#include <algorithm>

namespace kvrt::serve {

size_t incomplete_utf8_tail(std::string_view text) {
  for (size_t back = 1; back <= std::min<size_t>(4, text.size()); ++back) {
    const auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: the lead is further back
    const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return len > back ? back : 0;
  }
  return 0;  // no lead byte in the last four: invalid text, sent as it is (JSON replaces it)
}

bool TextOutput::add(std::string_view piece) {
  if (stopped()) return true;
  text_ += piece;
  // Text already sent holds no start of a stop string, so a match starts at sent_ or later.
  for (const std::string& s : stop_) {
    const size_t at = text_.find(s, sent_);
    if (at != std::string::npos) stop_at_ = std::min(stop_at_, at);
  }
  return stopped();
}

std::string TextOutput::take_ready() {
  if (stopped()) return "";
  size_t end = text_.size();
  // Hold back the longest tail that a stop string starts with.
  for (const std::string& s : stop_) {
    for (size_t k = std::min(s.size() - 1, text_.size() - sent_); k > 0; --k) {
      if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
        end = std::min(end, text_.size() - k);
        break;
      }
    }
  }
  end -= incomplete_utf8_tail(std::string_view(text_).substr(sent_, end - sent_));
  std::string out = text_.substr(sent_, end - sent_);
  sent_ = end;
  return out;
}

std::string TextOutput::take_rest() {
  const size_t end = std::min(stop_at_, text_.size());
  std::string out = end > sent_ ? text_.substr(sent_, end - sent_) : "";
  sent_ = std::max(sent_, end);
  return out;
}

}  // namespace kvrt::serve
