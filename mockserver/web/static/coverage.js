"use strict";
// Consumer coverage as tables: each operation's statuses, query parameters and enum values, those the calls
// exercised (with their calls) and those they never did. Used by the dashboard's cards and the coverage page.
const Coverage = (() => {
  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function lines(operation) {
    const found = [];
    const part = (label, items, name) => {
      const seen = items.filter((i) => i.calls).map((i) => `${name(i)}×${i.calls}`);
      const never = items.filter((i) => !i.calls).map(name);
      if (items.length) found.push([label, seen.join(", ") || "none", never.join(", ") || "none"]);
    };
    part("statuses", operation.statuses, (i) => i.status);
    part("query parameters", operation.queryParameters, (i) => i.name);
    for (const parameter of new Set(operation.enumValues.map((i) => i.parameter))) {
      part(`${parameter} values`, operation.enumValues.filter((i) => i.parameter === parameter), (i) => i.value);
    }
    if (operation.violatingCalls) {  // let through by --request-validation warn: the description needs fixing
      found.push(["broke the description", `${operation.violatingCalls} call${operation.violatingCalls === 1 ? "" : "s"}`, ""]);
    }
    return found;
  }

  function table(operation) {
    const shown = element("table");
    const head = element("tr");
    head.append(element("th"), element("th", "seen (calls)"), element("th", "never"));
    shown.append(element("thead"), element("tbody"));
    shown.tHead.append(head);
    shown.tBodies[0].append(...lines(operation).map(([label, seen, never]) => {
      const row = element("tr");
      row.append(element("th", label), element("td", seen), element("td", never, "never"));
      return row;
    }));
    return shown;
  }

  const percent = (part) => `${part.percent} % (${part.covered} of ${part.total})`;

  // The coverage page: the report of the session in its own query (?session=), else of the whole mock.
  async function page(root) {
    const report = await Mock.call("coverage" + location.search);
    root.querySelector("[data-total]").textContent =
      `${percent(report)} · ${report.calls} call${report.calls === 1 ? "" : "s"}`;
    root.querySelector("[data-operations]").replaceChildren(...report.operations.map((operation) => {
      const card = element("article", undefined, "operation");
      card.dataset.operation = operation.operationId;
      const title = element("header");
      title.append(element("span", operation.operationId, "opid"),
        element("span", `${operation.calls} call${operation.calls === 1 ? "" : "s"}`, "calls"),
        element("b", percent(operation), "percent"));
      card.append(title, table(operation));
      return card;
    }));
  }

  const root = document.getElementById("coverage-report");
  if (root) page(root);
  return { table, percent };
})();
