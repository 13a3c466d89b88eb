"""Custom tools: sync and async Python functions the model can call. The JSON schema comes from
the type hints and docstring. Runs offline: the scripted model calls both tools, then answers.

    python examples/python/custom_tool.py
"""

import asyncio
from typing import Literal

from robota import InteractiveSession, ScriptedProvider, ToolEndEvent, tool


@tool(read_only=True)
def get_weather(city: str, unit: Literal["C", "F"] = "C") -> str:
    """Looks up the current weather of a city.

    Args:
        city: The city name, e.g. "Paris".
        unit: Temperature unit.
    """
    return f"sunny, 21{unit} in {city}"


@tool(read_only=True)
async def convert(amount: float, rate: float) -> dict[str, float]:
    """Converts an amount of money with an exchange rate."""
    await asyncio.sleep(0.01)  # e.g. an HTTP call
    return {"converted": round(amount * rate, 2)}


async def main() -> None:
    provider = ScriptedProvider(
        [
            {
                "text": "Let me check.",
                "tool_calls": [
                    {"id": "1", "name": "get_weather", "input": {"city": "Paris"}},
                    {"id": "2", "name": "convert", "input": {"amount": 10, "rate": 1.1}},
                ],
            },
            {"text": "It is sunny in Paris, and 10 EUR is 11 USD."},
        ]
    )
    print("schema:", get_weather.input_schema)
    async with InteractiveSession(
        provider=provider, tools=[get_weather, convert], builtin_tools=False, load_project_context=False
    ) as session:

        def on_tool_end(event: ToolEndEvent) -> None:
            print(f"tool {event.tool.name} -> {event.tool.result}: {event.tool.tool_result_data}")

        session.on("tool_end", on_tool_end)
        result = await session.submit("Weather in Paris, and 10 EUR in USD at 1.1?")
        print("answer:", result.response.strip())
        assert result.ok


if __name__ == "__main__":
    asyncio.run(main())
