#!/usr/bin/python3
"""Renders a model's chat template (the Jinja text of tokenizer.chat_template) the way
transformers' apply_chat_template renders it: Jinja2's immutable sandbox with trim_blocks,
lstrip_blocks and the loop controls, transformers' tojson (no HTML escaping, keys in their
order), raise_exception and strftime_now, and the variables messages, tools, documents,
add_generation_prompt, bos_token, eos_token and any template arguments (enable_thinking, ...).
It is the oracle that kvrt's own rendering of each chat format is compared with
(tests/test_chat_oracle.cc). Debian's python3-jinja2; standard library otherwise.

One conversation, to stdout:
    tools/render_template.py TEMPLATE.jinja MESSAGES.json [--tools TOOLS.json]
        [--kwargs '{"enable_thinking": false}'] [--no-generation-prompt] [--bos S] [--eos S]
        [--date YYYY-MM-DD]
MESSAGES.json holds the OpenAI-style list of messages (role, content, and tool_calls,
tool_call_id, name, reasoning_content as the template reads them); "-" reads stdin.

Many at once (the test):
    tools/render_template.py --cases CASES.json --out DIR [--date YYYY-MM-DD]
CASES.json is a list of {"name", "template" (a path), "messages", and optionally "tools",
"kwargs", "add_generation_prompt" (default true), "bos_token", "eos_token" (default "")}.
Each case writes DIR/NAME.txt with the rendering, or DIR/NAME.error with the message of the
exception the template raised (raise_exception, or an error of the template itself).

strftime_now gives --date (default today), so that templates that print the date render the
same on every run. Exits with 77 (meson's skip code) when jinja2 is not installed."""
import argparse
import datetime
import json
import os
import sys

try:
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("SKIP: python3-jinja2 is not installed (apt-get install python3-jinja2)", file=sys.stderr)
    sys.exit(77)


class TemplateError(Exception):
    """What raise_exception reports: the template refuses the conversation."""


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers replaces Jinja's tojson, which escapes <, >, & and ' for HTML and sorts keys.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def environment(today):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: today.strftime(fmt)
    return env


def render(env, template, messages, tools=None, kwargs=None, add_generation_prompt=True,
           bos_token="", eos_token=""):
    """The rendering of one conversation; template is the Jinja text."""
    return env.from_string(template).render(
        messages=messages, tools=tools, documents=None,
        add_generation_prompt=add_generation_prompt, bos_token=bos_token, eos_token=eos_token,
        **(kwargs or {}))


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_json(path):
    return json.load(sys.stdin if path == "-" else open(path, encoding="utf-8"))


def write_text(path, text):
    # newline="" keeps the rendering's bytes: no \n -> os.linesep translation.
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def run_cases(env, cases_path, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    templates = {}
    for case in read_json(cases_path):
        path = case["template"]
        if path not in templates:
            templates[path] = read_text(path)
        try:
            text = render(env, templates[path], case["messages"], case.get("tools"),
                          case.get("kwargs"), case.get("add_generation_prompt", True),
                          case.get("bos_token", ""), case.get("eos_token", ""))
            write_text(os.path.join(out_dir, case["name"] + ".txt"), text)
        except Exception as e:  # the template refused the conversation, or failed on it
            write_text(os.path.join(out_dir, case["name"] + ".error"),
                       type(e).__name__ + ": " + str(e))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("template", nargs="?", help="the chat template (Jinja text)")
    p.add_argument("messages", nargs="?", help="JSON list of messages, - for stdin")
    p.add_argument("--tools", help="JSON list of tools (OpenAI function declarations)")
    p.add_argument("--kwargs", default="{}", help="JSON object of template arguments")
    p.add_argument("--no-generation-prompt", action="store_true")
    p.add_argument("--bos", default="", help="bos_token (default empty: kvrt's tokenizer adds BOS)")
    p.add_argument("--eos", default="", help="eos_token")
    p.add_argument("--date", help="the date strftime_now gives, YYYY-MM-DD (default today)")
    p.add_argument("--cases", help="JSON list of cases to render into --out")
    p.add_argument("--out", help="directory for --cases' renderings")
    a = p.parse_args()
    today = datetime.datetime.strptime(a.date, "%Y-%m-%d") if a.date else datetime.datetime.now()
    env = environment(today)
    if a.cases:
        if not a.out:
            p.error("--cases needs --out")
        run_cases(env, a.cases, a.out)
        return
    if not a.template or not a.messages:
        p.error("give TEMPLATE and MESSAGES, or --cases and --out")
    tools = read_json(a.tools) if a.tools else None
    text = render(env, read_text(a.template), read_json(a.messages), tools, json.loads(a.kwargs),
                  not a.no_generation_prompt, a.bos, a.eos)
    sys.stdout.buffer.write(text.encode("utf-8"))


if __name__ == "__main__":
    main()
