"""Tests of the exporter (test_exporter.py) and the independent manifest replayers they check exports with."""
