"""Slack rendering and decoding for Parley: pure functions, no network.

- `mrkdwn`: escaping and mentions, so agent text never pings or links;
- `blocks` (with `blocks_question`, `blocks_home`): every message, modal and Home tab Parley sends;
- `state`: answers from `state.values`, and Parley's block ids read back;
- `limits`: the Block Kit limits slack_sdk does not check, enforced before sending.
"""
