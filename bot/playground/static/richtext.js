// rich_text blocks, drawn as Slack draws them: paragraphs (rich_text_section), bulleted and
// numbered lists nested by `indent`, quotes and preformatted blocks. Inline elements keep
// their styles (bold, italic, strike, code, underline) and become mentions, channel names,
// links (http, https, mailto only), emoji and dates. Text goes in as text, never as HTML.

import { el, emojify, formatDate, safeUrl } from "./mrkdwn.js";

const BULLETS = ["disc", "circle", "square"];
const NUMBERS = ["decimal", "lower-alpha", "lower-roman"];
const BROADCAST = { here: "@here", channel: "@channel", everyone: "@everyone" };

// Wraps `node` in the tags its style asks for, code innermost as Slack nests them.
function styled(node, style) {
  let out = node;
  const wrap = (tag, cls) => { const w = el(tag, cls); w.append(out); out = w; };
  if (!style) return out;
  if (style.code) wrap("code", "code");
  if (style.underline) wrap("u");
  if (style.strike) wrap("del");
  if (style.italic) wrap("em");
  if (style.bold) wrap("strong");
  return out;
}

function emoji(item) {
  if (item.unicode) {
    try {
      return String.fromCodePoint(...item.unicode.split("-").map((hex) => parseInt(hex, 16)));
    } catch {
      // an unknown code point: fall back to the shortcode
    }
  }
  return emojify(`:${item.name}:`);
}

function inline(item, m) {
  switch (item.type) {
    case "text":
      return styled(document.createTextNode(item.text || ""), item.style);
    case "link": {
      const url = safeUrl(String(item.url || ""));
      if (!url) return styled(document.createTextNode(item.text || item.url || ""), item.style);
      const a = el("a", "link", item.text || url);
      a.href = url;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      if (m.onLink) a.addEventListener("click", (ev) => m.onLink(ev, url));
      return styled(a, item.style);
    }
    case "user": {
      const user = m.users && m.users[item.user_id];
      const span = el("span", "mention", "@" + (user ? user.name : item.user_id));
      if (item.user_id === m.me) span.classList.add("mention-me");
      span.dataset.userId = item.user_id;
      return styled(span, item.style);
    }
    case "usergroup":
      return styled(el("span", "mention", "@" + item.usergroup_id), item.style);
    case "channel": {
      const channel = m.channels && m.channels[item.channel_id];
      return styled(el("span", "mention", "#" + (channel ? channel.name : item.channel_id)), item.style);
    }
    case "broadcast":
      return styled(el("span", "mention", BROADCAST[item.range] || "@" + item.range), item.style);
    case "emoji": {
      const span = el("span", "emoji", emoji(item));
      span.title = `:${item.name}:`;
      return span;
    }
    case "date": {
      const shown = formatDate(Number(item.timestamp), String(item.format || "{date}"));
      return styled(el("span", "date", shown || item.fallback || ""), item.style);
    }
    case "color": {
      const span = el("span", "color", item.value);
      const swatch = el("span", "swatch");
      swatch.style.background = /^#[0-9a-f]{3,8}$/i.test(item.value) ? item.value : "transparent";
      span.prepend(swatch);
      return span;
    }
    default:
      return document.createTextNode("");
  }
}

function inlines(elements, parent, m) {
  for (const item of elements || []) parent.append(inline(item, m));
  return parent;
}

function list(item, m) {
  const ordered = item.style === "ordered";
  const indent = Number(item.indent) || 0;
  const node = el(ordered ? "ol" : "ul", "rt-list");
  node.style.listStyleType = (ordered ? NUMBERS : BULLETS)[indent % 3];
  node.style.marginLeft = `${indent * 28}px`;
  if (ordered && item.offset) node.start = Number(item.offset) + 1;
  if (item.border) node.classList.add("rt-border");
  for (const section of item.elements || []) node.append(inlines(section.elements, el("li"), m));
  return node;
}

// One rich_text block → DOM. `m` is the mrkdwn context (users, channels, me, onLink).
export function renderRichText(block, m = {}) {
  const root = el("div", "rich-text");
  for (const item of block.elements || []) {
    if (item.type === "rich_text_section") root.append(inlines(item.elements, el("div", "rt-section"), m));
    else if (item.type === "rich_text_list") root.append(list(item, m));
    else if (item.type === "rich_text_quote") root.append(inlines(item.elements, el("blockquote", "rt-quote"), m));
    else if (item.type === "rich_text_preformatted") {
      const pre = inlines(item.elements, el("pre", "rt-pre"), m);
      if (item.border) pre.classList.add("rt-border");
      root.append(pre);
    }
  }
  return root;
}
