"""The report: verdicts first, then figures and tables, built only from the metrics files."""
