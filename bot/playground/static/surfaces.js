// The parts of the page that show Slack surfaces: messages (and ephemeral ones), the modal,
// confirmation dialogs, toasts and the request log. `ui` is the page's controller (app.js):
// it hands out surface contexts and reacts to clicks.

import { missingRequired, renderBlocks } from "./blocks.js";
import { plainText, renderMrkdwn, renderText } from "./mrkdwn.js";

export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function testid(node, id) {
  node.dataset.testid = id;
  return node;
}

export function cmpTs(a, b) {
  const [as, au = "0"] = String(a).split(".");
  const [bs, bu = "0"] = String(b).split(".");
  return Number(as) - Number(bs) || Number(au.padEnd(6, "0")) - Number(bu.padEnd(6, "0"));
}

function timeOf(ts) {
  const d = new Date(Number(String(ts).split(".")[0]) * 1000);
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

// Keeps `container`'s children in step with `items`, rebuilding only items whose signature changed,
// so typing in one message is not interrupted when another one changes.
export function reconcile(container, items, key, sig, build) {
  const old = new Map([...container.children].map((n) => [n.dataset.key, n]));
  const keep = new Set();
  let prev = null;
  for (const item of items) {
    const k = key(item), s = sig(item);
    let node = old.get(k);
    if (!node || node.dataset.sig !== s) {
      const fresh = build(item);
      fresh.dataset.key = k;
      fresh.dataset.sig = s;
      if (node) node.replaceWith(fresh);
      node = fresh;
    }
    keep.add(k);
    const want = prev ? prev.nextSibling : container.firstChild;
    if (want !== node) container.insertBefore(node, want);
    prev = node;
  }
  for (const [k, n] of old) if (!keep.has(k)) n.remove();
}

function avatar(user) {
  const name = user ? user.name : "?";
  const node = el("div", "avatar", name.slice(0, 1).toUpperCase());
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + ch.charCodeAt(0)) % 360;
  node.style.background = user && user.is_bot ? "#4a154b" : `hsl(${hash}, 45%, 45%)`;
  return node;
}

// One message. `item`: {msg, channel, ephemeral, inThread}.
export function messageNode(ui, item) {
  const { msg, channel, ephemeral, inThread } = item;
  const node = el("div", "message" + (ephemeral ? " ephemeral" : ""));
  testid(node, ephemeral ? "ephemeral" : "message");
  node.dataset.ts = msg.ts;
  const author = ui.user(ephemeral ? ui.botUserId() : msg.user);
  const content = el("div", "content");
  const head = el("div", "meta");
  head.append(el("span", "author", author ? (author.is_bot ? author.real_name : author.name) : msg.user));
  if (author && author.is_bot) head.append(el("span", "badge", "APP"));
  head.append(el("span", "time", timeOf(msg.ts)));
  if (msg.edited) head.append(el("span", "edited", "(edited)"));
  content.append(head);
  if (ephemeral) {
    const label = testid(el("div", "eph-label", "👁 Only visible to you"), "ephemeral-label");
    const dismiss = el("button", "link-btn", "Dismiss");
    dismiss.type = "button";
    dismiss.addEventListener("click", () => ui.dismiss(msg.ts));
    label.append(dismiss);
    content.prepend(label);
  }
  const surface = { kind: "message", channel, ts: msg.ts, ephemeral: Boolean(ephemeral) };
  const body = el("div", "body");
  // A streamed message shows its text with the blocks its stream ended with under it (chat.stopStream).
  const streamed = ui.streamed(msg.ts);
  if (streamed) body.append(testid(renderMrkdwn(msg.text, ui.mctx()), "streamed-text"));
  if (msg.blocks && msg.blocks.length) body.append(renderBlocks(msg.blocks, ui.surfaceCtx(surface)));
  else if (!streamed) body.append(renderMrkdwn(msg.text, ui.mctx()));
  content.append(body);
  if (!inThread && !ephemeral && msg.reply_count) {
    const replies = testid(el("a", "replies", `${msg.reply_count} ${msg.reply_count === 1 ? "reply" : "replies"}`),
      "open-thread");
    replies.href = "#";
    replies.addEventListener("click", (ev) => { ev.preventDefault(); ui.openThread(channel, msg.ts); });
    content.append(replies);
  }
  if (!inThread && !ephemeral) {
    node.classList.add("clickable");
    node.title = "Open the thread";
    node.addEventListener("click", (ev) => {
      if (ev.target.closest("button, select, input, textarea, a, label, .block-input, .block-actions, .accessory")) return;
      ui.openThread(channel, msg.ts);
    });
  }
  node.append(avatar(author), content);
  return node;
}

// The topmost open modal, or nothing. Required inputs are checked here, as Slack's client does.
export function modalNode(ui, view, errors) {
  const backdrop = el("div", "backdrop");
  const modal = testid(el("div", "modal"), "modal");
  modal.dataset.viewId = view.id;
  const ctx = ui.surfaceCtx({ kind: "view", view_id: view.id }, errors);
  const head = el("div", "modal-head");
  head.append(el("h2", "modal-title", plainText(view.title)));
  const x = testid(el("button", "icon-btn", "×"), "modal-x");
  x.type = "button";
  x.addEventListener("click", () => ui.closeView(view));
  head.append(x);
  const body = el("div", "modal-body");
  body.append(renderBlocks(view.blocks, ctx));
  const foot = el("div", "modal-foot");
  const close = testid(el("button", "btn", view.close ? plainText(view.close) : "Cancel"), "modal-close");
  close.type = "button";
  close.addEventListener("click", () => ui.closeView(view));
  foot.append(close);
  if (view.submit) {
    const submit = testid(el("button", "btn primary", plainText(view.submit)), "modal-submit");
    submit.type = "button";
    submit.addEventListener("click", () => {
      const missing = missingRequired(ctx, view.blocks || []);
      if (Object.keys(missing).length) ui.showViewErrors(view, missing);
      else { submit.disabled = true; ui.submitView(view, ctx.store.values); }
    });
    foot.append(submit);
  }
  modal.append(head, body, foot);
  backdrop.append(modal);
  return backdrop;
}

// A Block Kit confirmation dialog; resolves true when confirmed.
export function confirmDialog(confirm) {
  return new Promise((resolve) => {
    const root = document.getElementById("confirm-root");
    const backdrop = el("div", "backdrop");
    const box = testid(el("div", "modal confirm"), "confirm-dialog");
    box.append(el("h2", "modal-title", plainText(confirm.title) || "Are you sure?"));
    const text = el("div", "modal-body");
    text.append(renderText(confirm.text, {}));
    const foot = el("div", "modal-foot");
    const done = (ok) => { backdrop.remove(); resolve(ok); };
    const deny = testid(el("button", "btn", plainText(confirm.deny) || "Cancel"), "confirm-deny");
    const ok = testid(el("button", `btn ${confirm.style || "primary"}`, plainText(confirm.confirm) || "Yes"),
      "confirm-ok");
    deny.addEventListener("click", () => done(false));
    ok.addEventListener("click", () => done(true));
    foot.append(deny, ok);
    box.append(text, foot);
    backdrop.append(box);
    root.append(backdrop);
  });
}

export function toast(text, kind = "error") {
  const node = testid(el("div", `toast ${kind}`, text), "toast");
  document.getElementById("toasts").append(node);
  setTimeout(() => node.remove(), 7000);
}

// The request log: what the page sent to the bot, and how the bot answered.
export function renderLog(container, deliveries) {
  container.replaceChildren(el("h3", null, "Requests to the bot (newest first)"));
  const list = el("ol", "log-list");
  for (const d of [...deliveries].reverse()) {
    const ok = d.status === 200 && !d.error;
    const row = testid(el("li", ok ? (d.slow ? "slow" : "ok") : "bad"), "log-entry");
    const status = d.error ? d.error : `HTTP ${d.status}`;
    const late = d.slow ? " (over Slack's 3 s)" : "";
    row.textContent = `${d.kind} → ${status} in ${d.ms} ms${late} · ${d.summary}`;
    list.append(row);
  }
  if (!deliveries.length) list.append(el("li", "none", "Nothing sent yet."));
  container.append(list);
}
