// The web monitor of `robota serve`, tested as a person uses it: a real `robota serve` process in
// a temporary project whose settings select mock-llm (a real process speaking the Anthropic
// streaming API on loopback), and the page in headless Chromium driven by Playwright. The steps
// share one server, one browser and one session, in order.
//
// Needs the debug binaries `robota` and `mock-llm` (`cargo build -p robota-cli -p mock-llm`) in
// $CARGO_TARGET_DIR (default: the repository's target/) and Chromium at /usr/bin/chromium
// (or $CHROMIUM).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const targetDir = process.env.CARGO_TARGET_DIR || path.join(repoRoot, 'target');
const robotaBin = path.join(targetDir, 'debug', 'robota');
const mockLlmBin = path.join(targetDir, 'debug', 'mock-llm');
const chromiumBin = process.env.CHROMIUM || '/usr/bin/chromium';

/** How long one step may wait for the page. */
const WAIT_MS = 20_000;
const TOKEN = 'web-monitor-test-token-0123456789';
const TOKEN_ENV = 'ROBOTA_WEB_MONITOR_TEST_TOKEN';
const SLOW_TICKS = 400;
const RESUMED_CHUNKS = Array.from({ length: 40 }, (_, i) => `part${i} `);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'robota-web-monitor-'));
const project = path.join(tmp, 'project');
const home = path.join(tmp, 'home');
const profile = path.join(tmp, 'chromium-profile');
const writtenFile = path.join(project, 'notes.txt');
const deniedFile = path.join(project, 'denied.txt');

/** What the model answers, one turn per request. */
const script = {
  turns: [
    // (a) a streamed answer, with markup the page must show as text.
    {
      text: ['Hello ', '<b>from</b> ', 'the monitor. ', '<img src=x onerror="window.__injected=1">'],
      chunk_delay_ms: 30,
      usage: { input_tokens: 120, output_tokens: 8 },
    },
    // (b) a Write that needs permission (default mode), then the answer after its result.
    {
      text: 'I will write the notes.',
      tool_calls: [{ id: 'toolu_write_1', name: 'Write', input: { file_path: writtenFile, content: 'written from the monitor\n' } }],
      usage: { input_tokens: 200, output_tokens: 20 },
    },
    { text: 'The file is written.', usage: { input_tokens: 260, output_tokens: 6 } },
    // A second Write, denied from the page: the file must not appear.
    {
      tool_calls: [{ id: 'toolu_write_2', name: 'Write', input: { file_path: deniedFile, content: 'must not be written\n' } }],
      usage: { input_tokens: 300, output_tokens: 20 },
    },
    { text: 'Understood, not written.', usage: { input_tokens: 340, output_tokens: 5 } },
    // An answer streamed across a dropped connection.
    { text: RESUMED_CHUNKS, chunk_delay_ms: 60 },
    // (c) a slow stream (about 20 s) to abort.
    { text: { repeat: 'tick ', count: SLOW_TICKS }, chunk_delay_ms: 50 },
  ],
};

const children = [];
let serverLog = '';
let context;
let page;
let baseUrl;
let relay;
const pageErrors = [];

/** Spawns a child that is killed when the tests end. */
function start(bin, args, options) {
  if (!fs.existsSync(bin)) {
    throw new Error(`${bin} is missing: build it first (cargo build -p robota-cli -p mock-llm)`);
  }
  const child = spawn(bin, args, options);
  children.push(child);
  return child;
}

/** Resolves with the first line of `stream` matching `pattern`, or fails after `ms`. */
function waitForLine(stream, pattern, ms, what) {
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: stream });
    const timer = setTimeout(() => reject(new Error(`${what}: no line matching ${pattern} within ${ms} ms\n${serverLog}`)), ms);
    lines.on('line', (line) => {
      const match = pattern.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    lines.on('close', () => {
      clearTimeout(timer);
      reject(new Error(`${what}: exited before printing a line matching ${pattern}\n${serverLog}`));
    });
  });
}

/** The environment of the child processes: a temporary HOME, no provider variables. */
function childEnv() {
  const env = { ...process.env, HOME: home, USERPROFILE: home, [TOKEN_ENV]: TOKEN };
  for (const name of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ROBOTA_SERVE_TOKEN']) {
    delete env[name];
  }
  return env;
}

const byTestId = (testId) => page.getByTestId(testId);

/**
 * A loopback TCP relay in front of the server: the browser talks to the server through it, and
 * `dropAll()` cuts every open connection, as a network failure would.
 */
async function startRelay(targetPort) {
  const open = new Set();
  const relay = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    const pair = { client, upstream };
    open.add(pair);
    const close = () => {
      open.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    port: relay.address().port,
    dropAll() {
      for (const { client, upstream } of open) {
        client.destroy();
        upstream.destroy();
      }
    },
    close() {
      this.dropAll();
      return new Promise((resolve) => relay.close(resolve));
    },
  };
}

describe('web monitor of robota serve', { timeout: 180_000 }, () => {
  before(async () => {
    fs.mkdirSync(path.join(project, '.robota'), { recursive: true });
    fs.mkdirSync(home, { recursive: true });
    fs.mkdirSync(profile, { recursive: true });

    const scriptFile = path.join(tmp, 'script.json');
    fs.writeFileSync(scriptFile, JSON.stringify(script));
    // stdin stays a pipe: mock-llm exits when it closes, so a dying test leaves nothing behind.
    const mock = start(mockLlmBin, ['--script', scriptFile], { stdio: ['pipe', 'pipe', 'inherit'] });
    const [, mockLine] = await waitForLine(mock.stdout, /^(\{.*\})$/, 15_000, 'mock-llm');
    const mockUrl = JSON.parse(mockLine).base_url;

    fs.writeFileSync(path.join(project, '.robota', 'settings.json'), JSON.stringify({
      currentProvider: 'mock',
      providers: {
        mock: {
          type: 'anthropic', model: 'claude-sonnet-4-5', apiKey: 'test-key',
          baseURL: mockUrl, options: { maxRetries: 0 },
        },
      },
    }));

    const server = start(robotaBin, ['serve', '--port', '0', '--token-env', TOKEN_ENV, '--shutdown-grace', '1'], {
      cwd: project,
      env: childEnv(),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    server.stderr.setEncoding('utf8');
    server.stderr.on('data', (chunk) => { serverLog += chunk; });
    const [, url] = await waitForLine(server.stderr, /listening on (http:\/\/\S+)/, 30_000, 'robota serve');
    relay = await startRelay(Number(new URL(url).port));
    baseUrl = `http://127.0.0.1:${relay.port}`;

    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumBin,
      headless: true,
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
      ],
    });
    page = context.pages()[0] || await context.newPage();
    page.setDefaultTimeout(WAIT_MS);
    page.on('pageerror', (err) => pageErrors.push(`page error: ${err.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(`console error: ${message.text()}`);
    });
  });

  after(async () => {
    if (context) await context.close().catch(() => {});
    if (relay) await relay.close();
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('takes the token from the URL fragment, removes it from the address bar and lists no sessions', async () => {
    await page.goto(`${baseUrl}/#token=${TOKEN}`);
    await byTestId('monitor').waitFor({ state: 'visible' });
    assert.ok(!page.url().includes(TOKEN), `the token stays in the address bar: ${page.url()}`);
    await page.waitForFunction(() => document.querySelector('[data-testid="connection-status"]').textContent === 'connected');
    await byTestId('no-sessions').waitFor({ state: 'visible' });
  });

  it('creates a session and shows it chosen in the list', async () => {
    await byTestId('new-session-name').fill('browser test');
    await byTestId('new-session').click();
    await byTestId('session-view').waitFor({ state: 'visible' });
    assert.equal(await byTestId('current-session-name').textContent(), 'browser test');
    await page.locator('[data-testid="session-item"].selected').waitFor();
    assert.equal(await byTestId('session-item').count(), 1);
    await page.waitForFunction(() => document.querySelector('[data-testid="stream-state"]').textContent === 'live');
  });

  it('streams the answer text, as text (markup is not interpreted)', async () => {
    await byTestId('prompt-input').fill('Say hello');
    await byTestId('prompt-submit').click();
    assert.equal(await byTestId('user-prompt').first().textContent(), 'Say hello');
    const answer = byTestId('assistant-text').first();
    await page.locator('[data-testid="prompt-end"][data-status="complete"]').waitFor();
    assert.equal(
      await answer.textContent(),
      'Hello <b>from</b> the monitor. <img src=x onerror="window.__injected=1">',
    );
    assert.equal(await answer.locator('b, img').count(), 0, 'the answer text was rendered as markup');
    assert.equal(await page.evaluate(() => window.__injected), undefined);
    await page.waitForFunction(() => document.querySelector('[data-testid="session-state"]').textContent === 'idle');
  });

  it('shows the prompt usage, the context use and the session cost', async () => {
    // The figure shown before the first prompt (0 in / 0 out) has the same form: wait for the
    // one asked for after the prompt ended.
    await page.waitForFunction(() => /^\$\d+\.\d{4} · 120 in \/ 8 out$/.test(
      document.querySelector('[data-testid="cost"]').textContent));
    assert.notEqual(await byTestId('cost').textContent(), '$0.0000 · 120 in / 8 out', 'the model has a price: the cost cannot be zero');
    assert.match(await byTestId('prompt-usage').textContent(), /^[\d,]+ in \/ 8 out$/);
    assert.match(await byTestId('context-usage').textContent(), /^≈? ?[\d,]+ (\/ [\d,]+ tokens \(\d+\.\d%\)|tokens)/);
  });

  it('shows a tool call waiting for permission, runs it when allowed from the page, and shows its result', async () => {
    await byTestId('prompt-input').fill('Write the notes file');
    await byTestId('prompt-submit').click();
    const request = page.locator('[data-testid="permission-request"][data-state="pending"]');
    await request.waitFor();
    assert.equal(await request.getAttribute('data-tool-name'), 'Write');
    assert.match(await request.getByTestId('permission-input').textContent(), /written from the monitor/);
    assert.equal(fs.existsSync(writtenFile), false, 'the file was written before the permission answer');

    await request.getByTestId('permission-allow').click();
    const tool = page.locator('[data-testid="tool-call"][data-tool-use-id="toolu_write_1"]');
    await page.locator('[data-testid="tool-call"][data-tool-use-id="toolu_write_1"][data-status="success"]').waitFor();
    assert.equal(await tool.getByTestId('tool-name').textContent(), 'Write');
    assert.match(await tool.getByTestId('tool-arg').textContent(), /notes\.txt/);
    assert.match(await tool.getByTestId('tool-input').textContent(), /written from the monitor/);
    assert.notEqual((await tool.getByTestId('tool-result').textContent()).trim(), '');
    await page.locator('[data-testid="permission-request"][data-state="allowed"]').waitFor();
    assert.equal(await page.locator('[data-testid="permission-request"] button').count(), 0);

    await page.locator('[data-testid="prompt-end"][data-status="complete"]').nth(1).waitFor();
    assert.equal(await byTestId('assistant-text').last().textContent(), 'The file is written.');
    assert.equal(fs.readFileSync(writtenFile, 'utf8'), 'written from the monitor\n');
  });

  it('denies a tool call from the page: the tool does not run', async () => {
    await byTestId('prompt-input').fill('Write another file');
    await byTestId('prompt-submit').click();
    const request = page.locator('[data-testid="permission-request"][data-state="pending"]');
    await request.waitFor();
    await request.getByTestId('permission-deny').click();
    const denied = page.locator('[data-testid="permission-request"][data-state="denied"]');
    await denied.waitFor();
    assert.match(await denied.getByTestId('permission-state').textContent(), /denied from the monitor/);
    await page.locator('[data-testid="prompt-end"][data-status="complete"]').nth(2).waitFor();
    assert.equal(await byTestId('assistant-text').last().textContent(), 'Understood, not written.');
    const tool = page.locator('[data-testid="tool-call"][data-tool-use-id="toolu_write_2"]');
    if (await tool.count() > 0) assert.notEqual(await tool.getAttribute('data-status'), 'success');
    assert.equal(fs.existsSync(deniedFile), false, 'a denied Write wrote its file');
  });

  it('resumes the event stream after the connection drops, without losing or repeating text', async () => {
    const answersBefore = await byTestId('assistant-text').count();
    await byTestId('prompt-input').fill('Stream through a drop');
    await byTestId('prompt-submit').click();
    const answer = byTestId('assistant-text').nth(answersBefore);
    await answer.filter({ hasText: 'part1 ' }).waitFor();
    const errorsBefore = pageErrors.length;
    relay.dropAll();
    await page.waitForFunction(() => document.querySelector('[data-testid="stream-state"]').textContent !== 'live');
    await page.waitForFunction(() => document.querySelector('[data-testid="stream-state"]').textContent === 'live');
    // Requests cut by the drop are reported by the browser; they are this step's doing.
    pageErrors.splice(errorsBefore);
    await page.locator('[data-testid="prompt-end"][data-status="complete"]').nth(3).waitFor();
    assert.equal(await answer.textContent(), RESUMED_CHUNKS.join(''));
  });

  it('aborts a slow answer from the page and shows it interrupted', async () => {
    const answersBefore = await byTestId('assistant-text').count();
    await byTestId('prompt-input').fill('Count slowly');
    await byTestId('prompt-submit').click();
    const slow = byTestId('assistant-text').nth(answersBefore);
    await slow.filter({ hasText: 'tick tick tick' }).waitFor();
    await page.waitForFunction(() => document.querySelector('[data-testid="session-state"]').textContent === 'running');
    await byTestId('abort').click();
    await page.locator('[data-testid="prompt-end"][data-status="interrupted"]').waitFor();
    await page.waitForFunction(() => document.querySelector('[data-testid="session-state"]').textContent === 'idle');
    const streamed = await slow.textContent();
    assert.ok(streamed.length < SLOW_TICKS * 'tick '.length, 'the whole slow answer streamed: the abort did nothing');
  });

  it('loaded nothing that failed and threw no script error', async () => {
    // WEB_MONITOR_SCREENSHOT=FILE.png keeps a picture of the page at this point, for a person.
    if (process.env.WEB_MONITOR_SCREENSHOT) await page.screenshot({ path: process.env.WEB_MONITOR_SCREENSHOT, fullPage: true });
    assert.deepEqual(pageErrors, []);
    assert.ok(!(await byTestId('transcript').textContent()).includes('[object Object]'));
  });

  it('refuses a wrong token and asks for one; a pasted token then works', async () => {
    const other = await context.newPage();
    try {
      other.setDefaultTimeout(WAIT_MS);
      await other.goto(`${baseUrl}/#token=not-the-right-token-at-all`);
      await other.getByTestId('token-problem').waitFor({ state: 'visible' });
      assert.match(await other.getByTestId('token-problem').textContent(), /refused the token/);
      assert.equal(await other.getByTestId('monitor').isVisible(), false);
      await other.getByTestId('token-input').fill(TOKEN);
      await other.getByTestId('token-save').click();
      await other.getByTestId('session-item').first().waitFor();
      assert.equal(await other.getByTestId('session-item').count(), 1);
    } finally {
      await other.close();
    }
  });
});
