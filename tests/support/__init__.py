"""Test helpers shared by every test package: gateways, principals, real processes on loopback."""
