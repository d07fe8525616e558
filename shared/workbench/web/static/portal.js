// Workbench portal: copy buttons, key slots in snippets, "test connection", and the playground.
// Plain script, no framework, served from our own origin (the CSP allows nothing else). Results are
// always written with textContent, never as HTML.
"use strict";

(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  let rpcId = 0;

  function say(target, text, isError) {
    if (!target) return;
    target.textContent = text;
    target.classList.toggle("error", !!isError);
  }

  // -- copy buttons: <button data-copy="ID"> copies the text of #ID -------------------------------
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const id = button.getAttribute("data-copy");
    const source = document.getElementById(id);
    const status = $(`[data-copy-status="${id}"]`);
    if (!source) return;
    try {
      await navigator.clipboard.writeText(source.textContent);
      say(status, "Copied to the clipboard.");
    } catch (err) {
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      say(status, "Selected: press Ctrl+C (or Cmd+C) to copy.");
    }
  });

  // -- key slots: a pasted key fills every snippet on the page -----------------------------------
  const keyInput = $("#snippet-key");
  if (keyInput) {
    const slots = $$(".key-slot");
    const placeholder = slots.length ? slots[0].textContent : "";
    keyInput.addEventListener("input", () => {
      const value = keyInput.value.trim();
      slots.forEach((slot) => { slot.textContent = value || placeholder; });
    });
  }

  async function mcpCall(method, params, auth) {
    // auth: {key} for a bearer key (no cookie sent), or {csrf} for the portal session.
    const headers = {
      "Content-Type": "application/json",
      "Accept": "application/json, text/event-stream",
      "MCP-Protocol-Version": "2025-06-18",
    };
    if (auth.key) headers["Authorization"] = "Bearer " + auth.key;
    if (auth.csrf) headers["X-CSRF-Token"] = auth.csrf;
    const response = await fetch("/mcp", {
      method: "POST",
      credentials: auth.key ? "omit" : "same-origin",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method, params }),
    });
    let body = null;
    try { body = await response.json(); } catch (err) { body = null; }
    if (!response.ok || !body || body.error) {
      const message = body && body.error ? body.error.message : response.statusText;
      throw new Error(`HTTP ${response.status}: ${message}`);
    }
    return body.result;
  }

  // -- test connection: tools/list with the key ---------------------------------------------------
  const tester = $("#test-connection");
  if (tester) {
    tester.addEventListener("submit", async (event) => {
      event.preventDefault();
      const out = $("#test-result");
      const key = ($("#test-key", tester).value || "").trim();
      if (!key) { say(out, "Paste an API key first.", true); return; }
      say(out, "Testing…");
      try {
        const result = await mcpCall("tools/list", {}, { key });
        const names = result.tools.map((t) => t.name);
        say(out, `Connected: tools/list answered ${names.length} tools (${names.join(", ")}).`);
      } catch (err) {
        say(out, `Not connected: ${err.message}`, true);
      }
    });
  }

  // -- playground: search_tools, get_tool_schema, execute_tools through /mcp with the session ----
  const playground = $("#playground");
  if (!playground) return;
  const csrf = playground.getAttribute("data-csrf");
  const toolFields = () => $$("[data-tool-field]");

  async function runTool(name, args, out) {
    say(out, "Running…");
    try {
      const result = await mcpCall("tools/call", { name, arguments: args }, { csrf });
      const payload = result.structuredContent !== undefined ? result.structuredContent : null;
      const text = result.content && result.content[0] && result.content[0].text;
      out.textContent = payload !== null ? JSON.stringify(payload, null, 2) : (text || JSON.stringify(result, null, 2));
      out.classList.remove("error");
      return payload;
    } catch (err) {
      say(out, err.message, true);
      return null;
    }
  }

  function useTool(name) {
    toolFields().forEach((field) => { field.value = name; });
    $("#pg-schema-tool").focus();
  }

  $("#pg-search").addEventListener("submit", async (event) => {
    event.preventDefault();
    const list = $("#pg-search-results");
    list.textContent = "";
    const limit = parseInt($("#pg-limit").value, 10) || 10;
    const payload = await runTool("search_tools", { query: $("#pg-query").value, limit }, $("#pg-search-raw"));
    if (!payload || !payload.tools) return;
    payload.tools.forEach((tool) => {
      const item = document.createElement("li");
      const title = document.createElement("strong");
      title.textContent = tool.name;
      const meta = document.createElement("span");
      meta.className = "muted";
      meta.textContent = ` · ${tool.integration} · score ${tool.score}${tool.connected === false ? " · not connected" : ""}`;
      const desc = document.createElement("p");
      desc.className = "help";
      desc.textContent = tool.description;
      const pick = document.createElement("button");
      pick.type = "button";
      pick.className = "secondary";
      pick.textContent = "Use";
      pick.setAttribute("aria-label", `Use ${tool.name}`);
      pick.addEventListener("click", () => useTool(tool.name));
      item.append(title, meta, " ", pick, desc);
      list.append(item);
    });
  });

  function skeleton(schema) {
    // Arguments to start from: the required properties, each with an example of its type.
    const args = {};
    const props = (schema && schema.properties) || {};
    (schema && schema.required ? schema.required : []).forEach((name) => {
      const p = props[name] || {};
      const type = Array.isArray(p.type) ? p.type[0] : p.type;
      args[name] = p.default !== undefined ? p.default
        : type === "integer" || type === "number" ? 0
        : type === "boolean" ? false
        : type === "array" ? []
        : type === "object" ? {}
        : "";
    });
    return args;
  }

  $("#pg-schema").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("#pg-schema-tool").value.trim();
    toolFields().forEach((field) => { field.value = name; });
    const payload = await runTool("get_tool_schema", { tool: name }, $("#pg-schema-out"));
    if (payload && payload.schema) {
      $("#pg-args").value = JSON.stringify(skeleton(payload.schema), null, 2);
    }
  });

  $("#pg-execute").addEventListener("submit", async (event) => {
    event.preventDefault();
    const out = $("#pg-execute-out");
    let args;
    try {
      args = JSON.parse($("#pg-args").value || "{}");
    } catch (err) {
      say(out, `The arguments are not valid JSON: ${err.message}`, true);
      return;
    }
    const tool = $("#pg-execute-tool").value.trim();
    await runTool("execute_tools", { executions: [{ tool, args }] }, out);
  });
})();
