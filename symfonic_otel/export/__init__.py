"""configure_telemetry: SDK providers, exporters, the Prometheus endpoint, span export, shutdown."""
