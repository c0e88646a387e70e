"""The bundled Grafana dashboards, Prometheus rules and configurations, and their export.

The files live in the repository's ``dashboards/`` directory. A wheel carries them as the
package data directory ``symfonic_otel/_dashboards``; an editable install or a source checkout
reads them from ``dashboards/`` next to the package. ``export`` copies them, layout preserved:

    symfonic-agent-overview.json, symfonic-fabrication.json   Grafana dashboards
    prometheus/symfonic-rules.yml                              recording and alerting rules
    prometheus/symfonic-rules.test.yml                         promtool unit tests of the rules
    prometheus/prometheus.yml                                  local: scrape one host's agents
    prometheus/prometheus-collector.yml                        fleet: scrape the OTel Collector
    prometheus/prometheus-agent.yml, prometheus-central.yml    agent mode + remote-write receiver
    alertmanager/alertmanager.yml                              route per tenant_id to a receiver
    victoriametrics/vmagent.yml, vmalert.env                   the same rules on VictoriaMetrics
    grafana/provisioning/                                      datasource and dashboards provider
    collector/otel-collector.yaml                              example Collector pipeline
    collector/otel-collector-delta.yaml                        delta pushes -> cumulative
    prometheus/symfonic-rules-unrecovered-page(.test).yml     optional: unrecovered-only page
    README.md                                                  what each file is, where the docs are
    runbooks/<alert>/README.md, runbooks/README.md             the runbooks (docs/runbooks)

Every alert's ``runbook_url`` is ``runbooks/<alert>/`` under the external label
``runbook_base_url``: the exported folder holds that page at that path, and so does the docs site
(``docs/runbooks/<alert>.md``), so either served at ``runbook_base_url`` resolves every link. The
runbooks' links to other runbooks are rewritten to the exported layout; links to other docs pages
become their path in the docs, as text. Every alert's ``dashboard_url`` is the overview
dashboard (with the alert's tenant selected) under the external label ``grafana_url``.

``export(..., runbook_base_url=..., grafana_url=...)`` writes both labels into the exported
Prometheus server configurations, so every link an alert carries is absolute;
``traces="jaeger"`` provisions Jaeger instead of Tempo as the trace data source the exemplars
open.

The export is all or nothing: the files are written to a hidden staging folder on ``DIR``'s file
system and moved into place once every one of them is written, so a full disk leaves no partial
set behind.
"""

from __future__ import annotations

import errno
import json
import re
import shutil
import tempfile
import urllib.parse
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

__all__ = ["TRACE_BACKENDS", "base_url", "bundled_files", "export", "runbook_source", "source"]

TRACE_BACKENDS = ("tempo", "jaeger")

_PACKAGE_DATA = "_dashboards"
_RUNBOOK_DATA = "_runbooks"  # docs/runbooks, in a wheel
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+?\.md)(#[^)\s]*)?\)")
_SKIP = frozenset({"__pycache__", ".DS_Store"})
# The Prometheus configurations that evaluate the rules: where the link labels go.
_SERVER_CONFIGS = frozenset(
    {
        ("prometheus", "prometheus.yml"),
        ("prometheus", "prometheus-collector.yml"),
        ("prometheus", "prometheus-central.yml"),
    }
)
_TRACE_SOURCE = ("grafana", "provisioning", "datasources", "symfonic-traces.yaml")
_VARIANT = ("grafana", "variants")


def source() -> Traversable:
    """The directory the bundled files are read from (installed wheel or source checkout)."""
    packaged = resources.files("symfonic_otel").joinpath(_PACKAGE_DATA)
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / "dashboards"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        "symfonic-otel's dashboards are missing from this installation "
        f"(looked for symfonic_otel/{_PACKAGE_DATA} and ./dashboards)"
    )


def runbook_source() -> Traversable | None:
    """The runbook pages (docs/runbooks), from the wheel or the checkout; None if absent."""
    packaged = resources.files("symfonic_otel").joinpath(_RUNBOOK_DATA)
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / "docs" / "runbooks"
    return checkout if checkout.is_dir() else None


def _exported_runbook(text: str, is_index: bool) -> bytes:
    """A runbook page with its links rewritten for ``runbooks/<alert>/README.md``."""

    def link(match: re.Match[str]) -> str:
        label, target, anchor = match.group(1), match.group(2), match.group(3) or ""
        if "/" not in target:  # another runbook page
            stem = target.removesuffix(".md")
            page = "README.md" if stem == "index" else f"{stem}/README.md"
            return f"[{label}]({page if is_index else '../' + page}{anchor})"
        # A page of the docs site, not exported: named by its path on the site (where
        # runbook_base_url may point), never as a repository file the on-call may not have.
        page = target.removeprefix("../").removesuffix(".md")
        site_path = "" if page == "index" else page.removesuffix("/index") + "/"
        return f"{label} (symfonic-otel documentation: {site_path}{anchor})"

    return _LINK.sub(link, text).encode()


def _runbooks() -> list[tuple[tuple[str, ...], bytes]]:
    folder = runbook_source()
    if folder is None:
        return []
    pages: list[tuple[tuple[str, ...], bytes]] = []
    for item in sorted(folder.iterdir(), key=lambda child: child.name):
        if not item.name.endswith(".md"):
            continue
        stem = item.name.removesuffix(".md")
        parts: tuple[str, ...] = ("runbooks", stem, "README.md")
        if stem == "index":
            parts = ("runbooks", "README.md")
        pages.append((parts, _exported_runbook(item.read_text(), stem == "index")))
    return pages


def _walk(node: Traversable, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], Traversable]]:
    found: list[tuple[tuple[str, ...], Traversable]] = []
    for child in sorted(node.iterdir(), key=lambda item: item.name):
        if child.name in _SKIP or child.name.endswith(".pyc"):
            continue
        if child.is_dir():
            found.extend(_walk(child, (*prefix, child.name)))
        elif child.is_file():
            found.append(((*prefix, child.name), child))
    return found


def _contents() -> list[tuple[tuple[str, ...], bytes | Traversable]]:
    found: list[tuple[tuple[str, ...], bytes | Traversable]] = list(_walk(source(), ()))
    found.extend(_runbooks())
    return sorted(found, key=lambda pair: pair[0])


def bundled_files() -> list[str]:
    """Relative POSIX paths of every exported file, sorted."""
    return sorted("/".join(parts) for parts, _ in _contents())


def base_url(value: str, option: str) -> str:
    """``value`` as a base URL (no trailing slash); ValueError naming ``option`` if it is none."""
    text = value.strip() if isinstance(value, str) else ""
    parts = urllib.parse.urlsplit(text)
    if (
        parts.scheme not in ("http", "https")
        or not parts.netloc
        or parts.query
        or parts.fragment
        or any(char.isspace() or char in "\"'{}<>" for char in text)
    ):
        raise ValueError(
            f"{option} must be an absolute http(s) URL without query or fragment "
            f"(e.g. https://grafana.example.com), got {value!r}"
        )
    return text.rstrip("/")


def _with_external_labels(text: bytes, labels: dict[str, str]) -> bytes:
    """A bundled server config with ``labels`` as its ``global.external_labels``."""
    lines = text.decode().splitlines(keepends=True)
    if lines.count("global:\n") != 1 or any(
        line.startswith("  external_labels:") for line in lines
    ):
        raise RuntimeError("a bundled Prometheus config has no single global: section to extend")
    at = lines.index("global:\n") + 1
    block = [
        "  external_labels:\n",
        "    # From `symfonic-otel dashboards export`: every alert's links are absolute.\n",
        *(f"    {name}: {json.dumps(value)}\n" for name, value in labels.items()),
    ]
    return "".join(lines[:at] + block + lines[at:]).encode()


def _customised(
    contents: list[tuple[tuple[str, ...], bytes | Traversable]],
    labels: dict[str, str],
    traces: str,
) -> list[tuple[tuple[str, ...], bytes | Traversable]]:
    by_parts = dict(contents)
    variant = (*_VARIANT, traces, _TRACE_SOURCE[-1])
    result: list[tuple[tuple[str, ...], bytes | Traversable]] = []
    for parts, item in contents:
        if parts == _TRACE_SOURCE and traces != "tempo" and variant in by_parts:
            item = by_parts[variant]
        if parts in _SERVER_CONFIGS and labels:
            data = item if isinstance(item, bytes) else item.read_bytes()
            item = _with_external_labels(data, labels)
        result.append((parts, item))
    return result


def export(
    dest_dir: str | Path,
    *,
    force: bool = False,
    runbook_base_url: str | None = None,
    grafana_url: str | None = None,
    traces: str = "tempo",
) -> list[Path]:
    """Copy every bundled file under ``dest_dir`` (created if needed); returns the paths, sorted.

    ``runbook_base_url`` and ``grafana_url`` (absolute http(s) URLs) become external labels of
    the exported Prometheus server configs: every alert's ``runbook_url`` and ``dashboard_url``
    is then absolute. Without them the links are relative paths (the CLI warns). ``traces``
    (``"tempo"`` or ``"jaeger"``) is the trace data source Grafana is provisioned with.

    Nothing is written unless every file can be: an empty ``dest_dir``, a path that is a file, a
    file in the way of a folder (or a folder in the way of a file) raise first, and so do files
    that already exist, unless ``force`` (a user's own ``README.md`` or tuned rules are never
    overwritten silently). ``FileExistsError.filename`` is the destination; the message lists the
    existing files.
    """
    if not str(dest_dir).strip():
        raise ValueError("the export directory is empty: name a directory, e.g. ./dashboards")
    if traces not in TRACE_BACKENDS:
        raise ValueError(f"traces must be one of {', '.join(TRACE_BACKENDS)}, got {traces!r}")
    labels = {
        name: base_url(value, name)
        for name, value in (("runbook_base_url", runbook_base_url), ("grafana_url", grafana_url))
        if value is not None
    }
    dest = Path(dest_dir)
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(f"{dest} exists and is not a directory")
    contents = _customised(_contents(), labels, traces)
    planned = [(dest.joinpath(*parts), item) for parts, item in contents]
    existing: list[Path] = []
    for target, _ in planned:
        for parent in target.relative_to(dest).parents:
            folder = dest / parent
            if folder.exists() and not folder.is_dir():
                raise NotADirectoryError(f"{folder} exists and is not a directory")
        if target.is_file():
            existing.append(target)
        elif target.exists():
            raise IsADirectoryError(f"{target} exists and is not a file")
    if existing and not force:
        names = ", ".join(p.relative_to(dest).as_posix() for p in sorted(existing))
        verb = "exists" if len(existing) == 1 else "exist"
        raise FileExistsError(
            f"{len(existing)} of the {len(planned)} files already {verb} in {dest} ({names}); "
            "nothing was written"
        )
    staged = _stage(dest, planned)
    try:
        if not dest.exists():
            staged.rename(dest)  # one rename: the whole set appears at once
            return sorted(target for target, _ in planned)
        for target, _ in planned:
            target.parent.mkdir(parents=True, exist_ok=True)
            (staged / target.relative_to(dest)).replace(target)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return sorted(target for target, _ in planned)


def _stage(dest: Path, planned: list[tuple[Path, bytes | Traversable]]) -> Path:
    """Every file written under a new hidden folder on ``dest``'s file system (inside ``dest``
    when it exists, beside it when not); on a failure, the folder removed and an ``OSError``
    naming the file that could not be written (``filename``: its target)."""
    for parent in dest.parents:
        if parent.exists() and not parent.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, f"{parent} is not a directory", str(dest))
    try:
        if dest.exists():
            folder, prefix = dest, ".symfonic-export."
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            folder, prefix = dest.parent, f".{dest.name}."
        staged = Path(tempfile.mkdtemp(prefix=prefix, suffix=".partial", dir=folder))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(dest)) from exc
    try:
        for target, item in planned:
            path = staged / target.relative_to(dest)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(item if isinstance(item, bytes) else item.read_bytes())
            except OSError as exc:
                raise OSError(
                    exc.errno, f"{exc.strerror or exc}; nothing was written", str(target)
                ) from exc
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    return staged
