"""Slack rendering and decoding for Parley: pure functions, no network.

- `mrkdwn`: escaping and mentions, so agent text never pings or links;
- `blocks` (with `blocks_question`, `blocks_home`): every message, modal and Home tab Parley sends;
- `form_state`: answers from a form's `state.values`, and Parley's block ids read back;
- `payload_shape`: the shape a signed request must have before any listener reads it;
- `limits`: the Block Kit limits slack_sdk does not check, enforced before sending.
"""
