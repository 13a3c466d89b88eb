// A permission prompt: the handler asks the user on a terminal (y/n), and answers "yes" by
// itself when stdin is not a terminal (CI). Denials carry a message the model sees.
import { createInterface } from 'node:readline/promises';
import { InteractiveSession, ScriptedProvider, tool } from '@robota/native';

/** @type {import('@robota/native').PermissionHandler} */
async function askUser(request, { signal }) {
  const question = `Allow ${request.tool_name} ${JSON.stringify(request.input)}? (${request.reason}) [y/N] `;
  if (!process.stdin.isTTY) {
    console.log(`${question}y (not a terminal: auto-approved)`);
    return 'allow_once';
  }
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    const answer = await rl.question(question, { signal });
    return answer.trim().toLowerCase().startsWith('y')
      ? 'allow_once'
      : { type: 'deny', message: 'The user said no.' };
  } finally {
    rl.close();
  }
}

const saveNote = tool({
  name: 'save_note',
  description: 'Saves a note.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  execute: ({ text }) => `saved: ${text}`, // not read-only: needs approval
});

const session = new InteractiveSession({
  cwd: process.cwd(),
  builtinTools: false,
  tools: [saveNote],
  permissionHandler: askUser,
  provider: new ScriptedProvider([
    { tool_calls: [{ id: 'call_1', name: 'save_note', input: { text: 'buy milk' } }] },
    { text: 'Noted.' },
  ]),
});
session.on('tool_end', (e) => console.log(`${e.tool.name}: ${e.tool.result}`));
const result = await session.submit('Remember to buy milk');
console.log(result.status === 'complete' ? result.outcome.response : result.status);
await session.shutdown();
