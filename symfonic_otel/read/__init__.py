"""Guarded extractors: events and framework payloads read into plain, sanitised values."""
