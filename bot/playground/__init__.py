"""Local stand-ins for Slack: an in-memory workspace, and a Web API in Slack's wire format."""

from bot.playground.server import LoopbackServer, make_webapi_app
from bot.playground.webapi import SlackError, create_webapi, validate_blocks
from bot.playground.workspace import Channel, Fault, FaultPlan, User, Workspace

__all__ = [
    "Channel",
    "Fault",
    "FaultPlan",
    "LoopbackServer",
    "SlackError",
    "User",
    "Workspace",
    "create_webapi",
    "make_webapi_app",
    "validate_blocks",
]
