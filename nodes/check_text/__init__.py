"""The check_text graph's own nodes: claim extraction and verification."""
