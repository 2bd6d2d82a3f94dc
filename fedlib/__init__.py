"""fedlib: the library behind the companion to five papers on differentially
private personalized federated learning."""

__version__ = "0.1.0"
