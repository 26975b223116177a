"""MERMAID's prompt set (``prompts.yaml``) and the schemas of its structured outputs."""
