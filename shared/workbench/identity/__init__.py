"""Who is calling and what they hold: API keys and principals, signed tokens, envelope encryption,
run-time secrets and the per-user vault."""
