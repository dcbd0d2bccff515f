"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const FOLD_CHARS = 600;  // a long field shows its first FOLD_CHARS characters ...
const FOLD_LINES = 8;     // ... or its first FOLD_LINES lines, whichever is shorter, then "show all"
const PAGE_ROWS = D.page_rows;  // documents per page: only one page of rows is in the document at a time
const PIECE = 80;         // an unbroken run longer than this gets a line-break opportunity (<wbr>) every PIECE chars
const FILTERS = [["task", "task"], ["category", "category"], ["correct", "correct"], ["method", "resolved by"],
                 ["model", "model"]];
function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}
function foldAt(text) {
  // Where a long field is cut: after FOLD_LINES lines or FOLD_CHARS characters, whichever comes first; -1 when the
  // whole text is within both.
  let cut = Math.min(text.length, FOLD_CHARS);
  let newline = -1;
  for (let line = 0; line < FOLD_LINES && newline < cut; line += 1) {
    newline = text.indexOf("\n", newline + 1);
    if (newline < 0) break;
  }
  if (newline >= 0 && newline < cut) cut = newline;
  return cut < text.length ? cut : -1;
}
function writeText(node, text) {
  // The text as text nodes only (never parsed as HTML), with a <wbr> after every PIECE characters of an unbroken run
  // (no space or line break), so a 20,000-character word wraps in the cell in short pieces.
  node.replaceChildren();
  const runs = text.split(/(\s+)/);
  for (const run of runs) {
    if (run.length <= PIECE) { node.append(run); continue; }
    for (let start = 0; start < run.length; start += PIECE) {
      if (start > 0) node.append(el("wbr"));
      node.append(run.slice(start, start + PIECE));
    }
  }
  node.normalize();
}
function textBlock(text, cls, prefix) {
  // A field (class cls, "text" by default) showing prefix + text; a long text is folded (foldAt) with a "show all"
  // control revealing the rest and "show less" folding it again.
  const box = el("div", {class: cls || "text"});
  const cut = foldAt(text);
  if (cut < 0) { writeText(box, (prefix || "") + text); return box; }
  const span = el("span", {class: "folded"});
  const button = el("button", {class: "more", type: "button", "aria-expanded": "false"});
  const show = (open) => {
    writeText(span, (prefix || "") + (open ? text : text.slice(0, cut) + " …"));
    const rest = (text.length - cut).toLocaleString("en");
    button.textContent = open ? "show less" : "show all (" + rest + " more characters)";
    button.setAttribute("aria-expanded", String(open));
    box.dataset.open = String(open);
  };
  button.addEventListener("click", () => show(box.dataset.open !== "true"));
  show(false);
  box.append(span, button);
  return box;
}
function correctness(c) { return c.c === true ? "correct" : c.c === false ? "wrong" : "n/a"; }
for (const line of D.notes.concat(D.metrics.map((m) => "Task metrics: " + m))) {
  document.getElementById("notes").append(el("p", {class: "note"}, line));
}
const values = {task: new Set(), category: new Set(), correct: new Set(), method: new Set(),
                model: new Set(D.models)};
for (const row of D.rows) {
  values.task.add(row.t); if (row.k) values.category.add(row.k);
  for (const c of Object.values(row.c)) { values.correct.add(correctness(c)); if (c.m) values.method.add(c.m); }
}
const selects = {};
for (const [name, label] of FILTERS) {
  const wrap = el("label", {}, label + ":");
  const select = el("select", {id: "filter-" + name, name: name});
  select.append(el("option", {value: ""}, "all"));
  for (const v of [...values[name]].sort()) select.append(el("option", {value: v}, v));
  if (values[name].size === 0) select.disabled = true;
  selects[name] = select; wrap.append(select);
  document.getElementById("filters").append(wrap);
}
const head = el("tr");
for (const h of ["figure", "task / document", "prompt", "expected"]) head.append(el("th", {}, h));
D.models.forEach((m, i) => head.append(el("th", {class: "model", "data-model": i}, m)));
document.querySelector("#samples thead").append(head);
const body = document.querySelector("#samples tbody");
const built = new Map();  // row index -> its <tr>, made the first time the row is on a page
function rowElement(index) {
  if (built.has(index)) return built.get(index);
  const row = D.rows[index];
  const tr = el("tr", {class: "sample"});
  const figs = el("td", {class: row.i.length > 1 ? "figs multi" : "figs"});
  // several images are the question's options, in order: each is labelled with its letter (A, B, C, ...)
  row.i.forEach((i, k) => {
    const thumb = el("img", {src: D.images[i], alt: "figure (open at full size)", class: "thumb", decoding: "async"});
    let shown = thumb;
    if (D.full[i]) {
      shown = el("a", {href: D.full[i], class: "full", target: "_blank", title: "open the figure at full size"});
      shown.append(thumb);
    }
    if (row.i.length < 2) { figs.append(shown); return; }
    const option = el("span", {class: "option"});
    option.append(el("b", {class: "letter"}, String.fromCharCode(65 + k)), shown);
    figs.append(option);
  });
  if (row.i.length === 0) figs.append(el("span", {class: "na"}, "no image"));
  const what = el("td", {}, ""); what.append(el("div", {}, row.t), el("div", {class: "meta"}, row.l));
  if (row.k) what.append(el("div", {class: "meta"}, row.k));
  const prompt = el("td"); prompt.append(textBlock(row.p));
  const expected = el("td"); expected.append(textBlock(row.e));
  tr.append(figs, what, prompt, expected);
  D.models.forEach((m, i) => {
    const td = el("td", {class: "cell", "data-model": i});
    const c = row.c[String(i)];
    if (!c) { td.append(el("span", {class: "na"}, "not run")); tr.append(td); return; }
    const verdict = correctness(c);
    td.append(el("div", {class: verdict === "correct" ? "ok" : verdict === "wrong" ? "bad" : "na"}, verdict));
    const out = el("div"); out.append(el("span", {class: "meta"}, "output:"), textBlock(c.o || "(empty)"));
    td.append(out);
    if (c.a) td.append(textBlock(c.a, "answer", "answer: "));
    // the rule that gave the verdict, as the scoring recorded it; else what the record says of the output
    if (c.v) td.append(textBlock(c.v, "meta decided", "decided by: "));
    else if (c.r) td.append(textBlock(c.r, "meta"));
    if (c.d) td.append(textBlock(c.d, "meta"));
    tr.append(td);
  });
  built.set(index, tr);
  return tr;
}
let page = 1;  // the page of matching documents on screen (PAGE_ROWS each), "page" in the address when not 1
function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  for (const [name] of FILTERS) selects[name].value = params.get(name) || "";
  page = Math.max(1, parseInt(params.get("page") || "1", 10) || 1);
}
function writeHash() {
  const params = new URLSearchParams();
  for (const [name] of FILTERS) if (selects[name].value) params.set(name, selects[name].value);
  if (page > 1) params.set("page", String(page));
  history.replaceState(null, "", "#" + params.toString());
}
const pagers = [document.getElementById("pages-top"), document.getElementById("pages-bottom")];
function pager(node, pages, first, last, shown) {
  node.replaceChildren();
  node.dataset.page = String(page); node.dataset.pages = String(pages);
  if (pages <= 1) return;
  const go = (to) => { page = to; writeHash(); apply(); document.getElementById("samples").scrollIntoView(); };
  const previous = el("button", {type: "button", class: "previous"}, "« previous");
  const next = el("button", {type: "button", class: "next"}, "next »");
  previous.disabled = page <= 1; next.disabled = page >= pages;
  previous.addEventListener("click", () => go(page - 1)); next.addEventListener("click", () => go(page + 1));
  const at = el("span", {class: "at"}, " documents " + first + "–" + last + " of " + shown + " (page " + page +
                " of " + pages + ") ");
  node.append(previous, at, next);
}
function apply() {
  const f = {}; for (const [name] of FILTERS) f[name] = selects[name].value;
  const models = D.models.map((m, i) => i).filter((i) => !f.model || D.models[i] === f.model);
  const matching = [];
  D.rows.forEach((row, index) => {
    let visible = (!f.task || row.t === f.task) && (!f.category || row.k === f.category);
    visible = visible && models.some((i) => {
      const c = row.c[String(i)];
      return c && (!f.correct || correctness(c) === f.correct) && (!f.method || c.m === f.method);
    });
    if (visible) matching.push(index);
  });
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_ROWS));
  page = Math.min(page, pages);
  const on = matching.slice((page - 1) * PAGE_ROWS, page * PAGE_ROWS).map(rowElement);
  body.replaceChildren(...on);
  for (const node of [head, ...on]) {
    for (const cell of node.querySelectorAll("[data-model]")) cell.hidden = !models.includes(Number(cell.dataset.model));
  }
  const first = matching.length ? (page - 1) * PAGE_ROWS + 1 : 0;
  for (const node of pagers) pager(node, pages, first, first + on.length - 1, matching.length);
  const count = document.getElementById("count");
  count.textContent = matching.length + " of " + D.rows.length + " documents shown";
  count.dataset.shown = String(matching.length); count.dataset.total = String(D.rows.length);
}
for (const select of Object.values(selects)) select.addEventListener("change", () => { page = 1; writeHash(); apply(); });
readHash(); apply();
window.addEventListener("hashchange", () => { readHash(); apply(); });
window.addEventListener("load", () => {
  const images = [...document.querySelectorAll("img.thumb")];
  const drawn = images.filter((img) => img.complete && img.naturalWidth > 0).length;
  const count = document.getElementById("count");
  count.dataset.imagesDrawn = String(drawn); count.dataset.imagesBroken = String(images.length - drawn);
});
