"""Inputs: graph and point readers with their validation, and data generators."""
