"""factdebate.testing: the scripted test double (``scripted:<scenario>``), outside the core.

For graph-logic tests and orchestration benchmarks only: never a default, never a result (the
CLI's and the server's model checks refuse it outside test suites). It sits in its own layer above
``nodes`` (docs/architecture_text.md) and is registered like any provider from outside the core, as a
``factdebate.providers`` entry point in ``pyproject.toml`` (``factdebate.core.models.PROVIDERS``
loads that group), so ``scripted:*`` works from the CLI, the server and tests while nothing in
core, tools or nodes imports it.

The contract with the nodes is public: the double answers a structured request by the schema's
declared name - its JSON-schema ``title``, what a provider sees as the ``response_format`` name
(pydantic's default is the class name; a schema may declare another with
``model_config = ConfigDict(title=...)``) - and by the fields it asks for, never by Python class
identity (``testing/scenarios.py`` ``schema_name``).
"""
