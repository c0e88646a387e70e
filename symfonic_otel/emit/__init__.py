"""Span and metric emitters, instruments, exemplars, label budgets, tenancy and pricing."""
