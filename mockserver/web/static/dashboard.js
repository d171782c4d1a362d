"use strict";
// The dashboard: polls the journal (only what is new), the scenarios and the coverage once a second while it is
// shown, and right after each of its own actions. Everything is built with textContent: journal bodies are never markup.
(() => {
  const POLL_MS = 1000;
  const SHOWN = 200;  // journal rows kept on the page
  const CALLER = "mockserver.caller";
  const model = JSON.parse(document.getElementById("model").textContent);
  const $ = (selector, root = document) => root.querySelector(selector);
  const $$ = (selector, root = document) => Array.from(root.querySelectorAll(selector));
  const journal = $("#journal tbody");
  const entries = new Map();  // id -> journal entry shown
  let lastId = null;

  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  const statusClass = (status) => `status s${String(status)[0]}`;

  // -- calls made by the page ---------------------------------------------------------------------------------
  async function loadCallers() {
    const info = await Mock.call("callers");
    const select = $("#caller");
    select.dataset.header = info.header || "";
    for (const caller of info.callers) {
      const option = element("option", caller.token + (caller.usable ? "" : " (refused)"));
      option.value = caller.value;
      select.append(option);
    }
    const saved = localStorage.getItem(CALLER);
    const first = info.callers.find((caller) => caller.usable);
    select.value = saved !== null && $$("option", select).some((o) => o.value === saved)
      ? saved : (first ? first.value : "");
    select.addEventListener("change", () => localStorage.setItem(CALLER, select.value));
  }

  async function tryCall(form) {
    const select = $("#caller");
    const headers = {};
    if (select.value && select.dataset.header) headers[select.dataset.header] = select.value;
    const body = form.elements.body ? form.elements.body.value : undefined;
    if (body) headers["Content-Type"] = "application/json";
    const output = $(".result", form);
    output.textContent = "…";
    try {
      const response = await fetch(form.elements.url.value, {
        method: $("button", form).dataset.method, headers, body: body || undefined,
      });
      output.textContent = `${response.status} ${response.statusText}`;
      output.className = `result ${statusClass(response.status)}`;
    } catch (error) {
      output.textContent = `no answer: ${error.message}`;
      output.className = "result s5";
    }
    await refresh();
  }

  // -- scenarios ----------------------------------------------------------------------------------------------
  function describe(scenario) {
    // what it does now (with steps: the current step's), then where it stands: waiting, step, state machine
    const current = scenario.steps ? scenario.steps[scenario.step] : scenario;
    const does = [];
    if (current.status) does.push(`status ${current.status}`);
    if (current.latency !== undefined) {
      const latency = current.latency;
      does.push(typeof latency === "number" ? `${latency} ms` : `${latency.min}–${latency.max} ms`);
    }
    if (current.break) does.push(`break: ${current.break}`);
    if (scenario.steps && !does.length) does.push("lets calls through");
    if (scenario.rate !== undefined) does.push(`${Math.round(scenario.rate * 100)} % of calls`);
    if (scenario.steps) does.push(`step ${scenario.step + 1} of ${scenario.steps.length}`);
    if (scenario.waiting) does.push(`after ${scenario.waiting} more call${scenario.waiting === 1 ? "" : "s"}`);
    if (scenario.state) {
      does.push(`${scenario.state} is ${scenario.currentState}` +
        (scenario.requiredState ? `, acts in ${scenario.requiredState}` : "") +
        (scenario.newState ? `, moves it to ${scenario.newState}` : ""));
    }
    const on = [scenario.pathParams, scenario.query].filter(Boolean)
      .map((values) => Object.entries(values).map(([k, v]) => `${k}=${v}`).join(" "));
    return does.join(", ") + (on.length ? ` when ${on.join(" ")}` : "");
  }

  function showScenarios(scenarios) {
    const body = $("#scenarios tbody");
    body.replaceChildren(...scenarios.map((scenario) => {
      const row = element("tr");
      row.dataset.scenario = scenario.id;
      row.title = scenario.description || `set ${scenario.origin === "fixtures" ? "in the fixtures" : "at run time"}`;
      const remove = element("button", "remove", "small");
      remove.type = "button";
      remove.addEventListener("click", () => act(() => Mock.call(`scenarios/${encodeURIComponent(scenario.id)}`,
        { method: "DELETE" })));
      row.append(element("td", scenario.id), element("td", scenario.operationId || `${scenario.method} ${scenario.path}`),
        element("td", describe(scenario)), element("td", scenario.remaining ?? "always"),
        element("td", String(scenario.hits)), element("td"));
      row.lastChild.append(remove);
      return row;
    }));
  }

  function fillStatuses() {
    const form = $("#add-scenario");
    const statuses = model[form.elements.operationId.value].statuses.filter((s) => /^\d+$/.test(s));
    const none = element("option", "no status");
    none.value = "";
    form.elements.status.replaceChildren(none, ...statuses.map((s) => element("option", s)));
    const error = statuses.find((s) => Number(s) >= 500) || statuses.find((s) => Number(s) >= 400);
    if (error) form.elements.status.value = error;
  }

  async function addScenario(form) {
    const spec = { operationId: form.elements.operationId.value };
    for (const [name, read] of [["status", parseInt], ["times", parseInt], ["rate", parseFloat], ["latency", parseInt]]) {
      if (form.elements[name].value !== "") spec[name] = read(form.elements[name].value);
    }
    const problem = $(".problem", form);
    problem.textContent = "";
    try {
      await Mock.call("scenarios", { method: "POST", json: spec });
    } catch (error) {
      problem.textContent = error.message;
    }
    await refresh();
  }

  // -- the journal --------------------------------------------------------------------------------------------
  function clearJournal() {
    entries.clear();
    journal.replaceChildren();
    $("#detail").hidden = true;
  }

  function addEntry(entry) {
    entries.set(entry.id, entry);
    const row = element("tr");
    row.dataset.id = entry.id;
    row.tabIndex = 0;
    const source = entry.source + (entry.scenarioId ? ` ${entry.scenarioId}` : "") +
      (entry.violations ? ` · ${entry.violations.length} violation${entry.violations.length === 1 ? "" : "s"}` : "");
    const target = entry.path + (entry.query ? `?${entry.query}` : "");
    const path = element("td", target, "target");
    path.title = entry.operationId || "no operation";
    row.append(element("td", String(entry.id)), element("td", new Date(entry.time * 1000).toTimeString().slice(0, 8)),
      element("td", entry.method, `method ${entry.method.toLowerCase()}`), path,
      element("td", String(entry.status), statusClass(entry.status)),
      element("td", source, `source ${entry.source}${entry.violations ? " violated" : ""}`),
      element("td", entry.durationMs.toFixed(1), "number"));
    row.addEventListener("click", () => showEntry(entry.id));
    row.addEventListener("keydown", (event) => { if (event.key === "Enter") showEntry(entry.id); });
    journal.prepend(row);
    while (journal.rows.length > SHOWN) {
      entries.delete(Number(journal.lastElementChild.dataset.id));
      journal.lastElementChild.remove();
    }
  }

  function pretty(body, headers) {
    if (!body) return "";
    const type = Object.entries(headers).find(([name]) => name.toLowerCase() === "content-type");
    if (type && /json/.test(type[1])) {
      try { return JSON.stringify(JSON.parse(body), null, 2); } catch { /* shown as it came */ }
    }
    return body;
  }

  const headerLines = (headers) => Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join("\n");

  function showEntry(id) {
    const entry = entries.get(id);
    const detail = $("#detail");
    $$("#journal tr.selected").forEach((row) => row.classList.remove("selected"));
    $(`#journal tr[data-id="${id}"]`).classList.add("selected");
    $("h2", detail).textContent = `#${entry.id} ${entry.operationId || "no operation"} · ${entry.source}` +
      (entry.scenarioId ? ` (scenario ${entry.scenarioId})` : "") + ` · ${entry.durationMs.toFixed(1)} ms` +
      (entry.broken ? ` · connection cut (${entry.broken})` : "");
    $(".request", detail).textContent = `${entry.method} ${entry.path}${entry.query ? `?${entry.query}` : ""}\n` +
      headerLines(entry.requestHeaders) + (entry.requestBody ? `\n\n${pretty(entry.requestBody, entry.requestHeaders)}` : "") +
      (entry.violations ? "\n\nanswered despite breaking the description (--request-validation warn):\n" +
        entry.violations.map((v) => `  ${v.in}${v.parameter && v.in !== "body" ? ` ${v.parameter}` : ""}` +
          `${v.pointer} (${v.rule}): ${v.message}`).join("\n") : "");
    $(".response", detail).textContent = `${entry.status}\n${headerLines(entry.responseHeaders)}` +
      (entry.responseBody ? `\n\n${pretty(entry.responseBody, entry.responseHeaders)}` : "");
    detail.hidden = false;
  }

  async function pollJournal() {
    const answer = await Mock.call(lastId === null ? `requests?limit=${SHOWN}` : `requests?since=${lastId}`);
    for (const entry of answer.requests) {
      addEntry(entry);
      lastId = Math.max(lastId ?? 0, entry.id);
    }
    if (lastId === null) lastId = 0;
  }

  // -- coverage -----------------------------------------------------------------------------------------------
  function showCoverage(report) {
    $("#coverage-total").textContent = `${report.percent} %`;
    for (const operation of report.operations) {
      const card = $(`.operation[data-operation="${CSS.escape(operation.operationId)}"]`);
      if (!card) continue;
      $("[data-calls]", card).textContent = `${operation.calls} call${operation.calls === 1 ? "" : "s"}`;
      $("[data-percent]", card).textContent = Coverage.percent(operation);
      $("[data-coverage]", card).replaceChildren(Coverage.table(operation));
      for (const status of operation.statuses) {
        $(`[data-status="${CSS.escape(status.status)}"]`, card).classList.toggle("seen", status.calls > 0);
      }
    }
  }

  // -- the loop -----------------------------------------------------------------------------------------------
  // -- collections (stateful mode) ----------------------------------------------------------------------------
  function showCollections(collections) {
    $("#collections").hidden = collections.length === 0;
    $("#collections tbody").replaceChildren(...collections.map((collection) => {
      const row = document.createElement("tr");
      row.dataset.collection = collection.name;
      row.append(element("td", collection.name), element("td", String(collection.count)),
        element("td", collection.written ? "written" : "as in the fixtures", "muted"));
      return row;
    }));
  }

  // Why the page's calls fail: a shared store away (health says why; the API answers 503 mock-state-unavailable
  // meanwhile), or no answer from the mock at all.
  async function problem() {
    try {
      const health = await (await fetch(Mock.url("health"), { headers: Mock.withToken() })).json();
      if (health.status === "state-unavailable") {
        return `its state store is unavailable: ${health.state.reason || "no reason given"} `
          + "(the API answers 503 mock-state-unavailable)";
      }
    } catch (error) {
      // no answer, or not the mock's
    }
    return "the mock does not answer";
  }

  let running = null;
  let again = false;

  function refresh() {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          const [coverage, scenarios, collections] = await Promise.all([
            Mock.call("coverage"), Mock.call("scenarios"), Mock.call("collections")]);
          // asked for before the journal: when it counts no call, every row shown (all older) was emptied elsewhere
          if (coverage.calls === 0 && entries.size) clearJournal();
          await pollJournal();
          showScenarios(scenarios.scenarios);
          showCollections(collections.collections);
          showCoverage(coverage);
          document.body.classList.remove("offline");
        } catch (error) {
          $("#problem").textContent = await problem();
          document.body.classList.add("offline");
        }
      } while (again);
      running = null;
    })();
    return running;
  }

  async function act(action) {
    try {
      await action();
    } finally {
      await refresh();
    }
  }

  function loop() {  // a hidden tab does not poll
    (document.hidden ? Promise.resolve() : refresh()).then(() => setTimeout(loop, POLL_MS));
  }

  for (const form of $$("form.try")) {
    form.addEventListener("submit", (event) => { event.preventDefault(); tryCall(form); });
  }
  for (const button of $$("button[data-fail]")) {
    const operationId = button.closest(".operation").dataset.operation;
    button.addEventListener("click", () => act(() => Mock.call("scenarios", {
      method: "POST", json: { operationId, status: Number(button.dataset.fail), times: 1 },
    })));
  }
  const add = $("#add-scenario");
  add.elements.operationId.addEventListener("change", fillStatuses);
  add.addEventListener("submit", (event) => { event.preventDefault(); addScenario(add); });
  $("#clear-scenarios").addEventListener("click", () => act(() => Mock.call("scenarios", { method: "DELETE" })));
  $("#clear-journal").addEventListener("click", () => act(async () => {
    await Mock.call("requests", { method: "DELETE" });
    clearJournal();
  }));
  $("#reset").addEventListener("click", () => act(async () => {
    await Mock.call("reset", { method: "POST" });
    clearJournal();
  }));
  $("#detail .close").addEventListener("click", () => { $("#detail").hidden = true; });
  fillStatuses();
  loadCallers().finally(loop);
})();
