// A conversation as bytes (Conversation::save, Conversation::resume): the messages, how many the
// session holds, and the tokens that wait for the next message.
#include <string>

#include "common/byte_io.h"
#include "common/error.h"
#include "model/conversation.h"

namespace kvrt::model {
namespace {

constexpr char kTag[8] = {'k', 'v', 'r', 't', 'c', 'h', 'a', 't'};
constexpr size_t kMaxMessageBytes = size_t(64) << 20;

}  // namespace

std::string Conversation::save() const {
  std::string bytes;
  ByteWriter out(bytes);
  out.put_bytes(kTag, sizeof kTag);
  out.put(uint32_t(messages_.size()));
  for (const ChatMessage& m : messages_) {
    out.put_string(m.role);
    out.put_string(m.content);
  }
  out.put(uint32_t(n_held_));
  out.put(uint32_t(pending_.size()));
  out.put_bytes(pending_.data(), pending_.size() * sizeof(int32_t));
  return bytes;
}

void Conversation::resume(std::string_view bytes, const std::string& what) {
  ByteReader in(bytes, what + "'s conversation");
  if (bytes.substr(0, sizeof kTag) != std::string_view(kTag, sizeof kTag))
    throw Error(what + " holds no kvrt chat conversation (it was not saved by kvrt chat)");
  in.take(sizeof kTag, "tag");
  std::vector<ChatMessage> messages(
      std::min<uint32_t>(in.get<uint32_t>("message count"), uint32_t(bytes.size() / 8)));
  for (ChatMessage& m : messages) {
    m.role = in.get_string("role", kMaxMessageBytes);
    m.content = in.get_string("message", kMaxMessageBytes);
  }
  const uint32_t n_held = in.get<uint32_t>("count of messages held");
  std::vector<int32_t> pending(
      std::min<uint32_t>(in.get<uint32_t>("pending token count"), uint32_t(bytes.size() / 4)));
  const uint8_t* p = in.take(pending.size() * sizeof(int32_t), "pending tokens");
  std::copy(p, p + pending.size() * sizeof(int32_t), reinterpret_cast<uint8_t*>(pending.data()));
  const int n_vocab = session_.model().config().n_vocab;
  for (int32_t t : pending)
    if (t < 0 || t >= n_vocab)
      throw Error(what + " holds a pending token id " + std::to_string(t) +
                  " outside the vocabulary");
  if (n_held != messages.size() || in.remaining() != 0)
    throw Error(what + " holds a conversation that does not end with a reply");
  messages_ = std::move(messages);
  n_held_ = n_held;
  pending_ = std::move(pending);
}

}  // namespace kvrt::model
