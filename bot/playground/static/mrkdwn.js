// Slack mrkdwn and plain_text, rendered into DOM nodes.
//
// Text always goes in through textContent, never innerHTML: whatever an agent writes,
// the page shows it as text. Supported: *bold*, _italic_, ~strike~, `code`, ```blocks```,
// "> " quotes, <@U…> / <#C…|name> / <!subteam^S…> / <!here> mentions, <!date^ts^format|fallback>,
// <url|label> links (http, https, mailto only), :emoji: shortcodes and the three
// entities Slack escapes (&amp; &lt; &gt;).

const EMOJI = {
  white_check_mark: "✅", x: "❌", warning: "⚠️", bell: "🔔", hourglass: "⌛",
  hourglass_flowing_sand: "⏳", no_entry_sign: "🚫", tada: "🎉", eyes: "👀", wave: "👋",
  rocket: "🚀", memo: "📝", lock: "🔒", bug: "🐛", fire: "🔥", thumbsup: "👍", "+1": "👍",
  heavy_check_mark: "✔️", information_source: "ℹ️", question: "❓", calendar: "📅",
  speech_balloon: "💬", robot_face: "🤖", stopwatch: "⏱️", point_right: "👉",
};

const W = "[\\p{L}\\p{N}_]";
const TOKEN = new RegExp(
  [
    "`([^`\\n]+)`",
    "<([^<>\\n]+)>",
    `(?<!${W}|\\*)\\*(?=\\S)([^*\\n]*?\\S)\\*(?!${W}|\\*)`,
    `(?<!${W})_(?=\\S)([^_\\n]*?\\S)_(?!${W})`,
    `(?<!${W}|~)~(?=\\S)([^~\\n]*?\\S)~(?!${W}|~)`,
    ":([a-z0-9_+\\-']+):",
  ].join("|"),
  "gu",
);

export function decode(text) {
  return String(text).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

export function emojify(text) {
  return String(text).replace(/:([a-z0-9_+\-']+):/g, (all, name) => EMOJI[name] || all);
}

/** A DOM element with an optional class and text: the page never builds HTML from strings. */
export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
  "October", "November", "December"];
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

function ordinal(n) {
  const s = ["th", "st", "nd", "rd"], v = n % 100;
  return n + (s[(v - 20) % 10] || s[v] || s[0]);
}

function pretty(d, fallback) {
  const day = new Date(d.getFullYear(), d.getMonth(), d.getDate());
  const today = new Date(); today.setHours(0, 0, 0, 0);
  const diff = Math.round((day - today) / 86400000);
  return { 0: "today", [-1]: "yesterday", 1: "tomorrow" }[diff] || fallback;
}

// Formats a <!date^…> token in the reader's timezone, as Slack does.
export function formatDate(seconds, format) {
  const d = new Date(seconds * 1000);
  if (Number.isNaN(d.getTime())) return null;
  const pad = (n) => String(n).padStart(2, "0");
  const h12 = d.getHours() % 12 || 12, ampm = d.getHours() < 12 ? "AM" : "PM";
  const date = `${MONTHS[d.getMonth()]} ${ordinal(d.getDate())}, ${d.getFullYear()}`;
  const short = `${MONTHS[d.getMonth()].slice(0, 3)} ${d.getDate()}, ${d.getFullYear()}`;
  const long = `${DAYS[d.getDay()]}, ${date}`;
  const mins = Math.round((Date.now() - d.getTime()) / 60000);
  const ago = mins < 1 ? "just now" : mins < 60 ? `${mins} minutes ago` : `${Math.round(mins / 60)} hours ago`;
  const tokens = {
    date_num: `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`,
    date, date_short: short, date_long: long,
    date_pretty: pretty(d, date), date_short_pretty: pretty(d, short), date_long_pretty: pretty(d, long),
    time: `${h12}:${pad(d.getMinutes())} ${ampm}`,
    time_secs: `${h12}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${ampm}`,
    ago,
  };
  let unknown = false;
  const out = format.replace(/\{([a-z_]+)\}/g, (all, name) => {
    if (name in tokens) return tokens[name];
    unknown = true;
    return all;
  });
  return unknown ? null : out;
}

export function safeUrl(url) {
  return /^(https?:|mailto:)/i.test(url) ? url : null;
}

function renderAngle(inner, parent, ctx) {
  const [target, ...rest] = inner.split("|");
  const label = rest.length ? decode(rest.join("|")) : null;
  if (target.startsWith("@")) {
    const id = target.slice(1);
    const user = ctx.users && ctx.users[id];
    const span = el("span", "mention", "@" + (user ? user.name : label || id));
    if (id === ctx.me) span.classList.add("mention-me");
    span.dataset.userId = id;
    parent.append(span);
  } else if (target.startsWith("#")) {
    const id = target.slice(1);
    const channel = ctx.channels && ctx.channels[id];
    parent.append(el("span", "mention", "#" + (label || (channel ? channel.name : id))));
  } else if (target.startsWith("!date^")) {
    const [, ts, format] = target.split("^");
    const shown = formatDate(Number(ts), decode(format || ""));
    const span = el("span", "date", shown || label || "");
    if (label) span.title = label;
    parent.append(span);
  } else if (target.startsWith("!subteam^")) {
    const id = target.slice("!subteam^".length);
    const group = ctx.groups && ctx.groups[id];
    parent.append(el("span", "mention", "@" + (group ? group.handle : label || id)));
  } else if (target.startsWith("!")) {
    const special = { "!here": "@here", "!channel": "@channel", "!everyone": "@everyone" }[target];
    parent.append(el("span", "mention", special || label || ""));
  } else {
    const url = safeUrl(decode(target));
    if (!url) {
      parent.append(document.createTextNode(decode(label || target)));
      return;
    }
    const a = el("a", "link", label || url);
    a.href = url;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    if (ctx.onLink) a.addEventListener("click", (ev) => ctx.onLink(ev, url));
    parent.append(a);
  }
}

function renderInline(text, parent, ctx) {
  let last = 0;
  for (const m of text.matchAll(TOKEN)) {
    if (m.index > last) parent.append(document.createTextNode(decode(text.slice(last, m.index))));
    last = m.index + m[0].length;
    if (m[1] !== undefined) parent.append(el("code", "code", decode(m[1])));
    else if (m[2] !== undefined) renderAngle(m[2], parent, ctx);
    else if (m[6] !== undefined) parent.append(document.createTextNode(EMOJI[m[6]] || m[0]));
    else {
      const node = el(m[3] !== undefined ? "strong" : m[4] !== undefined ? "em" : "del");
      renderInline(m[3] ?? m[4] ?? m[5], node, ctx);
      parent.append(node);
    }
  }
  if (last < text.length) parent.append(document.createTextNode(decode(text.slice(last))));
}

function renderLines(text, parent, ctx) {
  text.split("\n").forEach((line, i) => {
    const quote = /^>\s?(.*)$/.exec(line);
    if (quote) {
      const q = el("span", "quote");
      renderInline(quote[1], q, ctx);
      parent.append(q);
      return;
    }
    if (i > 0 && !(parent.lastChild && parent.lastChild.classList && parent.lastChild.classList.contains("quote"))) {
      parent.append(document.createElement("br"));
    }
    renderInline(line, parent, ctx);
  });
}

// mrkdwn → a <span> of safe DOM nodes.
export function renderMrkdwn(text, ctx = {}) {
  const root = el("span", "mrkdwn");
  const parts = String(text || "").split("```");
  parts.forEach((part, i) => {
    const closed = i % 2 === 1 && i < parts.length - 1;
    if (closed) root.append(el("pre", "code-block", decode(part.replace(/^\n/, ""))));
    else renderLines(i % 2 === 1 ? "```" + part : part, root, ctx);
  });
  return root;
}

// A Block Kit text object (plain_text or mrkdwn) → DOM.
export function renderText(obj, ctx = {}) {
  if (!obj) return el("span");
  if (typeof obj === "string") return renderMrkdwn(obj, ctx);
  if (obj.type === "mrkdwn") return renderMrkdwn(obj.text, ctx);
  return el("span", "plain", obj.emoji === false ? obj.text : emojify(obj.text || ""));
}

export function plainText(obj) {
  if (!obj) return "";
  return typeof obj === "string" ? obj : obj.type === "mrkdwn" ? decode(obj.text) : emojify(obj.text || "");
}
