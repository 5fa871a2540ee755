// Loaded by the layout page html_pages.sh writes: measures every page in its iframes (each as
// wide as the window it stands for) after load: a page wider than its window, text over other
// text, text a chart cuts off, legend entries. It writes what it found, as JSON, into
// <pre id="out">, which chromium's --dump-dom prints for check_dom.py --layout. The pages
// themselves run no script: this one reads them from outside (same origin under
// --allow-file-access-from-files).
"use strict";

// Every painted piece of text: the lines of each text node (HTML), each <text> of an SVG.
function textBoxes(doc) {
  const out = [];
  const walker = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT);
  const range = doc.createRange();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.nodeValue.trim()) continue;
    const parent = n.parentElement;
    if (!parent || parent.closest("script, style, title, svg")) continue;
    range.selectNodeContents(n);
    for (const r of range.getClientRects())
      if (r.width > 0 && r.height > 0) out.push({ r, what: n.nodeValue.trim().slice(0, 40), el: parent });
  }
  for (const t of doc.querySelectorAll("svg text")) {
    const r = t.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) out.push({ r, what: t.textContent.trim().slice(0, 40), el: t });
  }
  return out;
}

// Pairs of text boxes that cover each other by more than `slack` px both ways (a sweep down the page).
function overlaps(boxes, slack) {
  const found = [];
  boxes.sort((a, b) => a.r.top - b.r.top);
  const active = [];
  for (const b of boxes) {
    for (let i = active.length - 1; i >= 0; --i) if (active[i].r.bottom <= b.r.top + slack) active.splice(i, 1);
    for (const a of active) {
      if (a.el === b.el && a.el.tagName !== "text") continue; // the lines of one element
      const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
      const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
      if (w > slack && h > slack) found.push(`"${a.what}" and "${b.what}" overlap (${Math.round(w)} x ${Math.round(h)} px)`);
      if (found.length >= 10) return found;
    }
    active.push(b);
  }
  return found;
}

function measure(frame) {
  const doc = frame.contentDocument;
  const res = { page: frame.dataset.page, width: frame.clientWidth, problems: [], legends: 0, texts: 0 };
  if (!doc || !doc.body) {
    res.problems.push("the page could not be read");
    return res;
  }
  const vw = doc.documentElement.clientWidth;
  if (doc.documentElement.scrollWidth > vw + 1) {
    res.problems.push(`the page is ${doc.documentElement.scrollWidth} px wide in a ${vw} px window`);
    const wide = [];
    for (const el of doc.body.querySelectorAll("*")) {
      const r = el.getBoundingClientRect();
      if (r.right > vw + 1 && r.width > 0 && !el.closest("svg *")) wide.push(`<${el.tagName.toLowerCase()} class="${el.getAttribute("class") || ""}"> to ${Math.round(r.right)} px`);
      if (wide.length >= 5) break;
    }
    res.problems.push(...wide);
  }
  const boxes = textBoxes(doc);
  res.texts = boxes.length;
  res.problems.push(...overlaps(boxes, 1.5));
  // Text a chart cuts off: past its SVG's edge.
  let cut = 0;
  for (const t of doc.querySelectorAll("svg text")) {
    const r = t.getBoundingClientRect(), svg = t.ownerSVGElement.getBoundingClientRect();
    if (r.width > 0 && (r.left < svg.left - 1 || r.right > svg.right + 1 || r.top < svg.top - 1 || r.bottom > svg.bottom + 1) && cut++ < 5)
      res.problems.push(`"${t.textContent.trim().slice(0, 40)}" is cut off by its chart's edge`);
  }
  // Legends: the entries a reader sees under one chart.
  for (const ul of doc.querySelectorAll("ul.legend")) {
    const shown = [...ul.querySelectorAll(":scope > li")].filter((li) => li.getClientRects().length > 0).length;
    res.legends = Math.max(res.legends, shown);
    if (shown > 12) res.problems.push(`a legend of ${shown} entries (at most 12)`);
  }
  return res;
}

window.addEventListener("load", () => {
  const results = [...document.querySelectorAll("iframe")].map(measure);
  document.getElementById("out").textContent = JSON.stringify(results);
});
