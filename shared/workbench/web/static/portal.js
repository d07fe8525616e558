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
    // "Use" reads the tool's schema at once: the form below is built from it.
    $("#pg-schema").requestSubmit();
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

  // -- the arguments form, built from the tool's input schema (a raw JSON textarea beside it) -----
  const form = $("#pg-form");
  const raw = $("#pg-args");
  const rawToggle = $("#pg-raw");
  let schema = null;

  function kindOf(prop) {
    const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
    if (Array.isArray(prop.enum)) return "enum";
    if (type === "boolean") return "boolean";
    if (type === "integer" || type === "number") return type;
    if (type === "string") return "string";
    return "json"; // arrays, objects, anything else: JSON in a textarea
  }

  function buildForm(toolSchema) {
    schema = toolSchema;
    form.textContent = "";
    const props = (toolSchema && toolSchema.properties) || {};
    const required = new Set((toolSchema && toolSchema.required) || []);
    const names = Object.keys(props).sort((a, b) => (required.has(b) - required.has(a)));
    if (!names.length) {
      const none = document.createElement("p");
      none.className = "muted";
      none.textContent = "This tool takes no arguments.";
      form.append(none);
    }
    names.forEach((name) => {
      const prop = props[name] || {};
      const kind = kindOf(prop);
      const id = `pg-arg-${name}`;
      const label = document.createElement("label");
      label.htmlFor = id;
      label.textContent = name + (required.has(name) ? " (required)" : "");
      let input;
      if (kind === "enum") {
        input = document.createElement("select");
        const options = required.has(name) ? prop.enum : ["", ...prop.enum];
        options.forEach((value) => {
          const option = document.createElement("option");
          option.value = value === "" ? "" : JSON.stringify(value);
          option.textContent = value === "" ? "(not set)" : String(value);
          input.append(option);
        });
      } else if (kind === "boolean") {
        input = document.createElement("input");
        input.type = "checkbox";
      } else if (kind === "json") {
        input = document.createElement("textarea");
        input.spellcheck = false;
        input.rows = 3;
      } else {
        input = document.createElement("input");
        input.type = kind === "string" ? "text" : "number";
        if (kind === "integer") input.step = "1";
        if (kind === "number") input.step = "any";
      }
      input.id = id;
      input.dataset.arg = name;
      input.dataset.kind = kind;
      if (required.has(name) && kind !== "boolean") input.required = true;
      const parts = [label, input];
      if (prop.description) {
        const help = document.createElement("p");
        help.className = "help";
        help.id = `${id}-help`;
        help.textContent = prop.description;
        input.setAttribute("aria-describedby", help.id);
        parts.push(help);
      }
      form.append(...parts);
      if (prop.default !== undefined) setField(input, prop.default);
    });
    raw.value = JSON.stringify(formArgs(), null, 2);
  }

  function setField(input, value) {
    const kind = input.dataset.kind;
    if (kind === "boolean") input.checked = value === true;
    else if (kind === "enum") input.value = value === undefined ? "" : JSON.stringify(value);
    else if (kind === "json") input.value = value === undefined ? "" : JSON.stringify(value, null, 2);
    else input.value = value === undefined || value === null ? "" : String(value);
  }

  function formArgs() {
    // The arguments the form says: empty optional fields are left out; JSON fields must parse.
    const args = {};
    const required = new Set((schema && schema.required) || []);
    $$("[data-arg]", form).forEach((input) => {
      const name = input.dataset.arg;
      const kind = input.dataset.kind;
      if (kind === "boolean") {
        if (input.checked || required.has(name)) args[name] = input.checked;
        return;
      }
      const text = input.value.trim();
      if (text === "" && !(required.has(name) && kind === "string")) return;
      if (kind === "integer" || kind === "number") args[name] = Number(text);
      else if (kind === "enum") args[name] = JSON.parse(text);
      else if (kind === "json") {
        try { args[name] = JSON.parse(text); } catch (err) { throw new Error(`${name} is not valid JSON: ${err.message}`); }
      } else args[name] = input.value;
    });
    return args;
  }

  function fillForm(args) {
    $$("[data-arg]", form).forEach((input) => setField(input, args[input.dataset.arg]));
  }

  function showRaw(on) {
    rawToggle.checked = on;
    $("#pg-raw-block").hidden = !on;
    form.hidden = on;
  }

  rawToggle.addEventListener("change", () => {
    const out = $("#pg-execute-out");
    try {
      if (rawToggle.checked) {
        raw.value = JSON.stringify(formArgs(), null, 2);
      } else {
        fillForm(JSON.parse(raw.value || "{}"));
      }
      showRaw(rawToggle.checked);
    } catch (err) {
      rawToggle.checked = !rawToggle.checked;
      say(out, err.message, true);
    }
  });

  $("#pg-schema").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("#pg-schema-tool").value.trim();
    toolFields().forEach((field) => { field.value = name; });
    const payload = await runTool("get_tool_schema", { tool: name }, $("#pg-schema-out"));
    if (payload && payload.schema) {
      buildForm(payload.schema);
      showRaw(false);
    }
  });

  // -- this session's calls: kept in the tab (sessionStorage), newest first, each one reloadable ----
  const HISTORY = "workbench-playground-history";
  function history() {
    try { return JSON.parse(sessionStorage.getItem(HISTORY) || "[]"); } catch (err) { return []; }
  }
  function renderHistory() {
    const list = $("#pg-history");
    list.textContent = "";
    const runs = history();
    $("#pg-history-empty").hidden = runs.length > 0;
    runs.forEach((run, i) => {
      const item = document.createElement("li");
      const name = document.createElement("code");
      name.textContent = run.tool;
      const meta = document.createElement("span");
      meta.className = run.ok ? "status ok" : "status warn";
      meta.textContent = ` ${run.ok ? "succeeded" : "failed"} · ${run.at}`;
      const load = document.createElement("button");
      load.type = "button";
      load.className = "secondary";
      load.textContent = "Load";
      load.setAttribute("aria-label", `Load ${run.tool} from ${run.at}`);
      load.addEventListener("click", () => {
        toolFields().forEach((field) => { field.value = run.tool; });
        raw.value = JSON.stringify(run.args, null, 2);
        showRaw(true);
        raw.focus();
      });
      item.append(name, meta, " ", load);
      list.append(item);
    });
  }
  renderHistory();

  $("#pg-execute").addEventListener("submit", async (event) => {
    event.preventDefault();
    const out = $("#pg-execute-out");
    let args;
    try {
      args = rawToggle.checked || !schema ? JSON.parse(raw.value || "{}") : formArgs();
    } catch (err) {
      say(out, `The arguments are not valid: ${err.message}`, true);
      return;
    }
    const tool = $("#pg-execute-tool").value.trim();
    const payload = await runTool("execute_tools", { executions: [{ tool, args }] }, out);
    const first = payload && payload.results && payload.results[0];
    const runs = [{ tool, args, ok: !!first && !("error" in first), at: new Date().toLocaleTimeString() }, ...history()];
    sessionStorage.setItem(HISTORY, JSON.stringify(runs.slice(0, 20)));
    renderHistory();
  });
})();
