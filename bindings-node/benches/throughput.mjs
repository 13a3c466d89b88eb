// Event throughput into a JavaScript listener (DESIGN §9: Node ≥ 100k events/s).
//
// One prompt whose scripted answer streams N text deltas; every event goes through the session's
// weak threadsafe function (in batches) into `session.on('text_delta', …)`. The event buffer is
// raised so nothing is coalesced: the listener receives every one of the N deltas.
//
//   node benches/throughput.mjs [N]        (build first: npm run build; release figures:
//   NAPI_RS_NATIVE_LIBRARY_PATH=<release robota.*.node> node benches/throughput.mjs)
import { InteractiveSession, ScriptedProvider } from '../dist/esm/index.js';

const n = Number(process.argv[2] ?? 200_000);
const runs = 5;
const results = [];
for (let run = 0; run < runs; run += 1) {
  const session = new InteractiveSession({
    cwd: process.cwd(),
    loadProjectContext: false,
    builtinTools: false,
    eventBuffer: n + 1_000,
    provider: new ScriptedProvider([{ text: Array.from({ length: n }, () => 'x') }]),
  });
  let deltas = 0;
  let chars = 0;
  session.on('text_delta', (event) => {
    deltas += 1;
    chars += event.text.length;
  });
  const started = process.hrtime.bigint();
  const result = await session.submit('go');
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (result.status !== 'complete' || chars !== n) {
    throw new Error(`run ${run}: ${result.status}, ${chars} of ${n} characters delivered`);
  }
  results.push({ seconds, deltas });
  await session.shutdown();
}
results.sort((a, b) => a.seconds - b.seconds);
const median = results[Math.floor(runs / 2)];
console.log(
  JSON.stringify({
    bench: 'node_event_throughput',
    deltas_per_prompt: n,
    delivered_events: median.deltas,
    median_seconds: Number(median.seconds.toFixed(4)),
    events_per_second: Math.round(median.deltas / median.seconds),
    best_events_per_second: Math.round(results[0].deltas / results[0].seconds),
  }),
);
