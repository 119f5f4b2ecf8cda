"""The journal's names, kept importable here, though they live in `workers.journal_names`.

The store, the runtime and the LLM loop share them. The loop may not import the store.
"""

from workers.journal_names import *  # noqa: F403
