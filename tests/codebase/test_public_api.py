"""The public names of Parley's packages, pinned: adding or removing one is a deliberate change here."""

from __future__ import annotations

import importlib

import pytest

pytestmark = pytest.mark.unit

PUBLIC = {
    "workers": ["ABSENT", "AgentFn", "AgentRun", "agent"],
    "workers.interaction": [
        "CONTEXT_MAX",
        "SECRET_MASK",
        "Answer",
        "AnswerError",
        "AnswerValue",
        "Approval",
        "ChangeKind",
        "ChoiceError",
        "Context",
        "ContextChange",
        "ContextError",
        "Decision",
        "FormError",
        "GroupInfo",
        "InteractionError",
        "Interactor",
        "Item",
        "ItemType",
        "OnExpiry",
        "Option",
        "Outcome",
        "PausingRun",
        "QuestionExpired",
        "QuestionInfo",
        "QuestionProgress",
        "QuestionState",
        "Request",
        "RunInfo",
        "AskingRun",
        "answers_to_values",
        "reply_answers",
        "reply_item",
        "resolve_choice",
    ],
    "workers.integrations.langgraph": ["GraphError", "GraphNotDurable", "RecordRefused", "run_graph"],
    "workers.llm": [
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
    ],
    "parley": ["AsyncParley", "Parley"],
    "parley.client": [
        "MAX_POLL",
        "AsyncParley",
        "Decision",
        "Outcome",
        "Parley",
        "ParleyAPIError",
        "QuestionCancelledError",
        "QuestionExpiredError",
        "QuestionTimeoutError",
    ],
}

# What an agent may call on its run: the README's surface, nothing of the runtime's internals.
AGENT_RUN = [
    "approve",
    "ask",
    "ask_all",
    "ask_any",
    "ask_each",
    "ask_form",
    "context_changed",
    "data_dir",
    "history",
    "plan",
    "recorded",
    "run_id",
    "say",
    "secret",
    "started_by",
    "step",
]


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_exports_are_pinned(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(PUBLIC[module])
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"


def test_agent_run_is_the_documented_surface() -> None:
    from workers import AgentRun

    members = sorted(n for n in vars(AgentRun) if not n.startswith("_"))
    assert members == AGENT_RUN


def test_the_runtime_run_offers_every_agent_run_member() -> None:
    from workers.runtime.run import Run

    assert [n for n in AGENT_RUN if not hasattr(Run, n)] == []


def _declared_init_params(cls_name: str) -> list[str]:
    """The keyword parameters of the constructor `cls_name` declares for type checkers."""
    import ast
    from pathlib import Path

    import workers.interaction.models as models

    tree = ast.parse(Path(models.__file__).read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    guard = next(n for n in cls.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    init = next(n for n in guard.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    return [a.arg for a in init.args.kwonlyargs]


@pytest.mark.parametrize("cls_name", ["Item", "Request"])
def test_typed_constructors_name_every_field(cls_name: str) -> None:
    import workers.interaction.models as models

    assert _declared_init_params(cls_name) == list(getattr(models, cls_name).model_fields)


def test_item_type_names_are_the_item_types() -> None:
    from typing import get_args

    from workers.interaction.models import ItemType, ItemTypeName

    assert list(get_args(ItemTypeName)) == [t.value for t in ItemType]


def test_the_distribution_is_named_parley_slack() -> None:
    """`parley` is taken on the package index; the import packages keep their names."""
    from importlib import metadata

    dist = metadata.distribution("parley-slack")
    assert dist.metadata["Name"] == "parley-slack"
    assert {"parley = parley.cli:main"} <= {f"{e.name} = {e.value}" for e in dist.entry_points}
