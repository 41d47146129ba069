"""Thin CLI verbs over the rightsize libraries (stdlib-only imports at module level)."""
