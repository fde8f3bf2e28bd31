"""One version for the package, the chart and the images: pyproject.toml's `version`.

The chart's `version` and `appVersion` (the operator image tag it deploys by default) and
the `org.opencontainers.image.version` label of both images we build must equal it, so a
release cannot ship a chart that deploys another image than the one it describes.

    python tools/verify_version.py            # check; exit 1 naming every disagreement
    python tools/verify_version.py --set 0.2.0  # bump every place, then check
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = REPO / "pyproject.toml"
CHART = REPO / "charts" / "specdecode-operator" / "Chart.yaml"
IMAGES = [REPO / "operator" / "Dockerfile", REPO / "engine-image" / "Dockerfile.sim"]
LABEL = re.compile(r'(org\.opencontainers\.image\.version=")([^"]*)(")')
CHART_FIELD = r'(?m)^({key}:\s*"?)([^"\s]+)("?\s*)$'
SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")


def package_version() -> str:
    """The single source."""
    version: str = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    return version


def disagreements(version: str) -> list[str]:
    """Every place that names another version (empty: all agree)."""
    found = []
    if not SEMVER.match(version):
        found.append(f"{PYPROJECT.name}: {version!r} is not a semantic version (Helm needs one)")
    chart = yaml.safe_load(CHART.read_text())
    for key in ("version", "appVersion"):
        if str(chart.get(key)) != version:
            found.append(f"{CHART.relative_to(REPO)}: {key} {chart.get(key)!r} != {version!r}")
    for dockerfile in IMAGES:
        labels = [match.group(2) for match in LABEL.finditer(dockerfile.read_text())]
        if labels != [version]:
            where = dockerfile.relative_to(REPO)
            found.append(f"{where}: org.opencontainers.image.version {labels} != [{version!r}]")
    return found


def set_version(version: str) -> None:
    """Write `version` into pyproject.toml, Chart.yaml and both Dockerfiles' labels."""
    project = re.sub(r'(?m)^version = "[^"]*"$', f'version = "{version}"', PYPROJECT.read_text())
    PYPROJECT.write_text(project)
    chart = CHART.read_text()
    chart = re.sub(CHART_FIELD.format(key="version"), rf"\g<1>{version}\g<3>", chart, count=1)
    chart = re.sub(CHART_FIELD.format(key="appVersion"), rf"\g<1>{version}\g<3>", chart, count=1)
    CHART.write_text(chart)
    for dockerfile in IMAGES:
        dockerfile.write_text(LABEL.sub(rf"\g<1>{version}\g<3>", dockerfile.read_text()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", metavar="VERSION", help="bump every place to VERSION first")
    args = parser.parse_args(argv)
    if args.set:
        set_version(args.set)
    version = package_version()
    problems = disagreements(version)
    for problem in problems:
        print(f"version mismatch: {problem}", file=sys.stderr)
    if not problems:
        print(f"version {version}: pyproject.toml, Chart.yaml and image labels agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
