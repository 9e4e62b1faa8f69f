"""Build hook: the shipped rubrics and prompt templates live in the repository's top-level `rubrics/`
and `prompts/` folders; in a wheel they become package data under `grader/` (found at run time
through importlib.resources, see grader/resources.py). Metadata stays in pyproject.toml."""

from setuptools import find_namespace_packages, setup

SHIPPED = {"grader.rubrics": "rubrics", "grader.prompts": "prompts"}

setup(
    # Namespace packages too: a subpackage without __init__.py (evidence/sandbox) must not go missing.
    packages=find_namespace_packages(include=["grader", "grader.*", "evidence", "evidence.*"], exclude=["*.__pycache__"])
    + list(SHIPPED),
    package_dir=SHIPPED,
    package_data={
        "grader.rubrics": ["*.toml", "*.confidence.json"],  # calibrated confidence of rules drafts
        "grader.prompts": ["*.j2"],
        # Templates, static assets and migration scripts that grader subpackages keep next to their code.
        "grader": ["**/*.j2", "**/*.html", "**/*.css", "**/*.js", "**/*.ini", "**/*.mako", "**/*.json"],
        "evidence": ["**/*.toml", "**/*.json"],  # e.g. the hardware tables in perf/specs/
    },
)
