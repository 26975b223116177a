"""server/."""
