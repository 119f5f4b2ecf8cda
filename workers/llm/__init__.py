"""A small model loop for agents: a chat-completions client, your tools, and `ask_user`.

    from workers.llm import LLMConfig, Tool, llm_config_from_env, run_loop

`run_loop` talks to any OpenAI-compatible server. It lets the model call your tools, and ask
people typed questions with `ask_user`. When the run resumes, it replays without repeating a
model call or a tool. See docs/llm.md.
"""

from workers.llm.client import (
    ChatClient,
    Completion,
    LLMConfig,
    LLMError,
    LLMNotConfigured,
    LLMRejected,
    llm_config_from_env,
)
from workers.llm.loop import run_loop
from workers.llm.tools import Tool, ToolError

__all__ = [
    "ChatClient",
    "Completion",
    "LLMConfig",
    "LLMError",
    "LLMNotConfigured",
    "LLMRejected",
    "Tool",
    "ToolError",
    "llm_config_from_env",
    "run_loop",
]
