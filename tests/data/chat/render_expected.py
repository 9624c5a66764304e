#!/usr/bin/python3
"""Writes the expected renderings of tests/test_chat_template.cc's three-turn conversations
(expected_*.txt) with the models' real Jinja templates, rendered as transformers renders them
(tools/render_template.py; strftime_now gives 26 Jul 2024). Run once with Debian's python3-jinja2
and commit:
    /usr/bin/python3 tests/data/chat/render_expected.py ../shared/templates tests/data/chat
The conversations here and in the test must stay the same."""
import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
from render_template import environment, render, write_text  # noqa: E402

SYSTEM = "You are a helpful assistant."
TURNS = [("Hello! Who are you?", "I am a small model."),
         ("What is 2+2? Answer with a number.", "  4  "),
         ("Thanks, bye.", None)]

# A reply with thinking and a user message with Qwen3's /no_think switch.
QWEN3_TURNS = [("Hello! Who are you?", "<think>\nThe user greets me.\n</think>\n\nI am a small model."),
               ("What is 2+2? /no_think", "<think>\n\n</think>\n\n4"),
               ("Thanks, bye.", None)]


def conversation(system, turns):
    m = [{"role": "system", "content": system}] if system is not None else []
    for user, reply in turns:
        m.append({"role": "user", "content": user})
        if reply is not None:
            m.append({"role": "assistant", "content": reply})
    return m


# (expected file, template file, directory key, system message, turns, bos, eos[, kwargs])
CASES = [
    ("qwen3", "Qwen-Qwen3-0.6B.jinja", "shared", SYSTEM, QWEN3_TURNS, "", "<|im_end|>"),
    ("qwen3.5", "Qwen3.5-4B.jinja", "shared", SYSTEM, QWEN3_TURNS, "", "<|im_end|>"),
    ("qwen3.5-no-think", "Qwen3.5-4B.jinja", "shared", SYSTEM, QWEN3_TURNS, "", "<|im_end|>",
     {"enable_thinking": False}),
    ("qwen2.5", "Qwen-Qwen2.5-7B-Instruct.jinja", "shared", None, TURNS, "", "<|im_end|>"),
    ("lfm2.5", "LFM2.5-Instruct.jinja", "shared", SYSTEM, QWEN3_TURNS, "", "<|im_end|>"),
    ("gemma4", "google-gemma-4-31B-it.jinja", "shared", SYSTEM, TURNS, "", "<eos>"),
    ("gemma4-think", "google-gemma-4-31B-it.jinja", "shared", SYSTEM, TURNS, "", "<eos>",
     {"enable_thinking": True}),
    ("llama3.2", "meta-llama-Llama-3.2-3B-Instruct.jinja", "shared", SYSTEM, TURNS, "", "<|eot_id|>"),
    ("smollm3", "HuggingFaceTB-SmolLM3-3B.jinja", "shared", SYSTEM, TURNS, "", "<|im_end|>"),
    ("smollm3-no-think", "HuggingFaceTB-SmolLM3-3B.jinja", "shared", SYSTEM + " /no_think", TURNS, "",
     "<|im_end|>"),
    ("gemma3", "google-gemma-3-it.jinja", "here", SYSTEM, TURNS, "", "<eos>"),
    ("granite-3.3", "ibm-granite-granite-3.3-2B-Instruct.jinja", "shared", SYSTEM, TURNS, "",
     "<|end_of_text|>"),
    ("granite-4.0", "ibm-granite-granite-4.0.jinja", "shared", SYSTEM, TURNS, "", "<|end_of_text|>"),
    ("ministral-3", "mistralai-Ministral-3-14B-Reasoning-2512.jinja", "shared", SYSTEM, TURNS, "", "</s>"),
    ("mistral-small-3.2", "Mistral-Small-3.2-24B-Instruct-2506.jinja", "shared", SYSTEM, TURNS, "", "</s>"),
    ("phi4-mini", "microsoft-Phi-4-mini-instruct.jinja", "here", SYSTEM, TURNS, "", "<|endoftext|>"),
    ("phi3.5", "microsoft-Phi-3.5-mini-instruct.jinja", "shared", SYSTEM, TURNS, "", "<|endoftext|>"),
]


def main():
    shared, here = sys.argv[1], sys.argv[2]
    env = environment(datetime.datetime(2024, 7, 26))
    for name, template, where, system, turns, bos, eos, *kwargs in CASES:
        with open(os.path.join(shared if where == "shared" else here, template), encoding="utf-8") as f:
            text = render(env, f.read(), conversation(system, turns), None, kwargs[0] if kwargs else None,
                          True, bos, eos)
        write_text(os.path.join(here, "expected_" + name + ".txt"), text)


if __name__ == "__main__":
    main()
