"""The layering rules, checked by parsing imports: the port imports no host, workers never import bot.

No modules import each other in a circle either, in workers/, bot/ or parley/.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from source_trees import parsed

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
STDLIB_OK = {
    "__future__",
    "typing",
    "re",
    "enum",
    "datetime",
    "json",
    "dataclasses",
    "collections",
    "unicodedata",
    "functools",
    "hashlib",
    "itertools",
    "math",
    "string",
    "abc",
    "warnings",
}
PORT_THIRD_PARTY = {"pydantic", "re2"}
"""Besides the standard library, the port imports pydantic and RE2 (`google-re2`, a required dependency):
RE2 matches a caller's pattern in linear time and reaches no host (workers/interaction/patterns.py)."""


def imports(path: Path) -> set[str]:
    tree = parsed(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", files("workers"), ids=lambda p: str(p.relative_to(ROOT)))
def test_workers_never_import_bot_or_parley(path: Path) -> None:
    bad = {m for m in imports(path) if m.split(".")[0] in ("bot", "parley")}
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("workers/interaction"), ids=lambda p: str(p.relative_to(ROOT)))
def test_port_imports_only_stdlib_pydantic_and_re2(path: Path) -> None:
    for module in imports(path):
        top = module.split(".")[0]
        if module.startswith("workers.interaction") or top in PORT_THIRD_PARTY or top in STDLIB_OK:
            continue
        pytest.fail(f"{path.relative_to(ROOT)} imports {module}")


AGENT_LAYER = ("workers/agents", "workers/integrations", "workers/llm")
"""Agents, the framework adapters and the LLM loop they run on: typed against `AgentRun`, never the runtime."""
BELOW_AGENTS = ("workers.runtime", "workers.store", "workers.questions", "bot", "parley")


def below_agents(path: Path) -> set[str]:
    """What `path`, a module of the agents' layer, imports from the layers beneath it."""
    bad = {m for m in imports(path) if m.startswith(BELOW_AGENTS)}
    if "workers/integrations" in path.as_posix() or "workers/llm" in path.as_posix():
        bad |= {m for m in imports(path) if m.startswith("workers.agents")}  # they serve agents, not the reverse
    return bad


@pytest.mark.parametrize(
    "path", [p for package in AGENT_LAYER for p in files(package)], ids=lambda p: str(p.relative_to(ROOT))
)
def test_agents_and_integrations_reach_the_runtime_only_through_agent_run(path: Path) -> None:
    bad = below_agents(path)
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_llm_loop_is_held_to_the_agents_layer(tmp_path: Path) -> None:
    bad = tmp_path / "workers" / "llm" / "loop.py"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "from workers import journal_names\n"
        "from workers.store import journal_names as old_home\n"
        "from workers.agents.assistant import assistant\n"
        "def f():\n"
        "    from workers.runtime.run import Run\n"
    )
    assert below_agents(bad) == {"workers.store", "workers.agents.assistant", "workers.runtime.run"}


def test_the_journal_names_the_agents_use_import_nothing_of_parley() -> None:
    """The LLM loop names its steps with `workers.journal_names`: it must not pull the store in."""
    assert {m.split(".")[0] for m in imports(ROOT / "workers" / "journal_names.py")} <= STDLIB_OK


def test_nothing_outside_the_agents_layer_imports_the_integrations() -> None:
    importers = [p for p in files("workers") if "integrations" not in p.parts and p.parent.name != "agents"]
    bad = [str(p.relative_to(ROOT)) for p in importers if any(m.startswith("workers.integrations") for m in imports(p))]
    assert not bad, f"{bad} import workers.integrations"


def test_rule_checker_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("from bot.slack import blocks\nimport redis\n")
    assert {"bot.slack", "redis"} <= imports(bad)


# ---- no circles ----------------------------------------------------------------------
TREES = ("workers", "bot", "parley")


def _module_names(root: Path, trees: tuple[str, ...]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for tree in trees:
        for path in sorted((root / tree).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _for_annotations_only(tree: ast.AST) -> set[int]:
    """The nodes under `if TYPE_CHECKING:`: imports a type checker reads and Python never runs."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return skipped


def _imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of `modules` that module `name` imports, at its top or inside a function."""
    tree = parsed(path)
    skipped = _for_annotations_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:  # `from a import b`: module `a.b` if there is one, else `a` itself
                target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                if target in modules:
                    found.add(target)
    return found - {name}


def import_circles(root: Path, trees: tuple[str, ...] = TREES) -> list[list[str]]:
    """Groups of modules that import each other, directly or round a longer circle.

    An import inside a function counts: it runs, only later. An import under
    `if TYPE_CHECKING:` does not: it serves annotations alone and never runs.
    """
    modules = _module_names(root, trees)
    graph = {name: _imported_modules(name, path, modules) for name, path in modules.items()}
    reach: dict[str, set[str]] = {}
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            if (module := todo.pop()) not in seen:
                seen.add(module)
                todo.extend(graph[module])
        reach[start] = seen
    groups = {frozenset(m for m in reach[start] if start in reach[m]) for start in graph if start in reach[start]}
    return sorted(sorted(group) for group in groups)


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert import_circles(ROOT) == []


@pytest.mark.parametrize("name", ["ask_group", "ask_each", "ask_one", "attempts"])
def test_the_asks_work_on_an_execution_not_on_run(name: str) -> None:
    """`run.py` calls these, so they type the run as `Execution`, even in annotations."""
    assert "workers.runtime.run" not in imports(ROOT / "workers" / "runtime" / f"{name}.py")


def test_the_circle_check_can_fail(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pkg import b\n")  # later, in a function: still a circle
    (package / "b.py").write_text("from . import a\n")
    (package / "c.py").write_text("from pkg.d import x\n")
    (package / "d.py").write_text("import pkg.e\nx = 1\n")
    (package / "e.py").write_text("from pkg import c\n")
    (package / "f.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.g import G\n")
    (package / "g.py").write_text("import pkg.f\n")  # f needs g for annotations only: no circle
    assert import_circles(tmp_path, ("pkg",)) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d", "pkg.e"]]


# ---- one door to Redis ------------------------------------------------------------
# Run, interrupt, thread, index and dedupe state is read and written only by
# `workers/store` (RunStore and its scripts). Elsewhere a Redis command is a call of one
# of these methods on something named like a Redis client or a pipeline; RQ's own
# objects (queues, registries, jobs) are called through RQ's API and are not named so.
REDIS_COMMANDS = {
    "get", "set", "setnx", "mget", "delete", "exists", "expire", "incr", "incrby",
    "hget", "hset", "hgetall", "hmget", "hdel", "hincrby", "hsetnx", "hexists", "hkeys",
    "zadd", "zrem", "zrange", "zrevrange", "zrangebyscore", "zcard", "zscore",
    "rpush", "lpush", "lrange", "llen", "sadd", "srem", "smembers",
    "scan", "scan_iter", "keys", "eval", "evalsha", "register_script", "pipeline", "execute_command",
}  # fmt: skip
STORE = ROOT / "workers" / "store"


def _receiver_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _receiver_name(node.func)
    return ""


def store_bypasses(path: Path) -> list[str]:
    """Where `path` builds Parley's keys or sends Redis commands itself, as `line: what`."""
    found: list[str] = []
    tree = parsed(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module == "workers.store.keys" or (
                node.module == "workers.store" and any(a.name == "keys" for a in node.names)
            ):
                found.append(f"{node.lineno}: imports the key builder")
        elif isinstance(node, ast.Import) and any(a.name == "workers.store.keys" for a in node.names):
            found.append(f"{node.lineno}: imports the key builder")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in REDIS_COMMANDS:
            receiver = _receiver_name(node.func.value).lower()
            if "redis" in receiver or receiver in ("pipe", "pipeline", "client"):
                if receiver == "client" and node.func.attr not in REDIS_COMMANDS - {"get", "set", "delete"}:
                    continue  # `client` is also the Slack WebClient; only unambiguous Redis commands count
                found.append(f"{node.lineno}: {receiver}.{node.func.attr}(...)")
    return found


def outside_store() -> list[Path]:
    paths = [p for pkg in ("workers", "bot", "parley") for p in files(pkg)]
    return [p for p in paths if STORE not in p.parents]


@pytest.mark.parametrize("path", outside_store(), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_store_touches_run_state_in_redis(path: Path) -> None:
    bad = store_bypasses(path)
    assert not bad, f"{path.relative_to(ROOT)} goes around RunStore: {bad}"


def test_store_bypass_checker_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text(
        "from workers.store import keys\n"
        "def f(deps, store):\n"
        "    deps.runtime.redis.get(keys.thread('C', '1'))\n"
        "    pipe = store.redis.pipeline(transaction=True)\n"
        "    pipe.hset('k', 'f', 'v')\n"
        "    {}.get('x')\n"
    )
    assert store_bypasses(bad) == [
        "1: imports the key builder",
        "3: redis.get(...)",
        "4: redis.pipeline(...)",
        "5: pipe.hset(...)",
    ]


HOST_ALLOWED = (
    "workers.interaction",
    "workers.questions",
    "workers.runs",
    "workers.exceptions",
    "workers.logs",
    "workers.metrics",
    "workers.registry",
    "workers.llm",  # the model client: Slack reads plain-words replies with it, `parley dev` sets its names
    "workers.receipts",  # signing and verifying receipts: digests of what a host showed, the CLI's checks
)
"""What a host (`bot/`, `parley/`) may import from `workers`: the port, the two services, and helpers."""
COMPOSITION_ROOTS = (
    "bot/wsgi.py",
    "parley/bootstrap.py",
    "parley/installs.py",
    "parley/metrics_setup.py",
    "parley/receipts_cmd.py",
    "parley/serve.py",
    "parley/settings.py",
    "parley/worker.py",
)
"""Where a process is wired together: they build the runtime, the store and the services, so they
may import more. `parley/bootstrap.py` builds the services for the commands; `parley/serve.py` the bot's
`BotDeps`; `parley/installs.py` the OAuth installation stores; `parley/metrics_setup.py` `/metrics`;
`parley/receipts_cmd.py` the receipt book the audit commands read."""


def workers_imports(path: Path) -> set[str]:
    """Every `workers` module `path` imports; `from workers import x` counts as `workers.x`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.split(".")[0] == "workers")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "workers":
                names.update(f"workers.{a.name}" for a in node.names)
            elif node.module.startswith("workers."):
                names.add(node.module)
    return names


def host_reaches_inside(path: Path) -> list[str]:
    """The `workers` modules a host imports beyond the port, the services and the helpers."""
    allowed = tuple(p for m in HOST_ALLOWED for p in (m, m + "."))
    return sorted(m for m in workers_imports(path) if not m.startswith(allowed) and m not in HOST_ALLOWED)


def host_files() -> list[Path]:
    found = [*files("bot"), *files("parley")]
    rel = [(p, p.relative_to(ROOT).as_posix()) for p in found]
    return [p for p, r in rel if r not in COMPOSITION_ROOTS]


@pytest.mark.parametrize("path", host_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_hosts_come_in_through_the_port_and_the_services(path: Path) -> None:
    bad = host_reaches_inside(path)
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: go through workers.runs or workers.questions"


def test_host_import_checker_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text(
        "from workers import metrics, store\n"
        "import workers.runtime.admin\n"
        "from workers.runs import RunService\n"
        "from workers.store.records import RunStatus\n"
        "from workers.questions.models import QuestionCreate\n"
        "from workers.interaction import Answer\n"
    )
    assert host_reaches_inside(bad) == ["workers.runtime.admin", "workers.store", "workers.store.records"]


def test_the_composition_roots_exist() -> None:
    """A root renamed away would leave its exemption to cover nothing, or a new file."""
    assert [r for r in COMPOSITION_ROOTS if not (ROOT / r).is_file()] == []


# ---- the run's parts keep their own state ---------------------------------------------
RUN_PARTS = ("run.py", "execution.py", "host_view.py", "attempts.py", "ask_one.py")
"""The modules of the run's parts: the author's `Run`, the `Execution`, the host's views, the walk."""


def private_names(path: Path) -> set[str]:
    """The underscore names the classes of `path` give their instances: `self._x` and `def _x`."""
    found: set[str] = set()
    for cls in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef) and _private(node.name):
                found.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _on_self(node):
                found.add(node.attr)
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _on_self(node: ast.Attribute) -> bool:
    return _private(node.attr) and isinstance(node.value, ast.Name) and node.value.id == "self"


def reaches_into(path: Path, names: set[str]) -> list[str]:
    """Where `path` reads one of `names` on anything but `self`, as `line: .name`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{node.lineno}: .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in names
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]


def _run_part_owners() -> dict[str, set[Path]]:
    """Each private name of the run's parts, with the modules whose classes own it."""
    owners: dict[str, set[Path]] = {}
    for name in RUN_PARTS:
        path = ROOT / "workers" / "runtime" / name
        for private in private_names(path):
            owners.setdefault(private, set()).add(path)
    return owners


def test_no_module_reads_the_run_parts_private_state() -> None:
    """`ask_group`, `attempts`, hosts and agents use the execution's public names only."""
    owners = _run_part_owners()
    bad = {
        str(path.relative_to(ROOT)): found
        for package in ("workers", "bot", "parley", "tests", "bench")
        for path in files(package)
        if (found := reaches_into(path, {name for name, homes in owners.items() if path not in homes}))
    }
    assert not bad, f"modules read another part's private state: {bad}"


def test_the_private_state_check_can_fail(tmp_path: Path) -> None:
    home = tmp_path / "execution.py"
    home.write_text(
        "class Execution:\n"
        "    def __init__(self):\n"
        "        self._journal = {}\n"
        "        self.log = None\n"
        "    def _write(self, f):\n"
        "        return self._journal\n"
        "def of(ex):\n"
        "    return ex._journal\n"  # the class's own module may
    )
    other = tmp_path / "ask_group.py"
    other.write_text("def f(run):\n    run._write('x')\n    run.log.info(run._journal)\n    return run.log\n")
    names = private_names(home)
    assert names == {"_journal", "_write"}
    assert reaches_into(other, names) == ["2: ._write", "3: ._journal"]
    assert {"_journal", "_interrupt", "_asks"} & set(_run_part_owners())  # the real parts are read
