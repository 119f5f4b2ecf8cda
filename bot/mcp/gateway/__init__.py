"""`parley mcp gateway`: an MCP server in front of other MCP servers, each call ruled on.

The rules file (`bot.mcp.rules`) allows, denies or has Slack approve each tool call.
- `upstreams` holds the client sessions to the upstream servers, and their tools. `watch`
  notices one going away. `deadlines` times its calls.
- `approvals` asks and waits for an approval, and forwards what was approved once. `checks` come
  first: the tool unchanged, the arguments meeting its schema.
- `elicitations` asks an upstream's elicitation in Slack, and `budget` caps them.
- `server` routes each call by its rule.
- `http` mounts it at `/mcp/gateway` under `parley serve`.
"""
