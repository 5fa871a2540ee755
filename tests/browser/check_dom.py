#!/usr/bin/env python3
"""Checks one page's DOM as chromium dumped it after loading (scripts, if any, had run).

usage: check_dom.py DOM_FILE CONSOLE_LOG MIN_CHARTS
Fails on: a console message, a script element other than the embedded report, an event
handler attribute (on*), a javascript: URL, an external reference, fewer charts than asked.
"""
import re
import sys
from html.parser import HTMLParser


class Dom(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scripts, self.charts, self.problems = [], 0, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts.append(a)
        if tag == "svg" and "chart" in (a.get("class") or "").split():
            self.charts += 1
        for name, value in attrs:
            if name.lower().startswith("on"):
                self.problems.append(f"event handler attribute {name}= on <{tag}>")
            v = (value or "").strip().lower()
            if v.startswith("javascript:"):
                self.problems.append(f"javascript: URL in {name} of <{tag}>")
            if name in ("src", "href") and re.match(r"^(https?:)?//", v):
                self.problems.append(f"external reference {name}={value} on <{tag}>")
        if tag in ("iframe", "object", "embed", "link", "img", "image", "foreignobject"):
            self.problems.append(f"unexpected element <{tag}>")


def main():
    dom_file, log_file, min_charts = sys.argv[1], sys.argv[2], int(sys.argv[3])
    dom = Dom()
    with open(dom_file, encoding="utf-8", errors="replace") as f:
        text = f.read()
    dom.feed(text)
    problems = list(dom.problems)
    with open(log_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            if ":CONSOLE" in line or "Uncaught" in line or "Content Security Policy" in line:
                problems.append("console: " + line.strip())
    if not text.strip():
        problems.append("empty DOM: the page did not load")
    if len(dom.scripts) != 1 or dom.scripts[0].get("type") != "application/json":
        problems.append(f"script elements: {dom.scripts} (want only the application/json report block)")
    if dom.charts < min_charts:
        problems.append(f"{dom.charts} chart(s), fewer than the {min_charts} families")
    for p in problems:
        print(f"{dom_file}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
