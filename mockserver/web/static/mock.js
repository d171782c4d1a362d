"use strict";
// The control API as the pages call it. When the mock has a control token, the first refused call asks for it
// (once: it is kept in this browser) and every call sends it as X-Mock-Control-Token.
const Mock = (() => {
  const PREFIX = "/__mock/";
  const TOKEN = "mockserver.controlToken";
  // on a mock of several APIs the page is for one of them (its ?api=), and so is each call it makes
  const API = new URLSearchParams(location.search).get("api");
  let asking = null;

  function askToken(refused) {
    asking = asking || new Promise((resolve) => {
      const dialog = document.getElementById("token-dialog");
      const form = dialog.querySelector("form");
      dialog.querySelector(".problem").textContent = refused ? "That token was refused." : "";
      dialog.addEventListener("cancel", (event) => event.preventDefault());  // nothing works without it
      form.addEventListener("submit", () => {
        localStorage.setItem(TOKEN, form.elements.token.value);
        form.reset();
        asking = null;
        resolve();
      }, { once: true });
      dialog.showModal();
    });
    return asking;
  }

  function withToken(headers = {}) {
    const token = localStorage.getItem(TOKEN);
    return token ? { ...headers, "X-Mock-Control-Token": token } : headers;
  }

  // the URL of /__mock/<path>, for the page's API
  function url(path) {
    return PREFIX + path + (API === null ? "" : `${path.includes("?") ? "&" : "?"}api=${encodeURIComponent(API)}`);
  }

  // fetch /__mock/<path>; `json` is sent as the body. Resolves to the answer's JSON, or throws its message.
  // A call that changes the mock says JSON even without a body: the control API refuses one that does not (what
  // a page of another origin could send unasked).
  async function call(path, { method = "GET", json } = {}) {
    for (;;) {
      const headers = withToken(method === "GET" ? {} : { "Content-Type": "application/json" });
      const response = await fetch(url(path), {
        method, headers, body: json === undefined ? undefined : JSON.stringify(json),
      });
      if (response.status === 401) {
        await askToken(Boolean(localStorage.getItem(TOKEN)));
        continue;
      }
      const body = await response.json();
      if (!response.ok) {
        throw new Error((body.error && body.error.message) || body.detail || `${response.status}`);
      }
      return body;
    }
  }

  // Whether a URL is the control API's (the docs page adds the token to those requests only).
  function isControl(url) {
    const parsed = new URL(url, location.href);
    return parsed.origin === location.origin && parsed.pathname.startsWith(PREFIX);
  }

  return { call, url, withToken, isControl };
})();
