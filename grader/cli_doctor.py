"""`grader doctor`: is this machine ready to grade untrusted submissions, and if not, the exact fix."""

from __future__ import annotations

import typer


def _perf_profile(path: str) -> tuple[str, bool]:
    """GRADER_PERF_SPEC checked as the cost model will read it: (the line to print, usable)."""
    import tomllib
    from pathlib import Path

    from evidence.perf.spec import SpecError, load_spec

    try:
        named = tomllib.loads(Path(path).read_text()).get("target", "trn2")
        spec = load_spec(str(named), path)
    except (OSError, tomllib.TOMLDecodeError, SpecError) as exc:
        return f"cost-model profile: INVALID: {exc}", False
    return f"cost-model profile: {path}: {spec.target} table {spec.version}", True


def doctor() -> None:
    """Check the sandbox for submitted code (bubblewrap, namespaces, process bounds) and the cost-model
    profile (GRADER_PERF_SPEC); exit 1 when either is unusable."""
    from grader.sandbox import status
    from grader.settings import Settings

    settings = Settings()
    st = status(settings)
    lines = [f"sandbox mode: {st.mode.value}" + ("  (GRADER_SANDBOX=off: submitted code runs unsandboxed)"
                                                 if st.mode.value == "off" else ""),
             f"sandbox: {'available' if st.available else 'UNAVAILABLE'}: {st.detail}"]
    if st.bwrap:
        lines.append(f"bubblewrap: {st.bwrap} ({st.version or 'version unknown'})")
    if st.pids_cgroup:
        lines.append(f"pids cgroup: {st.pids_cgroup}")
    lines.append("import policy: " + ("on" if settings.import_policy else "off (GRADER_IMPORT_POLICY=off)"))
    lines.append(f"parallel simulations: {settings.sim_workers} (GRADER_SIM_WORKERS)")
    profile_ok = True
    if settings.perf_spec:
        line, profile_ok = _perf_profile(settings.perf_spec)
        lines.append(line)
    if st.fix:
        lines.append(f"fix: {st.fix}")
    typer.echo("\n".join(lines))
    if not st.available or not profile_ok:
        raise typer.Exit(1)
