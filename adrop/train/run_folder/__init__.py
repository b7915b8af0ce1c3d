"""A run's folder: the files it leaves, its checkpoint, live logging."""
