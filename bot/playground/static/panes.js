// The page's panes: sidebar, channel, App Home (Home and Messages tabs), thread and modal.
// Each is redrawn from the page state `S` (app.js); lists are reconciled so that only
// messages that changed are rebuilt, and what a person is typing survives live updates.

import { renderBlocks } from "./blocks.js";
import { cmpTs, el, messageNode, modalNode, reconcile, renderLog, testid } from "./surfaces.js";

const $ = (id) => document.getElementById(id);

function renderSidebar(S, ui) {
  const d = S.data;
  $("team-name").textContent = d.team.name;
  const switcher = $("user-switcher");
  const people = d.users.filter((u) => !u.is_bot);
  if (switcher.options.length !== people.length) {
    switcher.replaceChildren(...people.map((u) => {
      const opt = el("option", null, `${u.name}${u.is_admin ? " (admin)" : ""}`);
      opt.value = u.id;
      return opt;
    }));
  }
  switcher.value = S.me;
  reconcile($("channels"), d.channels, (c) => c.id, (c) => `${c.name}:${S.view.channel === c.id}`, (c) => {
    const link = testid(el("a", "nav-item", `# ${c.name}`), `channel-${c.name}`);
    if (S.view.kind === "channel" && S.view.channel === c.id) link.classList.add("active");
    link.href = "#";
    link.addEventListener("click", (ev) => { ev.preventDefault(); ui.goChannel(c.id); });
    return link;
  });
  $("nav-home").classList.toggle("active", S.view.kind === "home");
}

function visibleEphemerals(S, channel, threadTs) {
  return S.data.ephemerals.filter((e) => e.channel === channel && !S.dismissed.has(e.ts)
    && (threadTs ? e.thread_ts === threadTs : !e.thread_ts));
}

function renderList(S, ui, container, items) {
  const atBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 60;
  const before = container.children.length;
  reconcile(container, items, (i) => `${i.ephemeral ? "e" : "m"}:${i.msg.ts}`,
    (i) => `${S.me}|${JSON.stringify(i)}`, (i) => messageNode(ui, i));
  if (atBottom || before === 0 || container.children.length > before) container.scrollTop = container.scrollHeight;
}

function renderChannel(S, ui) {
  const channel = S.view.channel;
  const name = (S.data.channels.find((c) => c.id === channel) || { name: channel }).name;
  // As Slack's channel details do: the id the API and MCP take (or `#name`).
  const id = testid(el("span", "channel-id muted", `Channel ID: ${channel}`), "channel-id");
  id.title = `Ask here over the API with "channel": "${channel}" (or "#${name}")`;
  $("main-header").replaceChildren(el("h1", null, `# ${name}`), id);
  const roots = (S.data.messages[channel] || []).filter((m) => !m.thread_ts || m.thread_ts === m.ts)
    .map((msg) => ({ msg, channel }));
  const ephs = visibleEphemerals(S, channel, null).map((msg) => ({ msg, channel, ephemeral: true }));
  const items = [...roots, ...ephs].sort((a, b) => cmpTs(a.msg.ts, b.msg.ts));
  const pane = $("main-pane");
  if (pane.dataset.mode !== `channel:${channel}`) { pane.replaceChildren(); pane.dataset.mode = `channel:${channel}`; }
  renderList(S, ui, pane, items);
  $("composer").hidden = false;
  $("composer-input").placeholder = `Message #${name} — try /parley ticket Create ticket for login issue`;
}

function homeTab(S, ui, label, name) {
  const tab = testid(el("a", "tab" + ((S.view.tab || "home") === name ? " active" : ""), label), `${name}-tab`);
  tab.href = "#";
  tab.addEventListener("click", (ev) => { ev.preventDefault(); ui.homeTab(name); });
  return tab;
}

function renderHome(S, ui) {
  const head = el("div", "home-head");
  const dm = S.data.dm;
  head.append(el("h1", null, "Parley"), homeTab(S, ui, "Home", "home"));
  if (dm.messages.length) head.append(homeTab(S, ui, "Messages", "messages"));
  $("main-header").replaceChildren(head);
  $("composer").hidden = true;
  const pane = $("main-pane");
  if (S.view.tab === "messages") {
    if (pane.dataset.mode !== "dm") { pane.replaceChildren(); pane.dataset.mode = "dm"; }
    renderList(S, ui, pane, dm.messages.map((msg) => ({ msg, channel: dm.id, inThread: true })));
    return;
  }
  if (pane.dataset.mode !== "home") { pane.replaceChildren(); pane.dataset.mode = "home"; }
  const home = S.data.home;
  const items = home ? [home] : [{ id: "none" }];
  reconcile(pane, items, (h) => h.id, (h) => `${S.me}|${JSON.stringify(h)}`, (h) => {
    if (!h.blocks) return el("div", "empty", "Opening the Home tab…");
    const wrap = testid(el("div", "home-view"), "home-view");
    wrap.append(renderBlocks(h.blocks, ui.surfaceCtx({ kind: "home" })));
    return wrap;
  });
}

function renderThread(S, ui) {
  const pane = $("thread");
  if (!S.thread) { pane.hidden = true; document.body.classList.remove("with-thread"); return; }
  pane.hidden = false;
  document.body.classList.add("with-thread");
  const { channel, ts } = S.thread;
  const name = (S.data.channels.find((c) => c.id === channel) || { name: channel }).name;
  $("thread-channel").textContent = `# ${name}`;
  renderSession(S, ui, channel, ts);
  const msgs = (S.data.messages[channel] || []).filter((m) => m.ts === ts || m.thread_ts === ts)
    .map((msg) => ({ msg, channel, inThread: true }));
  const ephs = visibleEphemerals(S, channel, ts).map((msg) => ({ msg, channel, ephemeral: true, inThread: true }));
  const list = $("thread-pane");
  if (list.dataset.mode !== `${channel}:${ts}`) { list.replaceChildren(); list.dataset.mode = `${channel}:${ts}`; }
  renderList(S, ui, list, [...msgs, ...ephs].sort((a, b) => cmpTs(a.msg.ts, b.msg.ts)));
}

const SESSION_WORDS = { processing: "working", suspended: "waiting", active: "idle", closed: "done" };

// The thread's agent session, as Slack shows it: its title and status, and the stop button while it works.
function renderSession(S, ui, channel, ts) {
  const line = $("thread-session");
  const session = (S.data.sessions || []).find((s) => s.channel === channel && s.thread_ts === ts);
  line.hidden = !session;
  if (!session) { line.replaceChildren(); return; }
  const sig = `${session.status}|${session.title}`;
  if (line.dataset.sig === sig) return;
  line.dataset.sig = sig;
  line.dataset.status = session.status;
  const status = testid(el("span", `session-status session-${session.status}`, SESSION_WORDS[session.status] || session.status), "session-status");
  const parts = [el("span", "session-title", session.title), status];
  if (session.status === "processing") {
    const stop = testid(el("button", "btn danger session-stop", "Stop"), "session-stop");
    stop.type = "button";
    stop.addEventListener("click", () => ui.stopSession(channel, ts));
    parts.push(stop);
  }
  line.replaceChildren(...parts);
}

export function renderModal(S, ui) {
  const root = $("modal-root");
  const view = S.data.modals[S.data.modals.length - 1];
  if (!view) { root.replaceChildren(); root.dataset.sig = ""; return; }
  const errors = S.viewErrors.get(`${view.id}:${view.hash}`) || null;
  const sig = `${S.me}|${JSON.stringify(view)}|${JSON.stringify(errors)}`;
  if (root.dataset.sig === sig) return;
  root.dataset.sig = sig;
  root.replaceChildren(modalNode(ui, view, errors));
}

// Draws every pane from the page state `S`; `ui` is the controller in app.js.
export function renderPanes(S, ui) {
  renderSidebar(S, ui);
  if (S.view.kind === "home") renderHome(S, ui);
  else renderChannel(S, ui);
  renderThread(S, ui);
  renderModal(S, ui);
  if (!$("log").hidden) renderLog($("log"), S.data.deliveries);
}
