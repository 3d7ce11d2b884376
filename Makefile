# iterflow: `make run` runs the main job on an embedded Spark cluster; `make test` runs the tests
# (`make test-fast`: only those that need no Spark).
# Each creates .venv and installs everything pinned in setup.cfg first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DATA   := data
OUT    := out

.PHONY: setup jars cds run test test-fast notebook lab bench pareto pareto-full experiments experiments-full clean stall

setup: $(VENV)/.installed jars cds

$(VENV)/.installed: setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

# iterflow's JVM classes (barrier listener, index coalescer), compiled with javac from iterflow/jvm/ into .cache/jars;
# GraphFrames' JVM artifact from Maven Central into .cache/jars (see README: GraphFrames).
jars: $(VENV)/.installed
	@$(BIN)/python -m iterflow.jvm
	@$(BIN)/python -m iterflow.cluster.jars >/dev/null && echo "GraphFrames jars in .cache/jars" \
	  || echo "warning: GraphFrames jars unavailable; iterflow runs without them (GraphFrames features disabled)"

# Class-data-sharing archives (iterflow/cluster/cds.py) of the executors, the driver, the master
# and the worker: fresh executors on this machine, every driver iterflow launches and the embedded
# cluster's daemons map Spark's classes from them instead of loading them from the jars. ~1 min, once.
cds: jars
	@$(BIN)/python -m iterflow.app.classlist 2>/dev/null \
	  || echo "warning: no class archives; the JVMs start without them"

$(DATA)/rmat-16.txt: $(VENV)/.installed
	$(BIN)/iterflow generate rmat --scale 16 --edges 500000 --seed 1 --out $@

# The main job: PageRank on an R-MAT graph, on a local standalone cluster started for the run.
run: setup $(DATA)/rmat-16.txt
	$(BIN)/iterflow run pagerank --input $(DATA)/rmat-16.txt --iterations 10 \
	  --workers 2 --cores-per-worker 1 --output $(OUT)/pagerank --stats $(OUT)/pagerank-stats.csv

# The Spark-free tests run beside the cluster tests, whose JVMs leave the cores ~30 % idle
# (vmstat over test_cli.py: 62 % busy): the suite ends a minute sooner, and either failing fails it.
test: setup
	@mkdir -p $(OUT); $(BIN)/python -m pytest -q -p no:cacheprovider tests -m "not cluster" > $(OUT)/test-fast.log 2>&1 & fast=$$!; \
	$(BIN)/python -m pytest -q tests -m cluster --durations=25; cluster=$$?; \
	wait $$fast; fastrc=$$?; echo "== the Spark-free tests, run beside (exit $$fastrc; $(OUT)/test-fast.log):"; \
	if [ $$fastrc -eq 0 ]; then tail -n 1 $(OUT)/test-fast.log; else cat $(OUT)/test-fast.log; fi; \
	[ $$cluster -eq 0 ] && [ $$fastrc -eq 0 ]

# Every test that needs no Spark (no cluster, no JVM): the model, policies, loop logic, partition
# planning, reports, file handling, bad command lines. Under 2 minutes on 2 cores.
test-fast: setup
	$(BIN)/python -m pytest -q tests -m "not cluster"

# The analysis notebook on the MLflow store `make run` writes (./mlflow.db), executed with
# nbclient on the virtualenv's kernel into out/analysis.ipynb; its figures go to out/figures.
notebook: setup
	mkdir -p $(OUT)
	$(BIN)/jupyter execute notebooks/analysis.ipynb --kernel_name=python3 --output=../$(OUT)/analysis

# JupyterLab for a person, on notebooks/analysis.ipynb and the MLflow store `make run` wrote
# (./mlflow.db); listens on 127.0.0.1 only and prints its URL with the access token.
lab: setup
	$(BIN)/pip install -q -e '.[lab]'
	MLFLOW_TRACKING_URI=sqlite:///$(CURDIR)/mlflow.db $(BIN)/jupyter lab --ip=127.0.0.1 --no-browser \
	  $$([ "$$(id -u)" = 0 ] && echo --allow-root) notebooks/analysis.ipynb

# iterflow's own cost against the Spark code a user would write by hand (issue 12): PageRank at
# 1 and 4 executors on R-MAT scale 17 (2M edges), k-means against MLlib, WCC against GraphX; one
# session, interleaved, 3 reps; results in experiments/results/overhead_peers*. ~25 min.
bench: setup
	$(BIN)/python experiments/overhead_peers.py --scale 17 --edges 2000000 --executors 1,4 --reps 3

# Every static size and every adaptive policy per job, with the dominance check and the
# issue-13 goals (experiments/pareto.py): quick mode ~24 min, full mode (3 reps, 10 targets) ~2.5 h.
# How long a rescale stalls the barrier, not waiting vs waiting for executors (issue 13, item 3; ~7 min)
stall: setup
	$(BIN)/python experiments/rescale_stall.py --reps 2

pareto: $(VENV)/.installed
	$(BIN)/python experiments/pareto.py --quick

pareto-full: $(VENV)/.installed
	$(BIN)/python experiments/pareto.py

# The issue-5 experiments (experiments/run_all.py): quick mode of all five in sequence, one
# summary table; results in experiments/results/, runs in the MLflow store ./mlflow.db.
experiments: $(VENV)/.installed
	$(BIN)/python experiments/run_all.py

experiments-full: $(VENV)/.installed
	$(BIN)/python experiments/run_all.py --full

# The spark-submit bundle (README: spark-submit): dist/iterflow.zip, the iterflow and
# algorithms packages for --py-files, and dist/iterflow_main.py, the main script.
.PHONY: dist
dist:
	rm -rf dist && mkdir -p dist
	$(PYTHON) -c "import pathlib, zipfile; z = zipfile.ZipFile('dist/iterflow.zip', 'w', zipfile.ZIP_DEFLATED); \
	  [z.write(f) for d in ('iterflow', 'algorithms') for f in sorted(pathlib.Path(d).rglob('*')) \
	   if f.suffix in ('.py', '.properties') and '__pycache__' not in f.parts]; z.close()"
	cp scripts/iterflow_main.py dist/

clean:
	rm -rf $(OUT) $(DATA) .cache .pytest_cache
