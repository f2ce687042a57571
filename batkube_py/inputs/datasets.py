"""The public inputs of the thesis's experiments, fetched by name from where they are published.

A clone (or a wheel) holds no trace and no thesis platform: they are not ours to redistribute. Each input
here names its public source and the SHA-256 of its content; `path(name)` returns a verified local copy:
from the offline folder if one is set (BATKUBE_DATA_DIR, e.g. the project's ../shared in CI; searched by
file name), else from the cache (~/.cache/batkube-py/data), else downloaded, checked and cached. With
BATKUBE_OFFLINE=1 nothing is downloaded. A file whose content does not match is refused, never used.

Checksums are of the content a run reads: the Parallel Workloads Archive serves gzipped traces, which are
checked after decompression; the thesis's platforms are Batkube's files without the `smpi/*` properties
that SimGrid 3.32 (under Batsim 4.2.1) refuses; the KIT extract is cut from the public KIT trace by
swf-tools and its job rows are checked against the thesis's extract.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

PWA = "https://www.cs.huji.ac.il/labs/parallel/workload"
BATKUBE = "https://raw.githubusercontent.com/oar-team/batkube/ba3620e0d1922fa40877edf2d1cd6ba6e21e6347"


class DataError(RuntimeError):
    """An input that cannot be had: names it, its source and what to do."""


class Dataset(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    url: str | None = None  # None: derived from `source`
    sha256: str | None  # of the content used (job rows for an extract); None: cannot be pinned here
    gzip: bool = False
    strip_smpi: bool = False
    source: str | None = None  # the dataset an extract is cut from
    window: tuple[float, float] | None = None  # [begin, end) submit times of the extract, s
    citation: str


def _platform(name: str, sha256: str) -> Dataset:
    return Dataset(
        name=name, url=f"{BATKUBE}/examples/platforms/{name}", sha256=sha256, strip_smpi=True,
        citation="oar-team/batkube examples/platforms (the thesis's platforms), smpi/* properties removed",
    )  # fmt: skip


DATASETS = {
    d.name: d
    for d in (
        Dataset(
            name="NASA-iPSC-1993-3.1-cln.swf", url=f"{PWA}/l_nasa_ipsc/NASA-iPSC-1993-3.1-cln.swf.gz",
            sha256="9d997a2c20a7f7b0b6d81638d756ce8b2c524c4f2e9ec78da36001743ca33d76", gzip=True,
            citation="Parallel Workloads Archive (D. Feitelson), NASA Ames iPSC/860 log, cleaned version 3.1",
        ),
        # The full KIT trace could not be downloaded where this was written: its own checksum is not
        # pinned, the extract cut from it is (job for job against the thesis's extract).
        Dataset(
            name="KIT-FH2-2016-1.swf", url=f"{PWA}/l_kit_fh2/KIT-FH2-2016-1.swf.gz", sha256=None, gzip=True,
            citation="Parallel Workloads Archive (D. Feitelson), KIT ForHLR II log, version 1",
        ),
        Dataset(
            name="KIT-10-80.swf", source="KIT-FH2-2016-1.swf", window=(1224037, 1224037 + 36000),
            sha256="9abe67c890f1b5a823d512b513652c4bc1450b1e83842070a4d60e573f6d3ff3",
            citation="the thesis's 10 h, 80 % utilisation extract of KIT-FH2-2016-1",
        ),
        _platform("platform_graphene_16nodes.xml",
                  "b510c244050ee593fc7ee5bb899d25f55deccfa7a7e8b5557f5e70f36ac9f6e9"),
        _platform("1node_6core.xml", "7deaa68b3c97fa1b21f60d0b574a0c9a0d8bc4ba0ee81b12769fb8c840cf7077"),
    )  # fmt: skip
}


def cache_dir() -> Path:
    base = os.environ.get("BATKUBE_CACHE") or Path.home() / ".cache" / "batkube-py"
    return Path(base) / "data"


def offline_dir() -> Path | None:
    value = os.environ.get("BATKUBE_DATA_DIR")
    return Path(value).expanduser() if value else None


def job_rows(text: str) -> str:
    """An SWF file's job rows, whitespace-normalised: what an extract is checked on (headers differ)."""
    rows = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(r for r in rows if r and not r.startswith(";"))


def digest(ds: Dataset, path: Path) -> str:
    data = job_rows(path.read_text()).encode() if ds.window else path.read_bytes()
    return hashlib.sha256(data).hexdigest()


def _verified(ds: Dataset, path: Path, where: str) -> Path:
    if ds.sha256 is not None and digest(ds, path) != ds.sha256:
        raise DataError(
            f"{ds.name}: {path} ({where}) does not have the published content (SHA-256 mismatch); "
            "remove it to fetch it again"
        )
    return path


def _dataset(name: str) -> Dataset:
    ds = DATASETS.get(name)
    if ds is None:
        raise DataError(f"unknown input {name!r}; known: {', '.join(sorted(DATASETS))}")
    return ds


def _local(ds: Dataset, also: Path | None = None) -> Path | None:
    """The verified copy already on this machine (offline folders first, then the cache), or None."""
    for where, d in (("BATKUBE_DATA_DIR", offline_dir()), ("--var shared", also)):
        if d is not None and d.is_dir():
            hits = sorted(p for p in d.rglob(ds.name) if p.is_file())
            good = [p for p in hits if ds.sha256 is None or digest(ds, p) == ds.sha256]
            if hits:
                return _verified(ds, (good or hits)[0], f"in {where}={d}")
    cached = cache_dir() / ds.name
    return _verified(ds, cached, "cached") if cached.is_file() else None


def _local_or_none(ds: Dataset) -> Path | None:
    try:
        return _local(ds)
    except DataError:  # a bad copy: refused when the experiment runs, with its own message
        return None


def availability(name: str) -> str:
    """Where `path(name)` would take the input from, without fetching it: what `experiment list` shows
    so that a user offline knows beforehand which experiments need the internet."""
    ds = _dataset(name)
    found = _local_or_none(ds)
    if found is not None:
        folder = offline_dir()
        return "in BATKUBE_DATA_DIR" if folder is not None and folder in found.parents else "cached"
    if ds.source is not None and _local_or_none(_dataset(ds.source)) is not None:
        return f"cut from the local {ds.source}"
    cut = f"cut from {ds.source}, " if ds.source else ""
    if os.environ.get("BATKUBE_OFFLINE") == "1":
        return f"{cut}MISSING: not here and BATKUBE_OFFLINE=1"
    return f"{cut}downloaded on the first run"


def path(name: str, also: Path | None = None) -> Path:
    """A verified local copy of the public input `name` (see the module's docstring for the order);
    `also` is a folder searched like BATKUBE_DATA_DIR, after it (an experiment's --var shared=PATH)."""
    ds = _dataset(name)
    found = _local(ds, also)
    if found is not None:
        return found
    folder = offline_dir()
    cached = cache_dir() / ds.name
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cached.parent) as tmp:
        fresh = Path(tmp) / ds.name
        _extract(ds, fresh, also) if ds.window else _download(ds, fresh, folder, also)
        _verified(ds, fresh, f"from {ds.url or ds.source}")
        os.replace(fresh, cached)
    return cached


def _download(ds: Dataset, dest: Path, folder: Path | None, also: Path | None = None) -> None:
    if os.environ.get("BATKUBE_OFFLINE") == "1":
        where = f"in BATKUBE_DATA_DIR={folder}" if folder else "(BATKUBE_DATA_DIR is not set)"
        if also is not None and also not in (folder, cache_dir()):
            where += f" nor in {also}"
        raise DataError(
            f"{ds.name}: BATKUBE_OFFLINE=1 and no copy {where}; its public source is {ds.url} (set "
            "BATKUBE_DATA_DIR, or an experiment's --var shared=PATH, to a folder holding it)"
        )
    assert ds.url is not None
    try:
        with urllib.request.urlopen(ds.url, timeout=60) as response, open(dest, "wb") as out:
            opened: Callable = gzip.open if ds.gzip else (lambda f: f)
            shutil.copyfileobj(opened(response), out)
    except (OSError, EOFError) as exc:
        hint = "or point BATKUBE_DATA_DIR (or an experiment's --var shared=PATH) to a folder holding it"
        raise DataError(f"{ds.name}: cannot fetch {ds.url}: {exc}; {hint}") from None
    if ds.strip_smpi:
        lines = dest.read_bytes().splitlines(keepends=True)
        dest.write_bytes(b"".join(x for x in lines if b'<prop id="smpi/' not in x))


def _extract(ds: Dataset, dest: Path, also: Path | None = None) -> None:
    """swf-tools cuts the window out of the source trace (the jobs submitted in it, as evalys does)."""
    from swf_tools.extract import extract_period, measure_period
    from swf_tools.swf import parse_swf, write_swf

    assert ds.source is not None and ds.window is not None
    trace = parse_swf(path(ds.source, also))
    begin, end = ds.window
    header, jobs = extract_period(trace, measure_period(trace, begin, end))
    write_swf(dest, header, jobs)
