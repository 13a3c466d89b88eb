// Drives `robota acp` with the official Agent Client Protocol client library
// (@agentclientprotocol/sdk, protocol v1) over the agent's stdio, with mock-llm as the model, in
// a temporary project: session/new with the permission modes and the commands (`/cost` run), a prompt whose tool calls stream
// updates (tool_call, tool_call_update, plan, message chunks), a permission request the client
// allows (the file is written) and one it rejects (it is not), set_mode acceptEdits (no request,
// the file is written; an edit's update carries its diff), session/cancel mid-stream (stopReason `cancelled`), and session/load of
// the saved session in a new process (its conversation replayed). A second test offers the
// client's fs methods (Read, Edit and Write go through the editor's buffers, not the disk) and
// passes an MCP server (the npm reference server from tests/mcp-servers) in session/new.
//
// ROBOTA_BIN and MOCK_LLM_BIN name the debug binaries (default: $CARGO_TARGET_DIR/debug or
// ../../target/debug).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Readable, Writable } from "node:stream";
import { createInterface } from "node:readline";
import { client, ndJsonStream, methods } from "@agentclientprotocol/sdk";

const targetDir = process.env.CARGO_TARGET_DIR ?? fileURLToPath(new URL("../../target", import.meta.url));
const robotaBin = process.env.ROBOTA_BIN ?? join(targetDir, "debug/robota");
const mockBin = process.env.MOCK_LLM_BIN ?? join(targetDir, "debug/mock-llm");

/** Starts mock-llm with `script`; resolves its base URL and the process. */
async function startMock(dir, script) {
  const path = join(dir, "script.json");
  writeFileSync(path, JSON.stringify(script));
  const child = spawn(mockBin, ["--script", path], { stdio: ["pipe", "pipe", "inherit"] });
  const line = await new Promise((ok, fail) => {
    createInterface({ input: child.stdout }).once("line", ok);
    child.once("error", fail);
    child.once("exit", (code) => fail(new Error(`mock-llm exited with ${code}`)));
  });
  return { baseUrl: JSON.parse(line).base_url, child };
}

/** Spawns `robota acp` in `project` and connects the ACP client to it; `run` gets the context. */
async function withAgent(project, home, handlers, run) {
  const agent = spawn(robotaBin, ["acp"], {
    cwd: project,
    env: { ...process.env, HOME: home, ANTHROPIC_API_KEY: "", ANTHROPIC_BASE_URL: "" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  agent.stderr.on("data", (d) => (stderr += d));
  const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
  let app = client({ name: "robota-acp-test" })
    .onNotification(methods.client.session.update, (ctx) => handlers.update(ctx.params))
    .onRequest(methods.client.session.requestPermission, (ctx) => handlers.permission(ctx.params));
  if (handlers.fs) {
    app = app
      .onRequest(methods.client.fs.readTextFile, (ctx) => handlers.fs.read(ctx.params))
      .onRequest(methods.client.fs.writeTextFile, (ctx) => handlers.fs.write(ctx.params));
  }
  const offered = handlers.fs !== undefined;
  try {
    return await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request(methods.agent.initialize, {
        protocolVersion: 1,
        clientCapabilities: { fs: { readTextFile: offered, writeTextFile: offered } },
      });
      assert.equal(init.protocolVersion, 1);
      assert.equal(init.agentCapabilities.loadSession, true);
      assert.equal(init.agentCapabilities.mcpCapabilities.http, true);
      return await run(ctx);
    });
  } catch (error) {
    error.message += `\nrobota acp stderr:\n${stderr}`;
    throw error;
  } finally {
    agent.stdin.end();
    await new Promise((ok) => {
      const timer = setTimeout(() => { agent.kill("SIGKILL"); ok(); }, 10000);
      agent.once("exit", () => { clearTimeout(timer); ok(); });
    });
  }
}

/** Polls `probe` until it returns a value (at most 10 s). */
async function waitFor(probe) {
  const deadline = Date.now() + 10000;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((ok) => setTimeout(ok, 20));
  }
}

/** A temporary project folder (with `.robota/`) and home; `file(name)` is a path in the project. */
function tempProject(prefix) {
  const base = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const project = join(base, "project");
  const home = join(base, "home");
  mkdirSync(join(project, ".robota"), { recursive: true });
  mkdirSync(home);
  return { base, project, home, file: (name) => join(project, name) };
}

/** Points the project's settings at mock-llm. */
function useMock(project, mock) {
  writeFileSync(join(project, ".robota/settings.json"), JSON.stringify({
    currentProvider: "mock",
    providers: { mock: {
      type: "anthropic", model: "claude-sonnet-4-5", apiKey: "test-key",
      baseURL: mock.baseUrl, options: { maxRetries: 0 },
    } },
  }));
}

test("robota acp: prompts with tool calls, permission answers, modes, cancel, load", async () => {
  const { base, project, home, file } = tempProject("robota-acp-");
  const write = (id, name) => ({
    tool_calls: [{ id, name: "Write", input: { file_path: file(name), content: `${name}\n` } }],
  });
  const mock = await startMock(base, {
    turns: [
      // Allowed by the client: a plan, then the write.
      {
        text: "Writing a.",
        tool_calls: [
          { id: "todo1", name: "TodoWrite", input: { todos: [
            { content: "Write a.txt", status: "in_progress", activeForm: "Writing a.txt" },
          ] } },
          { id: "wa", name: "Write", input: { file_path: file("a.txt"), content: "a.txt\n" } },
        ],
      },
      { text: ["Do", "ne."] },
      // Rejected by the client.
      write("wb", "b.txt"),
      { text: "Not written." },
      // acceptEdits: no request; the edit's update carries its diff.
      write("wc", "c.txt"),
      { tool_calls: [{ id: "ec", name: "Edit", input: {
        file_path: file("c.txt"), old_string: "c.txt", new_string: "edited c",
      } }] },
      { text: "Wrote c." },
      // Cancelled mid-stream.
      { text: { repeat: "word ", count: 200 }, chunk_delay_ms: 50 },
    ],
  });
  useMock(project, mock);

  const updates = [];
  const permissionRequests = [];
  let answer = "allow_once";
  let onChunk = null;
  const handlers = {
    update: (params) => {
      updates.push(params);
      if (params.update.sessionUpdate === "agent_message_chunk" && onChunk) onChunk();
    },
    permission: (params) => {
      permissionRequests.push(params);
      return { outcome: { outcome: "selected", optionId: answer } };
    },
  };
  const kinds = (from) => updates.slice(from).map((n) => n.update.sessionUpdate);

  let sessionId;
  try {
    await withAgent(project, home, handlers, async (ctx) => {
      const session = await ctx.request(methods.agent.session.new, { cwd: project, mcpServers: [] });
      sessionId = session.sessionId;
      assert.equal(session.modes.currentModeId, "default");
      assert.deepEqual(
        session.modes.availableModes.map((m) => m.id).sort(),
        ["acceptEdits", "bypassPermissions", "default", "dontAsk", "plan"],
      );

      // The session's commands are advertised, and `/name` runs one without the model.
      const commands = await waitFor(() => updates.find(
        (n) => n.sessionId === sessionId && n.update.sessionUpdate === "available_commands_update",
      ));
      const names = commands.update.availableCommands.map((c) => c.name);
      for (const name of ["compact", "context", "cost"]) assert.ok(names.includes(name), `${names}`);
      let from = updates.length;
      let result = await ctx.request(methods.agent.session.prompt, {
        sessionId, prompt: [{ type: "text", text: "/cost" }],
      });
      assert.equal(result.stopReason, "end_turn");
      const costText = updates.slice(from).filter((n) => n.update.sessionUpdate === "agent_message_chunk")
        .map((n) => n.update.content.text).join("");
      assert.ok(costText.length > 0, "the command answered nothing");

      // 1. Allowed: the tool call streams, the client is asked, the file is written.
      from = updates.length;
      result = await ctx.request(methods.agent.session.prompt, {
        sessionId, prompt: [{ type: "text", text: "write a.txt" }],
      });
      assert.equal(result.stopReason, "end_turn");
      assert.equal(readFileSync(file("a.txt"), "utf8"), "a.txt\n");
      assert.equal(permissionRequests.length, 1);
      const asked = permissionRequests[0];
      assert.equal(asked.sessionId, sessionId);
      assert.equal(asked.toolCall.toolCallId, "wa");
      assert.equal(asked.toolCall.kind, "edit");
      assert.deepEqual(asked.options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once"]);
      const seen = kinds(from);
      for (const kind of ["agent_message_chunk", "tool_call", "tool_call_update", "plan"]) {
        assert.ok(seen.includes(kind), `no ${kind} in ${seen}`);
      }
      const mine = updates.slice(from).map((n) => n.update);
      const start = mine.find((u) => u.sessionUpdate === "tool_call" && u.toolCallId === "wa");
      assert.equal(start.kind, "edit");
      assert.equal(start.status, "in_progress");
      assert.deepEqual(start.locations, [{ path: file("a.txt") }]);
      const end = mine.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "wa");
      assert.equal(end.status, "completed");
      const plan = mine.find((u) => u.sessionUpdate === "plan");
      assert.deepEqual(plan.entries.map((e) => [e.content, e.status]), [["Write a.txt", "in_progress"]]);
      const text = mine.filter((u) => u.sessionUpdate === "agent_message_chunk")
        .map((u) => u.content.text).join("");
      // The engine separates the rounds' texts with a blank line.
      assert.equal(text, "Writing a.\n\nDone.");

      // 2. Rejected: the call fails, nothing is written.
      answer = "reject_once";
      from = updates.length;
      result = await ctx.request(methods.agent.session.prompt, {
        sessionId, prompt: [{ type: "text", text: "write b.txt" }],
      });
      assert.equal(result.stopReason, "end_turn");
      assert.equal(permissionRequests.length, 2);
      assert.equal(existsSync(file("b.txt")), false);
      const rejected = updates.slice(from).map((n) => n.update)
        .find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "wb");
      assert.equal(rejected.status, "failed");

      // 3. Mode acceptEdits: the edit needs no request.
      from = updates.length;
      await ctx.request(methods.agent.session.setMode, { sessionId, modeId: "acceptEdits" });
      result = await ctx.request(methods.agent.session.prompt, {
        sessionId, prompt: [{ type: "text", text: "write c.txt" }],
      });
      assert.equal(result.stopReason, "end_turn");
      assert.equal(permissionRequests.length, 2);
      assert.equal(readFileSync(file("c.txt"), "utf8"), "edited c\n");
      const edit = updates.slice(from).map((n) => n.update)
        .find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "ec");
      assert.equal(edit.status, "completed");
      assert.deepEqual(edit.content, [
        { type: "diff", path: file("c.txt"), oldText: "c.txt\n", newText: "edited c\n" },
      ]);
      await assert.rejects(
        ctx.request(methods.agent.session.setMode, { sessionId, modeId: "noSuchMode" }),
      );

      // 4. Cancel mid-stream: the prompt ends `cancelled`.
      from = updates.length;
      onChunk = () => {
        onChunk = null;
        ctx.notify(methods.agent.session.cancel, { sessionId });
      };
      result = await ctx.request(methods.agent.session.prompt, {
        sessionId, prompt: [{ type: "text", text: "talk for long" }],
      });
      assert.equal(result.stopReason, "cancelled");
      const streamed = updates.slice(from).filter((n) => n.update.sessionUpdate === "agent_message_chunk").length;
      assert.ok(streamed >= 1 && streamed < 200, `${streamed} chunks streamed`);

      // Unknown sessions are errors, not crashes.
      await assert.rejects(ctx.request(methods.agent.session.prompt, {
        sessionId: "no-such-session", prompt: [{ type: "text", text: "x" }],
      }));
    });

    // 5. A new process loads the saved session: its conversation is replayed.
    updates.length = 0;
    await withAgent(project, home, handlers, async (ctx) => {
      const loaded = await ctx.request(methods.agent.session.load, {
        sessionId, cwd: project, mcpServers: [],
      });
      assert.ok(loaded.modes.availableModes.length === 5);
      const replayed = updates.filter((n) => n.sessionId === sessionId).map((n) => n.update);
      const user = replayed.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text);
      assert.ok(user.includes("write a.txt"), `replayed user messages: ${user}`);
      assert.ok(
        replayed.some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text.includes("Wrote c.")),
        "the answers are replayed",
      );
    });
  } finally {
    mock.child.kill();
  }
});

test("robota acp: file tools go through the editor's buffers; the editor's MCP servers are used", async () => {
  const { base, project, home, file } = tempProject("robota-acp-fs-");
  writeFileSync(file("open.txt"), "saved on disk\n");
  const everything = fileURLToPath(
    new URL("../mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
  );
  assert.ok(existsSync(everything), "the MCP test servers are not installed: run tests/mcp-servers/setup.sh");
  const mock = await startMock(base, {
    turns: [
      { tool_calls: [{ id: "r1", name: "Read", input: { file_path: file("open.txt") } }] },
      { tool_calls: [{ id: "e1", name: "Edit", input: {
        file_path: file("open.txt"), old_string: "unsaved", new_string: "edited",
      } }] },
      { tool_calls: [{ id: "w1", name: "Write", input: { file_path: file("new.txt"), content: "new buffer\n" } }] },
      { tool_calls: [{ id: "m1", name: "mcp__everything__echo", input: { message: "from the editor's server" } }] },
      { text: "All done." },
    ],
  });
  useMock(project, mock);

  // The editor's buffers: open.txt has unsaved changes.
  const buffers = new Map([[file("open.txt"), "unsaved in the editor\n"]]);
  const reads = [];
  const handlers = {
    update: () => {},
    permission: () => ({ outcome: { outcome: "selected", optionId: "allow_once" } }),
    fs: {
      read: (params) => {
        reads.push(params.path);
        if (!buffers.has(params.path)) throw new Error(`no buffer for ${params.path}`);
        return { content: buffers.get(params.path) };
      },
      write: (params) => {
        buffers.set(params.path, params.content);
        return {};
      },
    },
  };
  try {
    await withAgent(project, home, handlers, async (ctx) => {
      const session = await ctx.request(methods.agent.session.new, {
        cwd: project,
        mcpServers: [{ name: "everything", command: "node", args: [everything, "stdio"], env: [] }],
      });
      const result = await ctx.request(methods.agent.session.prompt, {
        sessionId: session.sessionId, prompt: [{ type: "text", text: "work in the editor" }],
      });
      assert.equal(result.stopReason, "end_turn");
    });
    const requests = JSON.parse(await (await fetch(`${mock.baseUrl}/_mock/requests`)).text());
    const toolResult = (i) => JSON.stringify(requests[i].body.messages.at(-1));
    // Read saw the editor's unsaved text, not the disk's.
    assert.ok(toolResult(1).includes("unsaved in the editor"), toolResult(1));
    assert.ok(!toolResult(1).includes("saved on disk"), toolResult(1));
    assert.ok(reads.includes(file("open.txt")));
    // Edit and Write changed the editor's buffers; the disk is the editor's business.
    assert.equal(buffers.get(file("open.txt")), "edited in the editor\n");
    assert.equal(buffers.get(file("new.txt")), "new buffer\n");
    assert.equal(readFileSync(file("open.txt"), "utf8"), "saved on disk\n");
    assert.equal(existsSync(file("new.txt")), false);
    // The MCP server the editor passed in session/new answered the model's call.
    assert.ok(toolResult(4).includes("from the editor's server"), toolResult(4));
    assert.ok(!toolResult(4).includes("is_error\":true"), toolResult(4));
  } finally {
    mock.child.kill();
  }
});
