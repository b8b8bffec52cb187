"""Datasets: built-in generators and loaders for public formats (no network)."""
