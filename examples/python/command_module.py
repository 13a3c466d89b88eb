"""Slash commands written in Python, grouped in a command module, next to the built-in ones.

    python examples/python/command_module.py
"""

import asyncio

from robota import (
    CommandContext,
    CommandModule,
    CommandResult,
    InteractiveSession,
    ScriptedProvider,
    SystemCommand,
    command,
)


class Todo(SystemCommand):
    """`/todo add <text>` and `/todo list`: a tiny per-session todo list."""

    name = "todo"
    description = "Keeps a todo list"
    argument_hint = "add <text> | list"

    def __init__(self) -> None:
        self.items: list[str] = []

    def execute(self, args: str, context: CommandContext) -> CommandResult:
        verb, _, text = args.partition(" ")
        if verb == "add" and text:
            self.items.append(text)
            return CommandResult(message=f"Added #{len(self.items)}: {text}")
        if verb == "list":
            lines = [f"{i}. {item}" for i, item in enumerate(self.items, 1)] or ["(empty)"]
            return CommandResult(message="\n".join(lines), data={"items": self.items})
        return CommandResult.error("Usage: /todo add <text> | /todo list")


@command("whoami", "Shows the session id and mode")
async def whoami(args: str, context: CommandContext) -> str:
    return f"session {context.session_id[:8]}…, mode {context.permission_mode}"


async def main() -> None:
    module = CommandModule("my-commands", [Todo(), whoami])
    async with InteractiveSession(
        provider=ScriptedProvider([]), command_modules=[module], builtin_tools=False, load_project_context=False
    ) as session:
        print("commands:", ", ".join(c["name"] for c in session.list_commands()))
        for name, args in [("todo", "add write docs"), ("todo", "add ship it"), ("todo", "list"), ("whoami", ""), ("rename", "Planning")]:
            result = await session.execute_command(name, args)
            print(f"/{name} {args} -> {'ok' if result.success else 'failed'}: {result.message}")
        print("session name:", session.name)


if __name__ == "__main__":
    asyncio.run(main())
