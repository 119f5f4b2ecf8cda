"""Parley as an MCP server: the `ask_human` and `get_answer` tools over the question service.

`tools` holds the tools' schemas. It turns their arguments into questions, and their questions
into results. `server` is the MCP SDK's low-level server answering the tool calls. `http` mounts
it over streamable HTTP at `/mcp` in `parley serve`, behind the API's bearer tokens.
`parley mcp` (in `parley.mcp_cmd`) serves the same tools over stdio.
"""
