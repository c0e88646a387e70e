"""Run, call and step flows and their registries: values turned into records."""
