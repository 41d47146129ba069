"""rightsize: measure what ML work costs and version the answer with DVC."""
__version__ = "0.1.0"
