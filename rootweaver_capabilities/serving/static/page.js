// The page of `rootweaver serve --http`: asks POST /v1/ask/stream and shows each hop as it
// arrives, then the synth context, the dropped lines and the answer. Every text from the
// server goes into the page as text (textContent), never as markup.
"use strict";

const KEY_ITEM = "rootweaver.apiKey";
const $ = (id) => document.getElementById(id);
let needsKey = false;

function node(tag, text, className) {
  const el = document.createElement(tag);
  if (text !== undefined && text !== null) el.textContent = String(text);
  if (className) el.className = className;
  return el;
}

function storedKey() {
  return sessionStorage.getItem(KEY_ITEM) || "";
}

function showKeyForm(show) {
  $("key-form").hidden = !show;
  $("change-key").hidden = show || !storedKey();
  if (show) $("key").focus();
}

function showError(text) {
  const el = $("error");
  el.textContent = text;
  el.hidden = !text;
}

function oneLine(text) {
  return String(text).split(/\s+/).join(" ").trim();
}

async function errorLine(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === "string") return oneLine(body.error);
  } catch (_) { /* not JSON: the text itself */ }
  return oneLine(text.split("\n")[0] || response.statusText || "request failed");
}

function clearResults() {
  showError("");
  for (const id of ["hops", "cited", "context"]) $(id).replaceChildren();
  $("dropped").tBodies[0].replaceChildren();
  for (const id of ["hops-section", "answer-section", "context-section", "dropped-section"]) $(id).hidden = true;
  $("hop-state").textContent = "";
}

function addHop(hop) {
  $("hops-section").hidden = false;
  const item = node("li", null, "hop");
  const head = node("div", null, "hop-head");
  head.append(node("span", `hop ${hop.hop}`, "hop-number"), node("span", hop.reason || "", "reason"));
  item.append(head, node("p", hop.sub_query, "sub-query"));
  const passages = node("ul", null, "passages");
  hop.retrieved_ids.forEach((id, i) => {
    const passage = node("li");
    passage.append(node("span", hop.titles[i] || id, "title"), " ", node("code", id, "passage-id"));
    passages.append(passage);
  });
  if (!hop.retrieved_ids.length) passages.append(node("li", "no new passage", "muted"));
  item.append(passages);
  $("hops").append(item);
  $("hop-state").textContent = `(${hop.hop} so far…)`;
}

function showBudget(record) {
  const chars = `${record.context_chars} of ${record.full_context_chars} characters`;
  if (!record.budget) {
    return `compaction off: the reader gets the full context (${chars})`;
  }
  const b = record.budget;
  return `${record.strategy}: ${b.used} of ${b.limit} ${b.unit} used; ` +
    `${record.kept_lines} lines kept, ${record.dropped_lines} dropped (${chars})`;
}

function showRecord(record) {
  $("hop-state").textContent = `(${record.hop_count} taken, stopped: ${record.stop_reason})`;
  const answer = record.answer;
  const cited = new Set(answer ? answer.cited_lines : []);
  $("answer-section").hidden = false;
  if (answer) {
    $("answer-text").textContent = answer.text;
    const error = answer.error_kind ? ` (reader failed: ${answer.error_kind})` : "";
    $("answer-method").textContent = `${answer.method}; reader ${answer.reader}${error}`;
    for (const line of answer.cited_lines) $("cited").append(node("li", line));
    if (!answer.cited_lines.length) $("cited").append(node("li", "none", "muted"));
  } else {
    $("answer-text").textContent = "(no reader configured: retrieval only)";
    $("answer-method").textContent = "";
  }
  $("context-section").hidden = false;
  $("budget").textContent = showBudget(record);
  for (const line of record.synth_context.split("\n")) {
    if (line) $("context").append(node("li", line, cited.has(line) ? "cited" : ""));
  }
  const body = $("dropped").tBodies[0];
  for (const d of record.dropped) {
    const row = node("tr");
    row.append(node("td", d.line, "num"), node("td", d.reason, "reason"), node("td", d.text));
    body.append(row);
  }
  $("dropped-count").textContent = `(${record.dropped.length})`;
  $("dropped-section").hidden = record.dropped.length === 0;
}

function handle(event, data) {
  if (event === "hop") addHop(data);
  else if (event === "answer") showRecord(data);
  else if (event === "error") showError(`${data.status}: ${oneLine(data.error)}`);
  return event === "answer" || event === "error";
}

function parseEvent(block) {
  let event = "message";
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? [event, JSON.parse(data.join("\n"))] : null;
}

async function readEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let finished = false;
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    const blocks = buffer.split(/\r?\n\r?\n/);
    buffer = done ? "" : blocks.pop();
    for (const block of blocks) {
      const parsed = block.trim() ? parseEvent(block) : null;
      if (parsed) finished = handle(...parsed) || finished;
    }
    if (done) break;
  }
  if (!finished) showError("the stream ended before the answer");
}

async function ask(event) {
  event.preventDefault();
  if (needsKey && !storedKey()) {
    showKeyForm(true);
    return;
  }
  clearResults();
  const body = { question: $("question").value };
  const budget = $("max-tokens").value.trim();
  if (budget) body.max_tokens = Number(budget);
  const headers = { "Content-Type": "application/json", Accept: "text/event-stream" };
  if (storedKey()) headers.Authorization = `Bearer ${storedKey()}`;
  $("ask").disabled = true;
  $("hop-state").textContent = "asking…";
  try {
    const response = await fetch("/v1/ask/stream", { method: "POST", headers, body: JSON.stringify(body) });
    if (!response.ok) {
      showError(`${response.status}: ${await errorLine(response)}`);
      if (response.status === 401) {
        sessionStorage.removeItem(KEY_ITEM);
        needsKey = true;
        showKeyForm(true);
      }
      return;
    }
    await readEvents(response);
  } catch (err) {
    showError(`connection failed: ${oneLine(err && err.message ? err.message : err)}`);
  } finally {
    $("ask").disabled = false;
  }
}

function useKey(event) {
  event.preventDefault();
  const key = $("key").value.trim();
  if (!key) return;
  sessionStorage.setItem(KEY_ITEM, key);
  $("key").value = "";
  showKeyForm(false);
  $("question").focus();
}

async function health() {
  try {
    const response = await fetch("/healthz");
    const h = await response.json();
    if (!response.ok) {
      $("status").textContent = `not ready (${h.status || response.status})`;
      return;
    }
    needsKey = h.auth === "bearer";
    $("status").textContent = `ready: reader ${h.reader}${needsKey ? ", API key required" : ""}`;
    showKeyForm(needsKey && !storedKey());
  } catch (err) {
    $("status").textContent = "cannot reach the server";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("ask-form").addEventListener("submit", ask);
  $("key-form").addEventListener("submit", useKey);
  $("change-key").addEventListener("click", () => showKeyForm(true));
  $("question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $("ask-form").requestSubmit();
    }
  });
  health();
});
