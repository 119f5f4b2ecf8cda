// The playground page: a Slack workspace in one page, kept live by long-polling /ui/state.
//
// Every action goes to the playground server, which sends the bot exactly what Slack would
// (signed slash commands, block_actions, view_submission, block_suggestion, events) and
// applies the bot's answer. This file holds the page's state and wires the surfaces together.

import { renderPanes, renderModal } from "./panes.js";
import { confirmDialog, renderLog, toast } from "./surfaces.js";

const S = {
  me: "U0ALICE",
  data: null,
  view: { kind: "channel", channel: "C0GENERAL" },
  thread: null,
  inputs: new Map(),
  viewErrors: new Map(),
  dismissed: new Set(),
  poll: null,
};
const $ = (id) => document.getElementById(id);

// ---- network --------------------------------------------------------------------------

async function post(url, body) {
  try {
    const resp = await fetch(url, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    return await resp.json();
  } catch (err) {
    toast(`The playground server did not answer: ${err}`);
    return { ok: false, error: String(err) };
  }
}

function apply(data) {
  if (data.me !== S.me) return;
  if (S.data && data.events < S.data.events) return;
  S.data = data;
  render();
}

async function refresh() {
  try {
    const resp = await fetch(`/ui/state?user=${encodeURIComponent(S.me)}`, { cache: "no-store" });
    apply(await resp.json());
  } catch {
    document.body.classList.add("offline");  // the poll loop reconnects
  }
}

async function pollLoop() {
  for (;;) {
    const ctrl = new AbortController();
    S.poll = ctrl;
    const since = S.data && S.data.me === S.me ? `&since=${S.data.events}` : "";
    try {
      const resp = await fetch(`/ui/state?user=${encodeURIComponent(S.me)}${since}`, {
        signal: ctrl.signal, cache: "no-store",
      });
      apply(await resp.json());
      document.body.classList.remove("offline");
    } catch (err) {
      if (err.name !== "AbortError") {
        document.body.classList.add("offline");
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }
}

async function checkBot() {
  const node = $("bot-status");
  try {
    const status = await (await fetch("/ui/status", { cache: "no-store" })).json();
    node.textContent = status.bot.healthy ? "● Parley bot connected" : "○ Parley bot not answering";
    node.className = status.bot.healthy ? "bot-status up" : "bot-status down";
  } catch {
    node.textContent = "○ Playground server offline";
    node.className = "bot-status down";
  }
}

// ---- the controller the surfaces call ---------------------------------------------------

function storeFor(key) {
  const full = `${S.me}|${key}`;
  if (!S.inputs.has(full)) S.inputs.set(full, {});
  const values = S.inputs.get(full);
  return {
    values,
    get: (b, a) => (values[b] && a in values[b] ? values[b][a] : undefined),
    set: (b, a, raw) => { (values[b] ||= {})[a] = raw; },
  };
}

function surfaceKey(surface) {
  if (surface.kind === "message") return `${surface.ephemeral ? "eph" : "msg"}:${surface.channel}:${surface.ts}`;
  return surface.kind === "view" ? `view:${surface.view_id}` : "home";
}

async function act(surface, store, block, element, raw) {
  const result = await post("/ui/action", {
    user: S.me, surface, block_id: block.block_id, action_id: element.action_id, value: raw, inputs: store.values,
  });
  if (!result.ok) toast(`Parley did not handle that (${result.error || "HTTP " + result.status}).`);
  refresh();
}

const ui = {
  user: (id) => (S.data ? S.data.users.find((u) => u.id === id) : null),
  botUserId: () => S.data.bot_user_id,
  mctx: () => ({
    me: S.me,
    users: Object.fromEntries(S.data.users.map((u) => [u.id, u])),
    channels: Object.fromEntries(S.data.channels.map((c) => [c.id, c])),
    groups: Object.fromEntries((S.data.usergroups || []).map((g) => [g.id, g])),
    onLink: openPermalink,
  }),
  surfaceCtx(surface, errors) {
    const store = storeFor(surfaceKey(surface));
    return {
      m: ui.mctx(), store, errors,
      act: (block, element, raw) => act(surface, store, block, element, raw),
      suggest: (block, element, query) => post("/ui/suggest", {
        user: S.me, surface, block_id: block.block_id, action_id: element.action_id, value: query,
      }),
      confirm: confirmDialog,
    };
  },
  openThread(channel, ts) {
    S.view = { kind: "channel", channel };
    S.thread = { channel, ts };
    saveHash();
    render();
  },
  dismiss(ts) { S.dismissed.add(ts); render(); },
  goChannel(channel) {
    S.view = { kind: "channel", channel };
    S.thread = null;
    saveHash();
    render();
  },
  homeTab(tab) { S.view = { kind: "home", tab }; render(); },
  showViewErrors(view, errors) { S.viewErrors.set(`${view.id}:${view.hash}`, errors); renderModal(S, ui); },
  async submitView(view, inputs) {
    const result = await post("/ui/view/submit", { user: S.me, view_id: view.id, inputs });
    if (result.errors) S.viewErrors.set(`${view.id}:${view.hash}`, result.errors);
    else S.viewErrors.delete(`${view.id}:${view.hash}`);
    if (result.notice) toast(result.notice);
    else if (!result.ok) toast(`Parley did not handle the form (${result.error || "HTTP " + result.status}).`);
    const modal = document.querySelector("#modal-root .modal");
    if (modal) modal.closest("#modal-root").dataset.sig = "";
    await refresh();
  },
  async stopSession(channel, ts) {
    const result = await post("/ui/stop", { user: S.me, channel, thread_ts: ts });
    if (!result.ok) toast(`Parley did not handle the stop (${result.error || "HTTP " + result.status}).`);
    await refresh();
  },
  async closeView(view) {
    await post("/ui/view/close", { user: S.me, view_id: view.id });
    await refresh();
  },
};

function openPermalink(ev, url) {
  const base = S.data && S.data.permalink_base;
  if (!base || !url.startsWith(base + "/archives/")) return;
  const parsed = new URL(url);
  const [, , channel, p] = parsed.pathname.split("/");
  const digits = (p || "").replace(/^p/, "");
  const ts = parsed.searchParams.get("thread_ts") || `${digits.slice(0, -6)}.${digits.slice(-6)}`;
  ev.preventDefault();
  ui.openThread(channel, ts);
}

// ---- navigation -------------------------------------------------------------------------

function saveHash() {
  const parts = [`user=${S.me}`];
  if (S.view.kind === "home") parts.push("home");
  else parts.push(`channel=${S.view.channel}`);
  if (S.thread) parts.push(`thread=${S.thread.channel}:${S.thread.ts}`);
  history.replaceState(null, "", "#" + parts.join("&"));
}

function loadHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.get("user")) S.me = params.get("user");
  if (params.has("home")) S.view = { kind: "home" };
  else if (params.get("channel")) S.view = { kind: "channel", channel: params.get("channel") };
  const thread = params.get("thread");
  if (thread && thread.includes(":")) {
    const [channel, ts] = thread.split(":");
    S.thread = { channel, ts };
  }
}

function openHome() {
  S.view = { kind: "home" };
  S.thread = null;
  saveHash();
  render();
  post("/ui/home", { user: S.me }).then((result) => {
    if (!result.ok) toast(`Parley did not handle app_home_opened (${result.error || "HTTP " + result.status}).`);
    refresh();
  });
}

function switchUser(id) {
  S.me = id;
  S.data = null;
  for (const pane of ["main-pane", "thread-pane", "modal-root"]) $(pane).replaceChildren();
  if (S.poll) S.poll.abort();
  saveHash();
  if (S.view.kind === "home") openHome();
  else refresh();
}

async function send(input, threadTs) {
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  const channel = threadTs ? S.thread.channel : S.view.channel;
  const result = await post("/ui/message", { user: S.me, channel, text, thread_ts: threadTs || null });
  if (!result.ok && result.status && result.status !== 200) toast(`Parley answered HTTP ${result.status}.`);
  refresh();
}

// ---- rendering ----------------------------------------------------------------------------

function render() {
  if (S.data) renderPanes(S, ui);
}

// ---- start ----------------------------------------------------------------------------------

function wireComposer(inputId, buttonId, threadTs) {
  const input = $(inputId);
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); send(input, threadTs()); }
  });
  $(buttonId).addEventListener("click", () => send(input, threadTs()));
}

loadHash();
$("user-switcher").addEventListener("change", (ev) => switchUser(ev.target.value));
$("nav-home").addEventListener("click", (ev) => { ev.preventDefault(); openHome(); });
$("thread-close").addEventListener("click", () => { S.thread = null; saveHash(); render(); });
$("toggle-log").addEventListener("click", () => {
  $("log").hidden = !$("log").hidden;
  if (S.data && !$("log").hidden) renderLog($("log"), S.data.deliveries);
});
wireComposer("composer-input", "composer-send", () => null);
wireComposer("thread-input", "thread-send", () => S.thread && S.thread.ts);
checkBot();
setInterval(checkBot, 5000);
if (S.view.kind === "home") openHome();
pollLoop();
