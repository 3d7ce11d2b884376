# iterflow: `make run` runs the main job on an embedded Spark cluster; `make test` runs the tests.
# Both create .venv and install everything pinned in setup.cfg first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DATA   := data
OUT    := out

.PHONY: setup jars run test notebook experiments experiments-full clean

setup: $(VENV)/.installed jars

$(VENV)/.installed: setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

# GraphFrames' JVM artifact from Maven Central into .cache/jars (see README: GraphFrames).
jars: $(VENV)/.installed
	@$(BIN)/python -m iterflow.jars >/dev/null && echo "GraphFrames jars in .cache/jars" \
	  || echo "warning: GraphFrames jars unavailable; iterflow runs without them (GraphFrames features disabled)"

$(DATA)/rmat-16.txt: $(VENV)/.installed
	$(BIN)/iterflow generate rmat --scale 16 --edges 500000 --seed 1 --out $@

# The main job: PageRank on an R-MAT graph, on a local standalone cluster started for the run.
run: setup $(DATA)/rmat-16.txt
	$(BIN)/iterflow run pagerank --input $(DATA)/rmat-16.txt --iterations 10 \
	  --workers 2 --cores-per-worker 1 --output $(OUT)/pagerank --stats $(OUT)/pagerank-stats.csv

test: setup
	$(BIN)/python -m pytest -q tests

# The analysis notebook on the MLflow store `make run` writes (./mlflow.db), executed with
# nbclient on the virtualenv's kernel into out/analysis.ipynb; its figures go to out/figures.
notebook: setup
	mkdir -p $(OUT)
	$(BIN)/jupyter execute notebooks/analysis.ipynb --kernel_name=python3 --output=../$(OUT)/analysis

# The issue-5 experiments (experiments/run_all.py): quick mode of all five in sequence, one
# summary table; results in experiments/results/, runs in the MLflow store ./mlflow.db.
experiments: $(VENV)/.installed
	$(BIN)/python experiments/run_all.py

experiments-full: $(VENV)/.installed
	$(BIN)/python experiments/run_all.py --full

clean:
	rm -rf $(OUT) $(DATA) .cache .pytest_cache
