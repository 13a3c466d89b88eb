// A custom tool: JSON Schema input, async execute; a throw becomes an error result the model sees.
import { InteractiveSession, ScriptedProvider, tool } from '@robota/native';

const weather = tool({
  name: 'get_weather',
  description: 'Returns the current weather of a city.',
  inputSchema: {
    type: 'object',
    properties: { city: { type: 'string', description: 'City name' } },
    required: ['city'],
  },
  readOnly: true, // changes nothing, so no permission prompt
  async execute({ city }, { signal }) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    if (signal.aborted) return { content: 'aborted', isError: true };
    return `Sunny and 21°C in ${city}`;
  },
});

const session = new InteractiveSession({
  cwd: process.cwd(),
  builtinTools: false, // only our tool (and the command tools)
  tools: [weather],
  provider: new ScriptedProvider([
    { tool_calls: [{ id: 'call_1', name: 'get_weather', input: { city: 'Lisbon' } }] },
    { text: 'It is sunny and 21°C in Lisbon.' },
  ]),
});

session.on('tool_start', (e) => console.log(`tool ${e.tool.name}(${e.tool.first_arg}) ...`));
session.on('tool_end', (e) => console.log(`tool ${e.tool.name} -> ${e.tool.result}: ${e.tool.tool_result_data}`));
const result = await session.submit('Weather in Lisbon?');
console.log(result.status === 'complete' ? result.outcome.response : result.status);
await session.shutdown();
