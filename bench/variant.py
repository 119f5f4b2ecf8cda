"""`python -m bench.variant PORT VARIANT`: `parley serve` with one part switched off, for the ablation.

The same composition (`parley.serve.build_bot`, `bot.wsgi.make_wsgi`) under the same
gunicorn options, with one piece of the Submit path removed to price it:

- `no-lock`: the lazy listener runs but does not lock the question message
  (no `answered_blocks`, no `chat.update`);
- `no-lazy`: bolt starts no lazy listener at all (no copy and re-parse of the
  request for the lazy thread, no lock update).

Only the bench uses these; they answer nobody's question correctly.
"""

from __future__ import annotations

import sys
from typing import Any

from gunicorn.app.base import BaseApplication

from bench.bare import gunicorn_options


def apply(variant: str) -> None:
    if variant == "no-lock":
        import bot.listeners.actions as actions

        actions.report_outcome = lambda *args, **kwargs: None  # type: ignore[assignment]
    elif variant == "no-lazy":
        from slack_bolt.listener.thread_runner import ThreadListenerRunner

        ThreadListenerRunner._start_lazy_function = lambda self, lazy_func, request: None  # type: ignore[method-assign]
    elif variant != "parley":
        raise SystemExit(f"unknown variant {variant!r}")


class _Server(BaseApplication):  # type: ignore[misc]
    def __init__(self, options: dict[str, Any], variant: str) -> None:
        self._options = options
        self._variant = variant
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from bot.wsgi import make_wsgi
        from parley import settings as settings_mod
        from parley.serve import build_bot
        from workers import logs

        settings = settings_mod.load()
        logs.configure(settings.parley_log_level)
        apply(self._variant)
        app, client = build_bot(settings)
        return make_wsgi(app, client)


if __name__ == "__main__":
    _Server(gunicorn_options(int(sys.argv[1])), sys.argv[2]).run()
