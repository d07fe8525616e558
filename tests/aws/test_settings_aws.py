"""The environment template.yaml gives the functions, as Settings reads it."""

from __future__ import annotations

from workbench.settings import Settings
from workbench.stores.dynamodb import TABLES

from tests.support.aws import load_template


def test_table_names_come_from_the_template_environment_else_the_prefix() -> None:
    settings = Settings.from_env(
        {
            "WORKBENCH_STORE": "dynamodb",
            "WORKBENCH_TABLE_PREFIX": "wb-dev",
            "WORKBENCH_TABLE_CONNECTIONS": "stack-ConnectionsTable-ABC123",
            "WORKBENCH_TABLE_EXTERNAL_SERVERS": "stack-ExternalServersTable-XYZ",
            "WORKBENCH_DATA_KEY_CACHE_SECONDS": "120",
            "WORKBENCH_AUDIT_RETENTION_DAYS": "30",
        }
    )
    assert settings.key_backend == "kms"  # the dynamodb store defaults to KMS keys
    assert settings.table_name("connections") == "stack-ConnectionsTable-ABC123"
    assert settings.table_name("external_servers") == "stack-ExternalServersTable-XYZ"
    assert settings.table_name("api_keys") == "wb-dev-api-keys"
    assert settings.data_key_cache_seconds == 120 and settings.audit_retention_days == 30


def test_every_table_variable_the_template_sets_is_one_settings_reads() -> None:
    env = load_template()["Globals"]["Function"]["Environment"]["Variables"]
    fake = {k: v for k, v in env.items() if isinstance(v, str)}  # the literal values (store, ...)
    fake.update({k: f"table-{k}" for k in env if k.startswith("WORKBENCH_TABLE_")})
    settings = Settings.from_env(fake)
    for store in TABLES:
        assert settings.table_name(store) == f"table-WORKBENCH_TABLE_{store.upper()}"
