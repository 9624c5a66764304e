// kvrt serve (src/serve/) on a free loopback port, spoken to over HTTP (and with curl): greedy
// replies equal kvrt run's and kvrt chat's, also four at once and streamed; the gate at start-up;
// the bad-input catalogue of issue 30, each an OpenAI error object with its status while another
// slot keeps generating; a full queue; a client that goes away.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "serve/text_output.h"
#include "serve_process.h"
#include "test_util.h"
#include "tools/synth_model/chat_model.h"

using namespace kvrt;
using nlohmann::json;
using test::ServeProcess;

namespace {

const char* const kPrompts[] = {"Once upon a time", "The little dog",
                                "Tom and Sue went to the park", "One day a bird"};
constexpr int kTokens = 24;

std::string run_output(const std::string& prompt, const test::TempDir& tmp) {
  const test::CommandResult r =
      test::run_kvrt("run -c 256 -t 1 -n " + std::to_string(kTokens) + " -p '" + prompt + "'", tmp);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

json completion_request(const std::string& prompt, bool stream = false) {
  return {
      {"model", "stories260K"}, {"prompt", prompt}, {"max_tokens", kTokens}, {"stream", stream}};
}

httplib::Result post(int port, const std::string& path, const std::string& body,
                     const httplib::Headers& headers = {}) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60, 0);
  return cli.Post(path.c_str(), headers, body, "application/json");
}

// The text of a completion: whole, or put together from its server-sent events (which must end
// with the usage and "data: [DONE]").
std::string body_text(const std::string& body, bool chat) {
  if (body.find("data: ") == std::string::npos) {
    const json j = json::parse(body);
    return chat ? j["choices"][0]["message"]["content"].get<std::string>()
                : j["choices"][0]["text"].get<std::string>();
  }
  std::string text;
  bool done = false, usage = false;
  for (size_t at = 0; (at = body.find("data: ", at)) != std::string::npos;) {
    const size_t end = body.find("\n\n", at);
    const std::string data = body.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    const json chunk = json::parse(data);
    usage = usage || chunk.contains("usage");
    const json& choice = chunk["choices"][0];
    if (chat && choice["delta"].contains("content"))
      text += choice["delta"]["content"].get<std::string>();
    if (!chat) text += choice["text"].get<std::string>();
  }
  CHECK(done);
  CHECK(usage);
  return text;
}

std::string completion_text(const httplib::Result& res, bool chat) {
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return body_text(res->body, chat);
}

// An error object of the OpenAI API with this status.
void check_error(const httplib::Result& res, int status, const std::string& param = "") {
  REQUIRE(res);
  CHECK(res->status == status);
  const json j = json::parse(res->body);
  REQUIRE(j.contains("error"));
  CHECK(j["error"]["message"].is_string());
  CHECK(!j["error"]["message"].get<std::string>().empty());
  CHECK(j["error"]["type"].is_string());
  if (!param.empty()) CHECK(j["error"]["param"] == param);
}

// The part of `expected` (kvrt run's output) that a completion of `prompt` stopped at `stop` gives.
std::string before(const std::string& expected, const std::string& prompt,
                   const std::string& stop) {
  const std::string text = expected.substr(prompt.size());
  return text.substr(0, text.find(stop));
}

// A connected socket to the server, for what an HTTP client library will not send.
int raw_connection(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

void send_all(int fd, const std::string& s) {
  REQUIRE(send(fd, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size()));
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, size_t(n));
  return out;
}

// A client that sends `start` at once, then `rest` a byte every 300 ms, until the server answers
// or closes the connection. Returns what the server sent ("" when it closed without a word) and
// the seconds from the first byte to the answer or close.
std::pair<std::string, double> trickle(int port, const std::string& start,
                                       const std::string& rest) {
  const int fd = raw_connection(port);
  const auto t0 = std::chrono::steady_clock::now();
  send_all(fd, start);
  std::string reply;
  for (size_t i = 0; i < rest.size(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) break;  // closed
    if (n > 0) {
      reply.assign(buf, size_t(n));
      break;
    }
    if (send(fd, &rest[i], 1, MSG_NOSIGNAL) != 1) break;
  }
  reply += read_all(fd);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(fd);
  return {reply, seconds};
}

// The value of a metric (a line "NAME VALUE") in /metrics, -1 when absent.
double metric(int port, const std::string& name) {
  httplib::Client cli("127.0.0.1", port);
  const auto res = cli.Get("/metrics");
  REQUIRE(res);
  const size_t at = res->body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(res->body.substr(at + name.size() + 2));
}

}  // namespace

TEST_CASE("a reply's text: stop strings across pieces, held-back prefixes, whole UTF-8 only") {
  serve::TextOutput out({"END", "xy"});
  CHECK(!out.add("abc E"));
  CHECK(out.take_ready() == "abc ");  // "E" may start "END"
  CHECK(!out.add("Nx"));
  CHECK(out.take_ready() == "EN");  // "ENx" cannot start "END"; "x" may start "xy"
  CHECK(!out.add("z..EN"));
  CHECK(out.take_ready() == "xz..");
  CHECK(out.add("D and more"));  // "END" across two pieces
  CHECK(out.stopped());
  CHECK(out.take_ready().empty());
  CHECK(out.take_rest().empty());  // everything before "END" was sent

  serve::TextOutput cut({"END"});
  CHECK(!cut.add("xE"));
  CHECK(cut.take_ready() == "x");
  CHECK(cut.take_rest() == "E");  // the reply ended without the stop string: the rest is text

  serve::TextOutput utf8({});
  utf8.add("caf\xC3");
  CHECK(utf8.take_ready() == "caf");
  utf8.add("\xA9 \xF0\x9F");
  CHECK(utf8.take_ready() == "\xC3\xA9 ");
  utf8.add("\x98\x80");
  CHECK(utf8.take_ready() == "\xF0\x9F\x98\x80");
  CHECK(serve::incomplete_utf8_tail("\xE2\x82") == 2);
  CHECK(serve::incomplete_utf8_tail("\xE2\x82\xAC") == 0);
  CHECK(serve::incomplete_utf8_tail("abc") == 0);
}

TEST_CASE("greedy completions equal kvrt run: alone, streamed, from the cache, four at once") {
  test::TempDir tmp;
  std::vector<std::string> expected;
  for (const char* p : kPrompts) expected.push_back(run_output(p, tmp));
  ServeProcess server("-c 256 -t 1 --parallel 4", tmp);
  REQUIRE_MESSAGE(server.port() > 0, server.err());

  for (int round = 0; round < 2; ++round) {  // the second round reuses the slots' prefixes
    for (size_t i = 0; i < std::size(kPrompts); ++i) {
      const std::string text = completion_text(
          post(server.port(), "/v1/completions", completion_request(kPrompts[i]).dump()), false);
      CHECK(std::string(kPrompts[i]) + text + "\n" == expected[i]);
      const std::string streamed = completion_text(
          post(server.port(), "/v1/completions", completion_request(kPrompts[i], true).dump()),
          false);
      CHECK(streamed == text);
    }
  }
  CHECK(metric(server.port(), "kvrt_prompt_tokens_cached_total") > 0);

  // Stop strings: the reply ends before the first, whole or streamed, finish reason "stop".
  json stopped = completion_request(kPrompts[0]);
  stopped["stop"] = {"girl", "zebra"};
  const auto res = post(server.port(), "/v1/completions", stopped.dump());
  CHECK(completion_text(res, false) == before(expected[0], kPrompts[0], "girl"));
  CHECK(json::parse(res->body)["choices"][0]["finish_reason"] == "stop");
  stopped["stream"] = true;
  CHECK(completion_text(post(server.port(), "/v1/completions", stopped.dump()), false) ==
        before(expected[0], kPrompts[0], "girl"));

  std::vector<std::string> texts(std::size(kPrompts));
  std::vector<std::thread> clients;
  for (size_t i = 0; i < std::size(kPrompts); ++i)
    clients.emplace_back([&, i] {
      auto res = post(server.port(), "/v1/completions",
                      completion_request(kPrompts[i], i % 2 == 1).dump());
      if (res && res->status == 200) texts[i] = res->body;
    });
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < std::size(kPrompts); ++i) {
    REQUIRE(!texts[i].empty());  // 200
    const std::string text = body_text(texts[i], false);
    CHECK(std::string(kPrompts[i]) + text + "\n" == expected[i]);
  }
  CHECK(server.stop() == 0);
}

TEST_CASE("curl: docs/serve.md's example requests, whole and streamed") {
  if (std::system("command -v curl >/dev/null 2>&1") != 0) {
    MESSAGE("SKIP: curl is not installed (tools/setup.sh installs it)");
    return;
  }
  test::TempDir tmp;
  const std::string expected = run_output(kPrompts[0], tmp);
  ServeProcess server("-c 256 -t 1 --api-key KEY", tmp);
  REQUIRE_MESSAGE(server.port() > 0, server.err());
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  const auto curl = [&](const std::string& args) {
    const std::string out = tmp / "curl.out";
    REQUIRE(
        std::system(("curl -sS --max-time 60 -H 'Authorization: Bearer KEY' " + args + " >" + out)
                        .c_str()) == 0);
    return test::read_file(out);
  };
  const std::string body = completion_request(kPrompts[0]).dump();
  CHECK(std::string(kPrompts[0]) +
            body_text(curl(url + "/v1/completions -d '" + body + "'"), false) + "\n" ==
        expected);
  const std::string stream = completion_request(kPrompts[0], true).dump();
  CHECK(std::string(kPrompts[0]) +
            body_text(curl("-N " + url + "/v1/completions -d '" + stream + "'"), false) + "\n" ==
        expected);
  CHECK(json::parse(curl(url + "/v1/models"))["data"][0]["id"] == "stories260K");
  CHECK(server.stop() == 0);
}

TEST_CASE("chat completions equal kvrt chat; markers written in a message stay text") {
  test::TempDir tmp;
  const std::string model = tmp / "chat.gguf";
  synth::write_chat_model({test::stories_path(), "chatml"}, model);
  const std::string message = "Tell me a story";
  std::ofstream(tmp / "messages.txt") << message << "\n";
  const test::CommandResult chat =
      test::run_kvrt("chat -m " + model + " -c 256 -t 1 -n 40 < " + (tmp / "messages.txt"), tmp);
  REQUIRE(chat.exit_code == 0);
  ServeProcess server("-m " + model + " -c 256 -t 1 --parallel 2", tmp);
  REQUIRE_MESSAGE(server.port() > 0, server.err());
  json req = {{"messages", {{{"role", "user"}, {"content", message}}}}, {"max_tokens", 40}};
  const std::string whole =
      completion_text(post(server.port(), "/v1/chat/completions", req.dump()), true);
  CHECK("> " + message + "\n" + whole + "\n" == chat.out);
  req["stream"] = true;
  CHECK(completion_text(post(server.port(), "/v1/chat/completions", req.dump()), true) == whole);

  // ignore_eos (llama.cpp's extension): the reply above ended at its end-of-turn token; with it,
  // the same text runs on to exactly max_tokens.
  req["stream"] = false;
  const auto ended = post(server.port(), "/v1/chat/completions", req.dump());
  REQUIRE(ended);
  const json ended_body = json::parse(ended->body);
  REQUIRE(ended_body["choices"][0]["finish_reason"] == "stop");
  REQUIRE(ended_body["usage"]["completion_tokens"].get<int>() < 40);
  req["ignore_eos"] = true;
  const auto full = post(server.port(), "/v1/chat/completions", req.dump());
  const std::string longer = completion_text(full, true);
  const json full_body = json::parse(full->body);
  CHECK(full_body["choices"][0]["finish_reason"] == "length");
  CHECK(full_body["usage"]["completion_tokens"] == 40);
  CHECK(longer.starts_with(whole));
  CHECK(longer.size() > whole.size());

  // A message holding <|im_end|> is tokenized as text: the prompt is longer than the markers' ids.
  json plain = {{"messages", {{{"role", "user"}, {"content", "<|im_end|><|im_start|>"}}}},
                {"max_tokens", 1}};
  const auto res = post(server.port(), "/v1/chat/completions", plain.dump());
  REQUIRE(res);
  REQUIRE(res->status == 200);
  json empty = {{"messages", {{{"role", "user"}, {"content", ""}}}}, {"max_tokens", 1}};
  const auto res_empty = post(server.port(), "/v1/chat/completions", empty.dump());
  REQUIRE(res_empty);
  CHECK(json::parse(res->body)["usage"]["prompt_tokens"].get<int>() >
        json::parse(res_empty->body)["usage"]["prompt_tokens"].get<int>() + 2);
}

// The served model as /v1/models describes it.
json served_model(int port) {
  httplib::Client cli("127.0.0.1", port);
  const auto models = cli.Get("/v1/models");
  REQUIRE(models);
  REQUIRE(models->status == 200);
  return json::parse(models->body)["data"][0];
}

TEST_CASE("the gate: --kv q8 serves only with a PASS record at -c; responses name the setting") {
  test::TempDir tmp;
  setenv("KVRT_STATE_DIR", tmp.path().c_str(), 1);  // the records of this test only
  ServeProcess none("-c 64 -t 1 --kv q8", tmp);
  CHECK(none.port() == 0);
  CHECK(none.stop() == 3);
  CHECK(none.err().find("kvrt validate") != std::string::npos);

  REQUIRE(test::run_kvrt("validate --kv q8 -c 64 --max-len 64 -t 1", tmp).exit_code == 0);
  ServeProcess longer("-c 128 -t 1 --kv q8", tmp);  // the record covers 64 positions
  CHECK(longer.port() == 0);
  CHECK(longer.stop() == 3);

  ServeProcess validated("-c 64 -t 1 --kv q8", tmp);
  REQUIRE_MESSAGE(validated.port() > 0, validated.err());
  const json m = served_model(validated.port());
  CHECK(m["id"] == "stories260K");
  CHECK(m["kvrt"]["gate"] == "record");
  CHECK(m["kvrt"]["validated_ctx"] == 64);
  CHECK(m["kvrt"]["matmul"] == "f32");
  CHECK(m["kvrt"]["kv_setting"].get<std::string>().find("k=q8,v=q8") != std::string::npos);
  const std::string fingerprint = m["system_fingerprint"];
  CHECK(fingerprint.find("| matmul f32 | validated ctx 64") != std::string::npos);
  const auto res =
      post(validated.port(), "/v1/completions", completion_request("Once upon a time").dump());
  REQUIRE(res);
  CHECK(json::parse(res->body)["system_fingerprint"] == fingerprint);

  ServeProcess unvalidated("-c 256 -t 1 --kv q8 --allow-unvalidated", tmp);
  REQUIRE_MESSAGE(unvalidated.port() > 0, unvalidated.err());
  const json u = served_model(unvalidated.port());
  CHECK(u["kvrt"]["gate"] == "unvalidated");
  CHECK(u["system_fingerprint"].get<std::string>().find("UNVALIDATED") != std::string::npos);
  unsetenv("KVRT_STATE_DIR");
}

TEST_CASE("the bad-input catalogue: an error object each, while another slot generates") {
  test::TempDir tmp;
  const std::string expected = run_output(kPrompts[0], tmp);
  const std::string prompt = kPrompts[0];
  const std::string expected_text =
      expected.substr(prompt.size(), expected.size() - prompt.size() - 1);
  ServeProcess server(
      "-c 256 -t 1 --parallel 2 --max-tokens 100 --max-body 4 --read-timeout 1 --api-key sekrit "
      "--debug-step-delay 5",
      tmp);
  REQUIRE_MESSAGE(server.port() > 0, server.err());
  const httplib::Headers auth = {{"Authorization", "Bearer sekrit"}};
  // The generation the bad requests must not disturb: 24 steps of at least 5 ms.
  std::string running;
  std::thread other([&] {
    const auto res =
        post(server.port(), "/v1/completions", completion_request(kPrompts[0], true).dump(), auth);
    running = completion_text(res, false);
  });
  const int p = server.port();
  const auto chat = [&](const json& body) {
    return post(p, "/v1/chat/completions", body.dump(), auth);
  };
  const auto cmpl = [&](const json& body) { return post(p, "/v1/completions", body.dump(), auth); };
  const json user = {{"role", "user"}, {"content", "hi"}};

  check_error(post(p, "/v1/completions", "{\"prompt\": \"x\",", auth), 400);  // malformed JSON
  check_error(post(p, "/v1/completions", "[1, 2]", auth), 400);
  check_error(cmpl({{"prompt", 5}}), 400, "prompt");  // wrong types
  check_error(cmpl({{"prompt", "x"}, {"max_tokens", "9"}}), 400, "max_tokens");
  check_error(cmpl({{"prompt", "x"}, {"temperature", "hot"}}), 400, "temperature");
  check_error(cmpl({{"prompt", "x"}, {"stream", 1}}), 400, "stream");
  check_error(cmpl({{"prompt", "x"}, {"ignore_eos", "yes"}}), 400, "ignore_eos");
  check_error(chat({{"messages", "hi"}}), 400, "messages");
  check_error(chat({{"messages", {{{"role", "wizard"}, {"content", "hi"}}}}}), 400,
              "messages[0].role");                                    // unknown role
  check_error(chat({{"messages", json::array()}}), 400, "messages");  // empty list
  check_error(chat({{"messages", {{{"role", "user"}}}}}), 400, "messages[0].content");
  check_error(cmpl({{"prompt", "x"}, {"n", 2}}), 400, "n");
  check_error(cmpl({{"prompt", "x"}, {"top_p", 0}}), 400, "top_p");
  check_error(cmpl({{"prompt", "x"}, {"stop", {"a", "b", "c", "d", "e"}}}), 400, "stop");
  check_error(chat({{"messages", {user}}, {"max_tokens", -1}}), 400, "max_tokens");  // negative
  check_error(chat({{"messages", {user}}, {"max_tokens", 0}}), 400, "max_tokens");
  check_error(chat({{"messages", {user}}, {"max_tokens", 101}}), 400,
              "max_tokens");  // over the limit
  check_error(chat({{"messages", {user}}, {"max_tokens", 1e30}}), 400, "max_tokens");  // huge
  check_error(cmpl({{"prompt", std::string(5000, 'a')}}), 413);  // body past 4 KiB
  std::string words;
  for (int i = 0; i < 300; ++i) words += "the dog ";
  check_error(cmpl({{"prompt", words}}), 400);  // a prompt over the context
  check_error(cmpl({{"prompt", "x"}, {"model", "gpt-4o"}}), 404, "model");       // unknown model
  check_error(post(p, "/v1/completions", completion_request("x").dump()), 401);  // no key
  check_error(post(p, "/v1/completions", completion_request("x").dump(),
                   {{"Authorization", "Bearer sekriT"}}),
              401);
  httplib::Client cli("127.0.0.1", p);
  check_error(cli.Get("/v2/anything"), 404);
  CHECK(cli.Get("/health")->status == 200);  // no key needed

  // A client that sends its body a byte at a time, slower than --read-timeout allows in total.
  const int fd = raw_connection(p);
  const std::string body = completion_request("Once").dump();
  send_all(
      fd,
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\n\r\n");
  std::string reply;
  for (size_t i = 0; i < body.size() && reply.empty(); ++i) {
    if (send(fd, &body[i], 1, MSG_NOSIGNAL) != 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    char c;
    if (recv(fd, &c, 1, MSG_DONTWAIT) == 1) reply = std::string(1, c) + read_all(fd);
  }
  if (reply.empty()) reply = read_all(fd);
  close(fd);
  CHECK(reply.starts_with("HTTP/1.1 408"));
  CHECK(reply.find("\"error\"") != std::string::npos);

  // Clients that trickle their request line or headers, a byte every 300 ms: each read is within
  // the per-read timeout, but a request must arrive within --read-timeout (1 s) of its first byte
  // in all. The connection is dropped (request line) or answered 408 (headers) within the
  // deadline, not after the 10 s and more the trickles would take, and other requests are served
  // meanwhile.
  const std::string headers =
      "Host: x\r\nAuthorization: Bearer sekrit\r\nX-Slow: " + std::string(20, 'a') + "\r\n\r\n";
  std::pair<std::string, double> slow_line, slow_headers;
  std::thread line_client(
      [&] { slow_line = trickle(p, "P", "OST /v1/completions HTTP/1.1\r\n" + headers); });
  std::thread headers_client(
      [&] { slow_headers = trickle(p, "POST /v1/completions HTTP/1.1\r\n", headers); });
  for (int i = 0; i < 3; ++i)
    CHECK(completion_text(cmpl(completion_request(kPrompts[0])), false) == expected_text);
  line_client.join();
  headers_client.join();
  // About 1.3 s (the deadline, then the client's next look); the trickles would take 20 s.
  const double limit = test::kSanitizedBuild ? 10.0 : 5.0;
  CHECK(slow_line.first.empty());
  CHECK(slow_line.second < limit);
  CHECK(slow_headers.first.starts_with("HTTP/1.1 408"));
  CHECK(slow_headers.first.find("\"error\"") != std::string::npos);
  CHECK(slow_headers.second < limit);

  other.join();
  CHECK(std::string(kPrompts[0]) + running + "\n" == expected);
  // Every refusal was answered, and the server still serves.
  CHECK(completion_text(cmpl(completion_request(kPrompts[0])), false) == running);
  CHECK(server.stop() == 0);
}

TEST_CASE("a full queue gets 503 with Retry-After; a client that goes away frees its slot") {
  test::TempDir tmp;
  ServeProcess server("-c 256 -t 1 --parallel 1 --queue 0 --debug-step-delay 20", tmp);
  REQUIRE_MESSAGE(server.port() > 0, server.err());
  const int p = server.port();
  // A stream of 200 steps of 20 ms; its client reads the first bytes and goes away.
  const int fd = raw_connection(p);
  const std::string body =
      json({{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"stream", true}}).dump();
  send_all(fd,
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
           "application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body);
  char buf[256];
  REQUIRE(recv(fd, buf, sizeof buf, 0) > 0);  // the headers: the job holds the slot
  const auto full = post(p, "/v1/completions", completion_request("x").dump());
  check_error(full, 503);
  CHECK(full->get_header_value("Retry-After") == "1");
  close(fd);
  // The slot is freed at a step after the next failed write (each step is 20 ms).
  for (int i = 0; i < 100 && metric(p, "kvrt_requests_cancelled_total") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(metric(p, "kvrt_requests_cancelled_total") == 1);
  const auto after = post(p, "/v1/completions", json({{"prompt", "x"}, {"max_tokens", 2}}).dump());
  REQUIRE(after);
  CHECK(after->status == 200);
  CHECK(metric(p, "kvrt_generated_tokens_total") < 200);
  CHECK(server.stop() == 0);
}
