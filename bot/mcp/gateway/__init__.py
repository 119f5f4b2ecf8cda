"""`parley mcp gateway`: an MCP server in front of other MCP servers, each tool call allowed, denied or
approved in Slack by the rules file (`bot.mcp.rules`).

`upstreams` holds the client sessions to the upstream servers and their tools (`watch` notices
one going away, `deadlines` times its calls), `approvals` asks and waits for an approval and
forwards what was approved once (`checks` first: the tool unchanged, the arguments meeting its
schema), `elicitations` asks an upstream's elicitation in Slack (`budget` caps them), `server`
routes each call by its rule, `http` mounts it at `/mcp/gateway` under `parley serve`.
"""
