"""The tool engine: the registry of integrations and tools, the execute_tools pipeline and its pools,
runs and compose, search and the prebuilt catalog index, and the nine meta-tools."""
