"""Re-extraction of token-level encoder states from WFDB records (``rightsize extract``)."""
