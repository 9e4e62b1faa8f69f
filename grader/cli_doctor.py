"""`grader doctor`: is this machine ready to grade untrusted submissions, and if not, the exact fix."""

from __future__ import annotations

import typer


def doctor() -> None:
    """Check the sandbox for submitted code (bubblewrap, namespaces, process bounds); exit 1 when unusable."""
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
    if st.fix:
        lines.append(f"fix: {st.fix}")
    typer.echo("\n".join(lines))
    if not st.available:
        raise typer.Exit(1)
