// Quickstart (TypeScript): typed events, `for await` over events, and createQuery.
import {
  InteractiveSession,
  ScriptedProvider,
  createQuery,
  type RobotaEvent,
} from '@robota/native';

const session = new InteractiveSession({
  cwd: process.cwd(),
  provider: new ScriptedProvider([{ thinking: 'The user greets me.', text: ['Hi ', 'there.'] }]),
});

// Typed listener: `event` is the `text_delta` member of the RobotaEvent union.
session.on('text_delta', (event) => process.stdout.write(event.text));

// Or consume every event in order.
const seen: Array<RobotaEvent['type']> = [];
const reader = (async () => {
  for await (const event of session.events()) {
    seen.push(event.type);
    if (event.type === 'complete' || event.type === 'interrupted' || event.type === 'error') break;
  }
})();

const result = await session.submit('Hello?');
await reader;
console.log(`\nstatus: ${result.status}; events: ${seen.join(', ')}`);
await session.shutdown();

// One-shot turns: createQuery returns a function.
const query = createQuery({
  cwd: process.cwd(),
  provider: new ScriptedProvider([{ text: ['Fo', 'ur.'] }]),
  onTextDelta: (text) => process.stdout.write(text), // optional streaming
});
const answer = await query('What is 2 + 2?');
console.log(`\nquery: ${answer.response} (${answer.stop_reason}, ${answer.num_turns} round)`);
