// Slack's menus and its date picker, drawn the way Slack draws them.
//
// A multi-select (static or external) and an external select are one field: the options
// chosen sit in it as chips with a remove button, the person types there to filter, and a
// dropdown list offers what can still be picked. A datepicker is a button showing the date
// that opens a month calendar. Both hold the same raw values as before (option values, option
// objects for external menus, "YYYY-MM-DD"), which blockstate.py turns into Slack's shapes.

import { el, plainText } from "./mrkdwn.js";

export function testid(node, id) {
  node.dataset.testid = id;
  return node;
}

// Static options matching `query` (case-insensitive), grouped as the element groups them.
function filterStatic(element, query) {
  const q = query.trim().toLowerCase();
  const keep = (opts) => (opts || []).filter((o) => plainText(o.text).toLowerCase().includes(q));
  return {
    options: keep(element.options),
    option_groups: (element.option_groups || []).map((g) => ({ label: g.label, options: keep(g.options) })),
  };
}

// The menu. `raw()` is the element's current raw value; `save(raw)` stores a new one (and
// sends block_actions when the element dispatches).
export function renderMenu(block, element, ctx, raw, save) {
  const multi = element.type.startsWith("multi_");
  const external = element.type.endsWith("external_select");
  const all = [...(element.options || []), ...(element.option_groups || []).flatMap((g) => g.options || [])];
  const box = testid(el("div", "menu"), element.type);
  const field = el("div", "menu-field");
  const chips = el("div", "chips");
  const input = testid(el("input", "menu-input"), `${element.type}-input`);
  input.type = "text";
  input.autocomplete = "off";
  const list = testid(el("ul", "menu-list"), "menu-list");
  list.hidden = true;
  const placeholder = plainText(element.placeholder) || (multi ? "Select options" : "Select an item");

  // What is chosen, as option objects, in the order it was picked.
  const chosen = () => {
    const value = raw();
    const picked = multi ? value || [] : value ? [value] : [];
    return external ? picked : picked.map((v) => all.find((o) => o.value === v)).filter(Boolean);
  };
  const store = (next) => {
    const kept = next.map((o) => (external ? { text: o.text, value: o.value } : o.value));
    save(multi ? kept : kept.length ? kept[0] : null);
    drawChips();
  };
  const drawChips = () => {
    chips.replaceChildren();
    const now = chosen();
    for (const o of now) {
      const chip = testid(el("span", "chip"), "chip");
      chip.append(el("span", "chip-label", plainText(o.text)));
      const x = testid(el("button", "chip-x", "×"), "chip-remove");
      x.type = "button";
      x.title = `Remove ${plainText(o.text)}`;
      x.addEventListener("mousedown", (ev) => ev.preventDefault());
      x.addEventListener("click", () => store(chosen().filter((c) => c.value !== o.value)));
      chip.append(x);
      chips.append(chip);
    }
    input.placeholder = now.length ? "" : placeholder;
  };

  let seq = 0;
  const pick = (o) => {
    store(multi ? [...chosen().filter((c) => c.value !== o.value), o] : [o]);
    input.value = "";
    if (multi) show(); else { list.hidden = true; input.blur(); }
  };
  const draw = (found) => {
    list.replaceChildren();
    const taken = new Set(chosen().map((o) => o.value));
    const max = multi ? element.max_selected_items : undefined;
    if (max && taken.size >= max) {
      list.append(el("li", "none", `You can pick up to ${max}.`));
      return;
    }
    const item = (o) => {
      const li = testid(el("li", "menu-option", plainText(o.text)), "menu-option");
      li.addEventListener("mousedown", (ev) => { ev.preventDefault(); pick(o); });
      return li;
    };
    let shown = 0;
    for (const o of found.options || []) if (!taken.has(o.value)) { list.append(item(o)); shown++; }
    for (const g of found.option_groups || []) {
      const free = (g.options || []).filter((o) => !taken.has(o.value));
      if (!free.length) continue;
      list.append(el("li", "group", plainText(g.label)));
      for (const o of free) { list.append(item(o)); shown++; }
    }
    if (!shown) list.append(el("li", "none", "No results"));
    const first = list.querySelector(".menu-option");
    if (first) first.classList.add("active");
  };
  const show = async () => {
    const query = input.value;
    if (external && query.length < (element.min_query_length ?? 3)) { list.hidden = true; return; }
    const mine = ++seq;
    const found = external ? await ctx.suggest(block, element, query) : filterStatic(element, query);
    if (mine !== seq || document.activeElement !== input) return;
    draw(found);
    list.hidden = false;
  };
  const move = (step) => {
    const items = [...list.querySelectorAll(".menu-option")];
    const at = items.findIndex((li) => li.classList.contains("active"));
    if (!items.length) return;
    items.forEach((li) => li.classList.remove("active"));
    const next = items[(at + step + items.length) % items.length];
    next.classList.add("active");
    next.scrollIntoView({ block: "nearest" });
  };

  let timer = null;
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(show, external ? 200 : 0); });
  input.addEventListener("focus", show);
  input.addEventListener("click", () => { if (list.hidden) show(); });
  input.addEventListener("blur", () => setTimeout(() => { list.hidden = true; }, 150));
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") { ev.preventDefault(); move(ev.key === "ArrowDown" ? 1 : -1); }
    else if (ev.key === "Escape") list.hidden = true;
    else if (ev.key === "Enter") {
      ev.preventDefault();
      const active = list.hidden ? null : list.querySelector(".menu-option.active");
      if (active) active.dispatchEvent(new MouseEvent("mousedown", { cancelable: true }));
    } else if (ev.key === "Backspace" && !input.value && chosen().length) {
      store(chosen().slice(0, -1));
      if (!list.hidden) show();
    }
  });
  field.addEventListener("mousedown", (ev) => {
    if (ev.target === input || ev.target.closest(".chip-x")) return;
    ev.preventDefault();
    input.focus();
    if (list.hidden) show();
  });
  drawChips();
  field.append(chips, input, el("span", "menu-caret", "▾"));
  box.append(field, list);
  return box;
}

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
  "October", "November", "December"];
const WEEKDAYS = ["Su", "Mo", "Tu", "We", "Th", "Fr", "Sa"];

function iso(y, m, d) {
  return `${y}-${String(m + 1).padStart(2, "0")}-${String(d).padStart(2, "0")}`;
}

function parseIso(value) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value || "");
  return m ? { y: Number(m[1]), m: Number(m[2]) - 1, d: Number(m[3]) } : null;
}

// The field's calendar icon, drawn rather than an emoji so that it shows without an emoji font.
function calendarIcon() {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 20 20");
  svg.setAttribute("class", "date-icon");
  svg.setAttribute("aria-hidden", "true");
  for (const [tag, attrs] of [
    ["rect", { x: 2.5, y: 4, width: 15, height: 13.5, rx: 2 }],
    ["path", { d: "M2.5 8h15M6.5 2v4M13.5 2v4" }],
  ]) {
    const shape = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) shape.setAttribute(k, String(v));
    svg.append(shape);
  }
  return svg;
}

// "Dec 1, 2026": how the field shows a picked date.
export function shortDate(value) {
  const p = parseIso(value);
  return p ? `${MONTHS[p.m].slice(0, 3)} ${p.d}, ${p.y}` : "";
}

// The datepicker: a field with a calendar icon and the date (or the placeholder), and a month
// calendar under it. `raw()` is "YYYY-MM-DD" or ""; `save(date)` stores a picked day.
export function renderDatepicker(element, raw, save) {
  const box = testid(el("div", "datepicker"), "datepicker");
  const button = testid(el("button", "date-field"), "datepicker-field");
  button.type = "button";
  const label = el("span", "date-label");
  button.append(calendarIcon(), label);
  const calendar = testid(el("div", "calendar"), "calendar");
  calendar.hidden = true;
  const today = new Date();
  let month = null;  // {y, m} on show

  const drawField = () => {
    const value = raw();
    box.dataset.value = value || "";
    label.textContent = shortDate(value) || plainText(element.placeholder) || "Select a date";
    label.classList.toggle("placeholder", !shortDate(value));
  };
  const close = () => {
    calendar.hidden = true;
    document.removeEventListener("mousedown", outside, true);
  };
  const outside = (ev) => { if (!box.isConnected || !box.contains(ev.target)) close(); };
  const drawMonth = () => {
    calendar.replaceChildren();
    const head = el("div", "cal-head");
    const nav = (text, id, step) => {
      const b = testid(el("button", "cal-nav", text), id);
      b.type = "button";
      b.title = step < 0 ? "Previous month" : "Next month";
      b.addEventListener("click", () => {
        const d = new Date(month.y, month.m + step, 1);
        month = { y: d.getFullYear(), m: d.getMonth() };
        drawMonth();
      });
      return b;
    };
    head.append(nav("‹", "calendar-prev", -1), testid(el("span", "cal-title", `${MONTHS[month.m]} ${month.y}`),
      "calendar-month"), nav("›", "calendar-next", 1));
    const grid = el("div", "cal-grid");
    for (const w of WEEKDAYS) grid.append(el("span", "cal-weekday", w));
    const lead = new Date(month.y, month.m, 1).getDay();
    for (let i = 0; i < lead; i++) grid.append(el("span", "cal-blank"));
    const days = new Date(month.y, month.m + 1, 0).getDate();
    const picked = raw();
    const now = iso(today.getFullYear(), today.getMonth(), today.getDate());
    for (let d = 1; d <= days; d++) {
      const date = iso(month.y, month.m, d);
      const day = testid(el("button", "cal-day", String(d)), "calendar-day");
      day.type = "button";
      day.dataset.date = date;
      if (date === now) day.classList.add("today");
      if (date === picked) day.classList.add("selected");
      day.addEventListener("click", () => { save(date); drawField(); close(); button.focus(); });
      grid.append(day);
    }
    calendar.append(head, grid);
  };
  const open = () => {
    const p = parseIso(raw());
    month = p ? { y: p.y, m: p.m } : { y: today.getFullYear(), m: today.getMonth() };
    drawMonth();
    calendar.hidden = false;
    document.addEventListener("mousedown", outside, true);
  };
  button.addEventListener("click", () => (calendar.hidden ? open() : close()));
  box.addEventListener("keydown", (ev) => { if (ev.key === "Escape") close(); });
  drawField();
  box.append(button, calendar);
  return box;
}
