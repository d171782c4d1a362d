"use strict";
// Swagger UI over the served description. Its requests to the control API (the description itself) carry the
// control token; "Try it out" calls the mock (the description's servers point at it), as the first usable
// caller of the fixtures unless "Authorize" says otherwise.
(async () => {
  const root = document.getElementById("swagger-ui");
  const callers = await Mock.call("callers");  // asks for the control token first, when the mock has one
  const ui = SwaggerUIBundle({
    url: root.dataset.description,
    domNode: root,
    deepLinking: true,
    tryItOutEnabled: true,
    requestInterceptor: (request) => {
      if (Mock.isControl(request.url)) request.headers = Mock.withToken(request.headers);
      return request;
    },
    onComplete: () => {
      const caller = callers.callers.find((c) => c.usable);
      if (!caller) return;
      if (callers.kind === "basic") ui.preauthorizeBasic(callers.scheme, caller.token, "");
      else ui.preauthorizeApiKey(callers.scheme, caller.token);
    },
  });
})();
