// Drives `robota acp` with the official Agent Client Protocol client library
// (@agentclientprotocol/sdk, protocol v1) over the agent's stdio, with mock-llm as the model, in
// a temporary project: session/new with the permission modes and the commands (`/cost` run), a prompt whose tool calls stream
// updates (tool_call, tool_call_update, plan, message chunks), a permission request the client
// allows (the file is written) and one it rejects (it is not), set_mode acceptEdits (no request,
// the file is written; an edit's update carries its diff), session/cancel mid-stream (stopReason `cancelled`), and session/load of
// the saved session in a new process (its conversation replayed).
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
  const app = client({ name: "robota-acp-test" })
    .onNotification(methods.client.session.update, (ctx) => handlers.update(ctx.params))
    .onRequest(methods.client.session.requestPermission, (ctx) => handlers.permission(ctx.params));
  try {
    return await app.connectWith(stream, async (ctx) => {
      const init = await ctx.request(methods.agent.initialize, {
        protocolVersion: 1,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
      });
      assert.equal(init.protocolVersion, 1);
      assert.equal(init.agentCapabilities.loadSession, true);
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

test("robota acp: prompts with tool calls, permission answers, modes, cancel, load", async () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "robota-acp-")));
  const project = join(base, "project");
  const home = join(base, "home");
  mkdirSync(join(project, ".robota"), { recursive: true });
  mkdirSync(home);
  const file = (name) => join(project, name);
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
  writeFileSync(join(project, ".robota/settings.json"), JSON.stringify({
    currentProvider: "mock",
    providers: { mock: {
      type: "anthropic", model: "claude-sonnet-4-5", apiKey: "test-key",
      baseURL: mock.baseUrl, options: { maxRetries: 0 },
    } },
  }));

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
