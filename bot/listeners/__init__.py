"""Bolt listeners, one module per kind of request, and nothing else.

Each listener is a module-level function taking the request parts bolt injects (`ack`, `body`,
`client`, ...) and `deps`. Each module's `register(app, deps)` binds `deps` and wires its
listeners. What listeners share lives outside this package. That is `bot.slack` (payload
reading, wording, Block Kit) and `bot.home_tab`.
"""
