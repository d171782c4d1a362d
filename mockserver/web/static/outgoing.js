"use strict";
// The dashboard's callbacks and webhooks: the journal of the calls the mock sends (polled once a second while the
// page is shown), and a form that fires one of the description's webhooks. Shown only for a description that
// declares callbacks or webhooks. Everything is built with textContent: what a receiver answered is never markup.
(() => {
  const POLL_MS = 1000;
  const $ = (selector, root = document) => root.querySelector(selector);
  const section = $("#outgoing");
  const form = $("#fire-webhook");

  function cell(text, className) {
    const node = document.createElement("td");
    node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function show(calls) {
    $("tbody", section).replaceChildren(...calls.slice().reverse().map((call) => {
      const row = document.createElement("tr");
      row.dataset.call = call.id;
      row.title = call.reason || "";
      const tries = call.attempts.map((a) => a.status ?? "no answer").join(", ");
      row.append(cell(call.queued.slice(11, 19)), cell(call.kind), cell(call.name),
        cell(`${call.method} ${call.url}`, "target"), cell(tries || "none"),
        cell(call.verdict, `verdict ${call.verdict}`));
      return row;
    }));
  }

  async function poll() {
    if (!document.hidden) {
      try {
        show((await Mock.call("callbacks")).calls);
      } catch (error) {
        // the dashboard's own loop says why the mock does not answer
      }
    }
    setTimeout(poll, POLL_MS);
  }

  async function fire() {
    const problem = $(".problem", form);
    problem.textContent = "";
    const url = form.elements.url.value.trim();
    try {
      await Mock.call(`webhooks/${encodeURIComponent(form.elements.webhook.value)}`,
        { method: "POST", json: url ? { url } : {} });
      show((await Mock.call("callbacks")).calls);
    } catch (error) {
      problem.textContent = error.message;
    }
  }

  async function start() {
    const described = await Mock.call("webhooks");
    if (!described.webhooks.length && !described.callbacks.length) return;
    section.hidden = false;
    if (described.webhooks.length) {
      form.hidden = false;
      form.elements.webhook.replaceChildren(...described.webhooks.map((hook) => {
        const option = document.createElement("option");
        option.textContent = hook.name;
        option.title = hook.subscribers.length ? `to ${hook.subscribers.join(", ")}` : "no subscriber yet";
        return option;
      }));
      form.addEventListener("submit", (event) => { event.preventDefault(); fire(); });
    }
    poll();
  }

  start().catch(() => { /* the dashboard's own loop says why the mock does not answer */ });
})();
