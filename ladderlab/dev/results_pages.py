"""Results pages that regenerate: ``docs/results/``, one page per experiment, built from its run.

``docs/results/pages.toml`` lists the pages: each names its run directory and the command
that makes it (``ladderlab run SCENARIO``, ``ladderlab certify … --run-dir DIR``).
``ladderlab dev results build [NAME …]`` reads each run directory that exists and writes

- ``data/NAME.json``: what the page shows, as data: every section of the report for
  people (:mod:`ladderlab.reports.formats`), the certificate, the provenance (scenario,
  versions, dates, machine), the SHA-256 of every cell file of the run and the fingerprints
  of the plugins that computed it (``code``, which ``ladderlab dev pages`` compares with the code);
- ``img/NAME/*.png``: the report's figures;
- ``NAME.md``: the page, rendered from the data file alone, with the commands, versions,
  dates of the run and machine on it, the papers' values beside ours where the scenario
  declares them, and a warning when the run was smaller than the scenario or unfinished;
- ``index.md``: the list of pages;
- the README's figures against a plain numpy loop, between ``<!-- bench-summary -->`` and
  ``<!-- /bench-summary -->``, from the ``bench`` page's data.

A page whose run has not been made yet says so and gives the commands. ``ladderlab dev results
check`` renders every page again from its data file and names each page that differs:
numbers edited by hand on a page fail it (the test suite runs it).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import Field, StrictStr, ValidationError

from ladderlab.reports import competition as competition_report
from ladderlab.reports import plots
from ladderlab.reports.formats import (
    certificate,
    provenance,
    sections,
    sections_markdown,
)
from ladderlab.reports.report import Run, load_run, status_lines
from ladderlab.reports.tables import Section, params_text
from ladderlab.runs.page_stamps import code_record
from ladderlab.runs.rundir import write_atomically
from ladderlab.runs.schema import StrictModel
from ladderlab.scenarios import builtin_scenarios
from ladderlab.utils.markdown import marked_section, replace_marked_section, table
from ladderlab.utils.strict_json import finite_or_null

DEFAULT_FOLDER = Path("docs/results")
PAGES_FILE = "pages.toml"
DATA_VERSION = 1
README_BEGIN, README_END = "<!-- bench-summary -->", "<!-- /bench-summary -->"
BENCH_PAGE = "bench"


class PageSpec(StrictModel):
    """A results page (`[[page]]` of `docs/results/pages.toml`)."""

    name: StrictStr = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$", description="the page's file name, without .md")
    title: StrictStr = Field(min_length=1, description="the page's title")
    command: StrictStr = Field(min_length=1, description="the command that makes the run directory")
    run: StrictStr = Field(min_length=1, pattern=r"^[^/~]", description="the run directory, relative to where the build "
                           "runs (the repository's root), so that a clone anywhere builds and checks the pages")
    figures: list[StrictStr] | None = Field(default=None, description="title prefixes of the figures to keep "
                                            "(None: every figure of the report)")


class Pages(StrictModel):
    """`docs/results/pages.toml`."""

    page: list[PageSpec] = Field(min_length=1)


def load_pages(folder: Path = DEFAULT_FOLDER) -> list[PageSpec]:
    """The pages of ``folder/pages.toml``; a ``ValueError`` naming the file and the problem."""
    path = folder / PAGES_FILE
    if not path.is_file():
        raise ValueError(f"{path}: no such file (run this from the repository root, or give --folder)")
    try:
        pages = Pages.model_validate(tomllib.loads(path.read_text(encoding="utf-8"))).page
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    except ValidationError as error:
        problems = [f"{'.'.join(map(str, problem['loc']))}: {problem['msg']}, got {problem.get('input')!r}"
                    for problem in error.errors()]
        raise ValueError(f"{path}: {'; '.join(problems)}") from None
    names = [page.name for page in pages]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{path}: page names listed twice: {', '.join(repeated)}")
    return pages


# --- data --------------------------------------------------------------------------------------


def _rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [finite_or_null({name: (value.item() if hasattr(value, "item") else value) for name, value in row.items()})
            for row in frame.to_dict("records")]


REPLICATIONS = re.compile(r"--replications[ =](\d+)")


def planned_replications(spec: PageSpec, scenario: str) -> int | None:
    """The replications the experiment in full has: the page command's ``--replications``, or
    the built-in scenario's (None when neither says)."""
    found = REPLICATIONS.search(spec.command)
    if found:
        return int(found[1])
    path = builtin_scenarios().get(scenario)
    return tomllib.loads(path.read_text())["replications"] if path else None


def run_command(spec: PageSpec, info: dict[str, Any]) -> str:
    """The command that made this run: the page's, with the run's ``--replications`` where it
    had another number than the experiment in full."""
    planned = planned_replications(spec, info["scenario"])
    if planned is None or info["replications"] in (None, planned):
        return spec.command
    if REPLICATIONS.search(spec.command):
        return REPLICATIONS.sub(f"--replications {info['replications']}", spec.command)
    return f"{spec.command} --replications {info['replications']}"


def caveats(spec: PageSpec, info: dict[str, Any], status: list[str]) -> list[str]:
    """Why the page's run is not the experiment in full: fewer replications, unfinished cells."""
    found = []
    planned = planned_replications(spec, info["scenario"])
    if planned and info["replications"] and info["replications"] < planned:
        found.append(f"Smaller run: {info['replications']} of the experiment's {planned} replications per cell. "
                     "Medians and intervals are rougher than the experiment's in full.")
    if not info["complete"]:
        found.append("Partial run: " + "; ".join(status[:3]) + (" …" if len(status) > 3 else "") + ".")
    return found


def page_data(spec: PageSpec, run: Run) -> dict[str, Any]:
    """What a page shows, from a run directory (see the module docstring)."""
    info = provenance(run)
    info["directory"] = spec.run
    status = status_lines(run)
    return {
        "data_version": DATA_VERSION,
        "page": spec.name,
        "command": run_command(spec, info),
        "run": info,
        "status": status,
        "caveats": caveats(spec, info, status),
        "sections": [{"key": section.key, "title": section.title, "note": section.note,
                      "decimals": section.decimals, "rows": _rows(section.frame)}
                     for section in sections(run) if section.for_people],
        "certificate": certificate(run),
        "cells": {key: record["sha256"] for key, record in sorted(run.manifest.get("completed", {}).items())},
        "code": code_record(run.manifest.get("plugins", {}), "run"),
        "figures": [],
    }


BENCH_NOTES = {
    "throughput": ("Throughput", "Submissions per second of every mechanism on the boosting attack's workload (random "
                   "0/1 vectors against random labels, 0/1 loss): batched (submit_many), one at a time (submit), a "
                   "plain per-submission numpy loop of the algorithm, and the bare 0/1 loss; the ratios compare "
                   "timings made in turn under the same load (docs/performance.md)."),
    "duels": ("Duels", "Wall seconds of one replication of each benchmark duel."),
}


def bench_data(spec: PageSpec, document: dict[str, Any]) -> dict[str, Any]:
    """What a page shows, from the JSON of ``ladderlab dev bench --out``."""
    info = {"directory": spec.run, "scenario": "bench", "description": "", "source": "", "replications": None,
            "seed": None, "created": document["created"], "finished": document["created"], "complete": True,
            "versions": document["versions"], "machine": document["machine"]}
    return {
        "data_version": DATA_VERSION, "page": spec.name, "command": document["command"], "run": info, "status": [],
        "caveats": [],
        "sections": [{"key": key, "title": title, "note": note, "decimals": 1,
                      "rows": _rows(pd.DataFrame(document[key]))} for key, (title, note) in BENCH_NOTES.items()],
        "certificate": None, "cells": {}, "figures": [],
    }


def _sections(data: dict[str, Any]) -> list[Section]:
    return [Section(item["key"], item["title"], item["note"], pd.DataFrame(item["rows"]), decimals=item["decimals"])
            for item in data["sections"]]


# --- pages -------------------------------------------------------------------------------------


GENERATED = ("<!-- Generated by `ladderlab dev results build {name}` from data/{name}.json; do not edit: "
             "`ladderlab dev results check` (run by the test suite) compares the page with its data. -->")
INDEX_GENERATED = ("<!-- Generated by `ladderlab dev results build` from pages.toml and the data files; do not edit: "
                   "`ladderlab dev results check` compares it with them. -->")


def _header(spec: PageSpec) -> list[str]:
    return [f"# {spec.title}", "", GENERATED.format(name=spec.name), ""]


def _machine_text(machine: dict[str, Any] | None) -> str:
    if not machine:
        return "not recorded (the run directory predates the record)"
    return (f"{machine['processor']}, {machine['cpus']} cores, {machine['memory_gib']} GiB, {machine['system']}, "
            f"Python {machine['python']}")


def render_page(spec: PageSpec, data: dict[str, Any] | None) -> str:
    """The page's Markdown, from its data file alone (None: its run has not been made yet)."""
    parts = _header(spec)
    if data is None:
        parts += ["!!! warning \"Not run yet\"", "    This page has no run behind it yet. To make it:", "",
                  "```bash", spec.command, f"ladderlab dev results build {spec.name}", "```", ""]
        return "\n".join(parts)
    info = data["run"]
    parts += [f"!!! warning \"{caveat.split(':')[0]}\"\n    {caveat.split(': ', 1)[1]}\n" for caveat in data["caveats"]]
    if info["description"]:
        parts += [" ".join(info["description"].split()), ""]
    if info["source"]:
        parts += [f"Source: {info['source']}.", ""]
    parts += [
        "| how this page was made | |",
        "| --- | --- |",
        f"| run | `{data['command']}` (into `{spec.run}`) |",
        *([f"| the experiment in full | `{spec.command}` |"] if data["command"] != spec.command else []),
        f"| page | `ladderlab dev results build {spec.name}`, from `{spec.run}` |",
        f"| dates of the run | started {info['created'] or '?'}, last result {info['finished'] or '?'} |",
        *([f"| replications | {info['replications']} per cell, seed {info['seed']} |"] if info["replications"] else []),
        f"| machine | {_machine_text(info['machine'])} |",
        *([f"| conditions | {data['note']} |"] if data.get("note") else []),
        *([f"| time | {info['replication_seconds']:.0f} s, the sum of the replications' wall times |"]
          if info.get("replication_seconds") else []),
        f"| versions | {params_text(info['versions']).replace('|', '/')} |",
        *([f"| cells | {len(data['cells'])} cell files, their SHA-256 in `data/{spec.name}.json` |"]
          if data["cells"] else []),
        "",
    ]
    parts.append(sections_markdown(_sections(data), data["certificate"]))
    if data["figures"]:
        parts += ["## Figures", ""]
        parts += [f"![{figure['title']}](img/{spec.name}/{figure['file']})\n\n{figure['caption']}\n"
                  for figure in data["figures"]]
    return "\n".join(parts).rstrip() + "\n"


def render_index(pages: list[PageSpec], data: dict[str, dict[str, Any] | None]) -> str:
    """``index.md``: every page with the state of its run."""
    lines = ["# Results", "", INDEX_GENERATED, "",
             "Every table and figure here was computed by the command its page names, on the machine it names. "
             "`ladderlab dev results build` regenerates the pages from their run directories.", "",
             "| page | run | state |", "| --- | --- | --- |"]
    for spec in pages:
        found = data.get(spec.name)
        if found is None:
            state = "not run yet"
        else:
            state = "; ".join(caveat.split(":")[0].lower() for caveat in found["caveats"]) or "full run"
            state += f", {found['run']['finished'] or found['run']['created']}"
        lines.append(f"| [{spec.title}]({spec.name}.md) | `{spec.command}` | {state} |")
    return "\n".join(lines) + "\n"


def render_readme_bench(data: dict[str, Any] | None, page_link: str) -> str:
    """The README's benchmark section, markers included: for every mechanism that has a plain
    per-submission numpy loop, how many times the loop's rate its batched and its one-at-a-time
    submissions reach at each n, from the ``bench`` page's data (None: not measured yet)."""
    lines = [README_BEGIN, f"<!-- Written by `ladderlab dev results build {BENCH_PAGE}` from the data of "
             f"{page_link}; do not edit: `ladderlab dev results check` compares them. -->", ""]
    if data is None:
        lines += [f"Not measured yet: `ladderlab dev bench --out runs/{BENCH_PAGE}.json`, then "
                  f"`ladderlab dev results build {BENCH_PAGE}`.", README_END]
        return "\n".join(lines)
    throughput = pd.DataFrame(next(item["rows"] for item in data["sections"] if item["key"] == "throughput"))
    looped = throughput.dropna(subset=["loop_per_second"])
    ratios = looped.pivot(index="mechanism", columns="n", values=["batched_over_loop", "single_over_loop"]).round(1)
    ratios.columns = [f"{'batched' if what == 'batched_over_loop' else 'one at a time'}, n = {n}"
                      for what, n in ratios.columns]
    info = data["run"]
    conditions = f" ({data['note']})" if data.get("note") else ""
    lines += [f"Submissions per second as a multiple of a plain per-submission numpy loop of the same algorithm: "
              f"batched (`submit_many`) and one at a time (`submit`), on the boosting attack's workload, each "
              f"timed in turn with the loop under the same load. Measured by `{data['command']}` on "
              f"{_machine_text(info['machine'])}, {info['created']}{conditions}. Every mechanism and the "
              f"absolute rates: [benchmark results]({page_link}).", "",
              table(ratios.reset_index()), "", README_END]
    return "\n".join(lines)


def _readme(folder: Path, readme: Path | None) -> Path:
    """The README given, or else the one of the repository whose ``docs/results`` is ``folder``."""
    return folder.parent.parent / "README.md" if readme is None else readme


def _readme_bench(folder: Path, readme: Path) -> str:
    page_link = Path(os.path.relpath((folder / f"{BENCH_PAGE}.md").resolve(), readme.resolve().parent)).as_posix()
    return render_readme_bench(_read_data(folder, BENCH_PAGE), page_link)


# --- build and check ---------------------------------------------------------------------------


def _read_data(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / "data" / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text.encode() if isinstance(text, str) else text)


def _figures(spec: PageSpec, run: Run) -> list[plots.ReportFigure]:
    figures = plots.report_figures(run.results) + competition_report.report_figures(run.competitions)
    if spec.figures is None:
        return figures
    return [figure for figure in figures if figure.title.startswith(tuple(spec.figures))]


def build(folder: Path = DEFAULT_FOLDER, names: list[str] | None = None, note: str = "", log: Any = print,
          readme: Path | None = None) -> list[str]:
    """Regenerate the pages named (all by default) whose run directory exists, then the index and
    the benchmark section of ``readme`` (default: the repository's, two folders above ``folder``)
    where it has the markers; return the names of the pages built. ``note`` says under what
    conditions the runs were made (``"a shared 2-core machine, other jobs running"``), which the
    machine's record cannot tell."""
    pages = load_pages(folder)
    known = {page.name for page in pages}
    unknown = [name for name in names or [] if name not in known]
    if unknown:
        raise ValueError(f"no results page named {', '.join(unknown)} in {folder / PAGES_FILE} "
                         f"(pages: {', '.join(sorted(known))})")
    built = []
    for spec in pages:
        if names and spec.name not in names:
            continue
        source = Path(spec.run)
        if not (source / "manifest.json").is_file() and not (source.suffix == ".json" and source.is_file()):
            log(f"{spec.name}: no run {spec.run} (make it with: {spec.command}); page left as it is")
            continue
        run = None if source.suffix == ".json" else load_run(source)
        data = bench_data(spec, json.loads(source.read_text())) if run is None else page_data(spec, run)
        data["note"] = note
        images = folder / "img" / spec.name
        for old in images.glob("*.png") if images.is_dir() else []:
            old.unlink()
        for number, figure in enumerate(_figures(spec, run) if run is not None else [], start=1):
            file = f"{number:02d}-{figure.slug}.png"
            _write(images / file, figure.png())
            data["figures"].append({"file": file, "title": figure.title, "caption": figure.caption})
        _write(folder / "data" / f"{spec.name}.json", json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        _write(folder / f"{spec.name}.md", render_page(spec, data))
        built.append(spec.name)
        log(f"{spec.name}: {folder / spec.name}.md from {spec.run}")
    for spec in pages:  # pages without a run yet say how to make it
        if _read_data(folder, spec.name) is None:
            _write(folder / f"{spec.name}.md", render_page(spec, None))
    _write(folder / "index.md", render_index(pages, {spec.name: _read_data(folder, spec.name) for spec in pages}))
    readme = _readme(folder, readme)
    if BENCH_PAGE in {spec.name for spec in pages} and readme.is_file():
        text = readme.read_text(encoding="utf-8")
        if marked_section(text, README_BEGIN, README_END) is None:
            log(f"{readme}: no {README_BEGIN} … {README_END} section; its benchmark figures left out")
        else:
            _write(readme, replace_marked_section(text, README_BEGIN, README_END, _readme_bench(folder, readme),
                                                  str(readme)))
    return built


def check(folder: Path = DEFAULT_FOLDER, nav: Path | None = Path("mkdocs.yml"), readme: Path | None = None
          ) -> list[str]:
    """Every way the pages differ from what their data files give (empty: none): a page or
    the index edited by hand, a figure missing, a page missing from the nav of ``nav`` (the
    documentation's ``mkdocs.yml``, whose ``docs`` folder holds ``folder``), the benchmark
    section of ``readme`` (default: the repository's, as for :func:`build`) edited by hand."""
    pages = load_pages(folder)
    problems = []
    data = {spec.name: _read_data(folder, spec.name) for spec in pages}
    expected = {f"{spec.name}.md": render_page(spec, data[spec.name]) for spec in pages}
    expected["index.md"] = render_index(pages, data)
    for file, text in expected.items():
        path = folder / file
        if not path.is_file():
            problems.append(f"{path}: missing; run 'ladderlab dev results build'")
        elif path.read_text(encoding="utf-8") != text:
            line = next((number for number, (a, b) in enumerate(
                zip(path.read_text(encoding="utf-8").splitlines(), text.splitlines()), start=1) if a != b), None)
            where = f" (first at line {line})" if line else ""
            problems.append(f"{path}: differs from what data/{Path(file).stem}.json gives{where}; "
                            "edit the run or pages.toml and run 'ladderlab dev results build', not the page")
    for spec in pages:
        for figure in (data[spec.name] or {}).get("figures", []):
            if not (folder / "img" / spec.name / figure["file"]).is_file():
                problems.append(f"{folder / 'img' / spec.name / figure['file']}: missing "
                                f"(listed in data/{spec.name}.json)")
    if nav is not None and nav.is_file():
        text = nav.read_text(encoding="utf-8")
        relative = folder.resolve().relative_to((nav.parent / "docs").resolve())
        problems += [f"{nav}: the nav does not list {relative / file}" for file in expected
                     if f"{relative / file}" not in text]
    readme = _readme(folder, readme)
    if BENCH_PAGE in data and readme.is_file():
        section = marked_section(readme.read_text(encoding="utf-8"), README_BEGIN, README_END)
        if section is not None and section != _readme_bench(folder, readme):
            problems.append(f"{readme}: its benchmark figures differ from what data/{BENCH_PAGE}.json gives; "
                            f"run 'ladderlab dev results build {BENCH_PAGE}', not an edit of the README")
    return problems
