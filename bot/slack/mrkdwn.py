"""Safe mrkdwn: agent-supplied text is escaped before it reaches a Slack field that parses markup.

Slack's mrkdwn turns `<!channel>`, `<@U123>` and `<https://x|label>` into pings and links. It
reads `&amp;`-style entities. Agent text is untrusted, so every mrkdwn field Parley renders goes
through `escape`. Or through `clip`, which escapes and shortens without halving an entity. Only
`mention` produces mentions, and only for ids shaped like Slack user ids. Agent text keeps
`<@U…>` only for people its run involves (`with_mentions`). Slack does not parse `plain_text`
fields, which take raw text.

Every cut counts in UTF-16 code units (`bot.slack.limits`), the unit safe whatever Slack counts
in. Every cut lands on a whole character. It is never inside a surrogate pair, an `&amp;`
entity, or a `<…>` mention, link or date token.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
import zoneinfo
from collections.abc import Collection

from bot.slack.limits import utf16_len, utf16_prefix

ELLIPSIS = "…"
USER_ID_PATTERN = re.compile(r"^[UW][A-Z0-9]{2,20}$")
GROUP_ID_PATTERN = re.compile(r"^S[A-Z0-9]{2,20}$")
_ENTITY_TAIL = re.compile(r"&[a-z]{0,3}$")


def escape(text: str) -> str:
    """Escape `&`, `<` and `>`, in that order, so text renders literally and never pings."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    """A message's text as its author typed it: Slack sends `&`, `<` and `>` escaped.

    Only those three are escaped (https://docs.slack.dev/messaging/formatting-message-text#escaping).
    `&amp;` goes last, so a typed "&lt;" stays "&lt;".
    """
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _is_blank(line: str) -> bool:
    """A line showing nothing: only whitespace and invisible format characters, like zero-width spaces."""
    return all(c.isspace() or unicodedata.category(c) in ("Cf", "Zs") for c in line)


def fold_blank_lines(text: str) -> str:
    """`text` with runs of blank lines folded into one, none at start or end.

    So agent text cannot open a gap making what follows look like a message of its own.
    """
    lines: list[str] = []
    gap = False
    for line in text.split("\n"):
        if _is_blank(line):
            gap = bool(lines)
            continue
        if gap:
            lines.append("")
            gap = False
        lines.append(line)
    return "\n".join(lines) if lines else text.strip()


def origin_ref(name: str) -> str:
    """The name of who asked through the API or MCP, for bold mrkdwn.

    It is escaped, on one line, at most 64 characters. `*` would end the bold early, so it shows as
    U+2217, the asterisk operator.
    """
    one_line = " ".join(name.split())
    return clip(one_line, 64).replace("*", "\u2217") or "?"


def is_user_id(user_id: str) -> bool:
    """True when `user_id` has the shape of a Slack user id (`U…` or `W…`)."""
    return bool(USER_ID_PATTERN.fullmatch(user_id))


def mention(user_id: str) -> str:
    """`<@U123>` for a valid Slack user id, else `ValueError`.

    Refusing odd ids keeps a crafted id such as `U1>|<!channel` from ever becoming markup.
    """
    if not isinstance(user_id, str) or not is_user_id(user_id):
        raise ValueError(f"not a Slack user id: {user_id!r}")
    return f"<@{user_id}>"


_ESCAPED_MENTION = re.compile(r"&lt;@([UW][A-Z0-9]{2,20})&gt;")


def mentions_anyone(escaped: str) -> bool:
    """Whether escaped agent text holds a `<@U…>` that `with_mentions` may make a mention again."""
    return _ESCAPED_MENTION.search(escaped) is not None


def with_mentions(escaped: str, people: Collection[str]) -> str:
    """`escaped` agent text, its `<@U…>` mentions of `people` made mentions again.

    Agent text is escaped whole (`escape`, `clip`). The one markup it keeps is a mention of someone
    the run already involves. So an agent can name them, and nobody else is pinged.
    """
    return _ESCAPED_MENTION.sub(lambda m: mention(m.group(1)) if m.group(1) in people else m.group(0), escaped)


def user_ref(user_id: str) -> str:
    """A mention for a Slack user id, else the id escaped in code style."""
    if isinstance(user_id, str) and is_user_id(user_id):
        return f"<@{user_id}>"
    shown = escape(str(user_id)).replace("`", "'")
    return f"`{shown}`"


def is_group_id(group_id: str) -> bool:
    """True when `group_id` has the shape of a Slack user group id (`S…`)."""
    return isinstance(group_id, str) and bool(GROUP_ID_PATTERN.fullmatch(group_id))


def assignee_ref(assignee: str) -> str:
    """A user group's handle (`<!subteam^S…>`, which Slack shows as @handle), else `user_ref`."""
    return f"<!subteam^{assignee}>" if is_group_id(assignee) else user_ref(assignee)


def truncate(text: str, n: int) -> str:
    """`text` cut to at most `n` UTF-16 code units, with an ellipsis if cut."""
    if n < 1:
        raise ValueError("truncate needs room for at least one character")
    if utf16_len(text) <= n:
        return text
    return utf16_prefix(text, n - 1) + ELLIPSIS


def clip(text: str, n: int) -> str:
    """Escape `text` and cut it to `n` UTF-16 code units, keeping `&amp;` entities whole."""
    return cut_escaped(escape(text), n)


def _safe_end(head: str) -> str:
    """`head` without a partial entity or unclosed `<…>` at its end.

    That is a mention, link or date token.
    """
    head = _ENTITY_TAIL.sub("", head)
    opened = head.rfind("<")
    if opened != -1 and ">" not in head[opened:]:
        head = head[:opened]
    return head


def cut_escaped(escaped: str, n: int) -> str:
    """Cut escaped mrkdwn to `n` UTF-16 code units, backing off partial entities or mentions."""
    if n < 1:
        raise ValueError("cut_escaped needs room for at least one character")
    if utf16_len(escaped) <= n:
        return escaped
    return _safe_end(utf16_prefix(escaped, n - 1)) + ELLIPSIS


def split_escaped(escaped: str, size: int) -> list[str]:
    """Split escaped mrkdwn into chunks of at most `size` UTF-16 code units.

    It prefers line breaks, and never cuts inside an entity or a mention.
    """
    if size < 8:
        raise ValueError("chunk size too small")
    chunks: list[str] = []
    rest = escaped
    while utf16_len(rest) > size:
        window = utf16_prefix(rest, size)
        cut = window.rfind("\n", len(window) // 2)
        if cut <= 0:
            cut = len(_safe_end(window)) or len(window)
        chunks.append(rest[:cut])
        rest = rest[cut:].lstrip("\n")
    if rest:
        chunks.append(rest)
    return chunks


def date_token(ts: float, fmt: str = "{date_short_pretty} at {time}", tz: str | None = None) -> str:
    """A `<!date^…>` token Slack renders in the reader's timezone, with a fallback.

    The default renders "today at 12:55 AM" or "Mar 3 at 12:55 AM". Where Slack cannot, it shows
    "2026-03-03 00:55 UTC". It carries its own "at", so the words around it must not add one. The
    fallback is in `tz` when given, an IANA name like a Slack profile's. Otherwise it is UTC.
    """
    try:
        seconds = int(ts)
        zone = _zone(tz)
        fallback = dt.datetime.fromtimestamp(seconds, zone).strftime("%Y-%m-%d %H:%M %Z")
    except (ValueError, OverflowError, OSError):  # a time no date can hold (an unbounded delay's)
        return "an unreadable time"
    return f"<!date^{seconds}^{fmt}|{fallback}>"


def _zone(tz: str | None) -> dt.tzinfo:
    """The zone named `tz`, or UTC for none or an unknown name."""
    if not tz:
        return dt.UTC
    try:
        return zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return dt.UTC


def duration(seconds: float) -> str:
    """A short human duration: "just now", "3 min", "2 h", "4 d"."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"
