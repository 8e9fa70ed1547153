"""Test-data generators and measurement tools that use the exporter or its environment (not part of a compile)."""
