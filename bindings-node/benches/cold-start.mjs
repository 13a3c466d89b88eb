// Cold start (DESIGN §9: < 50 ms more than `node -e ''`): from spawning a Node process to the
// first event of a prompt answered by mock-llm over loopback (Anthropic SSE), against the time
// from spawning `node -e ''`-like process to its first output line.
//
//   node benches/cold-start.mjs [runs]     (needs target/debug/mock-llm or MOCK_LLM_BIN)
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const runs = Number(process.argv[2] ?? 21);
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const mockBinary =
  process.env.MOCK_LLM_BIN ?? path.join(process.env.CARGO_TARGET_DIR ?? path.join(repo, 'target'), 'debug', 'mock-llm');
if (!existsSync(mockBinary)) throw new Error(`mock-llm not found at ${mockBinary}; cargo build -p mock-llm`);

const mock = spawn(mockBinary, ['--exit-on-stdin-eof'], { stdio: ['pipe', 'pipe', 'inherit'] });
const line = await new Promise((resolve) => createInterface({ input: mock.stdout }).once('line', resolve));
const baseUrl = JSON.parse(line).base_url;
await fetch(`${baseUrl}/_mock/script`, {
  method: 'POST',
  body: JSON.stringify({ repeat: true, record: false, turns: [{ text: ['first', ' event'] }] }),
});

const dir = mkdtempSync(path.join(tmpdir(), 'robota-cold-'));
const entry = pathToFileURL(path.join(here, '..', 'dist', 'esm', 'index.js')).href;
const script = path.join(dir, 'first-event.mjs');
writeFileSync(
  script,
  `import { InteractiveSession, AnthropicProvider } from ${JSON.stringify(entry)};
const session = new InteractiveSession({ cwd: ${JSON.stringify(dir)}, loadProjectContext: false, builtinTools: false,
  provider: new AnthropicProvider({ model: 'claude-bench', apiKey: 'sk-bench', baseUrl: process.argv[2] }) });
session.once('text_delta', () => { process.stdout.write('first\\n'); process.exit(0); });
session.submit('hi');
`,
);

/** Milliseconds from spawn to the child's first stdout line. */
function timeToFirstLine(args) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    createInterface({ input: child.stdout }).once('line', () => {
      resolve(Number(process.hrtime.bigint() - started) / 1e6);
    });
    child.once('error', reject);
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const bare = [];
const robota = [];
for (let i = 0; i < runs; i += 1) {
  bare.push(await timeToFirstLine(['-e', "process.stdout.write('first\\n')"]));
  robota.push(await timeToFirstLine([script, baseUrl]));
}
mock.stdin.end();
console.log(
  JSON.stringify({
    bench: 'node_cold_start',
    runs,
    bare_node_ms: Number(median(bare).toFixed(1)),
    first_event_ms: Number(median(robota).toFixed(1)),
    overhead_ms: Number((median(robota) - median(bare)).toFixed(1)),
  }),
);
