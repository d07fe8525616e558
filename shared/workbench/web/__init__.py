"""Browser-facing surface: portal, connect-link redemption, provider callbacks, OAuth AS pages."""
