#!/usr/bin/env python3
"""Checks one page's DOM as chromium dumped it after loading (scripts, if any, had run), or
the layout of every page as measure.js found it in a real window.

usage: check_dom.py DOM_FILE CONSOLE_LOG MIN_CHARTS
Fails on: a console message, a script element other than the embedded report, an event
handler attribute (on*), a javascript: URL, an external reference, fewer charts than asked.

usage: check_dom.py --layout LAYOUT_DOM PAGES
LAYOUT_DOM: the dumped DOM of the layout page (measure.js's JSON in <pre id="out">); PAGES:
how many pages x widths it was to measure. Fails on: a page wider than its window, text that
overlaps other text (headers, tick labels, legends), text a chart cuts off at its edge, a
legend of more than 12 entries, a page not measured.
"""
import html
import json
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


def layout(dom_file, pages):
    with open(dom_file, encoding="utf-8", errors="replace") as f:
        m = re.search(r'<pre id="out">(.*?)</pre>', f.read(), re.S)
    if not m or not m.group(1).strip():
        print(f"{dom_file}: no measurements: the layout page's script did not run")
        return 1
    results = json.loads(html.unescape(m.group(1)))
    failed = 0
    for r in results:
        where = f"{r['page']} at {r['width']} px"
        for p in r["problems"]:
            print(f"{where}: {p}")
        failed += 1 if r["problems"] else 0
        if r["texts"] == 0:
            print(f"{where}: no text measured")
            failed += 1
    if len(results) != pages:
        print(f"{dom_file}: {len(results)} page(s) measured, {pages} expected")
        failed += 1
    if not failed:
        print(f"layout: {len(results)} page(s) x width(s): none wider than its window, no text over other text, "
              f"legends of at most {max(r['legends'] for r in results)} entries")
    return 1 if failed else 0


def main():
    if sys.argv[1] == "--layout":
        return layout(sys.argv[2], int(sys.argv[3]))
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
