// A tool-using session against mock-llm, run from the installed @robota/native tarballs (no
// source tree): the scripted model writes a file with the built-in Write tool, reads it back with
// Read, then answers; the check is the file on disk, the tool result the model was sent, and the
// outcome.
//
//   ROBOTA_MOCK_LLM=path/to/mock-llm node tool-session.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { AnthropicProvider, InteractiveSession } from '@robota/native';

const mock = spawn(process.env.ROBOTA_MOCK_LLM, ['--exit-on-stdin-eof'], { stdio: ['pipe', 'pipe', 'inherit'] });
const line = await new Promise((resolve) => createInterface({ input: mock.stdout }).once('line', resolve));
const { base_url: baseUrl } = JSON.parse(line);
const tmp = mkdtempSync(path.join(tmpdir(), 'robota-smoke-'));
try {
  const work = path.join(tmp, 'work');
  const home = path.join(tmp, 'home');
  mkdirSync(work);
  mkdirSync(home);
  const target = path.join(work, 'notes.txt');
  const script = {
    turns: [
      { tool_calls: [{ id: 'w1', name: 'Write', input: { file_path: target, content: 'from the tarball\n' } }] },
      { tool_calls: [{ id: 'r1', name: 'Read', input: { file_path: target } }] },
      { text: 'Wrote and read notes.txt.' },
    ],
  };
  const scripted = await fetch(`${baseUrl}/_mock/script`, { method: 'POST', body: JSON.stringify(script) });
  if (!scripted.ok) throw new Error(`mock-llm refused the script: ${await scripted.text()}`);
  const session = new InteractiveSession({
    cwd: work,
    home,
    loadProjectContext: false,
    permissionMode: 'acceptEdits',
    provider: new AnthropicProvider({ model: 'claude-test', apiKey: 'sk-test', baseUrl, maxRetries: 0 }),
  });
  const result = await session.submit('Write notes.txt, then read it back.');
  await session.shutdown();
  const sent = await (await fetch(`${baseUrl}/_mock/requests`)).json();
  const problems = [];
  if (result.status !== 'complete' || result.outcome.response !== 'Wrote and read notes.txt.') {
    problems.push(`outcome: ${result.status} ${JSON.stringify(result.outcome.response)}`);
  }
  if (!existsSync(target) || readFileSync(target, 'utf8') !== 'from the tarball\n') {
    problems.push('notes.txt was not written by the Write tool');
  }
  if (sent.length !== 3 || !JSON.stringify(sent[2].body.messages.at(-1)).includes('from the tarball')) {
    problems.push("the Read tool's result did not reach the model");
  }
  if (problems.length > 0) {
    console.error(`tool session FAILED: ${problems.join('; ')}`);
    process.exitCode = 1;
  } else {
    const require = createRequire(import.meta.url);
    const where = path.dirname(require.resolve('@robota/native/package.json'));
    const version = require('@robota/native/package.json').version;
    console.log(`tool session: @robota/native ${version} from ${where}: Write + Read ran, file on disk`);
  }
} finally {
  mock.stdin.end();
  rmSync(tmp, { recursive: true, force: true });
}
