"""Quick start: one session, one prompt, streamed text. Runs offline (scripted provider).

    pip install ./bindings-python && python examples/python/quickstart.py

Swap in ``AnthropicProvider("claude-sonnet-4-6")`` (with ANTHROPIC_API_KEY set) or
``OpenAIProvider("gpt-4.1", base_url=...)`` for a real model.
"""

import asyncio

from robota import CompleteEvent, InteractiveSession, ScriptedProvider, TextDeltaEvent


async def main() -> None:
    provider = ScriptedProvider([{"text": ["Hello", " from", " robota", "!"]}, {"text": "Hello again."}])
    async with InteractiveSession(provider=provider, builtin_tools=False, load_project_context=False) as session:
        session.on("text_delta", lambda e: print(e.text, end="", flush=True))
        result = await session.submit("Say hello")
        print(f"\n[{result.status}] {len(session.get_messages())} messages")

        # The same events, pulled: `async for` over every event from now on.
        stream = session.events()
        provider_done = asyncio.create_task(session.submit("And again?"))
        async for event in stream:
            if isinstance(event, TextDeltaEvent):
                continue
            print(f"event #{event.seq}: {event.type}")
            if isinstance(event, CompleteEvent) or event.type in ("error", "interrupted"):
                break
        stream.close()
        print("second prompt:", (await provider_done).status)


if __name__ == "__main__":
    asyncio.run(main())
