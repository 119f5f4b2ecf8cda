"""Slack for Parley: rendering and decoding (pure functions), and the two places that talk to Slack.

- `mrkdwn`: escaping and mentions, so agent text never pings or links.
- `blocks` (with `blocks_question`, `blocks_inputs`, `blocks_locked`, `blocks_home`): every message,
  modal and Home tab Parley sends.
- `form_state`: answers from a form's `state.values`, and Parley's block ids read back.
- `payload_shape`: the shape a signed request must have before any listener reads it.
- `payload_fields`: the fields listeners read out of a payload, wherever Slack puts them.
- `refusals`: why an answer was refused, in words, told to the person after the ack.
- `limits`: the Block Kit limits slack_sdk does not check, enforced before sending.
- `client` and `host`: the Web API client, and `SlackHost`, which talks in a run's thread.
"""
