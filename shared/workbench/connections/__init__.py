"""A user's connections to providers: the connect flow, stored credentials refreshed on use, Workbench
as an OAuth client of providers, the credential on each upstream request and connect-time probes."""
