"""core/."""
