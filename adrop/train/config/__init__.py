"""The configuration: its schema, a run's settings resolved once, which settings make two runs differ."""
