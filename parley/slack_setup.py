"""`parley slack setup`: from no Slack app to two checked tokens in `.env`, in a few clicks.

At a terminal it walks a person through it. First comes the link to Slack's "create an app"
page, with Parley's Socket Mode manifest filled in. It is offered in a browser. Then come the
bot token and the app-level token. Each comes with where the app's settings show it. Each is
checked with Slack before it is kept. A wrong one is explained in one line and asked again.

With an app configuration token (`--config-token`), it creates the app itself through
`apps.manifest.create`. It keeps the app's signing secret and client credentials. It gives the
install link instead.

Scripts pass the tokens in the environment, or on standard input. For that,
`--bot-token - --app-token -` reads one line each, in that order. A token given as a flag's
value is taken with a warning, since `ps` and the shell's history show it. It is never asked for
again. If Slack refuses it, the command ends with the reason. Without a terminal and without the
tokens, it refuses in one line. A Slack it cannot reach stops it in one line ("cannot reach
Slack at …"). That is not a refusal of the token.

Everything is saved to `.env` (mode 0600), which every `parley` command reads. A value already
there is replaced only when the person says so. Without a terminal, a different value there is a
refusal. Tokens are shown masked, never in full.
"""

from __future__ import annotations

import sys
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from prompt_toolkit import prompt

from parley.envfile import EnvFile, mask
from parley.settings import ENV_FILE, Settings
from parley.slack_api_calls import CreatedApp, SlackApiCalls, TokenRefused
from parley.slack_manifest import create_app_link, socket_mode_manifest
from workers.exceptions import ParleyError

APPS = "https://api.slack.com/apps"
CREDENTIALS = {
    "SLACK_SIGNING_SECRET": "signing_secret",
    "SLACK_CLIENT_ID": "client_id",
    "SLACK_CLIENT_SECRET": "client_secret",
}


AGENT_SCOPE = "assistant:write"
AGENT_APP_LACKS = (
    "its app is no Slack agent yet: add the scope assistant:write and the event agent_session_stopped,"
    " declare it an agent (features.agent_view) and reinstall it, for runs to show as agent sessions"
    " (docs/slack-agents.md)"
)
"""Said of an app made from an older manifest: what it adds for Slack's agent surfaces."""


class SetupRefused(ParleyError):
    """`parley slack setup` cannot go on, and the message says why in one line."""


FROM_STDIN = "-"
"""A token flag's value that reads the token from standard input instead of the command line."""


@dataclass(frozen=True)
class TokenFlag:
    """A flag taking a token: its name, the token's name, and how it starts."""

    flag: str
    label: str
    prefix: str


CONFIG_FLAG = TokenFlag("--config-token", "app configuration token", "xoxe")
BOT_FLAG = TokenFlag("--bot-token", "bot token", "xoxb-")
APP_FLAG = TokenFlag("--app-token", "app-level token", "xapp-")


def argv_warning(given: dict[TokenFlag, str | None]) -> str | None:
    """The warning for tokens given as flag values, which `ps` and shell history show.

    None if there were none.
    """
    flags = [f.flag for f, value in given.items() if value and value != FROM_STDIN]
    if not flags:
        return None
    return (
        f"parley: warning: a token on the command line ({', '.join(flags)}) is visible to other users in ps "
        f"and kept in your shell's history; pass {flags[0]} - to read it from standard input, "
        "or set SLACK_BOT_TOKEN and SLACK_APP_TOKEN"
    )


def read_stdin_tokens(given: dict[TokenFlag, str | None], stdin: TextIO) -> dict[TokenFlag, str | None]:
    """`given` with each `-` replaced by a line of `stdin`, in `given`'s order.

    A missing line, or one not the token its flag takes, is refused. The refusal never shows the
    line.
    """
    tokens = dict(given)
    wanted = [flag for flag, value in given.items() if value == FROM_STDIN]
    for number, flag in enumerate(wanted, start=1):
        line = stdin.readline().strip()
        if not line:
            raise SetupRefused(f"{flag.flag} -: standard input ended before the {flag.label} (line {number})")
        if not line.startswith(flag.prefix):
            order = ", then ".join(f.label for f in wanted)
            raise SetupRefused(
                f"{flag.flag} -: line {number} of standard input is not a {flag.label} ({flag.prefix}…); "
                f"give one token a line: {order}"
            )
        tokens[flag] = line
    return tokens


def _settings_page(app_id: str | None, page: str, path: str, section: str) -> str:
    """Where a page of the app's settings is, by its own address once the app id is known."""
    if app_id:
        return f'{APPS}/{app_id}/{path} ("{page}", under {section})'
    return f'{APPS} → your app → "{page}" (under {section})'


def bot_token_where(app_id: str | None) -> str:
    return (
        f"Where: {_settings_page(app_id, 'OAuth & Permissions', 'oauth', 'Features')}. "
        'Click "Install to Workspace" and Allow if you have not yet, then copy the "Bot User OAuth Token"; '
        "it starts with xoxb-."
    )


def app_token_where(app_id: str | None) -> str:
    return (
        f"Where: {_settings_page(app_id, 'Basic Information', 'general', 'Settings')}, "
        'section "App-Level Tokens": click "Generate Token and Scopes", name it, add the scope '
        "connections:write, click Generate, and copy the token; it starts with xapp-."
    )


@dataclass(frozen=True)
class TokenStep:
    """One token to obtain: the step's heading, the token's name, where to find it."""

    heading: str
    label: str
    setting: str
    where: Callable[[str | None], str]


BOT = TokenStep("Step 2 of 3: the bot token.", "bot token", "SLACK_BOT_TOKEN", bot_token_where)
APP = TokenStep("Step 3 of 3: the app-level token.", "app-level token", "SLACK_APP_TOKEN", app_token_where)


class Setup:
    """One setup run: where it reads and writes, whom it may ask, what it kept."""

    def __init__(self, settings: Settings, env: EnvFile, *, interactive: bool) -> None:
        self.settings = settings
        self.env = env
        self.api = SlackApiCalls(settings.slack_api_url)
        self.interactive = interactive
        self.app_id: str | None = None

    # ---- talking to the person ----------------------------------------------------------
    def say(self, text: str = "") -> None:
        print(text, flush=True)

    def yes(self, question: str, *, default: bool) -> bool:
        hint = "[Y/n]" if default else "[y/N]"
        while True:
            reply = prompt(f"{question} {hint} ").strip().lower()
            if not reply:
                return default
            if reply in ("y", "yes", "n", "no"):
                return reply.startswith("y")
            self.say("Answer y or n.")

    def offer(self, url: str) -> None:
        """Offer to open `url` in a browser (at a terminal only)."""
        if not self.interactive or not self.yes("Open it in your browser?", default=True):
            return
        opened = webbrowser.open(url)
        self.say("Opened it in your browser." if opened else "No browser found here: copy the link into one.")

    # ---- the app ------------------------------------------------------------------------
    def link_to_create(self) -> None:
        link = create_app_link(socket_mode_manifest())
        self.say("Step 1 of 3: create the Slack app.")
        self.say("This link opens Slack's \"Create an app\" page with Parley's manifest filled in")
        self.say("(Socket Mode: Slack reaches Parley over a WebSocket, so no public URL is needed):")
        self.say()
        self.say(link)
        self.say()
        self.say("Pick your workspace, click Next, then Create.")
        self.offer(link)

    def create(self, config_token: str) -> CreatedApp:
        """Create the app with `apps.manifest.create`, keep its credentials, give its install link."""
        already = ", ".join(key for key in CREDENTIALS if key in self.env.values())
        if already:
            question = f"{self.env.path} already has {already}. Create a new app and replace them?"
            if not (self.interactive and self.yes(question, default=False)):
                raise SetupRefused(f"{self.env.path} already has {already} of an app; no new app was created")
        self.say("Step 1 of 3: create the Slack app, through Slack's API.")
        try:
            made = self.api.create_app(config_token, socket_mode_manifest())
        except TokenRefused as exc:
            raise SetupRefused(exc.about(f"{CONFIG_FLAG.label} {mask(config_token)}")) from None
        self.app_id = made.app_id
        self.env.update({key: made.credentials[field] for key, field in CREDENTIALS.items()})
        self.say(f"  ✓ Created app {made.app_id}; its signing secret and client credentials are in {self.env.path}.")
        self.say("Install it in your workspace (click Allow):")
        self.say()
        self.say(made.install_url)
        self.say()
        self.offer(made.install_url)
        return made

    # ---- the tokens ---------------------------------------------------------------------
    def check_bot(self, token: str) -> str:
        identity = self.api.bot_identity(token)
        shown = f"workspace {identity.team}, bot @{identity.bot} ({mask(token)})"
        if identity.scopes is not None and AGENT_SCOPE not in identity.scopes:
            shown += f"; {AGENT_APP_LACKS}"
        return shown

    def check_app(self, token: str) -> str:
        self.api.check_app_token(token)
        return f"it opens a Socket Mode connection ({mask(token)})"

    def obtain(self, step: TokenStep, check: Callable[[str], str], given: str | None, found: str | None) -> str:
        """A token Slack accepts.

        That is `given` (a flag), else `found` (environment or .env) if kept, else one asked for.
        """
        if self.interactive:
            self.say()
            self.say(step.heading)
        for candidate, from_flag in ((given, True), (found, False)):
            if not candidate:
                continue
            try:
                shown = check(candidate)
            except TokenRefused as exc:
                if from_flag or not self.interactive:  # given on purpose: not asked for again
                    raise SetupRefused(exc.about(f"{step.label} {mask(candidate)}")) from None
                self.say(f"  ✗ {exc.about(f'{step.label} {mask(candidate)}')}.")
                continue
            if from_flag or not self.interactive:
                self.say(f"  ✓ {step.label}: {shown}")
                return candidate
            if self.yes(f"  Found a {step.label}: {shown}. Keep it?", default=True):
                return candidate
        self.say(step.where(self.app_id))
        while True:
            token = prompt(f"{step.label.capitalize()}: ", is_password=True).strip()
            if not token:
                continue
            try:
                self.say(f"  ✓ {check(token)}")
                return token
            except TokenRefused as exc:
                self.say(f"  ✗ {exc.about(step.label) if exc.code else exc.why}. Paste it again (Ctrl-C stops).")

    def save(self, values: dict[str, str]) -> None:
        """Write `values` to .env, replacing a different value only if the person agrees."""
        existing = self.env.values()
        changes: dict[str, str] = {}
        for key, value in values.items():
            old = existing.get(key)
            if old is not None and old != value:
                if not self.interactive:
                    raise SetupRefused(
                        f"{self.env.path} already has another {key} ({mask(old)}); remove that line to replace it"
                    )
                if not self.yes(f"{self.env.path} has another {key} ({mask(old)}). Replace it?", default=False):
                    self.say(f"  Kept {key} as it was.")
                    continue
            if old != value:
                changes[key] = value
        if changes:
            self.env.update(changes)
            self.say(f"Saved {', '.join(changes)} in {self.env.path} (mode 0600: readable by you only).")
        else:
            self.say(f"{self.env.path} already holds these tokens.")


def slack_setup(settings: Settings, *, bot_token: str | None, app_token: str | None, config_token: str | None) -> int:
    """Connect Parley to a Slack workspace, returning 0 once both tokens are checked and saved."""
    interactive = sys.stdin.isatty()
    given = {CONFIG_FLAG: config_token, BOT_FLAG: bot_token, APP_FLAG: app_token}
    if warning := argv_warning(given):
        print(warning, file=sys.stderr, flush=True)
    if interactive:  # `-` at a terminal: asked for, unechoed, as when the flag is left out
        given = {flag: None if value == FROM_STDIN else value for flag, value in given.items()}
    else:
        given = read_stdin_tokens(given, sys.stdin)
    config_token, bot_token, app_token = given[CONFIG_FLAG], given[BOT_FLAG], given[APP_FLAG]
    setup = Setup(settings, EnvFile(Path(ENV_FILE).resolve()), interactive=interactive)
    found_bot = None if config_token else settings.slack_bot_token
    found_app = None if config_token else settings.slack_app_token
    bot, app = bot_token or found_bot, app_token or found_app
    if not interactive and not config_token and not (bot and app):
        raise SetupRefused(
            "standard input is not a terminal to ask for the tokens in: set SLACK_BOT_TOKEN and "
            "SLACK_APP_TOKEN, or pipe them in, one a line, with --bot-token - --app-token -"
        )
    try:
        if config_token:
            setup.create(config_token)
            if not interactive and not (bot and app):
                setup.say("Then give Parley the app's tokens: parley slack setup --bot-token - --app-token -")
                setup.say("(reads them from standard input, one a line: the bot token, then the app-level token)")
                setup.say(bot_token_where(setup.app_id))
                setup.say(app_token_where(setup.app_id))
                return 0
        elif interactive and not (bot_token and app_token):
            setup.link_to_create()
        bot = setup.obtain(BOT, setup.check_bot, bot_token, found_bot)
        app = setup.obtain(APP, setup.check_app, app_token, found_app)
        setup.say()
        setup.save({BOT.setting: bot, APP.setting: app})
    except (KeyboardInterrupt, EOFError):
        setup.say()
        setup.say("Stopped; the tokens were not saved. Run parley slack setup again to carry on.")
        return 130
    setup.say("Next: parley up")
    return 0
