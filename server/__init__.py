"""factdebate.server: the LangGraph server's auth, limits, logs, lifespan and the /app web page."""
