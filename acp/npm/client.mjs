// An ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk,
// stable v1 entrypoint): it spawns `nanohermes acp`, runs the steps it is
// given and prints one JSON line per thing it saw, for tests/it/acp.rs.
//
// Usage: node client.mjs NANOHERMES_BINARY STEPS_JSON
//   STEPS_JSON is an array of steps, run in order:
//   {"op":"initialize"}
//   {"op":"new","cwd":DIR,"mcpServers":[...]}
//   {"op":"load","cwd":DIR,"sessionId":ID?,"mcpServers":[...]}   (default: the last session)
//   {"op":"prompt","prompt":[blocks] | "text":T,"answers":[optionId...],"cancelOnKind":KIND?}
//   {"op":"mode","modeId":M}
//   {"op":"raw","line":TEXT,"id":ID}   written as it is; waits for the answer with ID
//   {"op":"exit"}                      closes stdin and waits for the agent to exit
// Printed: {"event":"initialize"|"new"|"load"|"prompt"|"mode","result":...},
//   {"event":"error","op":...,"code":...,"message":...}, {"event":"update","update":...},
//   {"event":"permission","toolCall":...,"options":[...],"answer":...},
//   {"event":"raw","message":...}, {"event":"unparsed","count":N} (session/update lines the
//   SDK's schemas refused), {"event":"exit","code":N}.
import { spawn } from "node:child_process";
import * as acp from "@agentclientprotocol/sdk";

const [binary, stepsJson] = process.argv.slice(2);
const steps = JSON.parse(stepsJson);
const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");

const child = spawn(binary, ["acp"], { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));

// The agent's stdout goes to the SDK and is also read line by line here, to
// see the answers to raw lines and to count the updates the SDK received.
const rawWaiters = new Map();
let rawUpdates = 0;
let typedUpdates = 0;
let pending = "";
const input = new ReadableStream({
  start(controller) {
    child.stdout.on("data", (chunk) => {
      controller.enqueue(new Uint8Array(chunk));
      pending += chunk.toString("utf8");
      let newline;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (!line.trim()) continue;
        const message = JSON.parse(line);
        if (message.method === "session/update") rawUpdates += 1;
        const key = JSON.stringify(message.id ?? null);
        if (!("method" in message) && rawWaiters.has(key)) {
          rawWaiters.get(key)(message);
          rawWaiters.delete(key);
        }
      }
    });
    child.stdout.on("end", () => controller.close());
  },
});
const output = new WritableStream({
  write(chunk) {
    return new Promise((resolve, reject) =>
      child.stdin.write(chunk, (error) => (error ? reject(error) : resolve())),
    );
  },
});

let answers = [];
let onUpdate = () => {};
const app = acp
  .client({ name: "nanohermes-test-client" })
  .onRequest(acp.methods.client.session.requestPermission, (ctx) => {
    const wanted = answers.shift();
    const option = ctx.params.options.find((o) => o.optionId === wanted);
    print({ event: "permission", toolCall: ctx.params.toolCall, options: ctx.params.options, answer: wanted ?? "cancelled" });
    return option
      ? { outcome: { outcome: "selected", optionId: option.optionId } }
      : { outcome: { outcome: "cancelled" } };
  })
  .onNotification(acp.methods.client.session.update, (ctx) => {
    typedUpdates += 1;
    print({ event: "update", sessionId: ctx.params.sessionId, update: ctx.params.update });
    onUpdate(ctx.params.update);
  });

const stream = acp.ndJsonStream(output, input);
let sessionId = null;
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

let exiting = false;
try {
await app.connectWith(stream, async (ctx) => {
  for (const step of steps) {
    const call = async (event, method, params) => {
      try {
        const result = await ctx.request(method, params);
        print({ event, result: result ?? null });
        return result;
      } catch (error) {
        print({ event: "error", op: step.op, code: error.code ?? null, message: String(error.message ?? error) });
        return null;
      }
    };
    switch (step.op) {
      case "initialize":
        await call("initialize", acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
          clientInfo: { name: "nanohermes-test-client", version: "1.0.0" },
        });
        break;
      case "new": {
        const result = await call("new", acp.methods.agent.session.new, {
          cwd: step.cwd,
          mcpServers: step.mcpServers ?? [],
        });
        if (result) sessionId = result.sessionId;
        break;
      }
      case "load":
        sessionId = step.sessionId ?? sessionId;
        await call("load", acp.methods.agent.session.load, {
          sessionId,
          cwd: step.cwd,
          mcpServers: step.mcpServers ?? [],
        });
        break;
      case "prompt": {
        answers = [...(step.answers ?? [])];
        let cancelled = false;
        onUpdate = (update) => {
          if (step.cancelOnKind && !cancelled && update.sessionUpdate === "tool_call" && update.kind === step.cancelOnKind) {
            cancelled = true;
            setTimeout(() => ctx.notify(acp.methods.agent.session.cancel, { sessionId }), 300);
          }
        };
        const prompt = step.prompt ?? [{ type: "text", text: step.text }];
        await call("prompt", acp.methods.agent.session.prompt, { sessionId, prompt });
        onUpdate = () => {};
        break;
      }
      case "mode":
        await call("mode", acp.methods.agent.session.setMode, { sessionId, modeId: step.modeId });
        break;
      case "raw": {
        const answered = new Promise((resolve) => rawWaiters.set(JSON.stringify(step.id ?? null), resolve));
        child.stdin.write(step.line + "\n");
        print({ event: "raw", message: await answered });
        break;
      }
      case "exit":
        await settle();
        // The SDK ends the connection when the agent's output ends.
        exiting = true;
        child.stdin.end();
        print({ event: "exit", code: await exited });
        break;
      default:
        throw new Error(`unknown step ${step.op}`);
    }
  }
});
} catch (error) {
  if (!exiting) throw error;
}
await settle();
print({ event: "unparsed", count: rawUpdates - typedUpdates });
if (child.exitCode === null) child.kill();
process.exit(0);
