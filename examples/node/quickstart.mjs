// Quickstart (JavaScript): one interactive session, streamed text, the result.
// Offline: the scripted provider plays a canned answer. For a real model, use
//   new AnthropicProvider({ model: 'claude-sonnet-4-6' })   // reads ANTHROPIC_API_KEY
//   new OpenAIProvider({ model: 'gpt-4.1', baseUrl: 'http://localhost:11434/v1' })
import { InteractiveSession, ScriptedProvider } from '@robota/native';

const session = new InteractiveSession({
  cwd: process.cwd(),
  provider: new ScriptedProvider([{ text: ['Hello ', 'from ', 'robota!'] }]),
});

session.on('text_delta', (event) => process.stdout.write(event.text));
session.on('complete', (event) => process.stdout.write(`\n[done in ${event.outcome.rounds} round(s)]\n`));

const result = await session.submit('Say hello');
if (result.status !== 'complete') {
  throw new Error(`the prompt ended with ${result.status}`);
}
console.log(`messages in history: ${session.getMessages().length}`);
await session.shutdown();
