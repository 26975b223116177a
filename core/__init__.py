"""factdebate.core: what every framework shares.

State and reducers, Contexts, labels, ledger, errors, settings, model loading.
"""
