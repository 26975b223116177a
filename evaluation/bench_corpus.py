"""``factdebate bench corpus``: importing a FEVER-size dump on this machine, streamed and bounded.

The bench writes a synthetic dump in FEVER's ``wiki-pages`` format (``wiki-NNN.jsonl``, 50,000
pages a file, ``{"id", "text", "lines"}`` with 3-8 numbered sentences of about 100 characters,
link columns and ``-LRB-``-escaped ids, as the real release) and imports it with the real command,
``factdebate index DUMP --format fever-wiki --keyword-only`` in a process of its own, at two sizes
(the dump's first quarter, linked, and all ``pages``; a quarter fills tantivy's writer heap, so
the two sizes compare steady states). It reports pages per second and the process's peak RSS
(``wait4``), split into anonymous and file-backed memory (``/proc/PID/status`` sampled every
0.1 s) at each size: the budget is >= 10,000 pages/s, peak RSS under 2 GB and anonymous memory
independent of the size (the larger within 1.5x the smaller). File-backed resident memory is the
index's own segment files mapped while tantivy merges them: page cache the kernel reclaims, which
grows with the index. The two passage granularities are compared at the
smaller size (pages/s, passages, index bytes). A sample of the passages is then embedded through
``evaluation/bench_embedding.measure_embedding``: the project's embedding path next to plain
sentence-transformers, timed on the sample, its vectors compared on real prose (the data folder's
Wikipedia passages and FEVER claims with ``--data-dir``, else the demo corpus).

The generated dump is kept in ``OUT/work/corpus`` and reused by the next run of the same size.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PAGES_PER_FILE = 50_000
WORDS = ("river album film season station league species village election county band singer "
         "novel company team player series building church school district war king battle "
         "island mountain lake railway airport university museum bridge party army ship car "
         "record award festival director actor writer painter court game language city").split()
EMBED_SAMPLE = 2000
"""Passages embedded for the dense section."""


def _page(rng: random.Random, n: int) -> dict[str, str]:
    name = f"{rng.choice(WORDS).title()}_{rng.choice(WORDS)}_{n}"
    page_id = f"{name}_-LRB-{rng.choice(WORDS)}-RRB-" if n % 5 == 0 else name
    sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 20))).capitalize() + " ."
                 for _ in range(rng.randint(3, 8))]
    lines = "\n".join(f"{i}\t{s}\t{rng.choice(WORDS)}\t{rng.choice(WORDS).title()}"
                      for i, s in enumerate(sentences))
    return {"id": page_id, "text": " ".join(sentences), "lines": lines}


def generate_fever_dump(folder: Path, pages: int, seed: int = 13) -> Path:
    """Write (once) ``pages`` synthetic FEVER pages under ``folder/wiki-pages``; return that."""
    out = folder / "wiki-pages"
    done = folder / "complete.json"
    if done.is_file() and json.loads(done.read_text()).get("pages") == pages:
        return out
    shutil.rmtree(folder, ignore_errors=True)
    out.mkdir(parents=True)
    rng = random.Random(seed)
    for start in range(0, pages, PAGES_PER_FILE):
        with (out / f"wiki-{start // PAGES_PER_FILE + 1:03d}.jsonl").open("w") as f:
            for n in range(start, min(pages, start + PAGES_PER_FILE)):
                f.write(json.dumps(_page(rng, n)) + "\n")
    done.write_text(json.dumps({"pages": pages, "seed": seed}))
    return out


def import_dump(dump: Path, index_dir: Path, *, granularity: str = "chunk",
                fmt: str = "fever-wiki") -> dict[str, Any]:
    """``factdebate index DUMP --keyword-only`` in a child process: seconds, peak RSS, manifest."""
    shutil.rmtree(index_dir, ignore_errors=True)
    argv = [sys.executable, "-c", "from factdebate.cli.main import app; app()", "index", str(dump),
            "--format", fmt, "--keyword-only", "--granularity", granularity,
            "--index-dir", str(index_dir)]
    start = time.perf_counter()
    log = index_dir.with_name(f"{index_dir.name}.stderr")
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log.open("wb"))
    peaks = {"RssAnon": 0, "RssFile": 0}
    while True:  # sample the child's anonymous and file-backed resident memory
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        for key, kib in _memory(child.pid).items():
            peaks[key] = max(peaks[key], kib)
        time.sleep(0.1)
    seconds = time.perf_counter() - start
    out = child.stdout.read()  # type: ignore[union-attr]
    err = log.read_bytes()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise RuntimeError(f"factdebate index exited {child.returncode}: {err.decode()[-500:]}")
    manifest = json.loads((index_dir / "manifest.json").read_text())
    size = sum(p.stat().st_size for p in (index_dir / "keyword").rglob("*") if p.is_file())
    return {"pages": manifest["documents"], "passages": manifest["passages"],
            "seconds": round(seconds, 1), "pages_per_s": round(manifest["documents"] / seconds),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "pages_per_cpu_s": round(manifest["documents"] / (usage.ru_utime + usage.ru_stime)),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
            "peak_rss_anon_mb": round(peaks["RssAnon"] / 1024, 1),
            "peak_rss_file_mb": round(peaks["RssFile"] / 1024, 1),
            "keyword_index_mb": round(size / 2**20, 1),
            "dump_mb": round(sum(p.stat().st_size for p in dump.rglob("*.jsonl")) / 2**20, 1),
            "stdout": out.decode().strip()[-200:]}


def _memory(pid: int) -> dict[str, int]:
    """``RssAnon`` and ``RssFile`` (KiB) of process ``pid`` from ``/proc`` (empty when gone)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v.split()[0]) for k, _, v in (line.partition(":") for line in lines)
            if k in ("RssAnon", "RssFile")}


def _sample_passages(dump: Path, n: int) -> list[str]:
    from factdebate.tools.sources import open_source, passages_of

    texts: list[str] = []
    for page, _ in open_source(dump, "fever-wiki").read(None):
        texts.extend(f"{p['title']}\n{p['text']}" for p in passages_of(page))
        if len(texts) >= n:
            break
    return texts[:n]


def _embedding(dump: Path, work_dir: Path, sample: int, data_dir: Path | None) -> dict[str, Any]:
    if sample < 1:
        return {"skipped": "no sample asked for"}
    from factdebate.evaluation.bench_embedding import data_agreement_texts, measure_embedding

    agreement = data_agreement_texts(data_dir) if data_dir else None
    return measure_embedding(_sample_passages(dump, sample), out_dir=work_dir / "embedding",
                             agreement=agreement)


def subset_dump(dump: Path, folder: Path, files: int) -> Path:
    """A folder linking the first ``files`` files of ``dump`` (a smaller dump, nothing copied)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for path in sorted(dump.glob("wiki-*.jsonl"))[:files]:
        (folder / path.name).symlink_to(path)
    return folder


def run_corpus_bench(work_dir: Path, *, pages: int = 1_000_000, seed: int = 13,
                     embed_sample: int = EMBED_SAMPLE, data_dir: Path | None = None
                     ) -> dict[str, Any]:
    """Generate the dump, import it at two sizes and both granularities, embed a sample (vectors
    compared on the real text of ``data_dir`` when given, else on the demo corpus)."""
    started = time.perf_counter()
    large = generate_fever_dump(work_dir / "corpus" / f"fever-{pages}", pages, seed)
    generate_s = time.perf_counter() - started
    files = max(1, -(-pages // PAGES_PER_FILE) // 4)  # a quarter of the pages: past tantivy's heap
    small = subset_dump(large, work_dir / "corpus" / f"fever-{pages}-first-{files}-files", files)
    small_pages = min(pages, files * PAGES_PER_FILE)
    runs = {
        f"{small_pages}_chunk": import_dump(small, work_dir / "corpus-index-small"),
        f"{small_pages}_sentence": import_dump(small, work_dir / "corpus-index-small-sentence",
                                               granularity="sentence"),
        f"{pages}_chunk": import_dump(large, work_dir / "corpus-index-large"),
    }
    big, little = runs[f"{pages}_chunk"], runs[f"{small_pages}_chunk"]
    result: dict[str, Any] = {
        "pages": pages, "smaller_pages": small_pages, "generate_s": round(generate_s, 1),
        "imports": runs,
        "load_average": os.getloadavg(), "embedding": _embedding(small, work_dir, embed_sample, data_dir),
        "budget": ">= 10,000 pages/s; peak RSS under 2 GB; anonymous RSS at 4x the pages "
                  "within 1.5x (file-backed RSS is the index's mapped segments: page cache)",
    }
    result["budget_met"] = {
        "pages_per_s": big["pages_per_s"] >= 10_000,
        "rss_under_2gb": big["peak_rss_mb"] < 2048,
        "anon_rss_independent_of_size": big["peak_rss_anon_mb"] <= 1.5 * little["peak_rss_anon_mb"],
    }
    shutil.rmtree(work_dir / "corpus-index-large", ignore_errors=True)  # GBs; the dump stays
    return result
