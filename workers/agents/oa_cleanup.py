"""`oa_cleanup`: an Agents SDK agent that tidies a folder, deleting only approved files.

It uses the OpenAI Agents SDK. `/parley oa_cleanup delete the temporary files` runs an Agents
SDK `Agent` over the files in `cleanup/` in the data directory. The model lists them with
`list_files`. It calls `delete_file` for each file it would remove. `delete_file` needs approval
(`needs_approval=True`). So each call becomes an approval in the run's thread, all of one reply
at once. A rejected file is kept, and the model reads why.
`workers.integrations.openai_agents.run_agent` does the rest.

The model is the one `assistant` uses, through the SDK's chat-completions model. It reads
PARLEY_LLM_BASE_URL, PARLEY_LLM_MODEL and, if needed, PARLEY_LLM_API_KEY. The agent is offered
only where the `openai-agents` extra is installed. The SDK is imported when it runs, so loading
the agents costs nothing.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

from workers import AgentRun, agent
from workers.llm import llm_config_from_env
from workers.llm.loop import PEOPLE_TEXT_IS_DATA

FOLDER = "cleanup"
"""The folder under the data directory the agent tidies."""
MAX_LISTED = 200
INSTRUCTIONS = f"""\
You tidy the files in one folder for a person in their team's chat.
Call list_files first. Then call delete_file once for each file the person's request covers, \
all in one reply; delete nothing else. A person approves each deletion: a rejected one stays, \
so do not try it again. End with one or two sentences saying what you deleted and what you kept.

{PEOPLE_TEXT_IS_DATA}"""


def cleanup_dir(data_dir: Path) -> Path:
    """The folder the agent works in, created if missing."""
    folder = data_dir / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def list_files(folder: Path) -> list[dict[str, Any]]:
    """The files under `folder` by relative path, with sizes, at most `MAX_LISTED`."""
    found = sorted(p for p in folder.rglob("*") if p.is_file())
    return [{"path": p.relative_to(folder).as_posix(), "bytes": p.stat().st_size} for p in found[:MAX_LISTED]]


def delete_file(folder: Path, path: str) -> str:
    """Delete `path`, relative to `folder` and never outside it.

    Returns what happened, as the model reads it.
    """
    target = (folder / path).resolve()
    if not target.is_relative_to(folder.resolve()) or target == folder.resolve():
        return f"error: {path!r} is not a file in the folder; nothing was deleted"
    if not target.is_file():
        return f"error: there is no file {path!r}; nothing was deleted"
    target.unlink()
    return f"deleted {path}"


def sdk_installed() -> bool:
    """Whether the OpenAI Agents SDK (`pip install 'parley-slack[openai-agents]'`) is installed."""
    try:
        importlib.metadata.version("openai-agents")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def oa_cleanup(run: AgentRun, text: str) -> str:
    config = llm_config_from_env()  # raises LLMNotConfigured, an AgentError: the run fails without retrying
    from agents import Agent, OpenAIChatCompletionsModel, function_tool
    from openai import AsyncOpenAI

    from workers.integrations.openai_agents import run_agent

    folder = cleanup_dir(run.data_dir)

    @function_tool(name_override="list_files")
    def list_tool() -> str:
        """List the files in the folder, by path, with their sizes in bytes."""
        return json.dumps(list_files(folder))

    @function_tool(name_override="delete_file", needs_approval=True)
    def delete_tool(path: str) -> str:
        """Delete one file of the folder, by its path as list_files gives it. A person approves each call."""
        return delete_file(folder, path)

    key = config.api_key.get_secret_value() if config.api_key else "none"  # the client insists on one
    client = AsyncOpenAI(base_url=config.base_url, api_key=key, timeout=config.timeout)
    sdk_agent = Agent(
        name="oa_cleanup",
        instructions=INSTRUCTIONS,
        model=OpenAIChatCompletionsModel(model=config.model, openai_client=client),
        tools=[list_tool, delete_tool],
    )
    output = run_agent(run, sdk_agent, text.strip() or "Delete the temporary files.")
    return str(output or "The cleanup finished without a reply.")


DESCRIPTION = "Tidy the cleanup folder with an OpenAI Agents SDK agent; you approve each deletion"
if sdk_installed():
    agent("oa_cleanup", description=DESCRIPTION)(oa_cleanup)
