"""MERMAID's own nodes: decomposer, evidence memory, ReAct executor and its tools."""
