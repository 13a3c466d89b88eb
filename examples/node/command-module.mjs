// A command module: plain objects with async `execute`, run as slash commands next to the
// built-ins (help, clear, rename, …). A command may await session methods.
import { InteractiveSession, ScriptedProvider } from '@robota/native';

/** @type {InteractiveSession} */
let session;

/** @type {import('@robota/native').CommandModule} */
const stats = {
  name: 'stats',
  commands: [
    {
      name: 'stats',
      description: 'Shows how many messages the conversation has.',
      argumentHint: '[label]',
      async execute(args) {
        const count = session.getMessages().length;
        return { message: `${args || 'messages'}: ${count}`, success: true, data: { count } };
      },
    },
  ],
};

session = new InteractiveSession({
  cwd: process.cwd(),
  commandModules: [stats],
  provider: new ScriptedProvider([{ text: 'Hi!' }]),
});

await session.submit('Hello');
console.log('commands:', session.listCommands().map((c) => `/${c.name}`).join(' '));
const result = await session.executeCommand('stats', 'history');
console.log(result.message);
const renamed = await session.executeCommand('rename', 'Greeting chat');
console.log(renamed.message, '->', session.getName());
await session.shutdown();
