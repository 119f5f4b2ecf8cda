// Block Kit → DOM, for messages, modals and the Home tab.
//
// `ctx` carries what a surface needs: `m` (mrkdwn context), `store` (the person's control
// values on this surface, kept across re-renders like Slack keeps them), `errors`
// (block_id → message, shown under an input), and callbacks `act(block, element, raw)`
// for block_actions, `suggest(block, element, query)` for type-ahead, `confirm(obj)`.

import { el, plainText, renderText } from "./mrkdwn.js";
import { renderDatepicker, renderMenu, testid } from "./pickers.js";
import { renderRichText } from "./richtext.js";

// The raw value an element holds: what the person chose, else its initial value.
export function currentValue(ctx, blockId, element) {
  const stored = ctx.store.get(blockId, element.action_id);
  if (stored !== undefined) return stored;
  switch (element.type) {
    case "static_select": case "radio_buttons":
      return element.initial_option ? element.initial_option.value : null;
    case "external_select":
      return element.initial_option || null;
    case "multi_static_select": case "checkboxes":
      return (element.initial_options || []).map((o) => o.value);
    case "multi_external_select":
      return element.initial_options || [];
    case "plain_text_input": case "number_input": case "email_text_input": case "url_text_input":
      return element.initial_value || "";
    case "datetimepicker": return element.initial_date_time ?? null;
    case "datepicker": return element.initial_date || "";
    case "timepicker": return element.initial_time || "";
    case "users_select": return element.initial_user || null;
    default: return null;
  }
}

function isEmpty(raw) {
  return raw === null || raw === undefined || raw === "" || (Array.isArray(raw) && raw.length === 0);
}

// Input blocks whose required element is empty: what Slack refuses to submit in a modal.
export function missingRequired(ctx, blocks) {
  const missing = {};
  for (const block of blocks) {
    if (block.type !== "input" || block.optional || !block.element) continue;
    if (isEmpty(currentValue(ctx, block.block_id, block.element))) {
      missing[block.block_id] = "Please complete this required field.";
    }
  }
  return missing;
}

function optionLabel(option) {
  return plainText(option.text);
}

function fillSelect(select, element) {
  const add = (parent, o) => {
    const opt = el("option", null, optionLabel(o));
    opt.value = o.value;
    parent.append(opt);
  };
  for (const o of element.options || []) add(select, o);
  for (const g of element.option_groups || []) {
    const group = el("optgroup");
    group.label = plainText(g.label);
    for (const o of g.options || []) add(group, o);
    select.append(group);
  }
}

// A one-line text input of an HTML type (number, email, url), as Slack draws number_input,
// email_text_input and url_text_input: the value is kept as the text typed, which Slack sends.
function renderTypedInput(block, element, ctx, dispatch, type) {
  const input = testid(el("input", "text-input"), element.type);
  input.type = type;
  input.placeholder = plainText(element.placeholder);
  if (type === "number") {
    input.step = element.is_decimal_allowed ? "any" : "1";
    if (element.min_value !== undefined) input.min = element.min_value;
    if (element.max_value !== undefined) input.max = element.max_value;
  }
  input.value = currentValue(ctx, block.block_id, element) || "";
  input.addEventListener("input", () => ctx.store.set(block.block_id, element.action_id, input.value));
  if (dispatch) input.addEventListener("change", () => ctx.act(block, element, input.value));
  return input;
}

// The moment as a datetime-local field shows it, in this browser's time zone (Slack uses the person's).
function localMoment(stamp) {
  if (typeof stamp !== "number") return "";
  const d = new Date(stamp * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// A datetimepicker: a date and a time; Slack sends the moment picked as a Unix timestamp.
function renderDatetimepicker(block, element, ctx, set) {
  const input = testid(el("input", "date-input"), element.type);
  input.type = "datetime-local";
  input.value = localMoment(currentValue(ctx, block.block_id, element));
  input.addEventListener("change", () => {
    const ms = new Date(input.value).getTime();
    set(input.value && !Number.isNaN(ms) ? Math.floor(ms / 1000) : null);
  });
  return input;
}

function renderButton(block, element, ctx) {
  const button = testid(el("button", "btn"), `button-${element.action_id}`);
  button.type = "button";
  button.dataset.actionId = element.action_id;
  if (element.style) button.classList.add(element.style);
  button.append(renderText(element.text, ctx.m));
  if (element.url) button.title = element.url;
  button.addEventListener("click", async () => {
    if (element.confirm && !(await ctx.confirm(element.confirm))) return;
    if (element.url) window.open(element.url, "_blank", "noopener");
    ctx.act(block, element, null);
  });
  return button;
}

function renderChoices(block, element, ctx, dispatch) {
  const multi = element.type === "checkboxes";
  const box = testid(el("div", "choices"), element.type);
  const name = `${block.block_id}:${element.action_id}:${Math.random().toString(36).slice(2)}`;
  for (const o of element.options || []) {
    const label = el("label", "choice");
    const input = el("input");
    input.type = multi ? "checkbox" : "radio";
    input.name = name;
    input.value = o.value;
    const raw = currentValue(ctx, block.block_id, element);
    input.checked = multi ? raw.includes(o.value) : raw === o.value;
    input.addEventListener("change", () => {
      const next = multi ? [...box.querySelectorAll("input:checked")].map((i) => i.value) : o.value;
      ctx.store.set(block.block_id, element.action_id, next);
      if (dispatch) ctx.act(block, element, next);
    });
    label.append(input, renderText(o.text, ctx.m));
    if (o.description) label.append(el("span", "choice-desc", plainText(o.description)));
    box.append(label);
  }
  return box;
}

// One interactive element. `dispatch`: it sends block_actions on change (outside input blocks,
// or in one with dispatch_action) instead of only holding state for a Submit.
export function renderElement(block, element, ctx, dispatch) {
  const id = element.action_id;
  const set = (raw) => {
    ctx.store.set(block.block_id, id, raw);
    if (dispatch) ctx.act(block, element, raw);
  };
  const raw = currentValue(ctx, block.block_id, element);
  switch (element.type) {
    case "button":
      return renderButton(block, element, ctx);
    case "static_select": {
      const select = testid(el("select", "single"), element.type);
      const none = el("option", "placeholder", plainText(element.placeholder) || "Select an item");
      none.value = "";
      select.append(none);
      fillSelect(select, element);
      for (const opt of select.options) opt.selected = opt.value === (raw || "");
      select.addEventListener("change", () => set(select.value || null));
      return select;
    }
    case "multi_static_select": case "external_select": case "multi_external_select":
      return renderMenu(block, element, ctx, () => currentValue(ctx, block.block_id, element), set);
    case "plain_text_input": {
      const input = testid(el(element.multiline ? "textarea" : "input", "text-input"), "plain_text_input");
      if (!element.multiline) input.type = "text";
      else input.rows = 4;
      input.placeholder = plainText(element.placeholder);
      if (element.max_length) input.maxLength = element.max_length;
      input.value = raw || "";
      input.addEventListener("input", () => ctx.store.set(block.block_id, id, input.value));
      if (dispatch) input.addEventListener("change", () => ctx.act(block, element, input.value));
      return input;
    }
    case "number_input":
      return renderTypedInput(block, element, ctx, dispatch, "number");
    case "email_text_input":
      return renderTypedInput(block, element, ctx, dispatch, "email");
    case "url_text_input":
      return renderTypedInput(block, element, ctx, dispatch, "url");
    case "datetimepicker":
      return renderDatetimepicker(block, element, ctx, set);
    case "datepicker":
      return renderDatepicker(element, () => currentValue(ctx, block.block_id, element), set);
    case "timepicker": {
      const input = testid(el("input", "date-input"), element.type);
      input.type = "time";
      input.value = raw || "";
      input.addEventListener("change", () => set(input.value || null));
      return input;
    }
    case "checkboxes": case "radio_buttons":
      return renderChoices(block, element, ctx, dispatch);
    case "users_select": {
      // Every member, bots included, as Slack's picker lists them (Parley refuses a bot).
      const select = testid(el("select", "single"), element.type);
      const none = el("option", "placeholder", plainText(element.placeholder) || "Select a user");
      none.value = "";
      select.append(none);
      for (const user of Object.values((ctx.m && ctx.m.users) || {})) {
        const opt = el("option", null, user.real_name || user.name);
        opt.value = user.id;
        opt.selected = user.id === raw;
        select.append(opt);
      }
      select.addEventListener("change", () => set(select.value || null));
      return select;
    }
    case "overflow": {
      const select = testid(el("select", "overflow"), "overflow");
      const none = el("option", null, "⋯");
      none.value = "";
      select.append(none);
      fillSelect(select, element);
      select.addEventListener("change", () => { if (select.value) ctx.act(block, element, select.value); });
      return select;
    }
    case "image":
      return el("span", "image-alt", `[image: ${element.alt_text || ""}]`);
    default:
      return el("span", "unsupported", `(${element.type} is not shown in the playground)`);
  }
}

const TASK_MARKS = { pending: "○", in_progress: "◐", complete: "✓", error: "✗" };

// A task card as Slack draws one in a plan: its status mark, its title, its sources as links.
function renderTaskCard(task) {
  const card = testid(el("div", `task-card task-${task.status || "pending"}`), "task-card");
  card.dataset.status = task.status || "pending";
  card.append(el("span", "task-mark", TASK_MARKS[task.status] || TASK_MARKS.pending), el("span", "task-title", task.title || ""));
  for (const source of task.sources || []) {
    if (!/^https?:\/\//.test(source.url || "")) continue;  // only web links, never javascript:
    const link = el("a", "task-source", source.text || source.url);
    link.href = source.url;
    link.target = "_blank";
    link.rel = "noopener";
    card.append(link);
  }
  return card;
}

// Thumbs up and down under an answer: a click sends the chosen button's value.
function renderFeedback(block, element, ctx) {
  const group = el("span", "feedback");
  for (const [name, button] of [["positive", element.positive_button], ["negative", element.negative_button]]) {
    if (!button) continue;
    const node = testid(el("button", "btn feedback-button"), `feedback-${name}`);
    node.type = "button";
    node.append(el("span", "", (button.text && button.text.text) || name));
    if (button.accessibility_label) node.title = button.accessibility_label;
    node.addEventListener("click", () => ctx.act(block, element, button.value));
    group.append(node);
  }
  return group;
}

function renderBlock(block, ctx) {
  const node = el("div", `block block-${block.type}`);
  node.dataset.blockId = block.block_id || "";
  testid(node, `block-${block.type}`);
  switch (block.type) {
    case "header":
      node.append(el("h3", "header", plainText(block.text)));
      break;
    case "section": {
      const body = el("div", "section-body");
      if (block.text) body.append(renderText(block.text, ctx.m));
      if (block.fields) {
        const grid = el("div", "fields");
        for (const f of block.fields) {
          const field = el("div", "field");
          field.append(renderText(f, ctx.m));
          grid.append(field);
        }
        body.append(grid);
      }
      node.append(body);
      if (block.accessory) {
        const accessory = el("div", "accessory");
        accessory.append(renderElement(block, block.accessory, ctx, true));
        node.append(accessory);
      }
      break;
    }
    case "context":
      for (const item of block.elements || []) {
        node.append(item.type === "image" ? el("span", "image-alt", `[${item.alt_text || "image"}]`) : renderText(item, ctx.m));
      }
      break;
    case "divider":
      node.append(el("hr"));
      break;
    case "actions":
      for (const element of block.elements || []) node.append(renderElement(block, element, ctx, true));
      break;
    case "input": {
      testid(node, "input-block");
      const label = testid(el("label", "input-label", plainText(block.label)), "input-label");
      if (block.optional) label.append(el("span", "optional", " (optional)"));
      node.append(label);
      if (block.element) node.append(renderElement(block, block.element, ctx, Boolean(block.dispatch_action)));
      if (block.hint) node.append(el("div", "hint", plainText(block.hint)));
      const error = ctx.errors && ctx.errors[block.block_id];
      if (error) {
        node.classList.add("has-error");
        node.append(testid(el("div", "input-error", error), "input-error"));
      }
      break;
    }
    case "image":
      node.append(el("span", "image-alt", `[image: ${block.alt_text || ""}]`));
      break;
    case "rich_text":
      node.append(renderRichText(block, ctx.m));
      break;
    case "plan":
      node.append(testid(el("div", "plan-title", block.title || ""), "plan-title"));
      for (const task of block.tasks || []) node.append(renderTaskCard(task));
      break;
    case "task_card":
      node.append(renderTaskCard(block));
      break;
    case "context_actions":
      for (const element of block.elements || []) {
        if (element.type === "feedback_buttons") node.append(renderFeedback(block, element, ctx));
      }
      break;
    default:
      node.append(el("span", "unsupported", `(a ${block.type} block is not shown in the playground)`));
  }
  return node;
}

export function renderBlocks(blocks, ctx) {
  const root = el("div", "blocks");
  for (const block of blocks || []) root.append(renderBlock(block, ctx));
  return root;
}
