"""Permission prompt: the model wants to run a tool that changes things; the host asks the
user. Interactive in a terminal; when stdin is not a terminal (CI) it answers "yes" once and
"no" after that, to show both paths.

    python examples/python/permission_prompt.py
"""

import asyncio
import sys

from robota import (
    InteractiveSession,
    PermissionDecision,
    PermissionRequest,
    ScriptedProvider,
    allow,
    allow_session,
    deny,
    tool,
)


@tool
def delete_file(path: str) -> str:
    """Deletes a file (pretend)."""
    return f"deleted {path}"


answers = iter(["y", "n"])


async def ask_user(request: PermissionRequest) -> PermissionDecision:
    question = f"Allow {request.tool_name} {request.input}? ({request.reason}) [y/s/N] "
    if sys.stdin.isatty():
        answer = await asyncio.to_thread(input, question)
    else:
        answer = next(answers, "n")
        print(question + answer)
    if answer.lower() == "y":
        return allow()
    if answer.lower() == "s":
        return allow_session()
    return deny("The user said no; do not try again.")


async def main() -> None:
    provider = ScriptedProvider(
        [
            {"tool_calls": [{"id": "1", "name": "delete_file", "input": {"path": "a.txt"}}]},
            {"tool_calls": [{"id": "2", "name": "delete_file", "input": {"path": "b.txt"}}]},
            {"text": "Deleted a.txt; b.txt was not allowed."},
        ]
    )
    async with InteractiveSession(
        provider=provider,
        tools=[delete_file],
        permission_handler=ask_user,
        builtin_tools=False,
        load_project_context=False,
    ) as session:
        session.on("tool_end", lambda e: print(f"  {e.tool.name}({e.tool.first_arg}): {e.tool.result}"))
        result = await session.submit("Delete a.txt and b.txt")
        print("answer:", result.response.strip())


if __name__ == "__main__":
    asyncio.run(main())
