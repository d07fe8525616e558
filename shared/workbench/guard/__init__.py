"""What protects every request: the egress gate, body limits, strict JSON, one deadline per request,
Lambda's response limit and plain words for network failures.

Limits before work: each is enforced while reading, never after."""
