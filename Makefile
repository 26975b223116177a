# The two set-up commands of the README:
#   make demo   - create .venv, install everything, verify a claim offline with the embedded model
#   make test   - create .venv, install everything, check the import layers, run the test suite
#   make lint   - ruff (style + docstrings), import-linter (one-way layers, no cycles), mypy
#   make docs   - the documentation site (mkdocs, --strict) into .cache/site
VENV ?= .venv
PY := $(VENV)/bin/python
# llama-cpp-python has no wheel on PyPI: build a portable CPU library without the extras.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF
DEMO_CLAIM ?= The Eiffel Tower is located in Paris.
export RAGAS_DO_NOT_TRACK := true
export HF_HUB_OFFLINE := 1
export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := true

# Two pytest-xdist workers; a module goes to one worker whole (its module-scoped servers start once),
# the modules on the Milvus server together (tests/conftest.py). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

.PHONY: install demo test test-slow lint lint-imports docs
install: $(VENV)/.installed

# pyproject.toml declares compatible ranges; constraints.txt is the exact set the tests ran with.
$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(VENV)/bin/pip install -q -c constraints.txt -e '.[dev]'
	touch $@

# With the embedded model as the RAGAS evaluator, Tool-MAD's default scoring_mode=auto scores with
# the consistency score (bundled embeddings) and says so in a note (nodes/tool_mad/state.py).
# DEMO_ARGS adds flags, e.g. DEMO_ARGS="--scoring stability" for the paper's score.
DEMO_ARGS ?=
demo: install
	$(VENV)/bin/factdebate verify "$(DEMO_CLAIM)" $(DEMO_ARGS)

# The crash-safety test starts a throwaway PostgreSQL server from Debian's postgresql package, the
# web page's browser test drives Debian's chromium: both installed here when missing and possible
# (root with apt-get); otherwise those tests say why they skip.
test: install
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1 \
	  && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; fi
	@if ! command -v chromium >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; fi
	$(VENV)/bin/lint-imports --config pyproject.toml --no-cache
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# The slow tier (`-m slow`, see pyproject markers): whole debates of the embedded model and the
# integration tests of ~10 s or more (Milvus server builds, kill-and-resume trials, stress tests).
test-slow: install
	$(PY) -m pytest -m slow $(XDIST) $(PYTEST_ARGS)

# import-linter (grimp) walks the checkout itself: the repository root is the factdebate package.
lint-imports: install
	$(VENV)/bin/lint-imports --config pyproject.toml --no-cache

lint: install lint-imports
	$(VENV)/bin/ruff check .
	$(PY) .ci/typecheck.py

# The documentation site (mkdocs.yml): graph pictures are laid out by Graphviz's dot (Debian's
# graphviz, installed here when missing and possible); the API reference reads the package from a
# link named factdebate to the checkout (the repository root is the package).
docs: install
	@if ! command -v dot >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null; fi
	mkdir -p .cache/docs-src && ln -sfn "$(CURDIR)" .cache/docs-src/factdebate
	DISABLE_MKDOCS_2_WARNING=true NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	$(PY) .ci/check_site.py .cache/site
