"""The web paths custom-app OAuth answers on: their own leaf module, so the portal's routes name them
without importing the custom-app client (httpx) that workbench.external.oauth needs."""

__all__ = ["CALLBACK_PATH", "CLIENT_METADATA_PATH"]

CALLBACK_PATH = "/api/auth/apps/callback"
CLIENT_METADATA_PATH = "/oauth/apps/client-metadata.json"
