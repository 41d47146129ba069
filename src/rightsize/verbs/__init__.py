"""Thin CLI verbs over the rightsize libraries (light imports at module level: no numpy, torch
or pandas; the engines load inside the verb functions)."""
